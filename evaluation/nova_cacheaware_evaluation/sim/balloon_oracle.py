"""The clairvoyant oracle's split of host memory (sim/balloon.py).

Closed-form model (uniform reads, :mod:`.pagecache`): log throughput is
convex in memory up to the working set and flat after it, so the optimum
is a vertex, enumerated exactly (:func:`oracle_split`).

LRU model (:mod:`.lru`): each VM's warm throughput comes from its
pattern's hit-ratio curve, *measured* by replaying the pattern through the
LRU cache (:func:`.lru.hit_curve`), and the split maximising the sum of
log throughputs is found by dynamic programming over memory in steps of
``host_memory_mib // 400`` MiB (:func:`curve_split`).  Neither knows or
uses any policy's estimate.
"""

import functools
import itertools
import math

from nova_cacheaware_evaluation.sim import lru

#: Memory steps of the LRU oracle's dynamic programme.
DP_STEPS = 400


def steady_throughput(sc, memory_mib, ws_mib):
    """MiB/s of a warm cache of ``memory - process`` over ``ws_mib``."""
    if ws_mib <= 0:
        return 0.0
    r = min(1.0, max(0.0, memory_mib - sc.process_mib) / ws_mib)
    return 1.0 / (r / sc.cache_mib_s + (1 - r) / sc.disk_mib_s)


def oracle_split(sc, working_sets):
    """Memory per VM maximising the sum of log warm throughputs.

    log throughput is convex in memory up to ``process + W`` and flat after,
    so an optimum is a vertex: every VM at its floor or at its useful cap
    except at most one.  All such vertices are enumerated (n * 2**(n-1)).
    """
    n = len(working_sets)
    lo = [sc.min_mib] * n
    hi = [max(sc.min_mib, min(sc.max_mib, sc.process_mib + w))
          if w > 0 else sc.min_mib for w in working_sets]
    budget = sc.host_memory_mib
    if sum(hi) <= budget:
        return hi

    def score(alloc):
        return sum(math.log(steady_throughput(sc, m, w))
                   for m, w in zip(alloc, working_sets) if w > 0)
    best, best_score = list(lo), -math.inf
    for k in range(n):
        others = [i for i in range(n) if i != k]
        for picks in itertools.product((0, 1), repeat=len(others)):
            alloc = [0] * n
            for i, p in zip(others, picks):
                alloc[i] = hi[i] if p else lo[i]
            rest = budget - sum(alloc)
            if not lo[k] <= rest:
                continue
            alloc[k] = min(hi[k], rest)
            s = score(alloc)
            if s > best_score + 1e-12:
                best, best_score = alloc, s
    return best


@functools.lru_cache(maxsize=512)
def _curve(spec, ws_files, files):
    return tuple(lru.hit_curve(spec, ws_files, files))


def warm_throughput(sc, spec, memory_mib, ws_mib):
    """MiB/s of a warm LRU cache of ``memory - process`` under ``spec``."""
    ws_files = int(ws_mib // sc.file_mib)
    if ws_files <= 0:
        return 0.0
    curve = _curve(spec, ws_files, sc.files)
    slots = max(0.0, memory_mib - sc.process_mib) // sc.file_mib
    h = lru.interpolate(curve, slots)
    return 1.0 / (h / sc.cache_mib_s + (1 - h) / sc.disk_mib_s)


def curve_split(sc, working_sets):
    """Memory per VM maximising the sum of log warm LRU throughputs."""
    n = len(working_sets)
    step = max(1, sc.host_memory_mib // DP_STEPS)
    units = (sc.host_memory_mib - n * sc.min_mib) // step
    top = min(units, (sc.max_mib - sc.min_mib) // step)
    score = [0.0] + [-math.inf] * units     # by steps handed out so far
    backs = []
    for i, w in enumerate(working_sets):
        gains = [0.0] if w <= 0 else [
            math.log(warm_throughput(sc, sc.access[i],
                                     sc.min_mib + k * step, w))
            for k in range(top + 1)]
        new = [-math.inf] * (units + 1)
        back = [0] * (units + 1)
        for used, base in enumerate(score):
            if base == -math.inf:
                continue
            for k in range(min(len(gains), units + 1 - used)):
                s = base + gains[k]
                if s > new[used + k] + 1e-12:
                    new[used + k], back[used + k] = s, k
        score = new
        backs.append(back)
    used = max(range(units + 1), key=lambda u: (score[u], -u))
    picks = []
    for back in reversed(backs):
        picks.append(back[used])
        used -= back[used]
    return [sc.min_mib + k * step for k in reversed(picks)]


def best_split(sc, working_sets):
    """The oracle's split for the scenario's model."""
    if sc.access is None:
        return oracle_split(sc, working_sets)
    return curve_split(sc, working_sets)
