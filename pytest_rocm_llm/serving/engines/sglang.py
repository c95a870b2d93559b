"""sglang: launch line, readiness, server info, and flag validation by sglang's own parser.

Interface as read from sglang 0.5.23's source: ``python -m sglang.launch_server``;
``/health_generate`` answers 503 while starting and 200 once a one-token generation went
through; ``/server_info`` (``/get_server_info`` before it was renamed) returns the resolved
server args plus ``version`` and ``internal_states``; ``ServerArgs.add_cli_args`` builds the
launcher's argparse parser.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from pytest_rocm_llm.http import sync_client
from pytest_rocm_llm.serving.engines import ServerModule
from pytest_rocm_llm.serving.engines.flag_script import flag_check_script
from pytest_rocm_llm.serving.speculation import SpecCounters

# sglang's launcher parser is a plain argparse one that ServerArgs fills; parse_known_args
# hands back the words it does not know.
_CHECK_SCRIPT = flag_check_script(
    imports="from sglang.srt.server_args import ServerArgs",
    version_import="from sglang.version import __version__ as version",
    parser_base="argparse.ArgumentParser",
    parse="""
        parser = Parser(prog="sglang.launch_server", allow_abbrev=False)
        ServerArgs.add_cli_args(parser)
        try:
            _, unknown = parser.parse_known_args(argv)
        except ValueError as exc:
            results[name] = {"ok": False, "message": str(exc), "unknown": []}
            continue
        if unknown:
            results[name] = failed("unrecognized arguments: " + " ".join(unknown), unknown)
        else:
            results[name] = {"ok": True, "message": "", "unknown": []}
    """)


class SGLang(ServerModule):
    name = "sglang"
    label = "sglang"
    health_path = "/health_generate"
    launch_module = "sglang.launch_server"
    model_flag = "--model-path"
    check_script = _CHECK_SCRIPT

    def server_info(self, base_url: str, headers: Mapping[str, str] | None = None) -> dict:
        with sync_client(timeout_s=30.0, headers=headers) as client:
            r = client.get(base_url + "/server_info")
            if r.status_code == 404:  # builds before the rename
                r = client.get(base_url + "/get_server_info")
            r.raise_for_status()
            return r.json()

    def resolved_args(self, base_url: str,
                      headers: Mapping[str, str] | None = None) -> dict | None:
        """The server's resolved arguments by field name: ``/server_info`` is
        ``ServerArgs.resolved_dict()`` (each resolution decision applied over the launcher's
        input) plus ``version`` and ``internal_states``."""
        return self.server_info(base_url, headers)

    def spec_counters(self, base_url: str,
                      headers: Mapping[str, str] | None = None) -> SpecCounters | None:
        """Generated tokens and verify calls since start from ``/metrics`` (served with
        ``--enable-metrics``); None when the server has no metrics or did not speculate.
        Only the difference of two readings describes a run; it is compared with the
        per-request ``meta_info`` figures (serving/speculation.py). ``/server_info``'s
        ``avg_spec_accept_length`` is cumulative since start, so it is not read."""
        from pytest_rocm_llm.serving.speculation import sglang_counters

        try:
            with sync_client(timeout_s=30.0, headers=headers) as client:
                r = client.get(base_url + "/metrics")
        except httpx.HTTPError:
            return None  # a second source only: the requests themselves report the figure
        if r.status_code != 200:
            return None  # launched without --enable-metrics
        return sglang_counters(r.text)


ENGINE = SGLang()  # what the engine registry names (config/suite.py ENGINES)
