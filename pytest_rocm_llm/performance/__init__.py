"""Workloads and what they measure: seeded token-exact prompts, the async runners (single
stream, fixed rate, rate sweep), per-request records and their metrics, run once per session.
``python -m pytest_rocm_llm.performance`` drives a workload without pytest."""
