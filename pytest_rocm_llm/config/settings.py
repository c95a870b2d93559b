"""Run settings, resolved once: command line > ini > environment variable > default.

Each validator raises ``ConfigError`` naming the option, the bad value and what is
accepted, before any server or provisioning work starts (the plugin turns it into pytest's
usage error). No pytest in here: ``resolve`` reads a ``pytest.Config`` only through its
``getoption``/``getini``/``rootpath``.

Environment variables are all ``PYTEST_ROCM_LLM_*``; the older ``ROCM_LLM_*`` spellings
still work, with a DeprecationWarning naming the new one.
"""

from __future__ import annotations

import ipaddress
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from pytest_rocm_llm.config.builds import (
    DEFAULT_PAIR_TRIALS,
    INCUMBENT,
    Build,
    candidate_of,
    parse_container_args,
    parse_engine,
    parse_env_pairs,
    parse_flags,
    parse_inconclusive,
    parse_pair_budget,
    parse_pair_trials,
    parse_runtime,
)
from pytest_rocm_llm.config.targets import TARGETS, Target
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.sockets import bind_error

DEFAULT_START_TIMEOUT_S = 1800.0  # a 744B-parameter MoE loads for many minutes on 8 GPUs
DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True)
class Option:
    """One setting: its flag, ini name, environment variable and help."""

    flag: str
    ini: str | None
    env: str | None
    help: str
    default: Any = None
    is_bool: bool = False
    old_env: str | None = None  # the deprecated spelling of ``env``, still read
    repeat: bool = False  # may be given more than once (a list of values)


