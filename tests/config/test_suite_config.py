"""suite.toml validation: typed objects out, or a UsageError naming file and key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm_llm.config.suite import load_suite, parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.errors import ConfigError
from tests.conftest import SMOKE_MODEL, suite_head

GOOD = suite_head("demo", {"reference": {"tp-size": 8, "kv-cache-dtype": "fp8_e4m3"}},
                  targets=["cpu", "mi355x"], default_profile="spec") + """
[profiles.spec]
description = "EAGLE 5/1/6"
env = { SGLANG_USE_AITER = 1 }

[profiles.spec.flags]
tp-size = 8
speculative-algorithm = "EAGLE"
speculative-num-steps = 5
cuda-graph-bs = [1, 2, 4]
enable-aiter-allreduce-fusion = true

[targets.cpu.profiles.spec]
flags = { "enable-aiter-allreduce-fusion" = false, "tp-size" = 1 }
env = { OMP_NUM_THREADS = "2" }
"""


def parse(text: str, name: str = "suite.toml") -> object:
    return parse_suite(Path("/suites/demo") / name, tomllib.loads(text))


def test_good_suite_parses_into_typed_objects() -> None:
    suite = parse(GOOD)
    assert suite.name == "demo" and suite.engine == "sglang"
    assert suite.targets == ("cpu", "mi355x")
    assert suite.default_profile == "spec"
    assert list(suite.profiles) == ["reference", "spec"]
    assert suite.profiles["spec"].flags["cuda-graph-bs"] == ("1", "2", "4")
    assert suite.profiles["spec"].env["SGLANG_USE_AITER"] == "1"


def test_profile_for_a_target_layers_target_suite_and_override() -> None:
    suite = parse(GOOD)
    cpu = suite.profile_for("spec", TARGETS["cpu"])
    # the target's own engine flags come first ...
    assert cpu.flags["device"] == "cpu" and cpu.flags["attention-backend"] == "torch_native"
    # ... the suite's override wins over the profile, and false removes a flag
    assert cpu.flags["tp-size"] == 1
    assert "enable-aiter-allreduce-fusion" not in cpu.flags
    assert cpu.env["OMP_NUM_THREADS"] == "2" and cpu.env["SGLANG_USE_CPU_ENGINE"] == "1"
    gpu = suite.profile_for("spec", TARGETS["mi355x"])
    assert gpu.flags["tp-size"] == 8 and gpu.flags["enable-aiter-allreduce-fusion"] is True
    assert "device" not in gpu.flags


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace('name = "demo"', 'name = "demo"\nnmae = "x"'),
         "key 'suite.nmae': unknown key"),
        (GOOD.replace('targets = ["cpu", "mi355x"]', 'targets = "cpu"'),
         "key 'suite.targets': expected an array of strings"),
        (GOOD.replace('targets = ["cpu", "mi355x"]', 'targets = ["cpu", "h100"]'),
         "key 'suite.targets': 'h100' is not one of"),
        (GOOD.replace('default_profile = "spec"', 'default_profile = "fast"'),
         "key 'suite.default_profile': 'fast' is not a profile"),
        (GOOD.replace('"tp-size" = 8, "kv', '"--tp-size" = 8, "kv'),
         "key 'profiles.reference.flags.--tp-size': write flags without the leading dashes"),
        (GOOD.replace('"tp-size" = 8, "kv', '"tp-size" = {a = 1}, "kv'),
         "key 'profiles.reference.flags.tp-size': a flag value is a string"),
        (GOOD.replace("SGLANG_USE_AITER = 1", "SGLANG_USE_AITER = true"),
         "key 'profiles.spec.env.SGLANG_USE_AITER': an environment value is a string or number"),
        (GOOD.replace("[targets.cpu.profiles.spec]", "[targets.h100.profiles.spec]"),
         "key 'targets.h100': unknown target"),
        (GOOD.replace("[targets.cpu.profiles.spec]", "[targets.cpu.profiles.fast]"),
         "key 'targets.cpu.profiles.fast': overrides a profile that does not exist"),
        (GOOD.replace('engine = "sglang"\n', "") + '\n[suite2]\n', "key 'suite2': unknown key"),
        (GOOD.replace('id = "HuggingFaceTB/SmolLM2-135M-Instruct"', ""),
         "key 'model.id': is required but missing"),
        (GOOD.replace("[model]", "[modle]"), "key 'model': is required but missing"),
        (f'[suite]\nname = "x"\n{SMOKE_MODEL}\n[profiles]\n',
         "table [profiles]: define at least one profile"),
        (GOOD.replace('[suite]\nname = "demo"', '[suite]\nname = "demo"\nengine = "trt"'),
         "key 'suite.engine': 'trt' is not a supported engine"),
    ],
)
def test_bad_suite_is_a_usage_error_naming_file_and_key(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(text)
    message = str(info.value)
    assert message.startswith("/suites/demo/suite.toml: "), message
    assert expected in message


@given(key=st.from_regex(r"[a-z_]{1,12}", fullmatch=True))
def test_any_unknown_top_level_key_is_rejected(key: str) -> None:
    data = tomllib.loads(GOOD)
    if key in data:
        return
    data[key] = {"x": 1}
    with pytest.raises(ConfigError, match=f"key '{key}': unknown key"):
        parse_suite(Path("suite.toml"), data)


@given(value=st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(),
                       st.lists(st.integers(), max_size=3)))
def test_a_wrong_type_for_a_string_field_is_rejected(value: object) -> None:
    data = tomllib.loads(GOOD)
    data["model"]["served_name"] = value
    with pytest.raises(ConfigError, match="key 'model.served_name': expected a string"):
        parse_suite(Path("suite.toml"), data)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "suite.toml"
    f.write_text("[suite\nname = 1")
    with pytest.raises(ConfigError, match=f"{f}: not valid TOML"):
        load_suite(f)


def test_bad_suite_stops_the_run_before_any_test(pytester: pytest.Pytester, suite_dir) -> None:
    suite_dir(GOOD.replace("[profiles.reference]", "[profiles.reference]\nflgas = {}"),
              {"test_a.py": "def test_a(llm_server): pass"})
    result = pytester.runpytest("--rocm-target", "cpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*suites/demo/suite.toml: key 'profiles.reference.flgas': "
                                 "unknown key*"])
    assert "loading server" not in result.stdout.str()


def test_a_flag_renamed_between_builds_is_overlaid_for_the_candidate_only() -> None:
    from pytest_rocm_llm.config.builds import CANDIDATE, Build
    from pytest_rocm_llm.config.settings import Settings
    from pytest_rocm_llm.serving.launch import check_argvs, launch_argv

    s = parse(GOOD + """
