"""All-share replanning after one arrival or departure (incremental).

Instead of planning from scratch, start from the current placements (what
the last plan pinned), place the VMs that are not placed yet (the arrival,
or VMs that now fit after a departure) greedily, then improve by a chain
of single-VM moves around the domains the change touched, moving at most
``max_moves`` VMs that were placed before. The result is checked against a
threshold (:func:`acceptable`); the caller falls back to the full plan
when it is not met. Pure: no I/O, no clock.
"""

import collections

from nova_cacheaware.cachedomain import moves as allshare_moves
from nova_cacheaware.cachedomain.search import objective
from nova_cacheaware.cachedomain.search import placed_set
from nova_cacheaware.cachedomain.search import support
from nova_cacheaware.cachedomain.search_state import single
from nova_cacheaware.cachedomain.search_state import State

#: VMs placed before the change that an incremental replan may move.
MAX_MOVES = 4
#: How much dirtier than the reference (the full plan's greedy phase,
#: ``allshare_heuristic.greedy``) an incremental plan may be: 0.05 = 5 %.
DIRT_BOUND = 0.05


def _start(inst, unplaced):
    """State with every VM placed now (not in ``unplaced``) kept there.

    Returns ``(state, kept)``, or ``(None, ())`` when the current counts no
    longer fit (capacity changed): then only a full plan will do.
    """
    kept = [vm for vm, cur in enumerate(inst.current)
            if cur is not None and vm not in unplaced]
    used = [0] * inst.n_domains
    for vm in kept:
        for d, n in enumerate(inst.current[vm]):
            used[d] += n
    if any(u > f for u, f in zip(used, inst.free)):
        return None, ()
    state = State(inst, kept)
    for vm in kept:
        state.set(vm, inst.current[vm])
    return state, kept


def _place_newcomers(state, kept, place):
    """Place unplaced VMs, smallest first, up to the optimal count.

    Returns the VMs placed, or None when the count cannot be reached.
    """
    inst = state.inst
    target = len(placed_set(inst))
    waiting = sorted((vm for vm in range(len(inst.sizes))
                      if state.placements[vm] is None),
                     key=lambda vm: (inst.sizes[vm],
                                     -len(inst.current_touch[vm]), vm))
    placed = []
    for vm in waiting:
        if len(kept) + len(placed) >= target:
            break
        if inst.sizes[vm] > sum(state.free):
            return None
        place(state, vm)
        placed.append(vm)
    return placed if len(kept) + len(placed) == target else None


def _best_move(state, vm, targets):
    """The best strictly improving whole-domain move of ``vm``, or None.

    ``targets``: candidate domains. Returns ``(key, placement)``.
    """
    inst = state.inst
    old = state.placements[vm]
    before = state.key()
    best = None
    size = inst.sizes[vm]
    options = [single(inst, d, size) for d in targets
               if state.free[d] + old[d] >= size]
    if inst.current[vm] is not None and inst.current[vm] != old:
        options.append(inst.current[vm])
    for placement in options:
        if placement == old or any(
                n > state.free[d] + old[d] for d, n in enumerate(placement)):
            continue
        state.set(vm, placement)
        key = state.key()
        state.set(vm, old)
        if key < before and (best is None or key < best[0]):
            best = (key, placement)
    return best


def _candidates(state, d):
    """VMs worth moving once domain ``d`` changed.

    The VMs in ``d`` when it is Dirty (one may leave), and the VMs that
    could gain from ``d``'s room: split, in a Dirty domain or away from
    their current placement.
    """
    inst = state.inst
    count = state.count
    found = []
    for vm, placement in enumerate(state.placements):
        if placement is None:
            continue
        where = support(placement)
        if d in where:
            if count[d] >= 2:
                found.append(vm)
            continue
        if state.free[d] < inst.sizes[vm]:
            continue
        if (len(where) > 1 or placement != inst.current[vm]
                or any(count[x] >= 2 for x in where)):
            found.append(vm)
    return found


def _improve_around(state, touched, before, max_moves):
    """Chain of single moves from the ``touched`` domains (bounded)."""
    inst = state.inst
    everywhere = range(inst.n_domains)
    queue = collections.deque(sorted(touched))
    moved = set()
    # Every step lowers the key; the cap only bounds the work.
    steps = 4 * (max_moves + 1)
    while queue and len(moved) < max_moves and steps:
        steps -= 1
        d = queue.popleft()
        best = None
        for vm in _candidates(state, d):
            if vm in before and vm not in moved and len(moved) >= max_moves:
                continue
            targets = everywhere if d in support(state.placements[vm]) \
                else (d,)
            found = _best_move(state, vm, targets)
            if found and (best is None or found[0] < best[0]):
                best = (found[0], vm, found[1])
        if best is None:
            continue
        _, vm, placement = best
        left = support(state.placements[vm])
        state.set(vm, placement)
        if vm in before:
            moved.add(vm)
        queue.extend(sorted(left | support(placement)))
    return moved


def incremental(inst, touched, place, unplaced=(), max_moves=MAX_MOVES):
    """Placements after one change, or None when a full plan is needed.

    ``touched``: domains the change freed or filled (a departed VM's
    domains); ``place(state, vm)``: the greedy step; ``unplaced``: the VMs
    the last plan left unplaced (their current CPUs are not a placement,
    even when inside one domain). Keeps every other VM at its
    current counts, places VMs up to the optimal count (the domains they
    take join ``touched``), then moves at most ``max_moves`` of the VMs
    that were placed before, each move lowering ``(excess, dirt, moves,
    crowding)``. None when the current counts no longer fit or the optimal
    count cannot be reached without moving placed VMs.
    """
    unplaced = frozenset(unplaced)
    state, kept = _start(inst, unplaced)
    if state is None:
        return None
    newcomers = _place_newcomers(state, kept, place)
    if newcomers is None:
        return None
    # An arrival left unplaced (at its current CPUs, often every CPU) may
    # take a placed VM's room; the VM it displaces keeps its CPUs.
    arrivals = [vm for vm in range(len(inst.sizes))
                if state.placements[vm] is None and vm not in unplaced]
    if arrivals:
        allshare_moves.exchange_unplaced(state, place, only=arrivals)
        newcomers = [vm for vm in range(len(inst.sizes))
                     if vm not in kept and state.placements[vm] is not None]
    touched = set(touched)
    for vm in newcomers:
        touched |= support(state.placements[vm])
    _improve_around(state, touched, frozenset(kept), max_moves)
    return list(state.placements)


def moved_before(inst, placements):
    """VMs placed now (current counts) whose placement changed."""
    pairs = zip(inst.current, placements)
    return [vm for vm, (cur, new) in enumerate(pairs)
            if cur is not None and new != cur]


def acceptable(inst, placements):
    """The threshold: no VM split beyond its minimum span.

    (The count placed is optimal by construction.) A split VM is the first
    criterion; when an arrival could only be placed split, the full plan
    may find a whole domain by moving more VMs than the bound allows.
    """
    return all(p is None or len(support(p)) <= inst.minspan(vm)
               for vm, p in enumerate(placements))


def dirt_within(inst, placements, reference, bound=DIRT_BOUND):
    """The dirt threshold: ``placements`` at most ``bound`` dirtier.

    True when the dirt of ``placements`` is at most ``(1 + bound)`` times
    the dirt of ``reference`` (both lists of placements of ``inst``). The
    caller passes the greedy phase of the full plan, which the full plan
    only improves on (its dirt is at most the greedy's when the count
    placed and the excess span are equal).
    """
    dirt = objective(inst, placements)[2]
    return dirt <= objective(inst, reference)[2] * (1 + bound)