OPTIONS: tuple[Option, ...] = (
    Option("--rocm-target", "rocm_target", "PYTEST_ROCM_TARGET",
           f"hardware target to run suites on: {', '.join(TARGETS)}"),
    Option("--llm-endpoint", None, None,
           "attach to a running server at URL instead of launching one"),
    Option("--llm-engine-python", "llm_engine_python", "PYTEST_ROCM_LLM_ENGINE_PYTHON",
           "Python interpreter of the engine's own environment (never imported here)"),
    Option("--llm-engine-cmd", "llm_engine_cmd", "PYTEST_ROCM_LLM_ENGINE_CMD",
           "command prefix that runs the engine's Python, e.g. 'ssh node0 python3' (a container: "
           "--llm-engine-image)"),
    Option("--llm-model-path", None, "PYTEST_ROCM_LLM_MODEL_PATH",
           "model directory to serve, overriding the suite's"),
    Option("--llm-start-timeout", "llm_start_timeout", None,
           "seconds a server may take to become ready", DEFAULT_START_TIMEOUT_S),
    Option("--llm-keep-logs", "llm_keep_logs", None,
           "keep server logs of clean runs too (logs of failed servers are always kept)",
           False, is_bool=True),
    Option("--llm-log-dir", "llm_log_dir", None,
           "directory for server logs (default: under pytest's basetemp)"),
    Option("--llm-host", "llm_host", None,
           "address servers bind to", DEFAULT_HOST),
    Option("--llm-signatures", "llm_signatures", None,
           "extra known-failure signatures (TOML, same format as the built-in file)"),
    Option("--llm-cache-dir", "llm_cache_dir", "PYTEST_ROCM_LLM_CACHE",
           "where the CPU reference's engine environment and model are built once",
           "~/.cache/pytest-rocm-llm"),
    Option("--llm-baselines", "llm_baselines", "PYTEST_ROCM_LLM_BASELINES",
           "directory of stored baselines, <dir>/<target>/<suite>.json (default: "
           "<rootdir>/baselines)"),
    Option("--llm-update-baselines", None, None,
           "write this run's measurements as the new baselines and fail the checks whose "
           "baseline changed (review the diff, then run without it)", False, is_bool=True),
    Option("--llm-regen-all", None, None,
           "write this run's measurements as the new baselines and let the checks pass",
           False, is_bool=True),
    Option("--llm-results", "llm_results", None,
           "write one JSON file with every verdict, metric and provenance of the run"),
    Option("--llm-summary", "llm_summary", "PYTEST_ROCM_LLM_SUMMARY",
           "append the run's outcome and verdict tables as Markdown to FILE (CI: "
           "$GITHUB_STEP_SUMMARY)"),
    Option("--llm-data-dir", "llm_data_dir", "PYTEST_ROCM_LLM_DATA_DIR",
           "directory of evaluation datasets (gsm8k/test.jsonl, ...), the offline override; "
           "without it GSM8K is fetched from the Hugging Face Hub (openai/gsm8k, pinned, "
           "sha256-checked) into the Hugging Face cache", old_env="ROCM_LLM_DATA_DIR"),
    Option("--llm-gpqa-csv", "llm_gpqa_csv", "PYTEST_ROCM_LLM_GPQA_CSV",
           "your copy of GPQA-Diamond's CSV (not shipped: its authors ask that examples not "
           "be published); question text never leaves it", old_env="ROCM_LLM_GPQA_CSV"),
    Option("--llm-gpqa-sha256", "llm_gpqa_sha256", "PYTEST_ROCM_LLM_GPQA_SHA256",
           "expected sha256 of the GPQA CSV (optional)", old_env="ROCM_LLM_GPQA_SHA256"),
    Option("--llm-plan", None, None,
           "print each selected suite's plan (target, every profile's argv and environment, "
           "workloads, checks and floors, flag validation) and run nothing", False,
           is_bool=True),
    Option("--llm-allow-unjudged", "llm_allow_unjudged", None,
           "let a GPU run pass with declared checks that were not judged (skipped: no model, "
           "data or tool); they are still listed as NOT JUDGED", False, is_bool=True),
    Option("--llm-candidate-python", "llm_candidate_python", "PYTEST_ROCM_LLM_CANDIDATE_PYTHON",
           "paired run: Python interpreter of the candidate build's engine environment"),
    Option("--llm-candidate-cmd", "llm_candidate_cmd", "PYTEST_ROCM_LLM_CANDIDATE_CMD",
           "paired run: command prefix that runs the candidate build's engine Python"),
    Option("--llm-candidate-env", None, None,
           "paired run: KEY=VAL set in the candidate's servers (repeatable); without a "
           "candidate engine, a configuration change on the incumbent's install", repeat=True),
    Option("--llm-candidate-flags", None, None,
           "paired run: engine flags appended to every profile of the candidate build"),
    Option("--llm-pair-trials", "llm_pair_trials", None,
           "paired run: the least trials per build of each workload before its first "
           f"sequential look, in whole A-B-B-A blocks (default {DEFAULT_PAIR_TRIALS})",
           DEFAULT_PAIR_TRIALS),
    Option("--llm-pair-budget", "llm_pair_budget", "PYTEST_ROCM_LLM_PAIR_BUDGET",
           "paired run: the most trials per build of a workload; blocks run until every "
           "paired check decides or this is spent (default: sized from the target's trial "
           "CV to pass an unchanged build and catch a 5% slowdown)"),
    Option("--llm-inconclusive", "llm_inconclusive", None,
           "paired run: what an inconclusive paired verdict does to the exit status: "
           "fail | pass", "fail"),
    Option("--llm-engine-image", "llm_engine_image", "PYTEST_ROCM_LLM_ENGINE_IMAGE",
           "run each server in a container of its own from IMAGE (--llm-engine-python then "
           "names the interpreter inside it; default python3)"),
    Option("--llm-candidate-image", "llm_candidate_image", "PYTEST_ROCM_LLM_CANDIDATE_IMAGE",
           "paired run: the candidate build's image (each server in a container of its own)"),
    Option("--llm-container-runtime", "llm_container_runtime",
           "PYTEST_ROCM_LLM_CONTAINER_RUNTIME",
           "docker | podman, for --llm-*-image (default: the first on PATH)"),
    Option("--llm-container-arg", "llm_container_arg", "PYTEST_ROCM_LLM_CONTAINER_ARG",
           "an argument added to every container's run (repeatable), e.g. '-v /models:/models'",
           repeat=True),
    Option("--llm-container-image", "llm_container_image", "PYTEST_ROCM_LLM_CONTAINER_IMAGE",
           "container image (name@digest) the engine runs in, recorded in baselines"),
)


@dataclass(frozen=True)
class Settings:
    target: Target | None
    endpoint: str | None
    engine_prefix: tuple[str, ...] | None  # None: the target's default engine
    model_path: Path | None
    start_timeout_s: float
    keep_logs: bool
    log_dir: Path | None
    host: str
    cache_dir: Path
    signatures_file: Path | None = None
    baselines_dir: Path = Path("baselines")
    baseline_mode: str = "check"  # check | update (fail changed) | regen (write and pass)
    results_path: Path | None = None
    summary_path: Path | None = None  # appended to, as $GITHUB_STEP_SUMMARY is
    container_image: str | None = None
    plan: bool = False
    data_dir: Path | None = None
    gpqa_csv: Path | None = None
    gpqa_sha256: str | None = None
    allow_unjudged: bool = False
    candidate: Build | None = None  # a paired run's second build (config/builds.py)
    pair_trials: int = DEFAULT_PAIR_TRIALS
    pair_budget: int | None = None  # None: default_budget(target.trial_cv)
    inconclusive: str = "fail"
    engine_image: str | None = None
    container_runtime: str | None = None  # set when a build has an image
    container_args: tuple[str, ...] = ()

    @property
    def incumbent(self) -> Build:
        return Build(INCUMBENT, self.engine_prefix, image=self.engine_image)

    @property
    def builds(self) -> tuple[Build, ...]:
        """The builds every profile is served by: the incumbent, then any candidate."""
        return (self.incumbent,) if self.candidate is None else (self.incumbent, self.candidate)


