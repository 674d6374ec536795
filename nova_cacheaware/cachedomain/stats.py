"""Small, pure statistics: the two-sample tests the classifier needs.

No scipy here (``policy/`` stays dependency-free); the formulas are the
textbook ones and are checked against known values in the unit tests.
"""

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class TwoSampleResult:
    """A two-sample test: the statistic, its z score and two-sided p."""

    statistic: float
    z: float
    p_value: float


def _ranks(values):
    """Average ranks (1-based) of ``values``; ties share their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mean_rank = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = mean_rank
        i = j + 1
    return ranks


def mann_whitney_u(xs, ys):
    """Mann–Whitney U test of ``xs`` against ``ys`` (two-sided).

    Normal approximation with tie correction and continuity correction;
    fine from about 8 samples per side, which is what the classifier
    requires. ``statistic`` is U of ``xs`` (large when ``xs`` tends to be
    larger). Raises ValueError on an empty sample.
    """
    n1, n2 = len(xs), len(ys)
    if n1 == 0 or n2 == 0:
        raise ValueError('both samples need at least one value')
    pooled = list(xs) + list(ys)
    ranks = _ranks(pooled)
    r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2.0
    mean = n1 * n2 / 2.0
    n = n1 + n2
    counts = {}
    for v in pooled:
        counts[v] = counts.get(v, 0) + 1
    ties = sum(t ** 3 - t for t in counts.values())
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1) if n > 1 else 1))
    if var <= 0:
        # Every value equal: no evidence of a difference.
        return TwoSampleResult(statistic=u1, z=0.0, p_value=1.0)
    diff = u1 - mean
    # Continuity correction towards the mean.
    diff -= math.copysign(0.5, diff) if abs(diff) >= 0.5 else diff
    z = diff / math.sqrt(var)
    return TwoSampleResult(statistic=u1, z=z,
                           p_value=min(1.0, math.erfc(abs(z) / math.sqrt(2))))


def median(values):
    """The median of a non-empty sequence."""
    s = sorted(values)
    if not s:
        raise ValueError('median of an empty sample')
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0
