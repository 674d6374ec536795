"""Search for All-share placements of memory-bound VMs over cache domains.

This module works on a compact, index-based :class:`Instance` that
:mod:`nova_cacheaware.cachedomain.planner` builds from the public input; it
knows nothing about CPU ids or JSON. A *placement* of a movable memory-bound
VM is a tuple of vCPU counts per domain (its *support* is the set of domains
with a non-zero count); ``None`` means the VM is left unplaced.

The objective is a lexicographic key, smaller is better::

    (unplaced VMs, excess domains spanned, dirt, moves)

* unplaced: movable memory-bound VMs that get no placement. Any set of VMs
  whose vCPUs add up to at most the free capacity of the host can be placed
  (a VM may be split over domains), so the fewest unplaced VMs is reached by
  placing the smallest VMs first; both solvers place that many.
* excess: for each placed VM, the domains it spans minus ``minspan`` (the
  fewest domains whose capacities could hold its vCPUs) -- criterion (1).
* dirt: the sum over domains of ``max(0, memory-bound VMs in it - 1)`` --
  criterion (2). Fixed memory-bound VMs (unmovable ones, and unplaced ones at
  their current CPUs) count in every domain their CPUs touch.
* moves: placed VMs whose placement differs from their current one (a VM whose
  current CPUs are not inside whole domains always counts) -- criterion (3).

Ties are broken by :func:`crowding` (memory-bound vCPUs beyond one per CPU
in a domain), which the solvers minimise after the objective.

Two solvers: :func:`exact` here (branch and bound over supports, optimal)
and :func:`nova_cacheaware.cachedomain.heuristic.heuristic` (greedy
plus local search, fast, guarantee in its docstring).
"""

import dataclasses
import functools
import itertools
import typing as ty

from nova_cacheaware.cachedomain import transport as allshare_flow

Placement = ty.Optional[ty.Tuple[int, ...]]


@dataclasses.dataclass(frozen=True)
class Instance:
    """An index-based planning problem.

    ``free``: per domain, capacity left for movable memory-bound vCPUs (the
    capacity minus the vCPUs of unmovable memory-bound VMs inside it, floored
    at zero). ``capacity``: the full per-domain capacity (for ``minspan``).
    ``fixed_touch``: per domain, unmovable memory-bound VMs touching it.
    ``sizes``/``current``/``current_touch``: per movable memory-bound VM, its
    vCPU count, its current counts per domain (``None`` when any vCPU is not
    inside one domain) and the domains its current CPUs touch. ``cpus``:
    per domain, its CPU count (for the crowding tie-break; the capacity when
    not given).
    """

    free: ty.Tuple[int, ...]
    capacity: ty.Tuple[int, ...]
    fixed_touch: ty.Tuple[int, ...]
    sizes: ty.Tuple[int, ...]
    current: ty.Tuple[Placement, ...]
    current_touch: ty.Tuple[ty.FrozenSet[int], ...]
    cpus: ty.Optional[ty.Tuple[int, ...]] = None

    @functools.cached_property
    def domain_cpus(self):
        """Per domain, its CPU count (``cpus``; the capacity if unset)."""
        return self.cpus if self.cpus is not None else self.capacity

    @functools.cached_property
    def fixed_load(self):
        """Per domain, vCPUs of unmovable memory-bound VMs pinned in it."""
        return tuple(c - f for c, f in zip(self.capacity, self.free))

    @functools.cached_property
    def n_domains(self):
        """Number of domains."""
        return len(self.free)

    @functools.cached_property
    def minspans(self):
        """Per VM: fewest domains whose full capacities hold its vCPUs.

        A VM larger than the whole host gets the number of domains with a
        non-zero capacity (it can never be placed anyway).
        """
        caps = sorted(self.capacity, reverse=True)
        by_size = {}
        for size in set(self.sizes):
            total, need = 0, max(1, sum(1 for c in caps if c > 0))
            for k, cap in enumerate(caps, start=1):
                total += cap
                if total >= size:
                    need = k
                    break
            by_size[size] = need
        return tuple(by_size[size] for size in self.sizes)

    def minspan(self, vm):
        """Fewest domains whose full capacities could hold ``vm``'s vCPUs."""
        return self.minspans[vm]


