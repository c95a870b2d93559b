"""``[evals.<name>]`` tables of the accuracy kinds, and the items a config asks for.

Kept free of HTTP and scipy imports: suite parsing loads this module at plugin start.

    [evals.gsm8k]
    kind = "gsm8k"          # gsm8k | arithmetic | gpqa | tau2
    limit = 200             # seeded subset of the test set (all items when absent)
    shots = 5               # few-shot exemplars from train.jsonl (gsm8k, arithmetic)
    scoring = "flexible"    # which extraction "accuracy" reports; both are always reported
    paired_margin = 2.0     # a paired run: "pass" = shown not worse than this (points)
    paired_discordance = 0.05  # assumed share of items two builds answer differently
    chat_template_kwargs = { enable_thinking = true }   # sent with every request, as is
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from pytest_rocm_llm.config.fields import StrList, check, matches, one_of
from pytest_rocm_llm.config.toml import Table, TomlTable, override_of, validate
from pytest_rocm_llm.correctness.accuracy.items import Item

KINDS = ("gsm8k", "arithmetic", "gpqa", "tau2")
# Each whole set's items (GSM8K test, GPQA-Diamond, the generated arithmetic problems) and
# tau2's tasks per domain: what a run without a limit scores.
FULL_SET = {"gsm8k": 1319, "gpqa": 198, "arithmetic": 50}
TAU2_TASKS = {"airline": 50}
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
    # a paired run: the margin "pass" needs (points), the assumed discordant share of items
    paired_margin: float = 2.0
    paired_discordance: float = 0.05
    # Sent as chat_template_kwargs with every request (a reasoning model's thinking mode);
    # pairs, so the config stays hashable and picklable.
    chat_template_kwargs: tuple[tuple[str, Any], ...] = ()
    # arithmetic
    max_steps: int = 2
    # tau2
    domain: str | None = None
    num_trials: int = 1
    user_model: str | None = None  # served name of the user simulator's model
    user_base_url: str | None = None  # None: the server under test also plays the user
    tau2_command: tuple[str, ...] = ("tau2",)
    timeout_s: float = 6 * 3600.0

    @property
    def items_scored(self) -> int | None:
        """Items one run scores (tau2: tasks x trials); None where the whole set's size is
        not known before it is read."""
        if self.kind == "tau2":
            tasks = self.limit or TAU2_TASKS.get(self.domain or "")
            return tasks * self.num_trials if tasks else None
        return self.limit or FULL_SET.get(self.kind)

    def estimated_s(self, decode: float, prefill: float, batch: float | None) -> float:
        """One build's run (report/run_time.py): every answer at max_tokens, ``concurrency``
        at a time; tau2-bench's own run is bounded by the eval's timeout."""
        if self.kind == "tau2":
            return float(self.timeout_s)
        rate = min(batch or decode, self.concurrency * decode)
        return (self.items_scored or 0) * self.max_tokens / rate


class _Accuracy(TomlTable):
    """Keys every accuracy kind reads; each kind's model adds its own and its defaults."""

    kind: str
    profile: str | None = None
    limit: int | None = Field(None, ge=1, le=10_000_000)
    concurrency: int = Field(8, ge=1, le=4096)
    max_tokens: int = Field(512, ge=1, le=1_000_000)
    seed: int = Field(0, ge=0)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    scoring: Annotated[str, one_of(SCORINGS)] = "flexible"
    request_timeout_s: float = Field(600.0, gt=0, le=86400)
    description: str = ""
    paired_margin: float = Field(2.0, gt=0, le=100)
    paired_discordance: float = Field(0.05, ge=0, le=1)
    chat_template_kwargs: dict[str, str | bool | int | float] = Field(default_factory=dict)

    @field_validator("chat_template_kwargs", mode="before")
    @classmethod
    def _pairs(cls, v: Any) -> Any:
        # a per-target override starts from the parsed config, which holds pairs
        return dict(v) if isinstance(v, tuple) else v


def _default(kind: str, key: str, **bounds: Any) -> Any:
    return Field(DEFAULTS[kind][key], **bounds)


class Gsm8kTable(_Accuracy):
    kind: Literal["gsm8k"] = "gsm8k"
    shots: int = _default("gsm8k", "shots", ge=0, le=64)
    max_tokens: int = _default("gsm8k", "max_tokens", ge=1, le=1_000_000)


class ArithmeticTable(_Accuracy):
    kind: Literal["arithmetic"] = "arithmetic"
    shots: int = _default("arithmetic", "shots", ge=0, le=64)
    max_tokens: int = _default("arithmetic", "max_tokens", ge=1, le=1_000_000)
    limit: int | None = _default("arithmetic", "limit", ge=1, le=10_000_000)
    max_steps: int = Field(2, ge=1, le=2)


class GpqaTable(_Accuracy):
    kind: Literal["gpqa"] = "gpqa"
    max_tokens: int = _default("gpqa", "max_tokens", ge=1, le=1_000_000)
    scoring: Annotated[str, one_of(SCORINGS)] = DEFAULTS["gpqa"]["scoring"]


class Tau2Table(_Accuracy):
    kind: Literal["tau2"] = "tau2"
    max_tokens: int = _default("tau2", "max_tokens", ge=1, le=1_000_000)
    scoring: Annotated[str, one_of(SCORINGS)] = DEFAULTS["tau2"]["scoring"]
    domain: Annotated[str, matches(r"[A-Za-z0-9_]+")]
    num_trials: int = Field(1, ge=1, le=100)
    user_model: str | None = None
    user_base_url: Annotated[str | None, matches(r"https?://\S+")] = None
    tau2_command: Annotated[StrList, check(bool, lambda _: 'must name the tau2 command, '
                                                         'e.g. ["tau2"]')] = ("tau2",)
    timeout_s: float = Field(6 * 3600.0, gt=0)


# kind -> its table: a new accuracy kind is one model here, no branch elsewhere.
TABLES: dict[str, type[_Accuracy]] = {
    "gsm8k": Gsm8kTable, "arithmetic": ArithmeticTable, "gpqa": GpqaTable, "tau2": Tau2Table}


def paired_only_reason(config: Any) -> str | None:
    """Why an evaluation's score has no absolute floor (None: it may have one). tau2-bench's
    published numbers use a fixed external user simulator (gpt-4.1 at temperature 0 by
    default); with none declared (``user_base_url``), the server under test plays the user
    too, which is another benchmark than the published one."""
    if getattr(config, "kind", None) != "tau2" or config.user_base_url:
        return None
    return ("the user simulator is the server under test, not tau2-bench's fixed external "
            "simulator (gpt-4.1 at temperature 0 by default), so the published score is not "
            "the same benchmark: no absolute floor; a paired run (the same tasks on both "
            "builds) decides. Declare a simulator with user_base_url and user_model to have "
            "one")


def parse_accuracy(name: str, t: Table, base: AccuracyConfig | None = None) -> AccuracyConfig:
    """An accuracy eval from its table; with ``base``, a per-target override of some fields."""
    kind = t.kind(KINDS, "an accuracy eval", base)
    schema = TABLES[kind]
    table = validate(schema, t, {"kind": kind, **override_of(schema, base, t.data)})
    fields = table.model_dump()
    fields["chat_template_kwargs"] = tuple(sorted(fields["chat_template_kwargs"].items()))
    return AccuracyConfig(name=name, **fields)


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
