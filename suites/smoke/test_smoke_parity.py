"""Speculative parity beyond the fixed prompt set, and stream consistency.

Hypothesis generates prompts (derandomized, as many as suite.toml's hypothesis_examples) and
asserts no real divergence between the speculative server and its reference within the
first tokens; a diverging prompt is shrunk to a minimal one. The stream checks follow MLPerf
TEST06: the first streamed token is the first token of the full output, at most one EOS,
and the reported token count is the number of tokens received."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from pytest_rocm_llm import (
    Endpoint,
    check_prompt,
    check_streams_sync,
    describe,
    eos_ids,
    load_vocabulary,
    natural_prompts,
    parity_prompts,
)


@pytest.mark.llm_profile("spec", "spec-reference")
def test_generated_prompts_do_not_diverge_early(llm_suite, llm_target, llm_servers) -> None:
    config = llm_suite.eval_for("parity", llm_target)
    ref = llm_servers(config.reference_profile)
    spec = llm_servers(config.profile)
    ends = [Endpoint(s.base_url, config.api, s.served_model_name) for s in (ref, spec)]
    vocab = load_vocabulary(ref.model_path)
    seen: list[int] = []

    @settings(max_examples=config.hypothesis_examples, derandomize=True, database=None,
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(parity_prompts(vocab, min_len=4, max_len=32))
    def no_early_divergence(ids: list[int]) -> None:
        c = check_prompt(config, ends[0], ends[1], ids)
        seen.append(len(ids))
        assert not c.real_before(config.first_k), describe(c)

    no_early_divergence()
    assert len(seen) >= min(config.hypothesis_examples, 1), "no generated prompt was checked"


@pytest.mark.parametrize("profile", [pytest.param(p, marks=pytest.mark.llm_profile(p), id=p)
                                     for p in ("reference", "spec")])
def test_streams_match_full_outputs(profile, llm_servers, llm_suite, llm_target) -> None:
    server = llm_servers(profile)
    api = "completions" if llm_suite.engine_of(profile) == "vllm" else "generate"
    prompts = natural_prompts(f"{server.model_path}/tokenizer.json", 3, seed=7)
    checks = check_streams_sync(Endpoint(server.base_url, api, server.served_model_name),
                                prompts, 24, eos_ids(server.model_path))
    problems = [p for c in checks for p in c.problems]
    assert not problems, "\n".join(problems)  # requests failed: nothing to compare
    assert all(c.full.token_ids and c.streamed.token_ids for c in checks), \
        "the server returned no tokens"
    violations = [v for c in checks for v in c.violations]
    assert not violations, "\n".join(violations)
