"""Search for All-share placements of memory-bound VMs over cache domains.

This module works on a compact, index-based :class:`Instance` that
:mod:`nova_cacheaware.policy.cachedomain` builds from the public input; it
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

Two solvers: :func:`exact` (branch and bound over supports, optimal) and
:func:`heuristic` (greedy plus local search, fast, guarantee in its
docstring).
"""

import dataclasses
import functools
import itertools
import typing as ty

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
    inside one domain) and the domains its current CPUs touch.
    """

    free: ty.Tuple[int, ...]
    capacity: ty.Tuple[int, ...]
    fixed_touch: ty.Tuple[int, ...]
    sizes: ty.Tuple[int, ...]
    current: ty.Tuple[Placement, ...]
    current_touch: ty.Tuple[ty.FrozenSet[int], ...]

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
        result = []
        for size in self.sizes:
            total, need = 0, max(1, sum(1 for c in caps if c > 0))
            for k, cap in enumerate(caps, start=1):
                total += cap
                if total >= size:
                    need = k
                    break
            result.append(need)
        return tuple(result)

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
# Transport feasibility: a tiny max-flow (VMs -> domains).

def _transport(demand, allowed, free):
    """Distribute ``demand[i]`` units of each VM over ``allowed[i]`` domains.

    Augmenting paths on the bipartite graph VM -> domain (capacity
    ``free[d]``). Returns ``(shipped, flows)`` where ``flows[i]`` maps
    domain -> units; the demand is met when ``shipped == sum(demand)``.
    """
    flows = [dict() for _ in demand]
    left = list(free)
    shipped = 0

    def augment(vm, seen):
        # Direct room first, then reroute another VM's unit (DFS).
        for d in allowed[vm]:
            if left[d] > 0:
                left[d] -= 1
                flows[vm][d] = flows[vm].get(d, 0) + 1
                return True
        for d in allowed[vm]:
            if d in seen:
                continue
            seen.add(d)
            for other, flow in enumerate(flows):
                if other != vm and flow.get(d, 0) > 0 and augment_from(
                        other, d, seen):
                    flows[vm][d] = flows[vm].get(d, 0) + 1
                    return True
        return False

    def augment_from(vm, giving_up, seen):
        # Move one unit of ``vm`` off domain ``giving_up`` to elsewhere.
        flows[vm][giving_up] -= 1
        if augment(vm, seen):
            return True
        flows[vm][giving_up] += 1
        return False

    for vm, units in enumerate(demand):
        # Bulk-fill direct room first; augment one unit at a time only for
        # what is left (large VMs would otherwise cost one search per vCPU).
        for d in allowed[vm]:
            take = min(units, left[d])
            if take:
                left[d] -= take
                flows[vm][d] = flows[vm].get(d, 0) + take
                units -= take
                shipped += take
        for _ in range(units):
            if not augment(vm, set()):
                break
            shipped += 1
    return shipped, flows


def _hall(demand, allowed, free):
    """Hall's condition: every group of VMs fits in the domains it may use.

    Necessary and sufficient for the transport to succeed; checking it
    first is much cheaper than a failing max-flow on large VMs.
    """
    n = len(demand)
    for mask in range(1, 1 << n):
        need, reach = 0, set()
        for i in range(n):
            if mask >> i & 1:
                need += demand[i]
                reach.update(allowed[i])
        if need > sum(free[d] for d in reach):
            return False
    return True


def _realise(inst, supports, fixed):
    """Counts for VMs with given supports (each domain >= 1 vCPU).

    ``supports`` maps VM -> support; VMs in ``fixed`` take their current
    counts. Returns ``(ok, placements_by_vm)``.
    """
    left = list(inst.free)
    result = {}
    for vm in fixed:
        result[vm] = inst.current[vm]
        for d, n in enumerate(inst.current[vm]):
            left[d] -= n
    free_vms = [vm for vm in supports if vm not in fixed]
    for vm in free_vms:
        for d in supports[vm]:
            left[d] -= 1
    if min(left, default=0) < 0:
        return False, {}
    demand = [inst.sizes[vm] - len(supports[vm]) for vm in free_vms]
    if min(demand, default=0) < 0:
        return False, {}
    allowed = [sorted(supports[vm]) for vm in free_vms]
    if len(free_vms) <= 10 and not _hall(demand, allowed, left):
        return False, {}
    shipped, flows = _transport(demand, allowed, left)
    if shipped != sum(demand):
        return False, {}
    for vm, flow in zip(free_vms, flows):
        counts = [0] * inst.n_domains
        for d in supports[vm]:
            counts[d] = 1 + flow.get(d, 0)
        result[vm] = tuple(counts)
    return True, result


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
    instant) and for measuring :func:`heuristic`.
    """
    n_vms = len(inst.sizes)
    target_unplaced = n_vms - max_placeable(inst)
    order = sorted(range(n_vms), key=lambda vm: (-inst.sizes[vm], vm))
    options = {vm: _support_options(inst, vm) for vm in order}
    if budget is not None and incumbent is None:
        raise ValueError('a search budget needs an incumbent')
    best = {'key': None, 'placements': None, 'nodes': 0}
    if incumbent is not None:
        best['key'] = objective(inst, incumbent)
        best['placements'] = list(incumbent)

    touch = list(inst.fixed_touch)
    uses = [0] * inst.n_domains
    chosen = {}

    def dirt():
        return sum(max(0, n - 1) for n in touch)

    def visit(pos, unplaced, excess, moved_lb):
        best['nodes'] += 1
        if budget is not None and best['nodes'] > budget:
            return
        if unplaced > target_unplaced:
            return
        bound = (target_unplaced, excess, dirt(), moved_lb)
        if best['key'] is not None and bound >= best['key']:
            return
        if pos == len(order):
            _leaf()
            return
        vm = order[pos]
        cur_support = (support(inst.current[vm])
                       if inst.current[vm] is not None else None)
        for option in options[vm]:
            if any(uses[d] + 1 > inst.free[d] for d in option):
                continue
            for d in option:
                uses[d] += 1
                touch[d] += 1
            chosen[vm] = option
            visit(pos + 1, unplaced,
                  excess + len(option) - inst.minspan(vm),
                  moved_lb + (option != cur_support))
            del chosen[vm]
            for d in option:
                uses[d] -= 1
                touch[d] -= 1
        # Unplaced: the VM stays at its current CPUs.
        for d in inst.current_touch[vm]:
            touch[d] += 1
        visit(pos + 1, unplaced + 1, excess, moved_lb)
        for d in inst.current_touch[vm]:
            touch[d] -= 1

    def _leaf():
        supports = dict(chosen)
        candidates = [vm for vm, s in supports.items()
                      if inst.current[vm] is not None
                      and support(inst.current[vm]) == s]
        for keep in range(len(candidates), -1, -1):
            for fixed in itertools.combinations(candidates, keep):
                # Each max-flow counts as a node: bounds the leaf work too.
                best['nodes'] += 1
                if budget is not None and best['nodes'] > budget:
                    return
                ok, counts = _realise(inst, supports, set(fixed))
                if not ok:
                    continue
                placements = [counts.get(vm) for vm in range(n_vms)]
                key = objective(inst, placements)
                if best['key'] is None or key < best['key']:
                    best['key'] = key
                    best['placements'] = placements
                return

    visit(0, 0, 0, 0)
    return best['placements']


