"""Do a long-context evaluation's prompts fit the running server? Before the first request,
against the limit the server reports (or, failing that, the model's config.json), which also
covers a profile that sets no context length and so takes the model's own
(config/context_limits.py checked the profile's flags when the suite was loaded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_rocm_llm.client.completions import Endpoint
from pytest_rocm_llm.config.context_limits import needed
from pytest_rocm_llm.serving.launch import ConfigProblem

# Where Hugging Face configs put the trained context, in the order sglang's
# get_context_length reads them.
CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                "max_position_embeddings")
# A server that cannot list its models in this long will not serve the evaluation either.
PROBE_TIMEOUT_S = 30.0


def model_context(model_dir: str | Path) -> tuple[str, int] | None:
    """(key, tokens) of the model's trained context from its config.json; None if
    unreadable. Multimodal configs nest it in ``text_config``."""
    try:
        cfg = json.loads((Path(model_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None
    for c in (cfg.get("text_config"), cfg):
        if isinstance(c, dict):
            for key in CONTEXT_KEYS:
                if isinstance(c.get(key), int) and not isinstance(c.get(key), bool):
                    return key, c[key]
    return None


def served_context(endpoint: Endpoint) -> int | None:
    """``max_model_len`` from the server's ``GET /v1/models`` (sglang and vLLM both report
    the context they enforce there); None if it does not say."""
    import httpx  # here: loading a suite (which imports this module) stays light

    from pytest_rocm_llm.http import sync_client

    try:
        with sync_client(endpoint.base_url.rstrip("/"), timeout_s=PROBE_TIMEOUT_S,
                         headers=endpoint.headers) as client:
            r = client.get("/v1/models")
        data: Any = r.json().get("data") if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    cards = [c for c in data or () if isinstance(c, dict)]
    card = next((c for c in cards if c.get("id") == endpoint.model), cards[0] if cards else {})
    value = card.get("max_model_len")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_served(name: str, lengths: tuple[int, ...], max_tokens: int, endpoint: Endpoint,
                 model_dir: str | Path) -> None:
    """Raise ConfigProblem before the first request when a length cannot fit the running
    server's context."""
    served = served_context(endpoint)
    trained = model_context(model_dir)
    if served is not None:
        limit = served
        source = (f"the server reports max_model_len {served} on GET /v1/models (the "
                  "profile's context length, or when it sets none the model's own")
        source += f": {trained[0]} = {trained[1]} in config.json)" if trained else ")"
    elif trained is not None:
        limit = trained[1]
        source = (f"the server does not report its context, so the model's {trained[0]} = "
                  f"{trained[1]} in {Path(model_dir) / 'config.json'} is the limit")
    else:
        return  # nothing to judge by: the server's own error names the problem
    # /generate is sglang's native API; the OpenAI one is how vLLM profiles are spoken to
    engine = "sglang" if endpoint.api == "generate" else "vllm"
    over = [n for n in lengths if needed(n, max_tokens, engine) > limit]
    if over:
        raise ConfigProblem(
            f"long-context eval {name!r}: length {max(over)} + max_tokens {max_tokens} does "
            f"not fit the server's context of {limit} tokens; {source}. Lower the lengths "
            f"(evals.{name}.lengths), or set the profile's context length (sglang "
            "context-length, vLLM max-model-len) within what the model was trained for")
