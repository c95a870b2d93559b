"""The HTTP side of talking to a server: sse (the one server-sent-event reader),
request_bodies (one builder per endpoint shape), tokenizer (the served model's, loaded once),
generate (a small synchronous /generate client), chat (the accuracy evals' chat sampler),
completions (greedy generations with logprobs), streaming (streamed requests measured) and
records (one record per request). Clients come from ``pytest_rocm_llm.http``, which serving
uses too."""
