"""All-share heuristic: greedy placement, then local search.

Works on :class:`nova_cacheaware.cachedomain.search.Instance` and
minimises the same key as the exact search there
(:func:`~nova_cacheaware.cachedomain.search.search_key`): the
contract's ``(unplaced, excess, dirt, moves)``, then crowding (memory-bound
vCPUs beyond one per CPU). Fast on large hosts: every step updates the key
incrementally, and the searches that grow with the number of VMs times the
number of domains are budgeted.
"""

from nova_cacheaware.cachedomain import moves as allshare_moves
from nova_cacheaware.cachedomain.search import placed_set
from nova_cacheaware.cachedomain.search import support
from nova_cacheaware.cachedomain.search_state import home as _home
from nova_cacheaware.cachedomain.search_state import inside
from nova_cacheaware.cachedomain.search_state import single as _single
from nova_cacheaware.cachedomain.search_state import State


def greedy_place(state, vm):
    """Place ``vm`` (step 2 of :func:`heuristic`) in ``state``."""
    inst = state.inst
    size = inst.sizes[vm]
    cur = inst.current[vm]
    fits = [d for d in range(inst.n_domains) if state.free[d] >= size]
    if fits:
        # Keep Clean (no dirt) first, then stay put, then the emptiest
        # domain, then the fewest vCPUs taking turns on a CPU, then best
        # fit by CPUs so that large domains stay for large VMs.
        state.set(vm, _single(inst, _best_fit(state, vm, fits), size))
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


def _best_fit(state, vm, fits):
    """The domain of ``fits`` (all with room) that ``vm`` goes to.

    Keep Clean (no dirt) first, then stay put, then the emptiest domain,
    then the fewest vCPUs taking turns on a CPU, then best fit by CPUs so
    that large domains stay for large VMs.
    """
    cpus, load, count = state.cpus, state.load, state.count
    home = _home(state.inst, vm)
    size = state.inst.sizes[vm]
    fewest = min(count[d] for d in fits)
    if home >= 0 and home in fits and (fewest > 0 or count[home] == 0):
        return home
    best, best_key = -1, None
    for d in fits:
        if count[d] != fewest:
            continue
        room = cpus[d] - load[d] - size
        key = (max(0, -room) - max(0, -room - size), abs(room), d)
        if best_key is None or key < best_key:
            best, best_key = d, key
    return best


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
    return (d_excess, d_dirt, d_moves, state.crowd_delta(old, new))


def _fits_after_removal(state, vm, new):
    old = state.placements[vm]
    for d in support(new):
        room = state.free[d] + (old[d] if old else 0)
        if new[d] > room:
            return False
    return True


def _settled(state, vm):
    """True when no single step can improve ``vm``.

    Alone in one domain (Clean), not crowded, and where it is now (or
    with nowhere to be).
    """
    old = state.placements[vm]
    where = support(old)
    if len(where) != 1:
        return False
    d = next(iter(where))
    cur = state.inst.current[vm]
    return (state.count[d] == 1 and state.load[d] <= state.cpus[d]
            and (cur is None or cur == old))


def _improve_once(state, placed):
    inst = state.inst
    improved = False
    for vm in placed:
        size = inst.sizes[vm]
        old = state.placements[vm]
        old_s = support(old)
        cur = inst.current[vm]
        best, best_d, best_key = None, -1, (0, 0, 0, 0)
        if _settled(state, vm):
            continue
        count, load, cpus, free = state.count, state.load, state.cpus, \
            state.free
        # Leaving the old domains: dirt and crowding given back.
        leave_dirt = -sum(count[x] >= 2 for x in old_s)
        leave_crowd = sum(max(0, load[x] - old[x] - cpus[x])
                          - max(0, load[x] - cpus[x]) for x in old_s)
        home = _home(inst, vm)
        old_moved = old != cur
        # One whole domain, all in integers: a tuple only for the winner.
        for d in range(inst.n_domains):
            if free[d] + old[d] < size:
                continue
            if d in old_s:
                if len(old_s) == 1:
                    continue
                # Stays in d, leaves the others.
                dirt = leave_dirt + (count[d] >= 2)
                crowd = (leave_crowd
                         - max(0, load[d] - old[d] - cpus[d])
                         + max(0, load[d] - old[d] + size - cpus[d]))
            else:
                dirt = leave_dirt + (count[d] >= 1)
                crowd = (leave_crowd + max(0, load[d] + size - cpus[d])
                         - max(0, load[d] - cpus[d]))
            key = (1 - len(old_s), dirt,
                   (d != home) - old_moved, crowd)
            if key < best_key:
                best_d, best_key = d, key
        if best_d >= 0:
            best = _single(inst, best_d, size)
        if cur is not None and cur != old and _fits_after_removal(
                state, vm, cur):
            key = _candidate_key(state, vm, cur)
            if key < best_key:
                best, best_key = cur, key
        if best is not None:
            state.set(vm, best)
            improved = True
    return _swap_home(state, placed) or improved