# --------------------------------------------------------------------------
# Heuristic: greedy placement, then local search.

class _State:
    """Mutable working state of the heuristic (private)."""

    def __init__(self, inst, pending):
        self.inst = inst
        self.free = list(inst.free)
        # VMs to be placed (``pending``) touch nothing yet; the others stay
        # unplaced and are counted at their current CPUs.
        self.pending = set(pending)
        self.count = list(inst.fixed_touch)
        for vm, touched in enumerate(inst.current_touch):
            if vm not in self.pending:
                for d in touched:
                    self.count[d] += 1
        self.placements = [None] * len(inst.sizes)
        self.excess = 0
        self.moves = 0
        self.dirt = sum(n - 1 for n in self.count if n > 1)

    def key(self):
        """``(excess, dirt, moves)`` of the current placements."""
        return (self.excess, self.dirt, self.moves)

    def _touch(self, d, step):
        # Keep ``dirt`` = sum(max(0, count - 1)) up to date.
        if step > 0:
            self.dirt += self.count[d] >= 1
        else:
            self.dirt -= self.count[d] >= 2
        self.count[d] += step

    def dirt_delta(self, old, new):
        delta = 0
        for d in old - new:
            delta -= 1 if self.count[d] >= 2 else 0
        for d in new - old:
            delta += 1 if self.count[d] >= 1 else 0
        return delta

    def set(self, vm, placement):
        old = self.placements[vm]
        if vm in self.pending:
            self.pending.discard(vm)
        elif old is not None:
            for d in support(old):
                self.free[d] += old[d]
                self._touch(d, -1)
            self.excess -= len(support(old)) - self.inst.minspan(vm)
            self.moves -= old != self.inst.current[vm]
        else:
            for d in self.inst.current_touch[vm]:
                self._touch(d, -1)
        self.placements[vm] = placement
        if placement is not None:
            for d in support(placement):
                self.free[d] -= placement[d]
                self._touch(d, +1)
            self.excess += len(support(placement)) - self.inst.minspan(vm)
            self.moves += placement != self.inst.current[vm]
        else:
            for d in self.inst.current_touch[vm]:
                self._touch(d, +1)


