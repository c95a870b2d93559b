"""Kernel-path evidence from a server log: which attention backends, MoE kernels and
all-reduce the server ran, and how many tuned-config lookups hit or missed. Excerpts use the
log wording of sglang 0.5.23 and aiter; the CPU case is a recorded server log."""

from __future__ import annotations

from pathlib import Path

from pytest_rocm_llm.serving.kernel_paths import kernel_paths

REAL_CPU_LOG = Path(__file__).parents[1] / "data" / "sglang-0.5.23-cpu-smollm2.log"

SERVER_ARGS = ("[2026-08-20 11:00:00] server_args={'model_path': '/models/GLM-5.2-MXFP4', "
               "'tp_size': 8, 'disable_custom_all_reduce': False, 'attention_backend': 'aiter', "
               "'decode_attention_backend': None, 'prefill_attention_backend': None, "
               "'mm_attention_backend': None, 'speculative_draft_attention_backend': 'triton', "
               "'moe_runner_backend': 'auto', 'speculative_moe_runner_backend': 'triton'}")


def ranks(message: str, n: int = 8) -> list[str]:
    """``message`` as each TP rank logs it: one lookup, n lines."""
    return [f"[2026-08-20 11:02:{10 + r:02d} TP{r}] {message}" for r in range(n)]


MI355X_LOG = "\n".join([
    SERVER_ARGS,
    *ranks("[AR] Using AiterCustomAllreduce (AMD default)"),
    *ranks("[aiter] [fused_moe] using 2stage (kernelName1='moe_ck2stages_gemm1_256x32x64x128', "
           "kernelName2='moe_ck2stages_gemm2_256x32x128x128') for ('gfx950', 256, 64, 6144, "
           "2048, 32, 7)"),
    *ranks("[aiter] [fused_moe] using 2stage (kernelName1='moe_ck2stages_gemm1_256x64x64x128', "
           "kernelName2='moe_ck2stages_gemm2_256x64x128x128') for ('gfx950', 256, 512, 6144, "
           "2048, 32, 7)"),
    *ranks("[aiter] [fused_moe] using 1stage default for ('gfx950', 256, 16384, 6144, 2048, "
           "32, 7)"),
    *ranks("[aiter] [fused_moe] no tuned FlyDSL config for ('gfx950', 256, 1, 7168, 256, 256, "
           "8), using heuristic FlyDSL fallback (kn1='flydsl_moe1_t32', kn2='flydsl_moe2_t32')"),
    *ranks("[aiter] shape is M:6314, N:2048, K:2048, not found tuned config in "
           "/tmp/aiter_configs/a8w8_blockscale_tuned_gemm.csv, will use default config!"),
    "[2026-08-20 11:02:30 TP0] Using MoE kernel config from /sgl/configs/triton_3_4_0/E=32,"
    "N=2048,device_name=AMD_Instinct_MI355X,dtype=fp8_w8a8.json.",
    "[2026-08-20 11:03:00 TP0] Capture cuda graph begin. This can take up to several minutes.",
])


def test_a_recorded_cpu_reference_log() -> None:
    assert kernel_paths(REAL_CPU_LOG.read_text()) == {
        "attention_prefill_backend": "torch_native",
        "attention_decode_backend": "torch_native",
        "moe_runner_backend": "auto",
        "moe_kernels": [],
        "all_reduce": "none",  # tp_size 1: there is nothing to reduce
        "tuned_config_hits": 0,
        "tuned_config_misses": 0,
    }


def test_an_aiter_run_counts_each_lookup_once_across_ranks() -> None:
    assert kernel_paths(MI355X_LOG) == {
        "attention_prefill_backend": "aiter",
        "attention_decode_backend": "aiter",
        "moe_runner_backend": "auto",
        "moe_kernels": ["aiter", "triton"],
        "all_reduce": "aiter-custom",
        "tuned_config_hits": 3,  # two aiter MoE shapes, one Triton MoE config
        "tuned_config_misses": 3,  # 1-stage default, FlyDSL fallback, untuned GEMM
    }


def test_the_hybrid_attention_line_names_prefill_and_decode() -> None:
    log = SERVER_ARGS + "\n" + ("[2026-08-20 11:01:00 TP0] Using hybrid attention backend for "
                                "decode and prefill: decode_backend=aiter, "
                                "prefill_backend=triton.")
    paths = kernel_paths(log)
    assert (paths["attention_prefill_backend"], paths["attention_decode_backend"]) == (
        "triton", "aiter")


def test_split_backends_from_server_args() -> None:
    log = SERVER_ARGS.replace("'prefill_attention_backend': None",
                              "'prefill_attention_backend': 'fa3'")
    paths = kernel_paths(log)
    assert (paths["attention_prefill_backend"], paths["attention_decode_backend"]) == (
        "fa3", "aiter")


def test_all_reduce_paths() -> None:
    nccl = "[2026-08-20 11:01:00 TP0] [AR] All-reduce call path: NCCL (custom AR disabled)"
    failed = ("[2026-08-20 11:01:00 TP0] Setup Custom allreduce failed with RuntimeError('x'). "
              "To silence this warning, specify --disable-custom-all-reduce explicitly.")
    no_aiter = ("[2026-08-20 11:01:00 TP0] [AR] Aiter custom all-reduce not available; falling "
                "back to sglang CustomAllreduce. Details: No module named 'aiter'")
    assert kernel_paths(nccl)["all_reduce"] == "nccl"
    assert kernel_paths(failed)["all_reduce"] == "nccl"
    assert kernel_paths(no_aiter)["all_reduce"] == "sglang-custom"
    disabled = SERVER_ARGS.replace("'disable_custom_all_reduce': False",
                                   "'disable_custom_all_reduce': True")
    assert kernel_paths(disabled)["all_reduce"] == "nccl"
    assert kernel_paths(SERVER_ARGS)["all_reduce"] is None  # tp 8, no evidence: unknown


def test_sglang_triton_fallbacks_are_misses() -> None:
    log = "\n".join([
        "[2026-08-20 11:02:00 TP0] Using default MoE kernel config. Performance might be "
        "sub-optimal! Config file not found at /sgl/configs/E=256,N=256,dtype=fp4.json, you can "
        "create them with https://github.com/sgl-project/sglang/tree/main/benchmark",
        "[2026-08-20 11:02:00 TP0] Config file not found at /c/triton_3_5_0/E=8.json. Fallback "
        "to triton version 3.4.0 and use MoE kernel config from /c/triton_3_4_0/E=8.json. "
        "Performance might be sub-optimal!",
    ])
    paths = kernel_paths(log)
    assert (paths["tuned_config_hits"], paths["tuned_config_misses"]) == (0, 2)
    assert paths["moe_kernels"] == ["triton"]


def test_a_log_without_evidence_claims_nothing() -> None:
    assert kernel_paths("") == {
        "attention_prefill_backend": None, "attention_decode_backend": None,
        "moe_runner_backend": None, "moe_kernels": [], "all_reduce": None,
        "tuned_config_hits": 0, "tuned_config_misses": 0,
    }