@functools.lru_cache(maxsize=65536)
def support(placement):
    """The domain indexes a placement uses (empty for ``None``)."""
    if placement is None:
        return frozenset()
    return frozenset(d for d, n in enumerate(placement) if n)


def objective(inst, placements):
    """The lexicographic key ``(unplaced, excess, dirt, moves)``."""
    unplaced = excess = moves = 0
    count = list(inst.fixed_touch)
    for vm, placement in enumerate(placements):
        if placement is None:
            unplaced += 1
            touched = inst.current_touch[vm]
        else:
            touched = support(placement)
            excess += len(touched) - inst.minspan(vm)
            if placement != inst.current[vm]:
                moves += 1
        for d in touched:
            count[d] += 1
    dirt = sum(max(0, n - 1) for n in count)
    return (unplaced, excess, dirt, moves)


def crowding(inst, placements):
    """Memory-bound vCPUs beyond one per CPU, summed over the domains.

    The tie-break after the objective (not part of the contract's
    optimality): among plans equal on ``(unplaced, excess, dirt, moves)``,
    the one where fewer pinned vCPUs must take turns on a CPU.
    """
    load = list(inst.fixed_load)
    for placement in placements:
        if placement is not None:
            for d, n in enumerate(placement):
                load[d] += n
    return sum(max(0, u - c) for u, c in zip(load, inst.domain_cpus))


def search_key(inst, placements):
    """:func:`objective` then :func:`crowding`: what the solvers minimise."""
    return objective(inst, placements) + (crowding(inst, placements),)


def is_feasible(inst, placements):
    """True when the placements respect sizes and free capacity."""
    used = [0] * inst.n_domains
    for vm, placement in enumerate(placements):
        if placement is None:
            continue
        if len(placement) != inst.n_domains or min(placement) < 0:
            return False
        if sum(placement) != inst.sizes[vm]:
            return False
        for d, n in enumerate(placement):
            used[d] += n
    return all(u <= f for u, f in zip(used, inst.free))


def placed_set(inst):
    """The VMs to place: as many as fit, smallest first.

    Returns a frozenset of VM indexes. The count is the maximum possible
    (splitting makes any set fit whose vCPUs add up to at most the free
    capacity). Among equal sizes, VMs whose current CPUs touch the most
    domains go first: an unplaced VM stays where it is, and there it fills
    the caches of every domain it touches.
    """
    room = sum(inst.free)
    order = sorted(range(len(inst.sizes)),
                   key=lambda vm: (inst.sizes[vm],
                                   -len(inst.current_touch[vm]), vm))
    chosen = set()
    for vm in order:
        if inst.sizes[vm] > room:
            break
        room -= inst.sizes[vm]
        chosen.add(vm)
    return frozenset(chosen)


def max_placeable(inst):
    """The largest number of movable memory-bound VMs that can be placed."""
    return len(placed_set(inst))


# --------------------------------------------------------------------------
# Exact: branch and bound over supports.

def _support_options(inst, vm):
    usable = [d for d in range(inst.n_domains) if inst.free[d] > 0]
    lo = inst.minspan(vm)
    hi = min(inst.sizes[vm], len(usable))
    options = []
    for k in range(lo, hi + 1):
        for combo in itertools.combinations(usable, k):
            if sum(inst.free[d] for d in combo) >= inst.sizes[vm]:
                options.append(frozenset(combo))
    cur = support(inst.current[vm]) if inst.current[vm] else None
    # Promising options first: fewer domains, the current one, emptier.
    options.sort(key=lambda s: (len(s), s != cur,
                                sum(inst.fixed_touch[d] for d in s),
                                sorted(s)))
    return options


