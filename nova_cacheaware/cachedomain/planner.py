"""All-share planning over cache domains, and cache states (study 000).

The contract is ``nova-cacheaware plan`` (doc/source/user/plan.rst):

* every vCPU of a movable memory-bound VM is pinned to exactly the whole CPU
  list of one domain; unmovable VMs and VMs that are not memory-bound keep
  their current pinning (all CPUs when none is given);
* capacity per domain: memory-bound vCPUs pinned into it (movable ones, plus
  vCPUs of unmovable ones whose current CPUs lie inside it) <=
  ``floor(|cpus| * max_vcpus_per_cpu)``;
* minimise, in this order: (1) the excess domains spanned by movable
  memory-bound VMs, (2) the sum over domains of ``max(0, memory-bound VMs in
  it - 1)``, (3) the movable memory-bound VMs that move; ties broken by
  crowding (memory-bound vCPUs beyond one per CPU);
* memory-bound VMs that cannot fit stay where they are and are ``unplaced``
  (as few as possible: the smallest VMs are placed first).

A memory-bound VM is *in* a domain when the CPUs of one of its vCPUs
intersect the domain (where it may run, it fills the cache). A domain is
Empty with no memory-bound VM in it, Clean with one, Dirty with more
(:mod:`nova_cacheaware.contracts.cache_state`).

The contract's types and their JSON form are in
:mod:`~nova_cacheaware.cachedomain.model` (import them from
there); the classifier that decides which VMs are
memory-bound lives in :mod:`nova_cacheaware.cachedomain.memclass`.
"""

import dataclasses

from nova_cacheaware.cachedomain import fair_share as allshare_share
from nova_cacheaware.cachedomain import heuristic as allshare_heuristic
from nova_cacheaware.cachedomain import model
from nova_cacheaware.cachedomain import search as allshare_search
from nova_cacheaware.cachedomain import throughput as allshare_throughput
from nova_cacheaware.contracts import cache_state as states

# The names the planner's own code uses; callers take the contract's
# types and JSON from cachedomain_model itself.
cache_state = states.cache_state
SHARE_ALL, SHARE_PARTIAL = model.SHARE_ALL, model.SHARE_PARTIAL
VMPlan = model.VMPlan
DomainPlan = model.DomainPlan
Plan = model.Plan

# Hosts up to this size are solved exactly (the contract's "small hosts").
EXACT_MAX_DOMAINS = 4
EXACT_MAX_VMS = 4
# Up to this many movable memory-bound VMs, the heuristic's plan is refined
# by a branch and bound stopped after this many search nodes (a few tens of
# ms): better plans on medium hosts, bounded time everywhere.
REFINE_MAX_VMS = 8
REFINE_BUDGET = 4000
# A refined plan is re-searched from itself at most this many times.
REFINE_MAX_ROUNDS = 8


# --------------------------------------------------------------------------
# Planning

def _domains_of(plan_input, cpus):
    """Indexes of the domains ``cpus`` (a tuple) touch; memoised."""
    memo = plan_input.domains_memo
    found = memo.get(cpus)
    if found is None:
        where = plan_input.domain_index
        found = memo[cpus] = frozenset(where[c] for c in cpus)
    return found


def _domain_of_cpus(plan_input, cpus):
    """Index of the domain holding all of ``cpus``; -1 if none does."""
    found = _domains_of(plan_input, tuple(cpus))
    return next(iter(found)) if len(found) == 1 else -1


def _touched(plan_input, pinning):
    """Indexes of the domains any vCPU of ``pinning`` may run in."""
    result = frozenset()
    for cpus in set(pinning.values()):
        result |= _domains_of(plan_input, cpus)
    return result


