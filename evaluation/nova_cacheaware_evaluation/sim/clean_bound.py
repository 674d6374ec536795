"""The most memory-bound servers any placement of a day's servers keeps Clean.

A proven upper bound of the offline optimum (any migration budget, any
knowledge of the future) for the servers a cloud runs at one moment,
found by an integer linear program over **domain patterns**: which
servers (memory-bound or not, by vCPUs) one cache domain holds.

The cloud's rules it keeps (:mod:`.cloud`): every server is held in one
domain and takes that many of its vCPUs (capacity at allocation ratio
1.0); a memory-bound server is Clean when it is the only memory-bound
server of its domain. Nova's scheduler admits a cache-aware server only
where a domain has room its agent may give it, so every server is seated;
the simulation counts the servers it left unseated (``home`` None) each
day, and :func:`bound` with ``unseated`` allows them (they take their
host's CPUs only, are never Clean, spoil nobody).

What it relaxes, so that the bound holds for any policy: which host a
domain belongs to, and every rule of the scheduler and the agents beyond
room (``cache_clean=required``, the order of arrivals, the classifier,
the migration budget). The optimum of the program is therefore at least
the best placement the cloud could reach; it is exact for the domains'
packing itself.

The same program over the patterns with at most two memory-bound servers
(:func:`bound_in_pairs`) is the most Clean of the placements that seat
the servers they cannot keep Clean in pairs, as the agents and the speed
optimum do: the unconstrained bound beyond it is what packing three and
four into a domain adds.

The same program with another value per pattern bounds what the cache
contention model (:mod:`.contention`) says those servers achieve
(:func:`performance_bound`): a memory-bound server sharing its domain with
``n`` other memory-bound ones runs at ``1 / (1 + dirty * n)`` of its
Clean speed, so the domains' total is concave in their memory-bound
count and the best placement *spreads* the servers it cannot keep Clean,
where the most Clean packs them three and four to a domain.

scipy's HiGHS (``scipy.optimize.milp``) solves it; one day's program has
about 30 variables and 8 rows.
"""

import functools
import itertools

import numpy
from scipy import optimize


