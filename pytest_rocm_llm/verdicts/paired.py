"""Paired verdicts: the old build (A, the incumbent) and the new build (B, the candidate)
measured in one run on one node, judged against each other (issue 14).

A stored baseline from another day cannot be tight: sglang's own AMD stored-baseline gate
needs +-15% because night-to-night throughput moves up to 7% (output) and 24% (input). Two
builds measured side by side share the node's day, so only their difference is judged.

Order. Trials run in balanced order, A-B-B-A A-B-B-A ... (``balanced_order``), and the i-th
A trial is paired with the i-th B trial. Consecutive slots form the pairs (A,B), (B,A), ...:
under a linear drift of d per slot the log ratios are effect + d, effect - d, ... and their
mean is the effect, while A-always-first (A,B), (A,B), ... gives effect + d every time. In
vllm-project/vllm-ascend#17160 a "stable regression" seen with A always before B vanished
under A-B-B-A: the per-pair effect changed sign; the mean difference was smaller than the
drift. Drift that A-B-B-A cancels in the mean still widens the interval (the +-d alternates),
which errs towards "inconclusive", never towards a false verdict. Exact cancellation needs
an even number of trials per build (whole A-B-B-A blocks).

Performance. Per pair r_i = log(b_i / a_i); the mean of r and its Student t interval at
1 - alpha (two-sided; ``scipy.stats.t``, a declared dependency, imported only when called).
Reported relative: delta = exp(mean) - 1 and its interval exp(mean -+ h) - 1, signed as
measured (a latency 10% up is +10%). Two servers of one build sit at their own levels for
their whole life (memory and thread placement: benchmarks/bench_same_build.py), and every
pair of trials on the same two servers shares that offset, which more trials on them cannot
average away. Where both builds' servers are fresh for each A-B-B-A block (``per_block``:
the CPU reference, where two fit), the block is the unit: the interval is the t interval of
the blocks' mean log ratios (blocks - 1 degrees of freedom), so the servers' spread is
measured in the run itself, not assumed.
``incumbent`` and ``candidate`` are the plain means of the trials, shown for reading; the
verdict uses the paired ratios only.

Accuracy. The same items answered by both builds: the exact McNemar test on the discordant
items (``correctness.accuracy.stats.mcnemar``) and Newcombe's (1998) method 10 interval for
the paired difference of proportions (Wilson score limits of each build combined with the
correlation of the pairs; matches the paper's worked examples). delta is absolute here
(candidate accuracy - incumbent accuracy, ``delta_kind = "absolute"``); the margin and
tolerance are given in points.

The three-way verdict (``classify``). Effect e = the change in the GOOD direction (positive
= better: delta for higher-is-better metrics, -delta for lower-is-better), with its interval
[lo, hi] at 1 - alpha (default alpha 0.02, a 98% interval: see DEFAULT_ALPHA). In this order:
  regressed     hi < 0 and e < -tolerance (surely worse, by more than the tolerance);
  improved      lo > 0 and e > tolerance;
  pass          lo > -margin (shown not worse than the margin);
  inconclusive  otherwise: the interval is too wide to say. What it does to the exit status
                is the user's choice (default: fail).
For accuracy "surely" also needs McNemar's p < alpha. A regression beyond the margin is
"regressed" once the interval excludes 0; a regression between the tolerance and the margin
that the interval cannot place is "inconclusive". With fewer than 2 pairs no interval exists:
inconclusive, saying so. An inconclusive verdict estimates how many trials per build would
decide at the spread seen (``trials_needed``).

Outputs. Greedy outputs of both builds compared by token id, per prompt: the first
divergence, and whether A's own top-2 logprob gap there was a near tie (<= ``near_tie``
nats, the tolerance of ``correctness.parity``): "outputs changed on k of n prompts (j at near
ties)". A failure only where the suite demands identical outputs; that is the caller's rule.

No pytest in here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from statistics import NormalDist, fmean
from typing import Any, Literal

from pytest_rocm_llm.config.checks import Direction
from pytest_rocm_llm.correctness.accuracy.stats import mcnemar
from pytest_rocm_llm.verdicts.status import PairedStatus

DeltaKind = Literal["relative", "absolute"]

# The near-tie tolerance of speculative parity (ParityConfig.tolerance): numerics of another
# build may flip a choice this close, never a clear winner.
NEAR_TIE_NATS = 0.1
MIN_PAIRS = 2  # a t interval needs a spread: two pairs at least
# A two-sided 98% interval: "regressed" needs its upper end below 0, so identical builds are
# called regressed at most 1% of the time whatever the noise (the false-fail target).
# At 95% that rate reaches 2.5% once the noise dwarfs the tolerance (measured by
# benchmarks/bench_paired_calibration.py: 2.1-2.9% at CV 4% and 4-32 trials per build).
DEFAULT_ALPHA = 0.02
_MAX_TRIALS_ESTIMATE = 10_000

_BLOCK = ("A", "B", "B", "A")


def level(alpha: float) -> str:
    """An interval's confidence level as text: 98%, 99.87% (a sequential look's)."""
    return f"{(1 - alpha) * 100:.4g}%"


def balanced_order(trials: int) -> list[str]:
    """The run order for ``trials`` trials per build: A-B-B-A blocks, 2 * trials slots (an odd
    count ends with a half block A-B, whose pair is not drift-balanced)."""
    if trials < 1:
        raise ValueError(f"balanced_order(trials={trials}): need at least 1 trial per build")
    return [_BLOCK[i % 4] for i in range(2 * trials)]


def classify(effect: float, lo: float, hi: float, *, margin: float, tolerance: float,
             significant: bool | None = None) -> PairedStatus:
    """The three-way rule of the module docstring on effect e and its interval [lo, hi],
    all in the good direction. ``significant=False`` (a test that did not reject) withholds
    regressed and improved."""
    if significant is not False:
        if hi < 0 and effect < -tolerance:
            return PairedStatus.REGRESSED
        if lo > 0 and effect > tolerance:
            return PairedStatus.IMPROVED
    if lo > -margin:
        return PairedStatus.PASS
    return PairedStatus.INCONCLUSIVE


@dataclass(frozen=True)
class PairedVerdict:
    check: str
    metric: str
    unit: str
    direction: Direction
    incumbent: float  # central values: mean over trials, or accuracy
    candidate: float
    delta: float  # candidate vs incumbent, signed as measured (relative, or absolute)
    ci_low: float  # interval of delta at 1 - alpha; NaN when none exists
    ci_high: float
    status: PairedStatus
    n: int  # pairs of trials, or items
    method: str
    detail: str
    delta_kind: DeltaKind = "relative"
    alpha: float = DEFAULT_ALPHA
    margin: float = 0.05  # in delta's units (relative, or absolute proportion)
    tolerance: float = 0.02
    p_value: float | None = None  # McNemar's, for accuracy
    trials_needed: int | None = None  # per build, to decide at the spread seen
    pairs: tuple[float, ...] = field(default=())  # per-pair log ratios, or (b01, b10)
    # False: the items cannot decide the margin (verdicts/paired_items.py); an inconclusive
    # verdict is then reported with that reason and does not fail the run
    decidable: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", PairedStatus(self.status))  # text read back

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status.value  # plain text: execnet and json carry no enums
        out["pairs"] = list(self.pairs)
        for key, value in out.items():
            if isinstance(value, float) and not math.isfinite(value):
                out[key] = None  # JSON has no NaN
        return out


def unpaired(check: str, metric: str, unit: str, direction: Direction,
             reason: str) -> PairedVerdict:
    """The row of a declared check that has no paired verdict, saying why."""
    nan = math.nan
    return PairedVerdict(check, metric, unit, direction, nan, nan, nan, nan, nan,
                         PairedStatus.UNPAIRED, 0, "none", f"{check}: no paired verdict: {reason}")


@lru_cache(maxsize=4096)
def _t_quantile(q: float, df: float) -> float:
    from scipy.stats import t as student_t

    return float(student_t.ppf(q, df))


def _pairs(a: Sequence[float], b: Sequence[float],
           order: Sequence[str] | None) -> list[tuple[float, float]]:
    if len(a) != len(b):
        raise ValueError(f"paired trials need the same number of trials per build: "
                         f"{len(a)} of A, {len(b)} of B")
    if order is not None and (len(order) != len(a) + len(b) or list(order).count("A") != len(a)
                              or set(order) - {"A", "B"}):
        raise ValueError(f"order {list(order)} does not hold {len(a)} A and {len(b)} B trials")
    if any(not (v >= 0 and math.isfinite(v)) for v in (*a, *b)):
        raise ValueError(f"paired performance needs finite values >= 0: A {list(a)}, "
                         f"B {list(b)}")
    # Each build's trials are in time order, so the i-th A and the i-th B are neighbours in
    # A-B-B-A (slots 4k, 4k+1 and 4k+3, 4k+2); other orders pair the same way.
    return list(zip(a, b))


def _zero_verdict(pairs: Sequence[tuple[float, float]], sign: float, metric: str
                  ) -> tuple[PairedStatus, str] | None:
    """A metric at 0 on one side of a pair has no log ratio; it is a verdict by itself: the
    side at 0 is worse for a higher-is-better metric (no throughput), better for a
    lower-is-better one. None: no pair has exactly one side at 0."""
    b_zero = sum(1 for x, y in pairs if y == 0 < x)
    a_zero = sum(1 for x, y in pairs if x == 0 < y)
    if not (a_zero or b_zero):
        return None
    worse, better = (b_zero, a_zero) if sign > 0 else (a_zero, b_zero)
    said = (f"{metric} was 0 on one build only: the candidate's in {b_zero} and the "
            f"incumbent's in {a_zero} of {len(pairs)} paired trials")
    if worse and not better:
        return PairedStatus.REGRESSED, said
    if better and not worse:
        return PairedStatus.IMPROVED, said
    return PairedStatus.INCONCLUSIVE, said + " (both ways)"


def half_width(s: float, n: int, alpha: float) -> float:
    """Half-width of the mean's t interval at 1 - alpha over ``n`` units with spread ``s``."""
    return _t_quantile(1 - alpha / 2, n - 1) * s / math.sqrt(n)


