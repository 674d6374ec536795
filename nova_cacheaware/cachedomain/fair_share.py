"""The contract's tie-break on oversubscribed hosts: fair CPU shares.

Among plans equal on the contract's ``(unplaced, excess, dirt, moves)``
the solvers take the least crowding (memory-bound vCPUs beyond one per
CPU). Crowding sees only the memory-bound vCPUs and only beyond one per
CPU; on an oversubscribed host every domain is shared with the floating
vCPUs too, and which VMs share a domain decides each VM's CPU time. This
module refines a plan among its equals by the **proportional fairness of
CPU time between VMs**: the mean over every VM (not every vCPU: each VM is
one tenant) of the log of its vCPUs' expected CPU share, under a fair
scheduler (CFS's design goal: each runnable vCPU gets an equal share of
the CPUs it may run on, max-min fair).

The estimate knows what the planner knows: vCPU counts, each VM's class
and pinning, and the domains' CPUs. A vCPU pinned inside one domain runs
there, any other vCPU floats over every CPU; an I/O-bound vCPU is runnable
``IO_BUSY`` of the time (study 000, as the ``throughput`` objective); a
floating memory-bound vCPU counts like a CPU-bound one. Caches are not
modelled: the contract's dirt already ranks cache sharing.

At equal fairness (within ``EPSILON``) it takes the lowest **pressure**:
the sum over domains of memory-bound vCPUs squared over CPUs, lowest when
they are spread in proportion to the domains' CPUs (each gets the most
CPUs; where the last-level cache and the memory link grow with the cores,
the most cache and bandwidth).

The refinement runs on hosts with at most ``MAX_VMS`` movable
memory-bound VMs, more vCPUs than CPUs, and no memory-bound VM left
floating (where the pinned VMs sit then also decides which caches the
floating one reaches: the contract's dirt counts it everywhere, and this
estimate does not weigh it). Its key is ``(contract key, -fairness,
pressure)``, never worse than the solvers' plan:

* **exact** when every VM the plan places lies wholly in one domain and
  the whole-domain assignments of those VMs number at most
  ``EXACT_MAX_PLANS`` (:func:`assignments`, up to exchanging identical
  VMs): all of them are enumerated (depth first, pruned on a lower bound
  of the contract's key) and the best by the key is taken. This reaches
  plans that single steps cannot (one VM exchanged for three);
* otherwise a local search (single moves of a VM wholly in one domain to
  another domain, and swaps of two such VMs) that strictly improves the
  key.

No I/O, no clock: pure.
"""

import math

from nova_cacheaware.cachedomain import search as allshare_search
from nova_cacheaware.cachedomain.throughput import IO_BUSY

#: Most movable memory-bound VMs refined (a pass costs O(VMs ** 2)).
MAX_VMS = 8
#: Most improving steps taken.
MAX_STEPS = 64
#: Smallest fairness gain that counts (mean log share).
EPSILON = 1e-9
#: Most whole-domain assignments enumerated by the exact step
#: (:func:`assignments`); above it, the local search. Depth first with
#: pruning: at most about 20 ms at this size (2-vCPU guest, loaded), the
#: random small hosts of the benchmarks about 1 ms.
EXACT_MAX_PLANS = 1024


def fair_level(cpus, loads, work):
    """Max-min fair CPU share of a floating vCPU (at most 1).

    ``cpus``/``loads``: per domain, CPUs and the pinned vCPUs (runnable
    vCPU equivalents) inside it; ``work``: the floating vCPU equivalents.
    A domain's pinned vCPUs get the same share as the floating ones, or
    all its CPUs when that is less; the floating ones share the rest.
    """
    def room(x):
        return sum(max(0.0, c - n * x) for c, n in zip(cpus, loads))
    if work <= 0 or room(1.0) >= work:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(48):
        mid = (lo + hi) / 2
        if room(mid) >= work * mid:
            lo = mid
        else:
            hi = mid
    return lo


