"""Accuracy statistics: the floor a sample size supports, standard error, paired McNemar.

scipy is imported inside the functions: loading the plugin must not import it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_rocm_llm.standard_error import of_proportion


def binomial_floor(reference: float, n: int, alpha: float, allowance: float = 0.0) -> float:
    """The lowest accuracy a build as good as ``reference`` can be expected to score on
    ``n`` items, minus ``allowance``.

    Precisely: with X ~ Binomial(n, reference) the number of correct answers, returns
    k*/n - allowance, where k* is the largest k in 0..n with P(X < k) <= alpha (the exact
    one-sided binomial critical value). A build whose true accuracy equals ``reference``
    scores below k*/n with probability at most ``alpha``; a score below the floor is
    evidence at level alpha that the build is worse. ``allowance`` widens the floor for a
    known, accepted gap (e.g. a quantized build against a higher-precision reference).
    GSM8K: n=1319, reference 0.955, alpha 0.01 -> 0.9409; GPQA-Diamond: n=198, 0.903 -> 0.8535.
    """
    if not 0.0 <= reference <= 1.0 or n < 1 or not 0.0 < alpha < 1.0 or allowance < 0:
        raise ValueError(f"binomial_floor(reference={reference}, n={n}, alpha={alpha}, "
                         f"allowance={allowance}): need 0<=reference<=1, n>=1, 0<alpha<1, "
                         "allowance>=0")
    import numpy as np
    from scipy.stats import binom

    k = np.arange(n + 1)
    below = binom.cdf(k - 1, n, reference)  # P(X < k) = P(X <= k - 1); 0 at k = 0
    k_star = int(k[below <= alpha].max())
    return k_star / n - allowance


def stderr(accuracy: float, n: int) -> float:
    """Standard error of a proportion over n independent items, sqrt(p(1-p)/n); NaN without
    items, as the accuracy itself is then (metrics hold floats)."""
    spread = of_proportion(accuracy, n)
    return float("nan") if spread is None else spread


def mcnemar(a_correct: Sequence[bool], b_correct: Sequence[bool]) -> tuple[int, int, float]:
    """Exact McNemar test of two runs on the same items, in the same order.

    Returns (b01, b10, p_value): b01 = items A got wrong and B right, b10 = items A got
    right and B wrong; p is the two-sided exact binomial test of b01 among the b01 + b10
    discordant items at 1/2 (1.0 when there are none).
    """
    if len(a_correct) != len(b_correct):
        raise ValueError(f"paired runs differ in length: {len(a_correct)} vs {len(b_correct)}")
    from scipy.stats import binomtest

    b01 = sum(1 for a, b in zip(a_correct, b_correct, strict=True) if not a and b)
    b10 = sum(1 for a, b in zip(a_correct, b_correct, strict=True) if a and not b)
    if b01 + b10 == 0:
        return 0, 0, 1.0
    return b01, b10, float(binomtest(b01, b01 + b10, 0.5).pvalue)
