"""One masking rule for credentials: which names are secrets (and which engine flags only look
like one), masked values in argv, environments and free text, and a secret planted in a suite
profile found nowhere a run prints or stores a command line: the plan, the server log, the
Allure attachments, the provenance."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm_llm.config.suite import load_suite
from pytest_rocm_llm.redact import (
    MASK,
    MIN_TEXT_SECRET,
    is_secret_name,
    redact_argv,
    redact_env,
    redact_text,
    secret_values,
)
from tests.conftest import REFERENCE_CACHE, ROOT

SECRET_NAMES = ["api-key", "--api-key", "--admin-api-key", "hf_token", "HF_TOKEN", "--hf-token",
                "AWS_SECRET_ACCESS_KEY", "--ssl-keyfile-password", "db_password", "MY_API_KEY",
                "A_SECRET_X", "HUGGING_FACE_HUB_TOKEN", "AWS_SESSION_TOKEN", "DB_PASSWD",
                "GOOGLE_APPLICATION_CREDENTIALS", "proxy-auth", "WANDB_API_KEY"]
# Real sglang 0.5.23 / vLLM flag names with key/token in them that carry no credential.
PLAIN_NAMES = ["--kv-cache-dtype", "--max-total-tokens", "--tokenizer-path", "--tokenizer",
               "--max-prefill-tokens", "--speculative-num-draft-tokens", "--ssl-keyfile",
               "--bucket-time-to-first-token", "--kt-max-deferred-experts-per-token",
               "--speculative-token-map", "--skip-tokenizer-init", "--max-num-batched-tokens",
               "TOKENIZERS_PARALLELISM", "SGLANG_USE_AITER", "--dbo-decode-token-threshold",
               "--return-tokens-as-token-ids", "KEYS_DIR", "--tp-size", "PLAIN"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_credential_names_are_secrets(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_engine_flags_that_only_look_like_credentials_are_not(name: str) -> None:
    assert not is_secret_name(name)


def test_argv_masks_both_spellings_and_every_value_of_a_secret_flag() -> None:
    argv = ["python", "-m", "sglang.launch_server", "--api-key", "sk-1", "--port", "1",
            "--admin-api-key=sk-2", "--hf-token", "t1", "t2", "--max-total-tokens", "4096",
            "--kv-cache-dtype", "fp8_e4m3", "--enable-auth", "--tp-size", "8"]
    shown = redact_argv(argv)
    assert shown == ["python", "-m", "sglang.launch_server", "--api-key", MASK, "--port", "1",
                     f"--admin-api-key={MASK}", "--hf-token", MASK, MASK,
                     "--max-total-tokens", "4096", "--kv-cache-dtype", "fp8_e4m3",
                     "--enable-auth", "--tp-size", "8"]
    assert secret_values(argv) == ("sk-1", "sk-2")  # t1/t2: too short to look for in text


def test_env_masks_credentials_only() -> None:
    env = {"HF_TOKEN": "hf_x", "AWS_SECRET_ACCESS_KEY": "y", "OMP_NUM_THREADS": "2",
           "TOKENIZERS_PARALLELISM": "false"}
    assert redact_env(env) == {"HF_TOKEN": MASK, "AWS_SECRET_ACCESS_KEY": MASK,
                               "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false"}


def test_text_masks_the_longer_secret_whole() -> None:
    secrets = secret_values(["--api-key", "abcd"], {"HF_TOKEN": "abcdefgh"})
    assert redact_text("k=abcdefgh a=abcd", secrets) == f"k={MASK} a={MASK}"
    assert redact_text("abc keeps short values", ["abc"]) == "abc keeps short values"


_name = st.builds(lambda pre, word, sep: f"{pre}{sep}{word}",
                  st.sampled_from(["api", "hf", "admin-api", "AWS_SECRET_ACCESS", "my", "db"]),
                  st.sampled_from(["key", "token", "KEY", "TOKEN", "password", "secret"]),
                  st.sampled_from(["-", "_"]))
_value = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=MIN_TEXT_SECRET,
                 max_size=24).filter(lambda v: not v.startswith("-"))


@given(flags=st.lists(st.tuples(_name, _value, st.booleans()), min_size=1, max_size=4),
       env=st.dictionaries(_name, _value, max_size=3),
       filler=st.lists(st.sampled_from(["--tp-size", "8", "--max-total-tokens", "4096",
                                        "--enable-metrics"]), max_size=6))
def test_no_planted_secret_survives(flags, env, filler) -> None:
    argv = ["python", "-m", "sglang.launch_server", *filler]
    for name, value, joined in flags:
        argv += [f"--{name}={value}"] if joined else [f"--{name}", value]
    shown_argv = redact_argv(argv)
    # Every planted value's own word is masked, whatever else the line holds.
    for i, word in enumerate(argv):
        if any(word == f"--{n}={v}" for n, v, _ in flags):
            assert shown_argv[i] == word.partition("=")[0] + "=" + MASK
        elif (i and argv[i - 1].startswith("--") and "=" not in argv[i - 1]
              and is_secret_name(argv[i - 1])):
            assert shown_argv[i] == MASK
    assert all(v == MASK for v in redact_env(env).values())
    # In free text, every planted value is gone, wherever it appears.
    secrets = secret_values(argv, env)
    texts = [" ".join(shown_argv) + "\n" + json.dumps(redact_env(env)),
             f"$ {' '.join(argv)}\nserver_args={env!r}\n"]
    for value in {v for _, v, _ in flags} | set(env.values()):
        for text in texts:
            assert value not in redact_text(text, secrets)


# --- end to end: a secret planted in a suite profile ----------------------------------------

KEY, TOKEN = "sk-PLANTED-123", "hf_PLANTED"
PLANTED_PROFILE = f"""
[profiles.x]
description = "a profile carrying credentials"

