"""Workloads and what they measure: seeded token-exact prompts, the async runners (single
stream, fixed rate, rate sweep), their preconditions (did the run do what was declared), the
records' metrics, each run once per session; a paired run's trials are in verdicts/.
``python -m pytest_rocm_llm.performance`` drives a workload without pytest."""