def fairness(cpus, fixed, floating, placed):
    """Mean log CPU share over VMs (higher is fairer).

    ``fixed``: per domain, vCPU equivalents pinned there by VMs the plan
    does not move; ``floating``: ``(vcpus, busy)`` per floating VM;
    ``placed``: per planned memory-bound VM, its counts per domain.
    """
    loads = list(fixed)
    for counts in placed:
        for d, n in enumerate(counts):
            loads[d] += n
    work = sum(v * busy for v, busy in floating)
    x = fair_level(cpus, loads, work)
    total = 0.0
    for counts in placed:
        share = sum(n * min(x, c / max(load, 1e-12))
                    for n, c, load in zip(counts, cpus, loads)) / sum(counts)
        total += math.log(max(share, 1e-12))
    for _v, busy in floating:
        total += math.log(min(1.0, x / busy))
    return total / max(1, len(placed) + len(floating))


def host_load(plan_input, inst, movable, placements):
    """``(fixed, floating)`` for :func:`fairness` around ``placements``.

    Every VM but the placed memory-bound ones: a VM whose vCPUs all lie
    in one domain is pinned load there, any other floats (an unplaced
    memory-bound VM at its current CPUs included).
    """
    planned = _planned(movable, placements)
    fixed = [0.0] * inst.n_domains
    floating = []
    for vm in plan_input.vms:
        if vm.id in planned:
            continue
        busy = IO_BUSY if vm.workload == 'io' else 1.0
        where = _domains_now(plan_input, vm)
        if len(where) == 1:
            fixed[where.pop()] += vm.vcpus * busy
        else:
            floating.append((vm.vcpus, busy))
    return fixed, floating


def memory_floats(plan_input, movable, placements):
    """True when a memory-bound VM the plan leaves in place floats.

    An unplaced VM, or an unmovable one, whose vCPUs are not all inside
    one domain: it reaches the cache of every domain where it gets CPU
    time, and where the pinned VMs sit decides which those are, which the
    CPU-share estimate does not weigh.
    """
    planned = _planned(movable, placements)
    return any(vm.memory_bound and vm.id not in planned
               and len(_domains_now(plan_input, vm)) > 1
               for vm in plan_input.vms)


def _planned(movable, placements):
    """Ids of the movable VMs the plan places."""
    return {vm.id for vm, p in zip(movable, placements) if p is not None}


def _domains_now(plan_input, vm):
    """Indexes of the domains ``vm``'s vCPUs may run in now."""
    index = plan_input.domain_index
    return {index[c] for cpus in plan_input.pinning_now(vm).values()
            for c in cpus}


def _neighbours(inst, placements, whole):
    """Plans one move or one swap away (VMs wholly in one domain)."""
    for vm, d in whole.items():
        for e in range(inst.n_domains):
            if e != d and inst.free[e] >= inst.sizes[vm]:
                new = list(placements)
                new[vm] = _single(inst, e, inst.sizes[vm])
                yield new
    items = sorted(whole.items())
    for i, (a, da) in enumerate(items):
        for b, db in items[i + 1:]:
            if da != db and inst.sizes[a] != inst.sizes[b]:
                new = list(placements)
                new[a] = _single(inst, db, inst.sizes[a])
                new[b] = _single(inst, da, inst.sizes[b])
                yield new


def _single(inst, d, size):
    counts = [0] * inst.n_domains
    counts[d] = size
    return tuple(counts)