def patterns(sizes, capacity):
    """Every content of one domain of ``capacity`` vCPUs.

    A pattern is a tuple of counts, one per server type ``(memory-bound,
    vCPUs)`` in :func:`types` order, whose vCPUs sum to at most
    ``capacity``; the empty domain included.
    """
    kinds = types(sizes)
    most = [capacity // vcpus for _memory, vcpus in kinds]
    out = []
    for counts in itertools.product(*(range(m + 1) for m in most)):
        if sum(n * v for n, (_m, v) in zip(counts, kinds)) <= capacity:
            out.append(counts)
    return out


def types(sizes):
    """The server types: ``(memory-bound, vCPUs)`` for each size."""
    return [(memory, vcpus) for memory in (True, False)
            for vcpus in sorted(set(sizes))]


def memory_in(pattern, kinds):
    """Memory-bound servers of a domain holding ``pattern``."""
    return sum(n for n, (m, _v) in zip(pattern, kinds) if m)


def clean_in(pattern, kinds):
    """Clean servers of a domain holding ``pattern``: 1 or 0."""
    return 1 if memory_in(pattern, kinds) == 1 else 0


def speed(memory_bound, dirty):
    """One memory-bound server's speed beside others in its domain.

    ``memory_bound`` servers share the domain (this one included); each
    runs at ``1 / (1 + dirty * (memory_bound - 1))`` of its Clean speed
    (:mod:`.contention`, All share: every vCPU of a domain runs at once
    at ratio 1.0).
    """
    return 1.0 / (1.0 + dirty * (memory_bound - 1))


def performance_in(pattern, kinds, dirty):
    """Summed :func:`speed` of a domain's memory-bound servers."""
    memory = memory_in(pattern, kinds)
    return memory * speed(memory, dirty) if memory else 0.0


def performance_bound(counts, domains, capacity, cpus, dirty, partial,
                      unseated=False):
    """The most summed speed any placement gives the memory-bound servers.

    As :func:`bound`, valued by :func:`performance_in` with ``dirty``
    (the contention model's ``dirty_all``); a server held in no domain
    (``unseated``) counts ``partial`` (the model's Partial-share Clean
    speed, ``1 / split_mem``: the most a floating server gets).
    :returns: a float, at most the memory-bound servers' count.
    """
    sizes = tuple(sorted({v for (_m, v) in counts}))
    if not sizes:
        return 0.0
    return _solve(tuple(sorted(counts.items())), sizes, domains, capacity,
                  cpus, unseated, (dirty, partial))


def bound(counts, domains, capacity, cpus, unseated=False,
          most_memory_bound=None):
    """The most Clean memory-bound servers of any placement of ``counts``.

    :param counts: ``{(memory-bound, vCPUs): servers}``.
    :param domains: the cloud's cache domains (all of ``capacity`` vCPUs).
    :param cpus: the cloud's CPUs (the servers no domain holds count here).
    :param unseated: allow servers held in no domain (on Nova's CPUs).
    :param most_memory_bound: only placements whose domains each hold at
        most that many memory-bound servers (None: any); 2 is
        :func:`bound_in_pairs`.
    :returns: the optimum, an int; ``min(memory-bound, domains)`` or less.
    :raises ValueError: the servers do not fit the cloud at all (with
        that limit).
    """
    sizes = tuple(sorted({v for (_m, v) in counts}))
    if not sizes:
        return 0
    return int(round(_solve(tuple(sorted(counts.items())), sizes, domains,
                            capacity, cpus, unseated,
                            most_memory_bound=most_memory_bound)))


def bound_in_pairs(counts, domains, capacity, cpus, unseated=False):
    """:func:`bound` over placements with no third memory-bound server.

    The most Clean of the placements that seat the servers they cannot
    keep Clean in pairs, as the agents do (a Clean-wanting server with no
    Clean place joins the domain with the fewest such servers) and as the
    day's speed optimum does: what the unconstrained bound reaches beyond
    it, it reaches by packing three and four memory-bound servers into a
    domain. Not a bound of every policy (an agent may seat a third server
    where every domain of its host holds two). None when no such placement
    exists.
    """
    try:
        return bound(counts, domains, capacity, cpus, unseated,
                     most_memory_bound=2)
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def _solve(items, sizes, domains, capacity, cpus, unseated, speed=None,
           most_memory_bound=None):
    """The program's optimum: the most Clean servers.

    With ``speed`` = ``(dirty, partial)``: the memory-bound servers' most
    summed speed instead; with ``most_memory_bound``, only the patterns
    holding at most that many memory-bound servers.
    """
    counts = dict(items)
    kinds = types(sizes)
    pats = patterns(sizes, capacity)
    if most_memory_bound is not None:
        pats = [p for p in pats
                if memory_in(p, kinds) <= most_memory_bound]
    # Variables: domains of each pattern, then unseated servers per type.
    n_pat, n_kind = len(pats), len(kinds)
    if speed is None:
        value = [-clean_in(p, kinds) for p in pats] + [0] * n_kind
    else:
        dirty, partial = speed
        value = ([-performance_in(p, kinds, dirty) for p in pats]
                 + [-partial if m else 0 for m, _v in kinds])
    rows, low, high = [], [], []
    for t, kind in enumerate(kinds):
        left_out = [1 if k == t else 0 for k in range(n_kind)]
        row = [p[t] for p in pats] + left_out
        rows.append(row)
        low.append(counts.get(kind, 0))
        high.append(counts.get(kind, 0))
    rows.append([1] * n_pat + [0] * n_kind)
    low.append(0)
    high.append(domains)
    rows.append([sum(n * v for n, (_m, v) in zip(p, kinds)) for p in pats]
                + [v for _m, v in kinds])
    low.append(0)
    high.append(cpus)
    result = optimize.milp(
        numpy.array(value, dtype=float),
        constraints=optimize.LinearConstraint(
            numpy.array(rows, dtype=float), low, high),
        integrality=numpy.ones(n_pat + n_kind),
        bounds=optimize.Bounds(
            0, [numpy.inf] * n_pat
            + [numpy.inf if unseated else 0] * n_kind))
    if result.status != 0:
        raise ValueError('no placement of %s in %d domains and %d CPUs: %s'
                         % (counts, domains, cpus, result.message))
    return -result.fun
