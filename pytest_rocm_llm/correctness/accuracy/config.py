"""``[evals.<name>]`` tables of the accuracy kinds, and the items a config asks for.

Kept free of HTTP and scipy imports: suite parsing loads this module at plugin start.

    [evals.gsm8k]
    kind = "gsm8k"          # gsm8k | arithmetic | gpqa | tau2
    limit = 200             # seeded subset of the test set (all items when absent)
    shots = 5               # few-shot exemplars from train.jsonl (gsm8k, arithmetic)
    scoring = "flexible"    # which extraction "accuracy" reports; both are always reported
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_rocm_llm.config.toml import REQUIRED, Table
from pytest_rocm_llm.correctness.accuracy.items import Item

KINDS = ("gsm8k", "arithmetic", "gpqa", "tau2")
SCORINGS = ("strict", "flexible")

# Per kind: shots, max_tokens, scoring, limit. GSM8K: 5 shots as lm-evaluation-harness's
# gsm8k task, flexible scoring because chat models answer in prose more often than in the
# "#### N" format; GPQA: zero-shot with reasoning and simple-evals' strict "Answer: X";
# arithmetic: 50 generated problems.
DEFAULTS: dict[str, dict[str, Any]] = {
    "gsm8k": {"shots": 5, "max_tokens": 512, "scoring": "flexible", "limit": None},
    "arithmetic": {"shots": 0, "max_tokens": 256, "scoring": "flexible", "limit": 50},
    "gpqa": {"shots": 0, "max_tokens": 4096, "scoring": "strict", "limit": None},
    "tau2": {"shots": 0, "max_tokens": 4096, "scoring": "strict", "limit": None},
}


@dataclass(frozen=True)
class AccuracyConfig:
    name: str
    kind: str
    profile: str | None = None
    limit: int | None = None  # items (tau2: tasks); None = the whole set
    shots: int = 0
    concurrency: int = 8
    max_tokens: int = 512
    seed: int = 0
    temperature: float = 0.0
    scoring: str = "flexible"
    request_timeout_s: float = 600.0
    description: str = ""
    # arithmetic
    max_steps: int = 2
    # tau2
    domain: str | None = None
    num_trials: int = 1
    user_model: str | None = None  # served name of the user simulator's model
    user_base_url: str | None = None  # None: the server under test also plays the user
    tau2_command: tuple[str, ...] = ("tau2",)
    timeout_s: float = 6 * 3600.0


def parse_accuracy(name: str, t: Table, base: AccuracyConfig | None = None) -> AccuracyConfig:
    """An accuracy eval from its table; with ``base``, a per-target override of some fields."""

    kind = t.string("kind", base.kind if base is not None else REQUIRED)
    if kind not in KINDS:
        t.fail("kind", f"{kind!r} is not an accuracy eval kind ({', '.join(KINDS)})")
    if base is not None and kind != base.kind:
        t.fail("kind", f"a target override cannot change the kind ({base.kind} -> {kind})")
    defaults = DEFAULTS[kind]

    def d(key: str, fallback: Any = REQUIRED) -> Any:
        if base is not None:
            return getattr(base, key)
        return defaults.get(key, fallback)

    fields: dict[str, Any] = dict(
        name=name,
        kind=kind,
        profile=t.string("profile", d("profile", None)),
        limit=t.number("limit", d("limit", None), integer=True, minimum=1, maximum=10_000_000),
        concurrency=t.number("concurrency", d("concurrency", 8), integer=True, minimum=1,
                             maximum=4096),
        max_tokens=t.number("max_tokens", d("max_tokens"), integer=True, minimum=1,
                            maximum=1_000_000),
        seed=t.number("seed", d("seed", 0), integer=True, minimum=0),
        temperature=t.number("temperature", d("temperature", 0.0), minimum=0.0, maximum=2.0),
        scoring=t.string("scoring", d("scoring")),
        request_timeout_s=t.number("request_timeout_s", d("request_timeout_s", 600.0),
                                   minimum=0, exclusive_minimum=True, maximum=86400),
        description=t.string("description", d("description", "")),
    )
    if fields["scoring"] not in SCORINGS:
        t.fail("scoring", f"{fields['scoring']!r} is not one of {', '.join(SCORINGS)}")
    # Kind-specific keys are read only for their kind: elsewhere t.done() rejects them.
    if kind in ("gsm8k", "arithmetic"):
        fields["shots"] = t.number("shots", d("shots"), integer=True, minimum=0, maximum=64)
    if kind == "arithmetic":
        fields["max_steps"] = t.number("max_steps", d("max_steps", 2), integer=True,
                                       minimum=1, maximum=2)
    if kind == "tau2":
        fields.update(
            domain=t.string("domain", d("domain"), pattern=r"[A-Za-z0-9_]+"),
            num_trials=t.number("num_trials", d("num_trials", 1), integer=True, minimum=1,
                                maximum=100),
            user_model=t.string("user_model", d("user_model", None)),
            user_base_url=t.string("user_base_url", d("user_base_url", None),
                                   pattern=r"https?://\S+"),
            tau2_command=t.str_list("tau2_command", d("tau2_command", ("tau2",))),
            timeout_s=t.number("timeout_s", d("timeout_s", 6 * 3600.0), minimum=0,
                               exclusive_minimum=True),
        )
        if not fields["tau2_command"]:
            t.fail("tau2_command", "must name the tau2 command, e.g. [\"tau2\"]")
    t.done()
    return AccuracyConfig(**fields)


def build_items(config: AccuracyConfig, data_dir: Path | None, gpqa_csv: Path | None = None,
                gpqa_sha256: str | None = None) -> list[Item]:
    """The scored items of a gsm8k, arithmetic or gpqa config; raises DatasetUnavailable."""
    if config.kind == "gsm8k":
        from pytest_rocm_llm.correctness.accuracy import gsm8k

        return gsm8k.build(data_dir, limit=config.limit, shots=config.shots, seed=config.seed)
    if config.kind == "arithmetic":
        from pytest_rocm_llm.correctness.accuracy import arithmetic

        return arithmetic.build(count=config.limit or DEFAULTS["arithmetic"]["limit"],
                                shots=config.shots, seed=config.seed,
                                max_steps=config.max_steps)
    if config.kind == "gpqa":
        from pytest_rocm_llm.correctness.accuracy import gpqa

        return gpqa.build(gpqa_csv, gpqa_sha256, limit=config.limit, seed=config.seed)
    raise ValueError(f"eval {config.name}: kind {config.kind} has no items; tau2 runs through "
                     "pytest_rocm_llm.correctness.accuracy.tau2.run_tau2")