def refine(plan_input, inst, movable, placements):
    """``placements`` made fairer among plans the contract ranks no worse.

    Unchanged above ``MAX_VMS`` movable memory-bound VMs, on a host with
    no more vCPUs than CPUs (every vCPU can have a CPU), while a
    memory-bound VM floats (:func:`memory_floats`), or when nothing
    better exists. Exact (:func:`_exact`) when every placed VM lies in one
    domain and :func:`assignments` is at most ``EXACT_MAX_PLANS``; a local
    search (:func:`_local_search`) otherwise.
    """
    if (not movable or len(movable) > MAX_VMS
            or sum(vm.vcpus for vm in plan_input.vms)
            <= len(plan_input.all_cpus)
            or memory_floats(plan_input, movable, placements)):
        return placements
    fixed, floating = host_load(plan_input, inst, movable, placements)
    cpus = [len(d.cpus) for d in plan_input.domains]

    def key(plan):
        placed = [p for p in plan if p is not None]
        return (allshare_search.objective(inst, plan),
                -fairness(cpus, fixed, floating, placed),
                pressure(inst, placed))
    if assignments(inst, placements) <= EXACT_MAX_PLANS:
        return _exact(inst, placements, key,
                      _WholeKey(inst, cpus, fixed, floating))
    return _local_search(inst, placements, key)


def assignments(inst, placements):
    """Whole-domain assignments of the VMs ``placements`` places.

    Counted up to exchanging identical VMs (same vCPUs, same current
    counts: the key cannot tell them apart): per group of ``k`` such VMs
    that fit in ``m`` domains, the ``C(m + k - 1, k)`` ways to spread
    them, multiplied over the groups. Infinite when a placed VM spans
    several domains (the exact step covers whole-domain plans only).
    """
    groups = {}
    for vm, p in enumerate(placements):
        if p is None:
            continue
        if len(allshare_search.support(p)) != 1:
            return math.inf
        twin = (inst.sizes[vm], inst.current[vm])
        groups[twin] = groups.get(twin, 0) + 1
    total = 1
    for (size, _current), k in groups.items():
        fit = sum(1 for f in inst.free if f >= size)
        total *= math.comb(fit + k - 1, k)
    return total


class _WholeKey:
    """``(-fairness, pressure)`` of whole-domain plans, from domain loads.

    Equal to the refinement's key (up to rounding) for plans whose placed
    VMs each lie in one domain: a VM's share then depends only on its
    domain's load and the fair level, which depends only on the loads,
    so it is memoised per (vCPUs, VMs) per domain.
    """

    def __init__(self, inst, cpus, fixed, floating):
        self.inst, self.cpus, self.fixed = inst, cpus, fixed
        self.floating = floating
        self.work = sum(v * busy for v, busy in floating)
        self.memo, self.levels = {}, {}

    def __call__(self, vcpus, vms):
        """The key for ``vcpus``/``vms`` placed per domain (tuples)."""
        found = self.memo.get((vcpus, vms))
        if found is None:
            found = self.memo[vcpus, vms] = self._compute(vcpus, vms)
        return found

    def _compute(self, vcpus, vms):
        loads = [f + n for f, n in zip(self.fixed, vcpus)]
        x = self.levels.get(vcpus)
        if x is None:
            x = self.levels[vcpus] = fair_level(self.cpus, loads, self.work)
        total = 0.0
        for n, c, load in zip(vms, self.cpus, loads):
            if n:
                share = min(x, c / max(load, 1e-12))
                total += n * math.log(max(share, 1e-12))
        for _v, busy in self.floating:
            total += math.log(min(1.0, x / busy))
        fair = total / max(1, sum(vms) + len(self.floating))
        inst = self.inst
        press = sum((f + n) ** 2 / c for f, n, c in zip(
            inst.fixed_load, vcpus, inst.domain_cpus) if c)
        return (-fair, press)


