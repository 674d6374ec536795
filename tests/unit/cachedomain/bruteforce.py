"""Brute-force optimum of the All-share planning problem (test oracle).

Enumerates every vCPU count vector of every movable memory-bound VM (and
"unplaced"), independently of the branch and bound in allshare_search.
"""

import itertools

from nova_cacheaware.cachedomain import search as allshare_search


def compositions(total, parts, limits):
    """Every tuple of ``parts`` non-negative ints summing to ``total``."""
    if parts == 0:
        if total == 0:
            yield ()
        return
    for first in range(min(total, limits[0]) + 1):
        for rest in compositions(total - first, parts - 1, limits[1:]):
            yield (first,) + rest


def optimum(inst):
    """The best objective key over all feasible placements."""
    choices = []
    for vm, size in enumerate(inst.sizes):
        options = [None]
        options.extend(compositions(size, inst.n_domains, inst.free))
        choices.append(options)
    best = None
    for combo in itertools.product(*choices):
        if not allshare_search.is_feasible(inst, combo):
            continue
        key = allshare_search.objective(inst, combo)
        if best is None or key < best:
            best = key
    return best


def leaves(inst):
    """How many combinations :func:`optimum` would visit."""
    n = 1
    for size in inst.sizes:
        n *= 1 + sum(1 for _ in compositions(size, inst.n_domains, inst.free))
    return n
