"""Is the output right? accuracy/ (GSM8K, GPQA-Diamond, arithmetic, tau2) · parity
(speculative vs greedy) · long_context · context_fit (its lengths against the running
server) · degeneration · stream_consistency · result (the one
contract every evaluation returns) · runs (each evaluation once per session)."""