def _single(inst, d, size):
    counts = [0] * inst.n_domains
    counts[d] = size
    return tuple(counts)


def _greedy_place(state, vm):
    inst = state.inst
    size = inst.sizes[vm]
    cur = inst.current[vm]
    fits = [d for d in range(inst.n_domains) if state.free[d] >= size]
    if fits:
        # Keep Clean (no dirt) first, then stay put, then the emptiest
        # domain, then best fit so that large domains stay for large VMs.
        def key(d):
            return (state.count[d] > 0, cur != _single(inst, d, size),
                    state.count[d], state.free[d] - size, d)
        state.set(vm, _single(inst, min(fits, key=key), size))
        return
    chosen = _narrowest_split(state, size)
    if (cur is not None and len(support(cur)) <= len(chosen)
            and all(state.free[d] >= n for d, n in enumerate(cur))
            and state.dirt_delta(frozenset(), support(cur))
            <= state.dirt_delta(frozenset(), frozenset(chosen))):
        # Must split anyway: keep the current split when it is as narrow
        # and as clean.
        state.set(vm, cur)
        return
    counts = [0] * inst.n_domains
    left = size
    # Fill the domains with the least room first so that every chosen
    # domain gets at least one vCPU and the roomiest keeps the slack.
    for d in sorted(chosen, key=lambda d: (state.free[d], d)):
        take = min(left - (len(chosen) - 1 - sum(1 for x in counts if x)),
                   state.free[d])
        counts[d] = take
        left -= take
    state.set(vm, tuple(counts))


def _narrowest_split(state, size):
    """The fewest domains holding ``size`` vCPUs, as clean as possible.

    The fewest is ``k``: the count of largest free rooms reaching ``size``.
    Among sets of ``k`` domains, take as many domains without memory-bound
    VMs as still reach ``size`` (roomiest first), the rest from the others.
    """
    n = state.inst.n_domains
    by_room = sorted(range(n), key=lambda d: (-state.free[d], d))
    k, room = 0, 0
    for d in by_room:
        if room >= size:
            break
        k += 1
        room += state.free[d]
    clean = [d for d in by_room if state.count[d] == 0 and state.free[d]]
    dirty = [d for d in by_room if state.count[d] > 0 and state.free[d]]
    for c in range(min(k, len(clean)), -1, -1):
        chosen = clean[:c] + dirty[:k - c]
        if len(chosen) == k and sum(state.free[d] for d in chosen) >= size:
            return chosen
    return by_room[:k]


