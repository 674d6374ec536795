"""CPU time under an ideal fair scheduler: max-min fair shares.

The independent yardstick (:mod:`.occupancy`) does not
use the cache simulator's scheduler (least-loaded queues, pinned vCPUs
first: :mod:`.contention`) nor the planner's estimate
of it. It takes the fluid ideal that Linux CFS is designed to approximate
("an ideal, precise multi-tasking CPU", Documentation/scheduler/
sched-design-CFS.rst) with its load balancer working perfectly inside each
vCPU's affinity: every runnable vCPU gets the max-min fair share of CPU
time that its affinity allows.

Affinities must form a laminar family (any two are disjoint or nested:
single CPUs, cache domains, the whole host - what every pinning of this
project is). Then an allocation ``x`` (CPU time per vCPU, at most its
demand) is feasible iff, for every affinity set ``S``, the vCPUs whose
affinity lies inside ``S`` use at most ``|S|`` CPUs; progressive filling
over those constraints gives the max-min fair allocation exactly.
"""

import fractions


def is_laminar(sets):
    """True when any two of ``sets`` are disjoint or nested."""
    sets = list(set(sets))
    return all(not (a & b) or a <= b or b <= a
               for n, a in enumerate(sets) for b in sets[n + 1:])


def _tight_level(base, capacity, demands, level):
    """Lowest level >= ``level`` at which the set is full, or None.

    ``base``: CPU time of its frozen vCPUs; ``demands``: those of its
    unfrozen ones (each gets ``min(demand, level)``).
    """
    if base + sum(min(d, level) for d in demands) >= capacity:
        return level
    lo, used = level, base + sum(min(d, level) for d in demands)
    for d in sorted(x for x in demands if x > level):
        rising = sum(1 for x in demands if x > lo)
        reach = used + rising * (d - lo)
        if reach >= capacity:
            gap = capacity - used
            if not isinstance(gap, float):
                gap = fractions.Fraction(gap)  # exact for exact inputs
            return lo + gap / rising
        lo, used = d, reach
    return None


def max_min_fair(vcpus):
    """Max-min fair CPU time per vCPU.

    ``vcpus``: ``(affinity, demand)`` per vCPU, ``affinity`` a frozenset of
    CPU ids, ``demand`` the share of time it is runnable (0..1). Returns
    the CPU time of each vCPU in order (exact when demands are
    :class:`fractions.Fraction` or integers). Raises ValueError when the
    affinities are not laminar.
    """
    affinities = [a for a, _ in vcpus]
    if not is_laminar(affinities):
        raise ValueError('affinities must be laminar (disjoint or nested)')
    family = sorted(set(affinities), key=len)
    inside = {s: [i for i, a in enumerate(affinities) if a <= s]
              for s in family}
    alloc = [None] * len(vcpus)
    level = 0
    while None in alloc:
        events = []
        for s in family:
            open_ = [vcpus[i][1] for i in inside[s] if alloc[i] is None]
            if not open_:
                continue
            base = sum(alloc[i] for i in inside[s] if alloc[i] is not None)
            t = _tight_level(base, len(s), open_, level)
            if t is not None:
                events.append((t, s))
        sated = min((d for (_, d), x in zip(vcpus, alloc)
                     if x is None), default=None)
        level = min([t for t, _ in events] + [max(level, sated)])
        for i, (_, d) in enumerate(vcpus):
            if alloc[i] is None and d <= level:
                alloc[i] = d
        for t, s in events:
            if t == level:
                for i in inside[s]:
                    if alloc[i] is None:
                        alloc[i] = min(vcpus[i][1], level)
    return alloc
