"""Start, own and stop engine servers: no pytest in here.

engines/ (sglang, vLLM: launch line, readiness, flag check by the engine's own parser) ·
process (one server process) · pool (one server per suite and profile) · ports · guardian
(reaping when pytest dies) · diagnosis and signatures (what a failure was) · kernel_paths ·
effective_config (/server_info against the profile) · speculation (accept
length counters) · reference/ (the embedded CPU reference).
"""
