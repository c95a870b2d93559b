"""One server per (suite, profile): resolved, validated, started on first use, reused, stopped.

A profile may name its own engine (the CPU reference runs speculative profiles on vLLM), so
the engine environment, model path and flag check are prepared once per (suite, engine).

No pytest in here: the plugin wraps it in fixtures and maps its exceptions to outcomes.
A profile that failed to start (or whose server died) stays failed for the rest of the run:
later tests get the same error at once instead of a relaunch storm.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from pytest_rocm_llm.config.settings import Settings, env_lookup, old_env_name
from pytest_rocm_llm.config.suite import ModelSpec, Suite
from pytest_rocm_llm.config.targets import HardwareMismatch, Target, check_hardware
from pytest_rocm_llm.errors import ConfigError, Unavailable
from pytest_rocm_llm.phases import PhaseLog
from pytest_rocm_llm.redact import redact_text, secret_values
from pytest_rocm_llm.serving.engines import EngineError, flags_to_argv, get_engine
from pytest_rocm_llm.serving.ports import claim_port, release_port
from pytest_rocm_llm.serving.process import (
    LaunchSpec,
    ServerDied,
    ServerError,
    ServerProcess,
    ServerStartError,
)


class SuiteUnavailable(Unavailable):
    """The suite cannot run in this setting (no model, target not supported): a skip."""


class ConfigProblem(ConfigError):
    """The suite's configuration is wrong for the installed engine (e.g. an unknown flag).
    Found only once a server is prepared, so it fails the test rather than the run."""


class EffectiveConfigMismatch(ConfigProblem):
    """The running server does not run a flag its profile set (dropped or overridden while
    the engine resolved its arguments)."""


@dataclass
class LLMServer:
    """What a test gets: where the server is and what it is."""

    suite: str
    profile: str
    base_url: str
    engine: str
    served_model_name: str
    model_path: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    engine_version: str
    process: ServerProcess | None = None  # None when attached to --llm-endpoint
    log_path: Path | None = None

    def check_alive(self) -> None:
        if self.process is not None:
            self.process.check_alive()


def local_model_path(suite: Suite, model: ModelSpec, settings: Settings) -> str | None:
    """The model directory the user named (option, variable, suite path), if any; a
    variable naming no directory is a ConfigProblem. Nothing is provisioned here."""
    if settings.model_path is not None:
        return str(settings.model_path)
    found = env_lookup(model.path_env, old_env_name(model.path_env)) if model.path_env \
        else None
    if found is not None:
        path = Path(found[1]).expanduser()
        if not path.is_dir():
            raise ConfigProblem(f"${found[0]}={path} is not a directory "
                                f"(suite {suite.name}, model {model.id})")
        return str(path)
    if model.path:
        path = Path(model.path).expanduser()
        if not path.is_absolute():
            path = suite.directory / path
        if path.is_dir():
            return str(path)
    return None


def model_missing(model: ModelSpec) -> str:
    hint = f"set ${model.path_env} or " if model.path_env else ""
    return f"model {model.id} not found: {hint}pass --llm-model-path"


def model_problem(suite: Suite, target: Target, settings: Settings) -> str | None:
    """Why the suite's model cannot be served here, known before any launch (None: it can,
    or the CPU reference will build it). Attach mode serves what the endpoint has."""
    if settings.endpoint is not None or target.name not in suite.targets:
        return None
    model = suite.model_for(target)
    try:
        if local_model_path(suite, model, settings) is not None or model.reference:
            return None
    except ConfigProblem as exc:
        return str(exc)
    return model_missing(model)


@dataclass
class _SuiteState:
    prefix: tuple[str, ...] | None = None
    model_path: str | None = None
    engine_version: str | None = None
    error: Exception | None = None


@dataclass
class ServerPool:
    settings: Settings
    log_dir: Path
    progress: Callable[[str], None] = print
    on_ready: Callable[[LLMServer], None] | None = None
    on_stop: Callable[[LLMServer, int | None], None] | None = None
    phases: PhaseLog = field(default_factory=PhaseLog)
    _servers: dict[tuple[str, str], LLMServer] = field(default_factory=dict)
    _failed: dict[tuple[str, str], Exception] = field(default_factory=dict)
    _suites: dict[tuple[str, str], _SuiteState] = field(default_factory=dict)
    _hw_error: Exception | None = None
    _hw_checked: bool = False
    _ports: list[int] = field(default_factory=list)

    @property
    def target(self) -> Target:
        assert self.settings.target is not None, "--rocm-target is required"
        return self.settings.target

    # -- resolution -------------------------------------------------------------------------

    def engine_prefix(self, suite: Suite, engine: str) -> tuple[str, ...]:
        if self.settings.engine_prefix is not None:
            if engine != suite.engine:
                # One --llm-engine-python/--llm-engine-cmd names one engine's environment.
                raise SuiteUnavailable(
                    f"profiles {', '.join(suite.profiles_of(engine))} of suite {suite.name} "
                    f"run on {engine}, but the engine given by --llm-engine-python/"
                    f"--llm-engine-cmd is for {suite.engine}")
            return self.settings.engine_prefix
        if not self.target.is_gpu:
            from pytest_rocm_llm.serving.reference.provision import ensure_engine

            with self.phases.measure("provision", f"{engine} environment"):
                python = ensure_engine(self.settings.cache_dir, self.progress, engine=engine)
            return (str(python),)
        # On a GPU node inside the engine's image, the engine's Python is usually the one
        # running pytest; flag validation reports clearly if sglang is not importable there.
        import sys

        return (sys.executable,)

    def _model_path(self, suite: Suite, model: ModelSpec, prefix: tuple[str, ...],
                    engine: str) -> str:
        local = local_model_path(suite, model, self.settings)
        if local is not None:
            return local
        if model.reference:
            from pytest_rocm_llm.serving.reference.provision import ensure_model

            if self.settings.engine_prefix is not None and len(prefix) != 1:
                raise SuiteUnavailable(f"reference model {model.reference} is built with a "
                                       "local interpreter; pass --llm-model-path")
            # The converter needs gguf and transformers: the sglang reference env has them.
            python = (Path(prefix[0]) if engine == "sglang" or self.settings.engine_prefix
                      else None)
            with self.phases.measure("provision", f"model {model.reference}"):
                return str(ensure_model(self.settings.cache_dir, model.reference, python,
                                        self.progress))
        raise SuiteUnavailable(model_missing(model))

    def server_env(self, suite: Suite, profile: str) -> dict[str, str]:
        env = dict(suite.profile_for(profile, self.target).env)
        if not self.target.is_gpu and suite.engine_of(profile) == "sglang":
            from pytest_rocm_llm.serving.reference.provision import STUBS

            # sgl_kernel has no CPU build on PyPI; the stub lets sglang import on CPU.
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(STUBS), env.get("PYTHONPATH", "")) if p)
        return env

    def _prepare_suite(self, suite: Suite, engine: str) -> _SuiteState:
        state = self._suites.get((suite.name, engine))
        if state is not None:
            if state.error is not None:
                raise state.error
            return state
        state = _SuiteState()
        self._suites[(suite.name, engine)] = state
        try:
            if self.target.name not in suite.targets:
                raise SuiteUnavailable(f"suite {suite.name} does not run on target "
                                       f"{self.target.name} (targets: {', '.join(suite.targets)})")
            self._check_hardware()
            prefix = self.engine_prefix(suite, engine)
            state.prefix = prefix
            state.model_path = self._model_path(suite, suite.model_for(self.target), prefix,
                                                engine)
            state.engine_version = self._validate_flags(suite, engine, prefix,
                                                        state.model_path)
        except Exception as exc:
            state.error = exc
            raise
        return state

    def _check_hardware(self) -> None:
        if not self._hw_checked:
            self._hw_checked = True
            try:
                check_hardware(self.target, self.settings.engine_prefix or ())
            except HardwareMismatch as exc:
                self._hw_error = exc
        if self._hw_error is not None:
            raise self._hw_error

    def launch_argv(self, suite: Suite, profile: str, prefix: tuple[str, ...],
                    model_path: str, port: int) -> list[str]:
        engine = get_engine(suite.engine_of(profile))
        flags = suite.profile_for(profile, self.target).flags
        model = suite.model_for(self.target)
        return engine.launch_argv(prefix, model_path, model.served_name,
                                  self.settings.host, port, flags)

    def _validate_flags(self, suite: Suite, engine_name: str, prefix: tuple[str, ...],
                        model_path: str) -> str:
        engine = get_engine(engine_name)
        model = suite.model_for(self.target)
        names = suite.profiles_of(engine_name)
        argvs = {
            name: [*engine.base_args(model_path, model.served_name, self.settings.host, 30000),
                   *flags_to_argv(suite.profile_for(name, self.target).flags)]
            for name in names
        }
        self.progress(f"[rocm-llm] {suite.name}: checking {len(argvs)} profile(s) with "
                      f"{engine_name}'s own argument parser")
        with self.phases.measure("flag-check", f"{suite.name}/{engine_name}"):
            version, checks = engine.check_flags(prefix, argvs,
                                                 env=self.server_env(suite, names[0]))
        bad = [c for c in checks if not c.ok]
        if bad:
            # A parser's message may quote a flag's value, credentials included.
            lines = [f"  profile {c.profile!r}: "
                     + redact_text(c.message, secret_values(argvs[c.profile],
                                                            self.server_env(suite, c.profile)))
                     for c in bad]
            names = sorted({f for c in bad for f in c.unknown})
            head = (f"{suite.file}: {engine_name} {version} rejects flags "
                    + (f"{', '.join(names)} " if names else "")
                    + "before launch; fix the profile(s) in suite.toml:")
            raise ConfigProblem("\n".join([head, *lines]))
        return version

    # -- lifecycle ------------------------------------------------------------------------

    def get(self, suite: Suite, profile: str) -> LLMServer:
        key = (suite.name, profile)
        if key in self._failed:
            raise self._failed[key]
        if profile not in suite.profiles:
            raise ConfigProblem(f"{suite.file}: no profile {profile!r} "
                                f"(profiles: {', '.join(suite.profiles)})")
        server = self._servers.get(key)
        if server is not None:
            try:
                server.check_alive()
            except ServerDied as exc:
                self._failed[key] = exc
                raise
            self._servers[key] = self._servers.pop(key)  # most recently used last
            return server
        if self.settings.endpoint is not None:
            return self._attach(suite, profile)
        state = self._prepare_suite(suite, suite.engine_of(profile))
        self._make_room(f"{suite.name}/{profile}")
        try:
            server = self._launch(suite, profile, state)
        except (ServerError, EngineError, OSError) as exc:
            self._failed[key] = exc
            raise
        self._verify_effective(suite, profile, server)
        self._servers[key] = server
        if self.on_ready is not None:
            self.on_ready(server)
        return server

    def _attach(self, suite: Suite, profile: str) -> LLMServer:
        if profile != suite.default_profile:
            raise SuiteUnavailable(f"attached to --llm-endpoint; profile {profile!r} of suite "
                                   f"{suite.name} is not launched in attach mode")
        engine = get_engine(suite.engine_of(profile))
        url = self.settings.endpoint or ""
        try:
            info = engine.server_info(url)
        except httpx.HTTPError as exc:
            raise ServerDied(f"cannot query --llm-endpoint {url}: {exc}") from None
        # The server's own model path may not exist here; --llm-model-path says where the
        # test process can read the tokenizer.
        model_path = (str(self.settings.model_path) if self.settings.model_path
                      else str(info.get("model_path", "")))
        server = LLMServer(suite.name, profile, url, engine.name,
                           str(info.get("served_model_name") or suite.model.served_name),
                           model_path, (), {}, str(info.get("version", "unknown")))
        self._servers[(suite.name, profile)] = server
        if self.on_ready is not None:
            self.on_ready(server)
        return server

    def _make_room(self, incoming: str) -> None:
        launched = [k for k, srv in self._servers.items() if srv.process is not None]
        while len(launched) >= self.target.max_servers:
            key = launched.pop(0)  # least recently used
            self.progress(f"[rocm-llm] {key[0]}/{key[1]}: stopping to make room for {incoming} "
                          f"(target {self.target.name} runs {self.target.max_servers} "
                          "server(s) at a time)")
            self._stop(key)

    def _launch(self, suite: Suite, profile: str, state: _SuiteState) -> LLMServer:
        assert state.prefix is not None and state.model_path is not None
        engine = get_engine(suite.engine_of(profile))
        port = claim_port(self.settings.host)
        self._ports.append(port)
        argv = self.launch_argv(suite, profile, state.prefix, state.model_path, port)
        env = self.server_env(suite, profile)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{suite.name}-{profile}")
        spec = LaunchSpec(
            name=f"{suite.name}/{profile}", argv=tuple(argv), env=env,
            host=self.settings.host, port=port, health_path=engine.health_path,
            log_path=self.log_dir / f"{safe}-{port}.log",
            start_timeout_s=self.settings.start_timeout_s,
        )
        proc = ServerProcess(spec, self.progress)
        with self.phases.measure("server-start", spec.name):
            proc.start()
            try:
                proc.wait_ready()
            except BaseException:
                proc.stop()
                raise
        model = suite.model_for(self.target)
        return LLMServer(suite.name, profile, spec.base_url, engine.name, model.served_name,
                         state.model_path, spec.argv, env, state.engine_version or "unknown",
                         proc, spec.log_path)

    def stop_profile(self, suite_name: str, profile: str) -> None:
        """Stop one profile's server (no later test needs it); a no-op if none runs."""
        if (suite_name, profile) in self._servers:
            self._stop((suite_name, profile))

    def stop_suite(self, suite_name: str) -> None:
        for key in [k for k in self._servers if k[0] == suite_name]:
            self._stop(key)

    def stop_all(self) -> None:
        for key in list(self._servers):
            self._stop(key)
        for port in self._ports:
            release_port(port)
        self._ports.clear()

    def _stop(self, key: tuple[str, str]) -> None:
        server = self._servers.pop(key)
        if server.process is None:
            return
        with self.phases.measure("server-stop", f"{server.suite}/{server.profile}"):
            code = server.process.stop()
        self.progress(f"[rocm-llm] {server.suite}/{server.profile}: stopped (exit {code})")
        if self.on_stop is not None:
            self.on_stop(server, code)
        failed = key in self._failed
        if not failed and not self.settings.keep_logs and server.log_path is not None:
            server.log_path.unlink(missing_ok=True)

    @property
    def running(self) -> list[LLMServer]:
        return list(self._servers.values())

    def _verify_effective(self, suite: Suite, profile: str, server: LLMServer) -> None:
        """Read the launched server's resolved arguments back (issue 15 item 1): a flag the
        engine's parser accepted can still be dropped or rewritten while it resolves them,
        and a run on the wrong configuration must not become a verdict. A mismatch stops the
        server and fails the profile before any workload runs."""
        from pytest_rocm_llm.serving.effective_config import (
            NOT_VERIFIABLE,
            describe,
            failures,
            verify,
        )
        from pytest_rocm_llm.serving.process import log_tail

        assert server.process is not None
        key = (suite.name, profile)
        name = f"{suite.name}/{profile}"
        resolved_args = getattr(get_engine(server.engine), "resolved_args", None)
        try:
            info = resolved_args(server.base_url) if resolved_args is not None else None
        except (httpx.HTTPError, ValueError) as exc:
            server.process.stop()
            err = ServerDied(f"{name}: ready, but its resolved arguments could not be read "
                             f"({type(exc).__name__}: {exc})", server.log_path,
                             log_tail(server.log_path) if server.log_path else "")
            self._failed[key] = err
            raise err from None
        if info is None:
            self.progress(f"[rocm-llm] {name}: effective configuration {NOT_VERIFIABLE} "
                          f"({server.engine} reports no resolved arguments)")
            return
        found = verify(suite.profile_for(profile, self.target).flags, info)
        unverified = [m.describe() for m in found if not m.fails]
        if unverified:
            self.progress(f"[rocm-llm] {name}: " + "; ".join(unverified))
        if failures(found):
            server.process.stop()
            mismatch = EffectiveConfigMismatch(describe(
                suite.name, profile, server.engine, str(info.get("version", "unknown")),
                suite.file, found) + (f"\nserver log: {server.log_path}"
                                      if server.log_path else ""))
            self._failed[key] = mismatch
            raise mismatch


__all__ = ["ServerPool", "LLMServer", "SuiteUnavailable", "ConfigProblem", "ServerStartError"]