[profiles.x.flags]
"api-key" = "{KEY}"
"tp-size" = 8

[profiles.x.env]
HF_TOKEN = "{TOKEN}"
"""

# An engine whose parser rejects the credential flag quoting its value, as argparse's
# "invalid choice" and vLLM's validation errors do, and prints its argv to stderr.
FAKE_ENGINE = """#!{python}
import json, sys
# The profiles come on stdin, or (the old way) as the last argument; the command line the
# host's other users could read (ps) is recorded.
with open("flag-check-argv.txt", "a") as fh:
    fh.write(" ".join(sys.argv) + "\\n")
payload = json.loads(sys.argv[-1] if sys.argv[-1].startswith("{{") else sys.stdin.read())
print(" ".join(sys.argv), file=sys.stderr)
results = {{name: {{"ok": "--api-key" not in argv,
                    "message": "argument --api-key: invalid value %r" % argv[-3:],
                    "unknown": []}} for name, argv in payload.items()}}
print("@@ROCM_LLM_FLAGCHECK@@" + json.dumps({{"version": "0.5.23", "results": results}}))
"""


def planted_suite(root: Path) -> Path:
    d = root / "suites" / "glm52"
    d.mkdir(parents=True)
    (d / "suite.toml").write_text((ROOT / "suites" / "glm52" / "suite.toml").read_text()
                                  + PLANTED_PROFILE)
    (d / "test_glm52_x.py").write_text("def test_x(llm_server):\n    raise AssertionError\n")
    return d


def assert_nowhere(text: str) -> None:
    assert KEY not in text and TOKEN not in text


def run_plan(pytester: pytest.Pytester, *engine: str) -> str:
    planted_suite(pytester.path)
    result = pytester.runpytest("--rocm-target", "mi355x", "--llm-plan", *engine,
                                "-p", "no:cacheprovider", "suites")
    out = result.stdout.str() + result.stderr.str()
    assert "profile x: a profile carrying credentials" in out
    return out


def test_plan_shows_no_planted_secret(pytester: pytest.Pytester) -> None:
    fake = pytester.path / "fake-engine"
    fake.write_text(FAKE_ENGINE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    out = run_plan(pytester, "--llm-engine-cmd", str(fake))
    assert "REJECTED by sglang 0.5.23's parser: argument --api-key: invalid value" in out
    assert f"--api-key '{MASK}'" in out and f"HF_TOKEN={MASK}" in out
    assert_nowhere(out)


def test_the_flag_check_keeps_credentials_off_the_command_line(
        pytester: pytest.Pytester) -> None:
    fake = pytester.path / "fake-engine"
    fake.write_text(FAKE_ENGINE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    run_plan(pytester, "--llm-engine-cmd", str(fake))
    argv = (pytester.path / "flag-check-argv.txt").read_text()
    assert "--port" in argv or "-c" in argv  # the parser really ran
    assert_nowhere(argv)


@pytest.mark.engine
def test_plan_through_sglangs_own_parser_shows_no_planted_secret(
        pytester: pytest.Pytester) -> None:
    # The engine's parser runs (a subprocess of a few seconds), no server starts.
    python = next(Path(REFERENCE_CACHE, "engines").glob("sglang-0.5.23-cpu-*/bin/python"),
                  None)
    if python is None:
        pytest.skip("no sglang 0.5.23 CPU reference environment in the cache")
    out = run_plan(pytester, "--llm-engine-python", str(python))
    # every glm52 profile plus the planted one (x)
    assert out.count("flags: accepted by sglang 0.5.23's parser") == len(
        load_suite(ROOT / "suites" / "glm52" / "suite.toml").profiles) + 1
    assert_nowhere(out)


# A stand-in server that does what engines do: echo its arguments and environment into its
# log, then die while loading.
ECHOING_SERVER = ("import os, sys; print('server_args', sys.argv, os.environ['HF_TOKEN'], "
                  "flush=True); sys.exit(3)")


def test_server_log_header_failure_tails_and_attachments_show_no_planted_secret(
        tmp_path: Path) -> None:
    from pytest_rocm_llm.plugin.judging import server_attachments
    from pytest_rocm_llm.serving.diagnosis import infrastructure_failure
    from pytest_rocm_llm.serving.ports import claim_port, release_port
    from pytest_rocm_llm.serving.process import (
        LaunchSpec,
        ServerProcess,
        ServerStartError,
        log_tail,
    )
    from pytest_rocm_llm.serving.server import LLMServer

    port = claim_port()
    try:
        spec = LaunchSpec(
            name="glm52/x", argv=(sys.executable, "-c", ECHOING_SERVER, "--api-key", KEY,
                                  "--max-total-tokens", "4096"),
            env={"HF_TOKEN": TOKEN}, host="127.0.0.1", port=port, health_path="/health",
            log_path=tmp_path / "server.log", start_timeout_s=10.0)
        proc = ServerProcess(spec, progress=lambda _m: None)
        with pytest.raises(ServerStartError) as info:
            with proc:
                pass
    finally:
        release_port(port)
    log = spec.log_path.read_text()
    header, body = log.split("\n", 1)
    assert header.endswith(f"--api-key {MASK} --max-total-tokens 4096")
    assert KEY in body and TOKEN in body  # the stand-in really echoed them
    assert_nowhere(header)
    assert_nowhere(str(info.value))
    assert "server_args" in info.value.tail and MASK in info.value.tail
    assert_nowhere(log_tail(spec.log_path))
    assert_nowhere(infrastructure_failure(None, info.value))

    server = LLMServer("glm52", "x", spec.base_url, "sglang", "m", "/m", spec.argv, spec.env,
                       "0.5.23", None, spec.log_path)
    shown = "\n".join(str(a.body) for a in server_attachments(server))
    assert "server_args" in shown and "HF_TOKEN=***" in shown
    assert_nowhere(shown)


def test_provenance_digest_does_not_depend_on_a_credential(tmp_path: Path) -> None:
    from pytest_rocm_llm.verdicts.provenance import collect

    def digest(key: str) -> str:
        return collect(engine="sglang", engine_version="0.5.23",
                       profile_argv=["--api-key", key, "--tp-size", "8"], model="m",
                       launch_argv=[], suite_dir=tmp_path, container_image=None,
                       local=False)["engine_flags_digest"]

    assert digest(KEY) == digest("sk-OTHER-456")
    assert digest(KEY) != collect(engine="sglang", engine_version="0.5.23",
                                  profile_argv=["--tp-size", "4"], model="m", launch_argv=[],
                                  suite_dir=tmp_path, container_image=None,
                                  local=False)["engine_flags_digest"]