def _units_to_decide(good_mean: float, s: float, have: int, pass_bound: float,
                     tolerance_log: float, alpha: float) -> int | None:
    """Smallest unit count (pairs, or blocks) whose t half-width h at this spread would
    either show not-worse (good_mean - h > pass_bound) or surely worse (good_mean + h < 0
    beyond the tolerance). None when no count would (the effect sits on a boundary) or s is
    0."""
    target = good_mean - pass_bound
    if good_mean < tolerance_log:
        target = max(target, -good_mean)
    if target <= 0 or s <= 0:
        return None

    def decides(n: int) -> bool:
        return half_width(s, n, alpha) < target

    lo, hi = max(MIN_PAIRS, have + 1), _MAX_TRIALS_ESTIMATE
    if not decides(hi):
        return None
    while lo < hi:  # the half-width shrinks as n grows: bisect for the first n that decides
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decides(mid) else (mid + 1, hi)
    return lo


def block_means(ratios: Sequence[float]) -> list[float]:
    """Each whole A-B-B-A block's mean log ratio (its two pairs: the i-th A and B trials)."""
    return [fmean(ratios[i:i + 2]) for i in range(0, len(ratios) - 1, 2)]


def paired_performance(check: str, metric: str, unit: str, direction: Direction,
                       a: Sequence[float], b: Sequence[float], *,
                       order: Sequence[str] | None = None, margin: float = 0.05,
                       tolerance: float = 0.02, alpha: float = DEFAULT_ALPHA,
                       per_block: bool = False) -> PairedVerdict:
    """The paired verdict on per-trial values of A and B (each in time order, run in
    ``order``; default ``balanced_order(len(a))``); ``per_block``: each A-B-B-A block ran on
    fresh servers of both builds, and the blocks are the units (see the module's note)."""
    pairs = _pairs(a, b, order)
    n = len(pairs)
    sign = 1.0 if direction == "higher" else -1.0
    zeros = _zero_verdict(pairs, sign, metric)
    # 0 on both sides (no failed request on either build): equal, a log ratio of 0
    ratios = tuple(math.log(y / x) if x > 0 and y > 0 else 0.0 for x, y in pairs)
    common = PairedVerdict(
        check, metric, unit, direction, fmean(a) if a else math.nan,
        fmean(b) if b else math.nan, math.nan, math.nan, math.nan, PairedStatus.INCONCLUSIVE, n,
        "paired t on log ratios (A-B-B-A)" + (
            ", per block of fresh servers" if per_block else ""),
        "", alpha=alpha, margin=margin,
        tolerance=tolerance, pairs=ratios)
    if zeros is not None:
        status, why = zeros
        return replace(common, status=status, detail=f"{check}: {why}",
                       delta=(fmean(b) - fmean(a)) / fmean(a) if fmean(a) else math.inf)
    units = block_means(ratios) if per_block else list(ratios)
    per_unit = 2 if per_block else 1  # trials per build in one unit
    if len(units) < MIN_PAIRS:
        return replace(common, delta=math.exp(fmean(ratios)) - 1 if ratios else math.nan,
                       trials_needed=MIN_PAIRS * per_unit,
                       detail=f"{check}: a confidence interval needs at least "
                              f"{MIN_PAIRS * per_unit} trials per build"
                              + (" (two blocks of fresh servers)" if per_block else "")
                              + f"; got {n}")
    mean = fmean(units)
    s = math.sqrt(sum((r - mean) ** 2 for r in units) / (len(units) - 1))
    h = half_width(s, len(units), alpha)
    # A sequential first look spends almost no alpha: its half-width can pass exp's range.
    delta, lo, hi = (math.exp(min(x, 700.0)) - 1 for x in (mean, mean - h, mean + h))
    effect, e_lo, e_hi = (delta, lo, hi) if sign > 0 else (-delta, -hi, -lo)
    status = classify(effect, e_lo, e_hi, margin=margin, tolerance=tolerance)
    ci = f"{delta:+.1%} [{lo:+.1%}, {hi:+.1%}] at {level(alpha)}"
    detail = f"{check}: {metric} {ci} over {n} paired trials" + (
        f" in {len(units)} blocks of fresh servers" if per_block else "")
    needed = None
    if status == PairedStatus.INCONCLUSIVE:
        # the good-direction log bounds of "not worse than the margin" and "the tolerance"
        pass_bound = math.log(1 - margin) if sign > 0 else -math.log(1 + margin)
        tol_log = math.log(1 - tolerance) if sign > 0 else -math.log(1 + tolerance)
        got = _units_to_decide(sign * mean, s, len(units), pass_bound, tol_log, alpha)
        needed = got * per_unit if got else None
        detail += ("; the interval is too wide to decide: about "
                   f"{needed} trials per build would decide at this spread" if needed else
                   "; the effect sits on the margin: more trials per build would not decide "
                   "at this spread")
    return replace(common, delta=delta, ci_low=lo, ci_high=hi, status=status, detail=detail,
                   trials_needed=needed)


