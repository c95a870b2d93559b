"""Accuracy evaluations (GSM8K, synthetic arithmetic, GPQA-Diamond, tau2-bench).

simple-evals style: an eval is a list of ``Item``s (a chat prompt and a gold answer), a
sampler (``pytest_rocm_llm.client.chat.ChatSampler``) and one runner that scores them into an
``EvalResult``. Everything is seeded. Importing this package imports nothing heavy: scipy is
loaded by ``stats`` when a statistic is computed, httpx by the sampler.
"""