ENV_PREFIX = "PYTEST_ROCM_LLM_"


def old_env_name(name: str) -> str | None:
    """The deprecated spelling of a ``PYTEST_ROCM_LLM_*`` variable a suite declares (its
    model's ``path_env``): the same name without ``PYTEST_``."""
    return name.removeprefix("PYTEST_") if name.startswith(ENV_PREFIX) else None


def env_lookup(name: str, old: str | None = None,
               environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(variable, value) of ``$name``, else of ``$old`` (the deprecated spelling) with a
    DeprecationWarning naming ``name``; None when neither is set to something non-empty."""
    environ = os.environ if environ is None else environ
    if environ.get(name):
        return name, environ[name]
    if old is not None and environ.get(old):
        warnings.warn(f"environment variable {old} is deprecated: set {name} instead",
                      DeprecationWarning, stacklevel=3)
        return old, environ[old]
    return None


class ConfigLike(Protocol):
    """What ``resolve`` reads of a ``pytest.Config`` (so this module needs no pytest)."""

    rootpath: Path

    def getoption(self, name: str, default: Any = ...) -> Any: ...

    def getini(self, name: str) -> Any: ...


def _raw(config: ConfigLike, opt: Option) -> Any:
    dest = opt.flag.lstrip("-").replace("-", "_")
    value = config.getoption(dest, default=None)
    if value is not None and value is not False:
        return value
    if opt.ini is not None:
        ini = config.getini(opt.ini)
        if ini not in (None, "", []):
            return ini
    found = env_lookup(opt.env, opt.old_env) if opt.env is not None else None
    if found is not None:
        return found[1]
    return opt.default


def _bad(flag: str, value: Any, accepted: str) -> ConfigError:
    return ConfigError(f"{flag}: invalid value {value!r}; {accepted}")


def parse_target(value: Any) -> Target | None:
    if value in (None, ""):
        return None
    key = str(value).strip().lower()
    if key not in TARGETS:
        raise _bad("--rocm-target", value, f"accepted: {', '.join(TARGETS)}")
    return TARGETS[key]


def parse_endpoint(value: Any) -> str | None:
    if value in (None, ""):
        return None
    parts = urlsplit(str(value))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _bad("--llm-endpoint", value, "expected a URL like http://127.0.0.1:30000")
    try:
        _ = parts.port  # raises on an out-of-range port
    except ValueError:
        raise _bad("--llm-endpoint", value, "the port must be 1-65535") from None
    if parts.username or parts.password:
        # Credentials in a URL end up in logs and reports; keys travel in headers only.
        raise _bad("--llm-endpoint", "<redacted>", "put no credentials in the URL")
    return str(value).rstrip("/")


def parse_timeout(value: Any) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise _bad("--llm-start-timeout", value, "expected seconds, e.g. 900") from None
    if not (0 < seconds <= 24 * 3600):
        raise _bad("--llm-start-timeout", value, "expected seconds between 0 and 86400")
    return seconds


def parse_host(value: Any) -> str:
    text = str(value).strip()
    if text == "localhost":
        return text
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise _bad("--llm-host", value, "expected an IP address such as 127.0.0.1") from None
    # Servers bind here after loading, minutes into a run; an address this machine does not
    # have used to surface only as "no free port could be claimed" after 200 tries.
    exc = bind_error(text, 0)
    if exc is not None:
        raise _bad("--llm-host", value, f"this machine cannot listen there "
                   f"({(exc.strerror or str(exc)).lower()}); use 127.0.0.1 (the default), "
                   "0.0.0.0 for every interface, or an address of this machine")
    return text


def _existing(flag: str, value: Any, want_dir: bool, accepted: str) -> Path | None:
    if value in (None, ""):
        return None
    path = Path(str(value)).expanduser()
    if not (path.is_dir() if want_dir else path.is_file()):
        raise _bad(flag, str(value), accepted)
    return path.resolve()


def parse_model_path(value: Any) -> Path | None:
    return _existing("--llm-model-path", value, True, "expected an existing model directory")


def parse_signatures(value: Any) -> Path | None:
    return _existing("--llm-signatures", value, False, "expected an existing TOML file")


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


def parse_baselines_dir(value: Any, rootdir: Path) -> Path:
    path = Path(str(value)).expanduser() if value not in (None, "") else rootdir / "baselines"
    if not path.is_absolute():
        path = rootdir / path
    if path.exists() and not path.is_dir():
        raise _bad("--llm-baselines", str(value), "expected a directory (it is a file)")
    return path


def parse_output_file(value: Any, flag: str = "--llm-results",
                      example: str = "results.json") -> Path | None:
    if value in (None, ""):
        return None
    path = Path(str(value)).expanduser().resolve()
    if path.is_dir():
        raise _bad(flag, str(value), f"expected a file path, e.g. {example} (it is a directory)")
    if not path.parent.is_dir():
        raise _bad(flag, str(value), f"its directory {path.parent} does not exist")
    return path


def parse_data_dir(value: Any, rootdir: Path) -> Path | None:
    """Relative to the rootdir. A directory that does not exist is not an error here: an
    evaluation whose file is missing from it stops, naming the file; nothing is fetched when
    a directory is given."""
    if value in (None, ""):
        return None
    path = Path(str(value)).expanduser()
    path = (path if path.is_absolute() else rootdir / path).resolve()
    if path.exists() and not path.is_dir():
        raise _bad("--llm-data-dir", str(value), "expected a directory (it is a file)")
    return path


def parse_sha256(value: Any) -> str | None:
    if value in (None, ""):
        return None
    text = str(value).strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise _bad("--llm-gpqa-sha256", value, "expected 64 hexadecimal digits")
    return text


def resolve(config: ConfigLike) -> Settings:
    """The run's settings from a ``pytest.Config`` (command line > ini > environment)."""
    return from_raw({opt.flag: _raw(config, opt) for opt in OPTIONS}, config.rootpath)


def from_raw(raw: Mapping[str, Any], rootdir: Path) -> Settings:
    """Validated settings from each option's raw value, keyed by flag; ConfigError on the
    first bad one."""
    keep = raw["--llm-keep-logs"]
    log_dir = raw["--llm-log-dir"]
    image = str(raw.get("--llm-engine-image") or "") or None
    cand_image = str(raw.get("--llm-candidate-image") or "") or None
    engine_prefix = parse_engine(raw["--llm-engine-python"], raw["--llm-engine-cmd"],
                                 image=image)
    candidate = candidate_of(
        parse_engine(raw.get("--llm-candidate-python"), raw.get("--llm-candidate-cmd"),
                     ("--llm-candidate-python", "--llm-candidate-cmd"), image=cand_image),
        parse_env_pairs(raw.get("--llm-candidate-env")),
        parse_flags(raw.get("--llm-candidate-flags")), engine_prefix, cand_image, image)
    runtime = (parse_runtime(raw.get("--llm-container-runtime"))
               if image or cand_image else None)
    return Settings(
        target=parse_target(raw["--rocm-target"]),
        endpoint=parse_endpoint(raw["--llm-endpoint"]),
        engine_prefix=engine_prefix,
        model_path=parse_model_path(raw["--llm-model-path"]),
        start_timeout_s=parse_timeout(raw["--llm-start-timeout"]),
        keep_logs=_flag(keep),
        log_dir=Path(str(log_dir)).expanduser().resolve() if log_dir else None,
        host=parse_host(raw["--llm-host"]),
        cache_dir=Path(str(raw["--llm-cache-dir"])).expanduser(),
        signatures_file=parse_signatures(raw["--llm-signatures"]),
        baselines_dir=parse_baselines_dir(raw["--llm-baselines"], rootdir),
        baseline_mode=("regen" if _flag(raw["--llm-regen-all"]) else
                       "update" if _flag(raw["--llm-update-baselines"]) else "check"),
        results_path=parse_output_file(raw["--llm-results"]),
        summary_path=parse_output_file(raw["--llm-summary"], "--llm-summary", "summary.md"),
        container_image=str(raw["--llm-container-image"] or "") or None,
        plan=_flag(raw["--llm-plan"]),
        data_dir=parse_data_dir(raw["--llm-data-dir"], rootdir),
        gpqa_csv=_existing("--llm-gpqa-csv", raw["--llm-gpqa-csv"], False,
                           "expected your copy of the GPQA-Diamond CSV file"),
        gpqa_sha256=parse_sha256(raw["--llm-gpqa-sha256"]),
        allow_unjudged=_flag(raw["--llm-allow-unjudged"]),
        candidate=candidate,
        pair_trials=(trials := parse_pair_trials(raw.get("--llm-pair-trials",
                                                          DEFAULT_PAIR_TRIALS))),
        pair_budget=parse_pair_budget(raw.get("--llm-pair-budget"), trials),
        inconclusive=parse_inconclusive(raw.get("--llm-inconclusive", "fail")),
        engine_image=image,
        container_runtime=runtime,
        container_args=parse_container_args(raw.get("--llm-container-arg")),
    )