def _candidate_key(state, vm, new):
    """Key change (excess, dirt, moves) if ``vm`` moved to ``new``."""
    inst = state.inst
    old = state.placements[vm]
    old_s, new_s = support(old), support(new)
    d_excess = len(new_s) - len(old_s)
    d_dirt = state.dirt_delta(old_s, new_s)
    d_moves = (new != inst.current[vm]) - (old != inst.current[vm])
    return (d_excess, d_dirt, d_moves)


def _fits_after_removal(state, vm, new):
    old = state.placements[vm]
    for d in support(new):
        room = state.free[d] + (old[d] if old else 0)
        if new[d] > room:
            return False
    return True


def _improve_once(state, placed):
    inst = state.inst
    improved = False
    for vm in placed:
        size = inst.sizes[vm]
        old = state.placements[vm]
        old_s = support(old)
        cur = inst.current[vm]
        best, best_key = None, (0, 0, 0)
        # One whole domain: cheap checks first, a tuple only when it wins.
        for d in range(inst.n_domains):
            if state.free[d] + old[d] < size:
                continue
            if len(old_s) == 1 and d in old_s:
                continue
            new_s = frozenset((d,))
            partial = (1 - len(old_s), state.dirt_delta(old_s, new_s))
            if partial > best_key[:2]:
                continue
            new = _single(inst, d, size)
            key = partial + ((new != cur) - (old != cur),)
            if key < best_key:
                best, best_key = new, key
        if cur is not None and cur != old and _fits_after_removal(
                state, vm, cur):
            key = _candidate_key(state, vm, cur)
            if key < best_key:
                best, best_key = cur, key
        if best is not None:
            state.set(vm, best)
            improved = True
    # Swaps that send a moved VM home: v wants domain a, held by w.
    for vm in placed:
        cur = inst.current[vm]
        placement = state.placements[vm]
        if (cur is None or placement == cur or len(support(cur)) != 1
                or len(support(placement)) != 1):
            continue
        a = next(iter(support(cur)))
        b = next(iter(support(placement)))
        for other in placed:
            if other == vm or state.placements[other] != _single(
                    inst, a, inst.sizes[other]):
                continue
            if not (state.free[b] + inst.sizes[vm] >= inst.sizes[other]
                    and state.free[a] + inst.sizes[other] >= inst.sizes[vm]):
                continue
            before = ((state.placements[vm] != cur)
                      + (state.placements[other] != inst.current[other]))
            after = (0 + (_single(inst, b, inst.sizes[other])
                          != inst.current[other]))
            if after < before:
                state.set(other, None)
                state.set(vm, cur)
                state.set(other, _single(inst, b, inst.sizes[other]))
                improved = True
                break
    return improved