def build_instance(plan_input):
    """The search instance of ``plan_input`` and its movable VM order.

    Returns ``(instance, movable)`` where ``movable`` lists the movable
    memory-bound :class:`~nova_cacheaware.cachedomain.model.VM` in
    instance order.
    """
    caps = [plan_input.capacity(d) for d in plan_input.domains]
    free = list(caps)
    fixed_touch = [0] * len(caps)
    movable = []
    for vm in plan_input.vms:
        if not vm.memory_bound:
            continue
        if vm.movable:
            movable.append(vm)
            continue
        pinning = plan_input.pinning_now(vm)
        for cpus in pinning.values():
            d = _domain_of_cpus(plan_input, cpus)
            if d >= 0:
                free[d] -= 1
        for d in _touched(plan_input, pinning):
            fixed_touch[d] += 1
    current, touch = [], []
    for vm in movable:
        pinning = plan_input.pinning_now(vm)
        counts = [0] * len(caps)
        whole = True
        for cpus in pinning.values():
            d = _domain_of_cpus(plan_input, cpus)
            if d < 0:
                whole = False
            else:
                counts[d] += 1
        current.append(tuple(counts) if whole else None)
        touch.append(_touched(plan_input, pinning))
    inst = allshare_search.Instance(
        free=tuple(max(0, f) for f in free), capacity=tuple(caps),
        fixed_touch=tuple(fixed_touch),
        sizes=tuple(vm.vcpus for vm in movable),
        current=tuple(current), current_touch=tuple(touch),
        cpus=tuple(len(d.cpus) for d in plan_input.domains))
    return inst, movable


def solve(inst, method='auto'):
    """Placements for ``inst``: ``exact``, ``heuristic`` or ``auto``.

    ``auto`` is exact on small hosts (<= 4 domains and <= 4 movable
    memory-bound VMs); up to ``REFINE_MAX_VMS`` movable memory-bound VMs,
    the heuristic refined by a budgeted branch and bound (``refined``);
    the heuristic alone above.

    Incremental: the current placements are kept unless the search finds
    a strictly better key (so replanning with nothing changed moves
    nothing). A budgeted search is iterated from its own answer until it
    is a fixed point, so that the next replan cannot find more.
    """
    if method == 'auto':
        if (inst.n_domains <= EXACT_MAX_DOMAINS
                and len(inst.sizes) <= EXACT_MAX_VMS):
            method = 'exact'
        elif len(inst.sizes) <= REFINE_MAX_VMS:
            method = 'refined'
        else:
            method = 'heuristic'
    if method not in ('exact', 'refined', 'heuristic'):
        raise ValueError('unknown method %r' % method)
    result = _keep_current(inst, _search(inst, method))
    if method != 'refined':
        return result
    for _ in range(REFINE_MAX_ROUNDS):
        again = dataclasses.replace(
            inst, current=tuple(p if p is not None else c
                                for p, c in zip(result, inst.current)),
            current_touch=tuple(
                allshare_search.support(p) if p is not None else t
                for p, t in zip(result, inst.current_touch)))
        better = _keep_current(again, _search(again, method))
        # A later round counts an unplaced VM where the previous round put
        # it, so it can "improve" by unplacing one that in truth floats
        # back over every domain: keep only rounds that are no worse for
        # the host as it is.
        if (better == result or allshare_search.search_key(inst, better)
                > allshare_search.search_key(inst, result)):
            break
        result = better
    return result


def _search(inst, method):
    if method == 'heuristic':
        return allshare_heuristic.heuristic(inst)
    return allshare_search.exact(
        inst, incumbent=allshare_heuristic.heuristic(inst),
        budget=REFINE_BUDGET if method == 'refined' else None)


def _keep_current(inst, placements):
    """``placements``, or the current ones when they are as good."""
    current = [c if p is not None else None
               for p, c in zip(placements, inst.current)]
    if (current == list(placements) or None in [
            c for p, c in zip(placements, current) if p is not None]
            or not allshare_search.is_feasible(inst, current)):
        return placements
    if (allshare_search.search_key(inst, current)
            <= allshare_search.search_key(inst, placements)):
        return current
    return placements


