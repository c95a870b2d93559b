"""The accuracy floor around a published score, counting that score's own sampling error.

A published 95.5% over 1319 items is itself a draw: the model's true accuracy is 95.5% give
or take 0.57 points. The exact binomial floor (correctness/accuracy/stats.binomial_floor)
treats the published figure as the truth, so a build exactly as good as the published run
fails it ~4.8% of the time on GSM8K and ~6% on GPQA-Diamond, not the 1% it states. When the
published item count is known, the floor here is the exact one-sided critical value of the
score a build as good as the published run gets on ``n`` items, the published score's own
uncertainty counted: the number right is beta-binomial, Beta(k + 1/2, n_pub - k + 1/2)
(the Jeffreys posterior of the published k of n_pub right) mixed over Binomial(n, p). The
floor is k*/n minus the stated allowance, k* the largest count with P(X < k*) <= alpha.
Without the published count, the exact binomial floor is all that can be said, and the
verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Floor:
    value: float
    how: str  # the method, in words, for the check's source line


def published_floor(reference: float, n: int, alpha: float, allowance: float = 0.0,
                    n_published: int | None = None) -> Floor:
    """The floor a build as good as the published run clears with probability 1 - alpha."""
    if n_published is None or n_published < 1:
        from pytest_rocm_llm.correctness.accuracy.stats import binomial_floor

        return Floor(binomial_floor(reference, n, alpha, allowance),
                     f"exact one-sided binomial floor of {reference:g} over n={n} at alpha "
                     f"{alpha:g} (the published item count is unknown, so its own sampling "
                     "error is not counted: the false-fail rate is above alpha)")
    import numpy as np
    from scipy.stats import betabinom

    k_pub = reference * n_published
    k = np.arange(n + 1)
    below = betabinom.cdf(k - 1, n, k_pub + 0.5, n_published - k_pub + 0.5)
    k_star = int(k[below <= alpha].max())
    return Floor(k_star / n - allowance,
                 f"exact one-sided floor of {reference:g} (published over n={n_published}) "
                 f"on n={n} at alpha {alpha:g}, counting the published score's own sampling "
                 "error (beta-binomial)")
