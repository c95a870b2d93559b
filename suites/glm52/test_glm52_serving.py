"""Identity checks: each profile's server is the build and configuration the suite asked for.
A run that measured the wrong thing (another model, speculation off, a different
parallelism or KV-cache dtype) must fail here rather than pass or fail its floors."""

from __future__ import annotations

import re

import pytest

from pytest_rocm_llm import LLMClient, LLMServer, Suite, Target

# The flags whose effect decides what the performance figures mean; sglang reports each
# under its field name (dashes -> underscores) in /server_info's resolved server args.
IDENTITY_FLAGS = ("tp-size", "dp-size", "kv-cache-dtype", "speculative-algorithm",
                  "speculative-num-steps", "speculative-eagle-topk",
                  "speculative-num-draft-tokens")
# Marked with their profile, so each runs while that profile's server is up (one GLM server
# fits on the node at a time; the plugin orders a suite's tests by profile).
PROFILES = [pytest.param(p, marks=pytest.mark.llm_profile(p), id=p)
            for p in ("reference", "spec", "spec-simulated", "throughput")]


@pytest.mark.parametrize("profile", PROFILES)
def test_server_runs_the_profile(profile: str, llm_server: LLMServer, llm_suite: Suite,
                                 llm_target: Target) -> None:
    server = llm_server
    assert server.profile == profile
    flags = llm_suite.profile_for(profile, llm_target).flags
    wanted = {f: flags[f] for f in IDENTITY_FLAGS if f in flags}
    assert wanted, f"profile {profile} sets none of {IDENTITY_FLAGS}"
    with LLMClient(server) as client:
        info = client.server_info()
    wrong = {f: (v, info.get(f.replace("-", "_"))) for f, v in wanted.items()
             if str(info.get(f.replace("-", "_"))) != str(v)}
    assert not wrong, (f"server of profile {profile} does not run what the suite asked "
                       "(flag: asked, reported): " + repr(wrong))


def test_reports_its_model_and_version(llm_server: LLMServer, llm_client: LLMClient) -> None:
    info = llm_client.server_info()
    model = llm_client.model_info()
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", str(info.get("version"))), info.get("version")
    if llm_server.process is not None:
        assert info["version"] == llm_server.engine_version
        assert model["model_path"] == llm_server.model_path
    assert model["served_model_name"] == llm_server.served_model_name
    assert model["is_generation"] is True


def test_greedy_completion_is_deterministic(llm_client: LLMClient) -> None:
    # The cache is flushed before each request: a second request served from the radix
    # cache prefills only its tail and runs other kernels, where fp8 KV and MXFP4 can flip a
    # near tie; that is not the nondeterminism this test is for. Both now run the same path.
    prompt = "State the capital of France in one word."
    llm_client.flush_cache()
    first = llm_client.generate(prompt, max_new_tokens=32, temperature=0.0)
    llm_client.flush_cache()
    second = llm_client.generate(prompt, max_new_tokens=32, temperature=0.0)
    assert not second.cached_tokens, (
        f"the second request was served {second.cached_tokens} cached tokens after "
        "/flush_cache: the two requests did not run the same path")
    assert first.completion_tokens > 0 and first.output_ids, "server returned no tokens"
    assert first.output_ids == second.output_ids, (
        f"greedy decoding changed between identical requests:\n"
        f"  first : {first.text!r}\n  second: {second.text!r}")