def _swap_home(state, placed):
    """Swaps that send a moved VM home: ``vm`` wants domain a, held by w."""
    inst = state.inst
    improved = False
    whole = inside(state, placed)
    for vm in placed:
        cur = inst.current[vm]
        placement = state.placements[vm]
        if (cur is None or placement == cur or len(support(cur)) != 1
                or len(support(placement)) != 1):
            continue
        a = next(iter(support(cur)))
        b = next(iter(support(placement)))
        for other in whole.get(a, ()):
            if other == vm:
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
                whole = inside(state, placed)
                break
    return improved


def heuristic(inst, max_passes=20, kick_budget=4000):
    """A good list of placements, fast; see the guarantee below.

    1. Place as many VMs as possible (:func:`placed_set`, optimal count).
    2. Greedy, largest VM first: a VM that fits in one domain goes to a
       domain without memory-bound VMs if one fits (Empty stays Clean), its
       current domain when that is as good, else the domain with the fewest
       memory-bound VMs, then the least added crowding (vCPUs beyond one
       per CPU), then best fit by CPUs. A VM that fits in no single domain
       is split over the fewest domains (most free room first, cleanest
       first), keeping its current split when that is as narrow and clean.
    3. Local search until no step improves ``(excess, dirt, moves,
       crowding)`` lexicographically (at most ``max_passes`` passes):
       move one VM into one whole domain or back to its current placement;
       swap a moved VM with the occupant of its home domain; two-step moves
       where one blocker leaves a domain (``allshare_moves.kick``,
       budgeted); finally an unplaced VM may take a placed VM's room
       (``allshare_moves.exchange_unplaced``).

    Guarantee (proof in doc/source/user/plan.rst): the number of unplaced
    VMs is optimal; capacity is never exceeded; and if every VM is placed
    and the VMs, sorted by size, fit one-to-one into distinct domains free
    of unmovable memory-bound VMs (``i``-th largest VM <= ``i``-th largest
    such domain's room), the plan has no excess span and no Dirty domain
    caused by a movable VM, which is optimal for criteria (1) and (2). The
    result is locally optimal for the steps of 3 (unless a budget ran
    out).
    """
    return list(run(inst, max_passes, kick_budget).placements)


def _greedy(inst):
    """Steps 1 and 2 of :func:`heuristic`: ``(state, placement order)``."""
    placed = placed_set(inst)
    state = State(inst, placed)
    order = sorted(placed, key=lambda vm: (-inst.sizes[vm],
                                           inst.current[vm] is None, vm))
    for vm in order:
        greedy_place(state, vm)
    return state, order


def greedy(inst):
    """The greedy phase alone (steps 1 and 2 of :func:`heuristic`).

    A cheap reference for the full plan, which only improves on it (every
    later step lowers the key): the incremental replanner's dirt
    threshold compares against it.
    """
    return list(_greedy(inst)[0].placements)


def run(inst, max_passes=20, kick_budget=4000):
    """:func:`heuristic`, returning its working state (for tests)."""
    state, order = _greedy(inst)
    for _ in range(max_passes):
        if _improve_once(state, order):
            continue
        kicked, kick_budget = allshare_moves.kick(state, order, kick_budget)
        if not kicked:
            break
    allshare_moves.exchange_unplaced(state, greedy_place)
    return state
