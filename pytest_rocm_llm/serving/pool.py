"""One server per (suite, profile, build): resolved, validated, started on first use, reused,
stopped.

A profile may name its own engine (the CPU reference runs speculative profiles on vLLM), so
the engine environment, model path and flag check are prepared once per (suite, engine,
build). A paired run serves every profile by two builds (config/builds.py); before a server of
one build starts or serves, the other build's servers stop: one large model fits a GPU node at
a time, and on the CPU reference a second server would steal the cores being measured (there,
where two fit, the idle build's server is parked instead: serving/parking.py). What a server
is launched with comes from serving/launch.py, which the plan prints from too.

No pytest in here: the plugin wraps it in fixtures and maps its exceptions to outcomes.
A profile that failed to start (or whose server died) stays failed for the rest of the run:
later tests get the same error at once instead of a relaunch storm.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from pytest_rocm_llm.config.builds import INCUMBENT, Build
from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite_model import ModelSpec, Suite
from pytest_rocm_llm.config.targets import HardwareMismatch, Target, check_hardware
from pytest_rocm_llm.errors import Unavailable
from pytest_rocm_llm.phases import PhaseLog
from pytest_rocm_llm.progress_log import progress_to
from pytest_rocm_llm.redact import redact_text, secret_values
from pytest_rocm_llm.serving import container, gpu_memory, launch
from pytest_rocm_llm.serving.engines import EngineError, get_engine
from pytest_rocm_llm.serving.launch import ConfigProblem, local_model_path, model_missing
from pytest_rocm_llm.serving.launched import EffectiveConfigMismatch, verify_launched
from pytest_rocm_llm.serving.parking import park, resume
from pytest_rocm_llm.serving.ports import claim_port, release_port
from pytest_rocm_llm.serving.process import (
    LaunchSpec,
    ServerDied,
    ServerError,
    ServerProcess,
)
from pytest_rocm_llm.serving.server import LLMServer

log = logging.getLogger(__name__)


class SuiteUnavailable(Unavailable):
    """The suite cannot run in this setting (no model, target not supported): a skip."""


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
    progress: Callable[[str], None] | None = None
    on_ready: Callable[[LLMServer], None] | None = None
    on_stop: Callable[[LLMServer, int | None], None] | None = None
    phases: PhaseLog = field(default_factory=PhaseLog)
    _servers: dict[tuple[str, str, str], LLMServer] = field(default_factory=dict)
    _failed: dict[tuple[str, str, str], Exception] = field(default_factory=dict)
    _suites: dict[tuple[str, str, str], _SuiteState] = field(default_factory=dict)
    restarts: int = 0  # starts of a server that had run and was stopped (the schedule's cost)
    _started: set[tuple[str, str, str]] = field(default_factory=set)
    _parked: set[tuple[str, str, str]] = field(default_factory=set)
    _last: dict[tuple[str, str, str], LLMServer] = field(default_factory=dict)
    _hw_error: Exception | None = None
    _hw_checked: bool = False
    _ports: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        # None: progress lines are log records of this module (shown live by the plugin)
        self.progress = progress_to(log, self.progress)

    @property
    def target(self) -> Target:
        assert self.settings.target is not None, "--rocm-target is required"
        return self.settings.target

    # -- resolution -------------------------------------------------------------------------

    def _build(self, build: Build | None) -> Build:
        return build if build is not None else self.settings.incumbent

    def engine_prefix(self, suite: Suite, engine: str,
                      build: Build | None = None) -> tuple[str, ...]:
        build = self._build(build)
        if build.engine_prefix is not None:
            if engine != suite.engine:
                # One --llm-engine-python/--llm-engine-cmd names one engine's environment.
                raise SuiteUnavailable(
                    f"profiles {', '.join(suite.profiles_of(engine))} of suite {suite.name} "
                    f"run on {engine}, but the {build.name} build's engine (--llm-engine-*/"
                    f"--llm-candidate-*) is for {suite.engine}")
            return build.engine_prefix
        if build.image is not None and self.target.is_gpu:
            return ("python3",)  # the image's; the CPU reference's is mounted at its path
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
                    engine: str, build: Build | None = None) -> str:
        local = local_model_path(suite, model, self.settings)
        if local is not None:
            return local
        own_prefix = self._build(build).engine_prefix
        if model.reference:
            from pytest_rocm_llm.serving.reference.provision import ensure_model

            if own_prefix is not None and len(prefix) != 1:
                raise SuiteUnavailable(f"reference model {model.reference} is built with a "
                                       "local interpreter; pass --llm-model-path")
            # The converter needs gguf and transformers: the sglang reference env has them.
            python = Path(prefix[0]) if engine == "sglang" or own_prefix else None
            with self.phases.measure("provision", f"model {model.reference}"):
                return str(ensure_model(self.settings.cache_dir, model.reference, python,
                                        self.progress))
        raise SuiteUnavailable(model_missing(model))

    def server_env(self, suite: Suite, profile: str,
                   build: Build | None = None) -> dict[str, str]:
        return launch.server_env(suite, self.target, profile, build)

    def launch_argv(self, suite: Suite, profile: str, prefix: tuple[str, ...],
                    model_path: str, port: int, build: Build | None = None) -> list[str]:
        return launch.launch_argv(suite, self.target, self.settings, profile, prefix,
                                  model_path, port, build)

    def _prepare_suite(self, suite: Suite, engine: str, build: Build) -> _SuiteState:
        state = self._suites.get((suite.name, engine, build.name))
        if state is not None:
            if state.error is not None:
                raise state.error
            return state
        state = _SuiteState()
        self._suites[(suite.name, engine, build.name)] = state
        try:
            if self.target.name not in suite.targets:
                raise SuiteUnavailable(f"suite {suite.name} does not run on target "
                                       f"{self.target.name} (targets: {', '.join(suite.targets)})")
            self._check_hardware()
            prefix = self.engine_prefix(suite, engine, build)
            state.model_path = self._model_path(suite, suite.model_for(self.target), prefix,
                                                engine, build)
            if build.image is not None:
                prefix = self.in_container(suite, engine, build, state.model_path) + prefix
            state.prefix = prefix
            state.engine_version = self.validate_flags(suite, engine, prefix,
                                                       state.model_path, build)
        except Exception as exc:
            state.error = exc
            raise
        return state

    def in_container(self, suite: Suite, engine: str, build: Build,
                     model_path: str) -> tuple[str, ...]:
        """The build's ``run_prefix``: every profile's environment names (values travel in
        the client's environment), the model, cache and log directories, and whatever the
        servers' PYTHONPATH names (the CPU reference's sgl_kernel stub)."""
        envs = [self.server_env(suite, p, build) for p in suite.profiles_of(engine)]
        self.log_dir.mkdir(parents=True, exist_ok=True)
        mounts = [m for m in (model_path, str(self.log_dir)) if Path(m).is_dir()]
        if self.settings.cache_dir.expanduser().is_dir():
            mounts.append(str(self.settings.cache_dir.expanduser().resolve()))
        mounts += [p for env in envs for p in env.get("PYTHONPATH", "").split(":") if p]
        return container.run_prefix(self.settings, self.target, build,
                                    (k for env in envs for k in env), mounts)

    def _check_hardware(self) -> None:
        if not self._hw_checked:
            self._hw_checked = True
            try:
                check_hardware(self.target, container.exec_part(
                    self.settings, self.target, self.settings.incumbent))
            except HardwareMismatch as exc:
                self._hw_error = exc
        if self._hw_error is not None:
            raise self._hw_error

    def validate_flags(self, suite: Suite, engine_name: str, prefix: tuple[str, ...],
                       model_path: str, build: Build | None = None) -> str:
        build = self._build(build)
        engine = get_engine(engine_name)
        argvs = launch.check_argvs(suite, self.target, self.settings, engine_name,
                                   model_path, build)
        first = next(iter(argvs))
        who = "" if build.name == INCUMBENT else f" ({build.name} build)"
        self.progress(f"[rocm-llm] {suite.name}: checking {len(argvs)} profile(s) with "
                      f"{engine_name}'s own argument parser{who}")
        with self.phases.measure("flag-check", f"{suite.name}/{engine_name}{who}"):
            version, checks = engine.check_flags(
                prefix, argvs, env=self.server_env(suite, first, build))
        if checks and all(c.kept for c in checks):
            self.progress(f"[rocm-llm] {suite.name}: the same command lines were accepted by "
                          f"this {engine_name} environment before (a completed CPU reference "
                          "environment never changes): that verdict is kept")
        bad = [c for c in checks if not c.ok]
        if bad:
            # A parser's message may quote a flag's value, credentials included.
            lines = [f"  profile {c.profile!r}: "
                     + redact_text(c.message, secret_values(
                         argvs[c.profile], self.server_env(suite, c.profile, build)))
                     for c in bad]
            names = sorted({f for c in bad for f in c.unknown})
            head = (f"{suite.file}: {engine_name} {version}{who} rejects flags "
                    + (f"{', '.join(names)} " if names else "")
                    + ("before launch; fix the profile(s) in suite.toml:" if not build.flags
                       else "before launch; fix the profile(s) or --llm-candidate-flags:"))
            raise ConfigProblem("\n".join([head, *lines]))
        return version

    # -- lifecycle ------------------------------------------------------------------------

    def get(self, suite: Suite, profile: str, build: Build | None = None) -> LLMServer:
        build = self._build(build)
        key = (suite.name, profile, build.name)
        if key in self._failed:
            raise self._failed[key]
        if profile not in suite.profiles:
            raise ConfigProblem(f"{suite.file}: no profile {profile!r} "
                                f"(profiles: {', '.join(suite.profiles)})")
        server = self._servers.get(key)
        if server is not None:
            self._one_build(build, server.name)
            if key in self._parked:
                self._parked.discard(key)
                assert server.process is not None
                resume(server.process)
                self.progress(f"[rocm-llm] {server.name}: continued (parked while the other "
                              "build ran)")
            try:
                server.check_alive()
            except ServerDied as exc:
                self._failed[key] = exc
                raise
            self._servers[key] = self._servers.pop(key)  # most recently used last
            return server
        if self.settings.endpoint is not None:
            return self._attach(suite, profile)
        engine = suite.engine_of(profile)
        for other in self.settings.builds:  # every build's flags checked before any launch
            if other.name != build.name:
                self._prepare_suite(suite, engine, other)
        state = self._prepare_suite(suite, engine, build)
        self._make_room(suite.name, profile, build)
        try:
            try:
                server = self._launch(suite, profile, state, build)
            except ServerError as exc:
                # a drain met on a GPU node: one retry, after the wait _launch makes
                why = (gpu_memory.drain_signature(exc.log_path, self.settings.signatures_file)
                       if self.target.is_gpu else None)
                if why is None:
                    raise
                self.progress(f"[rocm-llm] {suite.name}/{profile}: the start failed with "
                              f"{why} (GPU memory may still have been draining): one retry")
                server = self._launch(suite, profile, state, build)
        # A GPU still held after the wait's bound is sticky too: every later test of this
        # (profile, build) would wait the whole bound again (15 minutes on MI355X) to fail
        # the same way, so a CI job would time out before it reported what held the GPUs.
        except (ServerError, EngineError, OSError, gpu_memory.GpuMemoryHeld) as exc:
            self._failed[key] = exc
            raise
        self._verify_effective(suite, profile, server)
        self._servers[key] = self._last[key] = server
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
        self._servers[(suite.name, profile, INCUMBENT)] = server
        if self.on_ready is not None:
            self.on_ready(server)
        return server

    def _one_build(self, build: Build, incoming: str) -> None:
        """Never two builds' servers running at once (see the module's note): the other
        build's are parked where a second server fits (serving/parking.py), else stopped."""
        for key, srv in list(self._servers.items()):
            if key[2] == build.name or srv.process is None or key in self._parked:
                continue
            if self.target.max_servers >= 2 and park(srv.process):
                self._parked.add(key)
                self.progress(f"[rocm-llm] {srv.name}: parked (SIGSTOP) while {incoming} "
                              "runs (one build's servers at a time)")
                continue
            self.progress(f"[rocm-llm] {srv.name}: stopping before {incoming} "
                          "starts (one build's servers at a time)")
            self._stop(key)

    def _make_room(self, suite: str, profile: str, build: Build) -> None:
        incoming = f"{suite}/{profile}" + ("" if build.name == INCUMBENT else f"@{build.name}")
        self._one_build(build, incoming)
        launched = [k for k, srv in self._servers.items() if srv.process is not None]
        while len(launched) >= self.target.max_servers:
            key = launched.pop(0)  # least recently used
            self.progress(f"[rocm-llm] {self._servers[key].name}: stopping to make room for "
                          f"{incoming} (target {self.target.name} runs "
                          f"{self.target.max_servers} server(s) at a time)")
            self._stop(key)
        self.restarts += (suite, profile, build.name) in self._started
        self._started.add((suite, profile, build.name))

    def _launch(self, suite: Suite, profile: str, state: _SuiteState,
                build: Build) -> LLMServer:
        assert state.prefix is not None and state.model_path is not None
        engine = get_engine(suite.engine_of(profile))
        port = claim_port(self.settings.host)
        self._ports.append(port)
        argv = self.launch_argv(suite, profile, state.prefix, state.model_path, port, build)
        env = self.server_env(suite, profile, build)
        tail = "" if build.name == INCUMBENT else f"@{build.name}"
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{suite.name}-{profile}{tail}")
        spec = LaunchSpec(
            name=f"{suite.name}/{profile}{tail}", argv=tuple(argv), env=env,
            host=self.settings.host, port=port, health_path=engine.health_path,
            log_path=self.log_dir / f"{safe}-{port}.log",
            start_timeout_s=self.settings.start_timeout_s,
        )
        proc = (ServerProcess(spec, self.progress) if build.image is None else
                container.ContainerServer(spec, {"suite": suite.name, "profile": profile,
                                                 "build": build.name}, self.progress))
        if self.target.is_gpu:  # the GPUs this server uses, released by whatever ran before
            plat = self.target.platform
            gpu_memory.wait_until_idle(container.exec_part(self.settings, self.target, build),
                                       gpu_memory.devices_of(env, plat.device_variables),
                                       self.target.vram_idle_pct, self.target.vram_wait_s,
                                       self.progress, spec.name, plat)
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
                         proc, spec.log_path, build.name)

    def stop_profile(self, suite_name: str, profile: str) -> None:
        """Stop one profile's servers, of every build (no later test needs them)."""
        for key in [k for k in self._servers if k[:2] == (suite_name, profile)]:
            self._stop(key)

    def stop_suite(self, suite_name: str) -> None:
        for key in [k for k in self._servers if k[0] == suite_name]:
            self._stop(key)

    def stop_all(self) -> None:
        for key in list(self._servers):
            self._stop(key)
        for port in self._ports:
            release_port(port)
        self._ports.clear()

    def _stop(self, key: tuple[str, str, str]) -> None:
        server = self._servers.pop(key)
        if server.process is None:
            return
        if key in self._parked:  # a stopped process acts on SIGTERM only once continued
            self._parked.discard(key)
            resume(server.process)
        with self.phases.measure("server-stop", server.name):
            code = server.process.stop()
        self.progress(f"[rocm-llm] {server.name}: stopped (exit {code})")
        if self.on_stop is not None:
            self.on_stop(server, code)
        failed = key in self._failed
        if not failed and not self.settings.keep_logs and server.log_path is not None:
            server.log_path.unlink(missing_ok=True)

    def last(self, suite_name: str, profile: str, build: str) -> LLMServer | None:
        """The server a (suite, profile, build) last had, running or not (what a report
        describes without launching it again)."""
        return self._last.get((suite_name, profile, build))

    def serving_build(self, suite_name: str) -> str | None:
        """The build whose servers of the suite are up (not parked), if any."""
        builds = {k[2] for k, srv in self._servers.items()
                  if k[0] == suite_name and srv.process is not None and k not in self._parked}
        return next(iter(builds)) if len(builds) == 1 else None

    @property
    def running(self) -> list[LLMServer]:
        return list(self._servers.values())

    def _verify_effective(self, suite: Suite, profile: str, server: LLMServer) -> None:
        try:
            verify_launched(suite, self.target, server, self.progress)
        except (ServerDied, EffectiveConfigMismatch) as exc:
            self._failed[(suite.name, profile, server.build)] = exc
            raise


__all__ = ["ServerPool", "SuiteUnavailable"]
