"""[evals.*] in suite.toml: dispatch on kind, profiles checked, checks naming a metric the
evaluation cannot produce refused before anything runs, per-target overrides."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.errors import ConfigError

BASE = """
[suite]
name = "e"
[model]
id = "m"
[profiles.plain]
[profiles.spec]
[evals.arith]
kind = "arithmetic"
limit = 10
[evals.par]
kind = "parity"
profile = "spec"
reference_profile = "plain"
[evals.lc]
kind = "long_context"
lengths = [512, 1024]
[checks.acc]
eval = "arith"
metric = "accuracy"
reference_score = 0.5
source = "s"
[checks.agree]
eval = "par"
metric = "agree_ratio"
min = 1.0
source = "s"
[checks.lc512]
eval = "lc"
metric = "accuracy@512"
min = 0.0
source = "s"
"""


def parse(text: str):
    return parse_suite(Path("suite.toml"), tomllib.loads(text))


def test_evals_dispatch_and_checks_know_their_profiles():
    s = parse(BASE)
    assert [s.evals[n].kind for n in ("arith", "par", "lc")] == \
        ["arithmetic", "parity", "long_context"]
    checks = {c.name: c for c in s.checks_for(TARGETS["cpu"])}
    assert s.check_profile(checks["agree"], TARGETS["cpu"]) == "spec"
    assert s.check_profile(checks["acc"], TARGETS["cpu"]) == "plain"  # the default
    assert checks["acc"].feature == "correctness" and checks["acc"].direction == "higher"
    assert (s.evals["arith"].paired_margin, s.evals["arith"].paired_discordance) == (2.0, 0.05)


@pytest.mark.parametrize("old, new, expected", [
    ('kind = "arithmetic"', 'kind = "trivia"', "'trivia' is not an evaluation kind"),
    ('reference_profile = "plain"', 'reference_profile = "nope"',
     "key 'evals.par.profile': 'nope' is not a profile"),
    ('metric = "agree_ratio"', 'metric = "accuracy"',
     "'accuracy' is not a metric of a parity evaluation"),
    ('metric = "accuracy@512"', 'metric = "accuracy@lots"', "is not a metric of a long_context"),
    ('eval = "arith"', 'eval = "missing"', "'missing' is not an evaluation"),
    ("limit = 10", "limit = -1", "key 'evals.arith.limit'"),
    ("limit = 10", "limit = 10\npaired_margin = 0", "key 'evals.arith.paired_margin'"),
])
def test_bad_evals_are_usage_errors(old, new, expected):
    with pytest.raises(ConfigError) as info:
        parse(BASE.replace(old, new, 1))
    assert expected in str(info.value)


def test_target_override_of_an_eval():
    s = parse(BASE + "[targets.mi355x.evals.lc]\nlengths = [20000, 65536, 131072]\n")
    assert s.eval_for("lc", TARGETS["mi355x"]).lengths == (20000, 65536, 131072)
    assert s.eval_for("lc", TARGETS["cpu"]).lengths == (512, 1024)


def _judge(result, check_name: str, tmp_path: Path):
    from pytest_rocm_llm.serving.server import LLMServer
    from pytest_rocm_llm.verdicts.baselines import BaselineCache
    from pytest_rocm_llm.verdicts.judge import judge_eval

    s = parse(BASE)
    check = {c.name: c for c in s.checks_for(TARGETS["cpu"])}[check_name]
    server = LLMServer("e", "plain", "http://127.0.0.1:1", "sglang", "m", "/m", (), {}, "0.5.23")
    return judge_eval(check, result, s, TARGETS["cpu"], server, BaselineCache(tmp_path),
                      "regen", {"kind": "measured", "date": "2026-11-29"}, "id", {})


def test_binomial_floor_uses_the_items_scored(tmp_path: Path):
    from pytest_rocm_llm.correctness.result import EvalResult

    ok = _judge(EvalResult("arith", "arithmetic", {"accuracy": 0.45, "n": 100}), "acc", tmp_path)
    assert ok.error is None and ok.decision.verdict.floor.startswith(">= 0.3")  # k*/n at 0.01
    assert "binomial floor of 0.5 over n=100" in ok.decision.verdict.floor_source
    bad = _judge(EvalResult("arith", "arithmetic", {"accuracy": 0.2, "n": 100}), "acc", tmp_path)
    assert bad.error is not None and str(bad.error).startswith("accuracy regression: acc")


def test_eval_problems_are_preconditions_and_details_follow_a_failure(tmp_path: Path):
    from pytest_rocm_llm.correctness.result import EvalResult
    from pytest_rocm_llm.verdicts.checks import PreconditionNotMet

    r = EvalResult("par", "parity", {"agree_ratio": 1.0, "prompts": 6},
                   problems=("the speculative server did not speculate: accept length None",))
    out = _judge(r, "agree", tmp_path)
    assert isinstance(out.error, PreconditionNotMet) and "did not speculate" in str(out.error)
    r = EvalResult("par", "parity", {"agree_ratio": 0.5, "prompts": 6},
                   details=("p1: real divergence at token 3: reference 'a' vs speculative 'b'",))
    out = _judge(r, "agree", tmp_path)
    assert str(out.error).startswith("parity divergence: agree")
    assert "real divergence at token 3" in str(out.error)