[candidate.profiles.spec.flags]
enable-aiter-allreduce-fusion = false
enable-allreduce-fusion = true
""")
    mi355x = TARGETS["mi355x"]
    base = s.profile_for("spec", mi355x).flags  # type: ignore[attr-defined]
    cand = s.profile_for("spec", mi355x, CANDIDATE).flags  # type: ignore[attr-defined]
    assert base["enable-aiter-allreduce-fusion"] is True and "enable-allreduce-fusion" not in base
    assert "enable-aiter-allreduce-fusion" not in cand and cand["enable-allreduce-fusion"]
    settings = Settings(mi355x, None, None, None, 60.0, False, None, "127.0.0.1", Path("."))
    build = Build(CANDIDATE, ("python3",))
    argv = launch_argv(s, mi355x, settings, "spec", ("python3",), "/m", 1, build)  # type: ignore[arg-type]
    assert "--enable-allreduce-fusion" in argv and "--enable-aiter-allreduce-fusion" not in argv
    checked = check_argvs(s, mi355x, settings, "sglang", "/m", build)  # type: ignore[arg-type]
    assert "--enable-allreduce-fusion" in checked["spec"]  # the candidate's parser sees it
    assert "--enable-aiter-allreduce-fusion" in launch_argv(  # the baseline is untouched
        s, mi355x, settings, "spec", ("python3",), "/m", 1)  # type: ignore[arg-type]


def test_a_candidate_overlay_of_an_unknown_profile_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="key 'candidate.profiles.fast': overlays a profile "
                                          "that does not exist"):
        parse(GOOD + "\n[candidate.profiles.fast]\nflags = { x = 1 }\n")
