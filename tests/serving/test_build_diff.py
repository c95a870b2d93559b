"""What changed between two builds besides speed (issue 14 item 3): their ``/server_info``
diffed. Build A is a real answer of the CPU reference (sglang 0.5.23); build B is a modified
copy, as an upgrade would change it (vllm#36702 flipped the ROCm attention backend by
default and cost 38% throughput; it was found from an outside dashboard, not CI)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm_llm.serving.build_diff import InfoChange, diff_server_info, format_diff

ROOT = Path(__file__).resolve().parents[2]
INFO: dict[str, Any] = json.loads(
    (ROOT / "tests/data/sglang-0.5.23-cpu-server_info.json").read_text())
# The smoke reference profile's flags (suites/smoke, cpu recipe), as the launch line shows.
SET_FLAGS = ("attention-backend", "max-total-tokens", "enable-cache-report", "watchdog-timeout",
             "sleep-on-idle", "context-length", "random-seed", "device")


def another_run(info: dict[str, Any]) -> dict[str, Any]:
    """The same build started again: another port, another temp dir, other timings."""
    b = copy.deepcopy(info)
    b["port"] = 41234
    b["launch_command"] = b["launch_command"].replace("59349", "41234")
    b["startup_time"]["load_weight"] = 0.25
    b["internal_states"][0]["last_gen_throughput"] = 17.5
    b["internal_states"][0]["memory_usage"]["startup_available"] = 14.2
    b["internal_states"][0]["startup_time"]["scheduler_e2e"] = 6.0
    b["download_dir"] = "/tmp/tmpab12cd/hf"
    return b


def test_a_build_against_itself_restarted_has_no_changes() -> None:
    assert diff_server_info(INFO, another_run(INFO)) == []


def test_a_flipped_default_comes_first() -> None:
    b = another_run(INFO)
    b["version"] = "0.5.24"
    b["sampling_backend"] = "flashinfer"  # a default nobody set
    b["attention_backend"] = "triton"  # set by both profiles, to different values
    b["enable_new_thing"] = True
    del b["kt_method"]
    changes = diff_server_info(INFO, b, set_flags_a=SET_FLAGS, set_flags_b=SET_FLAGS)
    kinds = [(c.key, c.kind) for c in changes]
    assert kinds[0] == ("sampling_backend", "default changed")
    assert ("version", "version") in kinds
    assert ("attention_backend", "set by profile") in kinds
    assert ("enable_new_thing", "added") in kinds
    assert ("kt_method", "removed") in kinds
    order = [k for _, k in kinds]
    assert order == sorted(order, key=["default changed", "version", "set by profile",
                                       "added", "removed"].index)


def test_a_default_flip_without_profile_flags_is_a_default_change() -> None:
    """vllm#36702 shape: same profile, new release, another attention backend by default."""
    a = copy.deepcopy(INFO)
    b = another_run(INFO)
    b["attention_backend"] = "aiter"
    changes = diff_server_info(a, b)
    assert changes == [InfoChange("attention_backend", "torch_native", "aiter",
                                  "default changed")]
    text = format_diff(changes)
    assert "attention_backend" in text and "torch_native -> aiter" in text
    assert "default" in text


def test_only_ports_are_volatile_not_fields_ending_in_port() -> None:
    b = another_run(INFO)
    b["enable_cache_report"] = False  # ends in "port" and is no port
    assert [c.key for c in diff_server_info(INFO, b)] == ["enable_cache_report"]


def test_set_flags_use_the_engine_field_names() -> None:
    b = another_run(INFO)
    b["tp_size"] = 2
    # --tensor-parallel-size is an alias of tp_size: a profile that set it explains the change
    changes = diff_server_info(INFO, b, set_flags_b={"tensor-parallel-size": "2"})
    assert [c.kind for c in changes] == ["set by profile"]


def test_nested_values_are_dotted_and_internal_states_do_not_repeat_top_level() -> None:
    b = another_run(INFO)
    b["cuda_graph_config"]["decode"]["max_bs"] = 64
    b["internal_states"][0]["effective_max_running_requests_per_dp"] = 2048
    b["internal_states"][0]["attention_backend"] = "triton"  # mirror of a top-level field
    keys = {c.key for c in diff_server_info(INFO, b)}
    assert keys == {"cuda_graph_config.decode.max_bs",
                    "internal_states.0.effective_max_running_requests_per_dp"}


def test_versions_outside_server_info_are_reported() -> None:
    changes = diff_server_info(INFO, another_run(INFO),
                               versions_a={"rocm": "7.0.2", "aiter": "0.1.5", "torch": "2.9.0"},
                               versions_b={"rocm": "7.1.0", "aiter": "0.1.5", "torch": "2.9.0"})
    assert changes == [InfoChange("versions.rocm", "7.0.2", "7.1.0", "version")]
    assert "rocm 7.0.2 -> 7.1.0" in format_diff(changes)


def test_model_paths_given_per_build_are_ignored() -> None:
    b = another_run(INFO)
    b["model_path"] = "/models/other-copy/smollm2"
    b["tokenizer_path"] = "/models/other-copy/smollm2"
    assert diff_server_info(INFO, b) == []


def test_secrets_stay_masked() -> None:
    a = dict(INFO, api_key="sk-old-secret-value")
    b = dict(another_run(INFO), api_key="sk-new-secret-value")
    text = format_diff(diff_server_info(a, b))
    assert "api_key" in text and "sk-" not in text


def test_no_changes_says_so() -> None:
    assert format_diff([]) == "server_info: no differences besides ports, paths and timings"


@pytest.mark.parametrize("bad", [[], "x", None])
def test_not_a_mapping_is_rejected(bad: Any) -> None:
    with pytest.raises(TypeError, match="server_info"):
        diff_server_info(INFO, bad)