def _kick(state, placed, budget):
    """Two-step moves: VM ``v`` takes a target, one blocker moves away.

    For each VM that spans more domains than it must or that moved, each
    target (one whole domain, or its current placement) short of room in
    exactly one domain ``d`` is tried after relocating one VM that sits in
    ``d`` alone to another whole domain. Kept when ``(excess, dirt, moves)``
    drops. Returns ``(improved, budget left)``.
    """
    inst = state.inst
    n = inst.n_domains
    improved = False
    for v in placed:
        placement = state.placements[v]
        wide = len(support(placement)) > inst.minspan(v)
        if not wide and placement == inst.current[v]:
            continue
        # Only a wide VM gains from a new whole domain; a moved one gains
        # from going home.
        targets = ([_single(inst, d, inst.sizes[v]) for d in range(n)]
                   if wide else [])
        if inst.current[v] is not None:
            targets.append(inst.current[v])
        for target in targets:
            if target == state.placements[v]:
                continue
            own = state.placements[v]
            short = [d for d in range(n)
                     if target[d] > state.free[d] + own[d]]
            if len(short) != 1:
                continue
            d = short[0]
            for w in placed:
                if w == v or state.placements[w] != _single(
                        inst, d, inst.sizes[w]):
                    continue
                if target[d] > state.free[d] + own[d] + inst.sizes[w]:
                    continue
                if not wide and state.placements[w] == inst.current[w]:
                    continue  # would trade one move for another
                for e in range(n):
                    if budget <= 0:
                        return improved, 0
                    budget -= 1
                    if e == d:
                        continue
                    before = state.key()
                    old_v, old_w = state.placements[v], state.placements[w]
                    state.set(w, None)
                    state.set(v, target)
                    if state.free[e] >= inst.sizes[w]:
                        state.set(w, _single(inst, e, inst.sizes[w]))
                        if state.key() < before:
                            improved = True
                            break
                        state.set(w, None)
                    state.set(v, old_v)
                    state.set(w, old_w)
                if improved:
                    return improved, budget
    return improved, budget


def heuristic(inst, max_passes=20, kick_budget=4000):
    """A good list of placements, fast; see the guarantee below.

    1. Place as many VMs as possible (:func:`placed_set`, optimal count).
    2. Greedy, largest VM first: a VM that fits in one domain goes to a
       domain without memory-bound VMs if one fits (Empty stays Clean), its
       current domain when that is as good, else the domain with the fewest
       memory-bound VMs, then best fit. A VM that fits in no single domain
       is split over the fewest domains (most free room first, cleanest
       first), keeping its current split when that is as narrow and clean.
    3. Local search until no step improves ``(excess, dirt, moves)``
       lexicographically (at most ``max_passes`` passes): move one VM into
       one whole domain or back to its current placement; swap a moved VM
       with the occupant of its home domain; two-step moves where one
       blocker leaves a domain (:func:`_kick`, budgeted); finally an
       unplaced VM may take a placed VM's room (:func:`_exchange_unplaced`).

    Guarantee (proof in doc/source/user/plan.rst): the number of unplaced
    VMs is optimal; capacity is never exceeded; and if every VM is placed
    and the VMs, sorted by size, fit one-to-one into distinct domains free
    of unmovable memory-bound VMs (``i``-th largest VM <= ``i``-th largest
    such domain's room), the plan has no excess span and no Dirty domain
    caused by a movable VM, which is optimal for criteria (1) and (2). The
    result is locally optimal for the steps of 3 (unless a budget ran
    out).
    """
    placed = placed_set(inst)
    state = _State(inst, placed)
    order = sorted(placed, key=lambda vm: (-inst.sizes[vm],
                                           inst.current[vm] is None, vm))
    for vm in order:
        _greedy_place(state, vm)
    for _ in range(max_passes):
        if _improve_once(state, order):
            continue
        kicked, kick_budget = _kick(state, order, kick_budget)
        if not kicked:
            break
    _exchange_unplaced(state)
    return list(state.placements)


def _exchange_unplaced(state, budget=512):
    """Let an unplaced VM take the room of a placed VM.

    The count placed stays optimal; the exchange is kept when it lowers
    ``(excess, dirt, moves)`` (an unplaced VM stays at its current CPUs, and
    a floating one fills every cache, so which VMs stay unplaced matters).
    At most ``budget`` trials: hosts with many unplaced VMs are overloaded.
    """
    inst = state.inst
    for u in range(len(inst.sizes)):
        if state.placements[u] is not None:
            continue
        for p in range(len(inst.sizes)):
            old = state.placements[p]
            if old is None or sum(state.free) + inst.sizes[p] < inst.sizes[u]:
                continue
            if budget <= 0:
                return
            budget -= 1
            before = state.key()
            state.set(p, None)
            _greedy_place(state, u)
            if state.key() < before:
                break
            state.set(u, None)
            state.set(p, old)
