"""``check_prompt``, the one-prompt parity check behind ``@given(parity_prompts(...))`` suite
tests, against the toy engine over real HTTP: a healthy pair matches, a near tie is followed
to a fault later in the output, and a failed request is an infrastructure error."""

from __future__ import annotations

import socket

import pytest

from pytest_rocm_llm.client.completions import Endpoint
from pytest_rocm_llm.correctness.parity import ParityConfig, check_prompt
from tests.toy_engine import Toy, serve

CONFIG = ParityConfig("spec", "parity", "spec", "ref", max_tokens=10)
PROMPT = [1000, 2000, 3000]


def test_a_healthy_speculative_server_matches() -> None:
    with serve(Toy()) as ref, serve(Toy(accept=2.0)) as spec:
        c = check_prompt(CONFIG, Endpoint(ref), Endpoint(spec), PROMPT)
    assert (c.prompt_id, c.outcome, c.near_ties) == ("hypothesis", "match", ())
    assert not c.real_before(CONFIG.first_k)


def test_a_fault_after_a_near_tie_is_found_on_the_references_path() -> None:
    with serve(Toy(plant_tie=True)) as ref, \
            serve(Toy(plant_tie=True, bias=0.06, wrong_at=5)) as spec:
        c = check_prompt(CONFIG, Endpoint(ref), Endpoint(spec), PROMPT, prompt_id="p7")
    assert (c.prompt_id, c.outcome, c.position, c.near_ties) == ("p7", "divergence", 5, (0,))
    assert c.real_before(CONFIG.first_k) and not c.real_before(5)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("dead_side", ["reference", "speculative"])
def test_a_failed_request_raises_naming_the_side(dead_side: str) -> None:
    dead = Endpoint(f"http://127.0.0.1:{closed_port()}", timeout_s=5.0)
    with serve(Toy()) as url:
        ref, spec = (dead, Endpoint(url)) if dead_side == "reference" else (Endpoint(url), dead)
        with pytest.raises(RuntimeError, match=f"^{dead_side} request failed: "):
            check_prompt(CONFIG, ref, spec, PROMPT)