def _exact(inst, placements, key, whole_key):
    """The best plan by ``key`` over every whole-domain assignment.

    Depth first over the placed VMs (largest first; identical VMs in
    non-decreasing domain order, each spread once), pruned when a lower
    bound of the contract's key exceeds the best complete one: whole-domain
    VMs add no excess, and each VM still to place adds one dirt unless an
    empty domain is left for it and one move unless it can stay where it
    is. Leaves are scored by ``whole_key`` (a :class:`_WholeKey`),
    ``placements`` by ``key``; ``placements`` is kept unless a plan beats
    it (:func:`_better`), so that the result is a fixed point of
    :func:`refine`.
    """
    def twin(vm):
        cur = inst.current[vm]
        return (-inst.sizes[vm], cur is None, cur or ())
    order = sorted((vm for vm, p in enumerate(placements) if p is not None),
                   key=lambda vm: (twin(vm), vm))
    same = [pos > 0 and twin(order[pos - 1]) == twin(vm)
            for pos, vm in enumerate(order)]
    # Per position, the VMs from there on that must move (none is now
    # wholly in one domain).
    must_move = [0] * (len(order) + 1)
    for pos in range(len(order) - 1, -1, -1):
        cur = inst.current[order[pos]]
        must_move[pos] = must_move[pos + 1] + (
            cur is None or len(allshare_search.support(cur)) != 1)
    unplaced = len(placements) - len(order)
    count = list(inst.fixed_touch)
    for vm, p in enumerate(placements):
        if p is None:
            for d in inst.current_touch[vm]:
                count[d] += 1
    free = list(inst.free)
    plan = list(placements)
    chosen = [0] * len(order)
    vcpus = [0] * inst.n_domains
    vms = [0] * inst.n_domains
    start = key(placements)
    found = [start, placements]

    def visit(pos, dirt, moves):
        left = len(order) - pos
        bound = (unplaced, 0,
                 dirt + max(0, left - sum(1 for n in count if not n)),
                 moves + must_move[pos])
        if bound > found[0][0]:
            return
        if not left:
            got = ((unplaced, 0, dirt, moves),) + whole_key(tuple(vcpus),
                                                            tuple(vms))
            if _better(got, found[0]):
                found[0], found[1] = got, list(plan)
            return
        vm = order[pos]
        size = inst.sizes[vm]
        for d in range(chosen[pos - 1] if same[pos] else 0,
                       inst.n_domains):
            if free[d] < size:
                continue
            p = _single(inst, d, size)
            chosen[pos] = d
            free[d] -= size
            vcpus[d] += size
            vms[d] += 1
            count[d] += 1
            plan[vm] = p
            visit(pos + 1, dirt + (count[d] > 1),
                  moves + (p != inst.current[vm]))
            count[d] -= 1
            vms[d] -= 1
            vcpus[d] -= size
            free[d] += size
        plan[vm] = placements[vm]
    visit(0, sum(max(0, n - 1) for n in count), 0)
    if _better(found[0], start):
        return found[1]
    return list(placements)


def _local_search(inst, placements, key):
    """``placements`` improved by single moves and swaps (``key``)."""
    best = list(placements)
    best_key = key(best)
    for _ in range(MAX_STEPS):
        whole = {vm: next(iter(allshare_search.support(p)))
                 for vm, p in enumerate(best)
                 if p is not None and len(allshare_search.support(p)) == 1}
        found = None
        for new in _neighbours(inst, best, whole):
            if allshare_search.is_feasible(inst, new):
                got = key(new)
                if _better(got, found[1] if found else best_key):
                    found = (new, got)
        if found is None:
            break
        best, best_key = found
    return best


def pressure(inst, placed):
    """Sum over domains of memory-bound vCPUs squared over CPUs.

    Lowest when the memory-bound vCPUs are spread in proportion to the
    domains' CPUs: each gets the most CPUs, and where the last-level cache
    and the memory link grow with the cores (a slice per core), the most
    cache and bandwidth.
    """
    load = list(inst.fixed_load)
    for counts in placed:
        for d, n in enumerate(counts):
            load[d] += n
    return sum(n * n / c for n, c in zip(load, inst.domain_cpus) if c)


def _better(a, b):
    """True when key ``a`` beats ``b`` (floats by over ``EPSILON``)."""
    if a[0] != b[0]:
        return a[0] < b[0]
    if abs(a[1] - b[1]) > EPSILON:
        return a[1] < b[1]
    return a[2] < b[2] - EPSILON