def plan(plan_input, method='auto'):
    """Plan All-share pinning for ``plan_input``.

    ``plan_input`` is a
    :class:`~nova_cacheaware.cachedomain.model.PlanInput`.

    Pure and deterministic: the same input gives the same :class:`Plan`.
    The steps:

    1. :func:`build_instance`: the index-based search instance;
    2. with ``objective`` ``throughput``, small hosts it models are
       planned by :mod:`~nova_cacheaware.cachedomain.throughput` (steps 3
       and 4 skipped);
    3. :func:`solve`: the contract's key ``(unplaced, excess, dirt,
       moves)``, then crowding;
    4. :func:`~nova_cacheaware.cachedomain.fair_share.refine`, on
       oversubscribed hosts with at most ``fair_share.MAX_VMS`` movable
       memory-bound VMs and none floating: the key ``(contract key,
       -fairness, pressure)``. **Exact** when every placed VM lies in one
       domain and its whole-domain assignments (each placed VM in one
       domain with room for it, up to exchanging identical VMs) number at
       most ``fair_share.EXACT_MAX_PLANS`` (1024): the best by the key over
       all of them. Above the bound, a local search (moves and swaps),
       so large hosts keep their cost;
    5. :func:`assemble`: the :class:`Plan` document.
    """
    inst, movable = build_instance(plan_input)
    placements = None
    if plan_input.objective == 'throughput':
        placements = allshare_throughput.placements(plan_input, inst,
                                                    movable)
    if placements is None:
        placements = allshare_share.refine(plan_input, inst, movable,
                                           solve(inst, method))
    return assemble(plan_input, movable, placements)


def _spread(plan_input, vm, counts):
    """vCPU -> domain index: vCPUs already in a chosen domain stay there."""
    now = plan_input.pinning_now(vm)
    left = list(counts)
    where = {}
    for i in range(vm.vcpus):
        d = _domain_of_cpus(plan_input, now[i])
        if d >= 0 and left[d] > 0:
            where[i] = d
            left[d] -= 1
    rest = [d for d, n in enumerate(left) for _ in range(n)]
    for i in range(vm.vcpus):
        if i not in where:
            where[i] = rest.pop(0)
    return where


def assemble(plan_input, movable, placements):
    """Turn instance placements into the :class:`Plan` document."""
    placed = {vm.id: p for vm, p in zip(movable, placements)}
    domains = plan_input.domains
    vm_plans, unplaced = {}, []
    members = {d.id: [] for d in domains}
    for vm in plan_input.vms:
        counts = placed.get(vm.id)
        if counts is not None:
            where = _spread(plan_input, vm, counts)
            pinning = {i: domains[d].cpus for i, d in where.items()}
            moved = counts != _current_counts(plan_input, vm)
        else:
            if vm.id in placed:
                unplaced.append(vm.id)
            pinning = plan_input.pinning_now(vm)
            moved = False
        touched = _touched(plan_input, pinning)
        one = len(touched) == 1
        vm_plans[vm.id] = VMPlan(
            pinning=pinning,
            domains=tuple(domains[d].id for d in sorted(touched)),
            share=SHARE_ALL if one else SHARE_PARTIAL, moved=moved)
        if vm.memory_bound:
            for d in touched:
                members[domains[d].id].append(vm.id)
    return Plan(vms=vm_plans,
                domains={d.id: DomainPlan(state=cache_state(len(members[
                    d.id])), memory_vms=tuple(members[d.id]))
                    for d in domains},
                unplaced=tuple(unplaced))


def _current_counts(plan_input, vm):
    counts = [0] * len(plan_input.domains)
    for cpus in plan_input.pinning_now(vm).values():
        d = _domain_of_cpus(plan_input, cpus)
        if d < 0:
            return None
        counts[d] += 1
    return tuple(counts)


def score(plan_input, result):
    """Objective of a :class:`Plan`: ``(unplaced, excess, dirt, moves)``.

    Computed from the output document alone (independently of the search),
    for tests and benchmarks.
    """
    caps = sorted((plan_input.capacity(d) for d in plan_input.domains),
                  reverse=True)
    excess = moves = 0
    for vm in plan_input.vms:
        if not (vm.memory_bound and vm.movable) or vm.id in result.unplaced:
            continue
        p = result.vms[vm.id]
        total, need = 0, 0
        for cap in caps:
            if total >= vm.vcpus:
                break
            total += cap
            need += 1
        excess += len(p.domains) - max(1, need)
        moves += p.moved
    dirt = sum(max(0, len(d.memory_vms) - 1) for d in result.domains.values())
    return (len(result.unplaced), excess, dirt, moves)