def _wilson(x: int, n: int, z: float) -> tuple[float, float]:
    centre = (x + z * z / 2) / (n + z * z)
    half = z * math.sqrt(x * (n - x) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


def newcombe_paired_ci(both: int, first_only: int, second_only: int, neither: int, *,
                       alpha: float = 0.05) -> tuple[float, float]:
    """Newcombe's (1998) method 10 interval for p1 - p2, the paired difference of two
    proportions: p1 = (both + first_only) / n, p2 = (both + second_only) / n."""
    n = both + first_only + second_only + neither
    if n == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(1 - alpha / 2)
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    l1, u1 = _wilson(both + first_only, n, z)
    l2, u2 = _wilson(both + second_only, n, z)
    margins = ((both + first_only) * (second_only + neither) * (both + second_only)
               * (first_only + neither))
    cross = both * neither - first_only * second_only
    # Newcombe's continuity correction of the correlation: shrink a positive one by n/2.
    numerator = max(cross - n / 2, 0.0) if cross > 0 else float(cross)
    phi = numerator / math.sqrt(margins) if margins else 0.0
    d = p1 - p2
    below = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    above = (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2
    return d - math.sqrt(max(below, 0.0)), d + math.sqrt(max(above, 0.0))


def paired_accuracy(check: str, metric: str, a_correct: Sequence[bool],
                    b_correct: Sequence[bool], *, margin_points: float = 2.0,
                    tolerance_points: float = 0.0,
                    alpha: float = DEFAULT_ALPHA) -> PairedVerdict:
    """The paired verdict on the same items answered by A and B, in the same order."""
    b01, b10, p = mcnemar(a_correct, b_correct)  # raises on different lengths
    n = len(a_correct)
    margin, tolerance = margin_points / 100, tolerance_points / 100
    common = PairedVerdict(
        check, metric, "", "higher", math.nan, math.nan, math.nan, math.nan, math.nan,
        PairedStatus.INCONCLUSIVE, n, "McNemar exact + Newcombe paired interval", "",
        delta_kind="absolute", alpha=alpha, margin=margin, tolerance=tolerance,
        pairs=(float(b01), float(b10)))
    if n == 0:
        return replace(common, detail=f"{check}: no items answered by both builds")
    acc_a, acc_b = sum(a_correct) / n, sum(b_correct) / n
    both = sum(1 for x, y in zip(a_correct, b_correct) if x and y)
    lo, hi = newcombe_paired_ci(both, b01, b10, n - both - b01 - b10, alpha=alpha)
    delta = acc_b - acc_a
    status = classify(delta, lo, hi, margin=margin, tolerance=tolerance,
                      significant=p < alpha)
    detail = (f"{check}: {metric} {acc_a:.2%} -> {acc_b:.2%}, {delta * 100:+.1f} points "
              f"[{lo * 100:+.1f}, {hi * 100:+.1f}] at {level(alpha)} over {n} items; "
              f"{b01} items only the candidate got right, {b10} only the incumbent "
              f"(McNemar p = {p:.3g})")
    return replace(common, incumbent=acc_a, candidate=acc_b, delta=delta, ci_low=lo,
                   ci_high=hi, status=status, detail=detail, p_value=p)


@dataclass(frozen=True)
class OutputsChanged:
    changed: int
    n: int
    near_ties: int
    first_divergence: list[int | None]  # per prompt; None where the outputs are identical

    def summary(self) -> str:
        return (f"outputs changed on {self.changed} of {self.n} prompts "
                f"({self.near_ties} at near ties)")


def _first_divergence(x: Sequence[int], y: Sequence[int]) -> int | None:
    for i, (s, t) in enumerate(zip(x, y)):
        if s != t:
            return i
    return None if len(x) == len(y) else min(len(x), len(y))


def _close(gaps: Sequence[Sequence[float]], p: int, i: int, near_tie: float) -> bool:
    row = gaps[p] if p < len(gaps) else ()
    return i < len(row) and row[i] <= near_tie


def outputs_changed(a_tokens: Sequence[Sequence[int]], b_tokens: Sequence[Sequence[int]], *,
                    a_top2_gaps: Sequence[Sequence[float]] | None = None,
                    near_tie: float = NEAR_TIE_NATS,
                    b_top2_gaps: Sequence[Sequence[float]] | None = None) -> OutputsChanged:
    """Greedy token ids of A and B per prompt. ``a_top2_gaps[p][i]``: A's logprob of its
    top token minus its second at position i of prompt p; a divergence where that gap is at
    most ``near_tie`` nats is a near tie (one output stopping early is not). With
    ``b_top2_gaps`` too, B's gap there must be as small (parity's rule: each side prefers
    its own token by at most the tolerance)."""
    if len(a_tokens) != len(b_tokens):
        raise ValueError(f"outputs of different prompts: {len(a_tokens)} from A, "
                         f"{len(b_tokens)} from B")
    firsts = [_first_divergence(x, y) for x, y in zip(a_tokens, b_tokens)]
    ties = 0
    if a_top2_gaps is not None:
        for p, i in enumerate(firsts):
            if i is None or i >= min(len(a_tokens[p]), len(b_tokens[p])):
                continue
            ties += all(_close(side, p, i, near_tie) for side in (a_top2_gaps, b_top2_gaps)
                        if side is not None)
    return OutputsChanged(sum(i is not None for i in firsts), len(firsts), ties, firsts)