def exact(inst, incumbent=None, budget=None):
    """An optimal list of placements (branch and bound).

    With ``budget`` (search nodes), the search stops there and returns the
    best solution found so far (at least ``incumbent``, which is then
    required): no longer guaranteed optimal, but bounded and deterministic.

    Enumerates, per VM (largest first), its support or "unplaced"; prunes on
    the lexicographic lower bound ``(unplaced, excess, dirt, moves so far)``
    against the best complete solution (seeded with ``incumbent`` when
    given); at a leaf, checks that counts exist (max-flow) and keeps as many
    VMs at their current counts as feasible (fewest moves). Exponential in
    the number of VMs: meant for small hosts (<= 4 domains, <= 4 VMs is
    instant) and for measuring the heuristic.
    """
    if budget is not None and incumbent is None:
        raise ValueError('a search budget needs an incumbent')
    search = _BranchAndBound(inst, budget)
    if incumbent is not None:
        search.offer(list(incumbent))
    search.visit(0, 0, 0, 0)
    return search.placements


class _BranchAndBound:
    """State of :func:`exact` (private)."""

    def __init__(self, inst, budget):
        self.inst = inst
        self.budget = budget
        n_vms = len(inst.sizes)
        self.target_unplaced = n_vms - max_placeable(inst)
        self.order = sorted(range(n_vms),
                            key=lambda vm: (-inst.sizes[vm], vm))
        self.options = {vm: _support_options(inst, vm) for vm in self.order}
        self.key = self.placements = None
        self.nodes = 0
        self.touch = list(inst.fixed_touch)
        self.uses = [0] * inst.n_domains
        self.chosen = {}

    def offer(self, placements):
        """Keep ``placements`` when better than the best so far."""
        key = search_key(self.inst, placements)
        if self.key is None or key < self.key:
            self.key, self.placements = key, placements

    def _spent(self):
        self.nodes += 1
        return self.budget is not None and self.nodes > self.budget

    def visit(self, pos, unplaced, excess, moved_lb):
        """Branch on the VM at ``pos`` of the order (or close a leaf)."""
        if self._spent() or unplaced > self.target_unplaced:
            return
        dirt = sum(max(0, n - 1) for n in self.touch)
        bound = (self.target_unplaced, excess, dirt, moved_lb, 0)
        if self.key is not None and bound >= self.key:
            return
        if pos == len(self.order):
            self._leaf()
            return
        inst, vm = self.inst, self.order[pos]
        cur = inst.current[vm]
        cur_support = support(cur) if cur is not None else None
        for option in self.options[vm]:
            if any(self.uses[d] + 1 > inst.free[d] for d in option):
                continue
            self._step(option, self.uses, 1)
            self.chosen[vm] = option
            self.visit(pos + 1, unplaced,
                       excess + len(option) - inst.minspan(vm),
                       moved_lb + (option != cur_support))
            del self.chosen[vm]
            self._step(option, self.uses, -1)
        # Unplaced: the VM stays at its current CPUs.
        self._step(inst.current_touch[vm], None, 1)
        self.visit(pos + 1, unplaced + 1, excess, moved_lb)
        self._step(inst.current_touch[vm], None, -1)

    def _step(self, domains, uses, sign):
        for d in domains:
            if uses is not None:
                uses[d] += sign
            self.touch[d] += sign

    def _leaf(self):
        inst = self.inst
        supports = dict(self.chosen)
        candidates = [vm for vm, s in supports.items()
                      if inst.current[vm] is not None
                      and support(inst.current[vm]) == s]
        for keep in range(len(candidates), -1, -1):
            for fixed in itertools.combinations(candidates, keep):
                # Each max-flow counts as a node: bounds the leaf work too.
                if self._spent():
                    return
                ok, counts = allshare_flow.realise(inst, supports,
                                                   set(fixed))
                if ok:
                    self.offer([counts.get(vm)
                                for vm in range(len(inst.sizes))])
                    return
