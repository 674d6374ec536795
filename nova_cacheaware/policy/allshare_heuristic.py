"""All-share heuristic: greedy placement, then local search.

Works on :class:`nova_cacheaware.policy.allshare_search.Instance` and
minimises the same key as the exact search there
(:func:`~nova_cacheaware.policy.allshare_search.search_key`): the
contract's ``(unplaced, excess, dirt, moves)``, then crowding (memory-bound
vCPUs beyond one per CPU). Fast on large hosts: every step updates the key
incrementally, and the searches that grow with the number of VMs times the
number of domains are budgeted.
"""

from nova_cacheaware.policy.allshare_search import placed_set
from nova_cacheaware.policy.allshare_search import support


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
        self.cpus = inst.domain_cpus
        self.load = list(inst.fixed_load)
        self.crowd = sum(max(0, u - c) for u, c in zip(self.load, self.cpus))

    def key(self):
        """``(excess, dirt, moves, crowding)`` of the current placements."""
        return (self.excess, self.dirt, self.moves, self.crowd)

    def _touch(self, domains, step):
        # Keep ``dirt`` = sum(max(0, count - 1)) up to date.
        count = self.count
        dirt = 0
        if step > 0:
            for d in domains:
                dirt += count[d] >= 1
                count[d] += 1
        else:
            for d in domains:
                dirt -= count[d] >= 2
                count[d] -= 1
        self.dirt += dirt

    def _load(self, placement, sign):
        # Keep ``free``, ``load`` and ``crowd`` up to date.
        free, load, cpus = self.free, self.load, self.cpus
        crowd = 0
        for d in support(placement):
            n = placement[d]
            before = load[d] - cpus[d]
            load[d] += sign * n
            free[d] -= sign * n
            crowd += max(0, load[d] - cpus[d]) - max(0, before)
        self.crowd += crowd

    def crowd_delta(self, old, new):
        """Change of crowding if ``old`` counts became ``new``."""
        load, cpus = self.load, self.cpus
        delta = 0
        for d in support(old) | support(new):
            step = (new[d] if new else 0) - (old[d] if old else 0)
            if step:
                delta += (max(0, load[d] + step - cpus[d])
                          - max(0, load[d] - cpus[d]))
        return delta

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
            self._load(old, -1)
            self._touch(support(old), -1)
            self.excess -= len(support(old)) - self.inst.minspan(vm)
            self.moves -= old != self.inst.current[vm]
        else:
            self._touch(self.inst.current_touch[vm], -1)
        self.placements[vm] = placement
        if placement is not None:
            self._load(placement, +1)
            self._touch(support(placement), +1)
            self.excess += len(support(placement)) - self.inst.minspan(vm)
            self.moves += placement != self.inst.current[vm]
        else:
            self._touch(self.inst.current_touch[vm], +1)


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
        # domain, then the fewest vCPUs taking turns on a CPU, then best
        # fit by CPUs so that large domains stay for large VMs.
        cpus, load, count = state.cpus, state.load, state.count
        home = _home(inst, vm)

        def key(d):
            room = cpus[d] - load[d] - size
            return (count[d] > 0, d != home, count[d],
                    max(0, -room) - max(0, -room - size), abs(room), d)
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
    return (d_excess, d_dirt, d_moves, state.crowd_delta(old, new))


def _fits_after_removal(state, vm, new):
    old = state.placements[vm]
    for d in support(new):
        room = state.free[d] + (old[d] if old else 0)
        if new[d] > room:
            return False
    return True


def _home(inst, vm):
    """The one domain ``vm`` is wholly in now, or -1."""
    cur = inst.current[vm]
    if cur is None:
        return -1
    where = support(cur)
    return next(iter(where)) if len(where) == 1 else -1


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
                    # Room for w in e once v has moved (cheap, no sets).
                    if e == d or (state.free[e] + own[e] - target[e]
                                  < inst.sizes[w]):
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
       memory-bound VMs, then the least added crowding (vCPUs beyond one
       per CPU), then best fit by CPUs. A VM that fits in no single domain
       is split over the fewest domains (most free room first, cleanest
       first), keeping its current split when that is as narrow and clean.
    3. Local search until no step improves ``(excess, dirt, moves,
       crowding)`` lexicographically (at most ``max_passes`` passes):
       move one VM into one whole domain or back to its current placement;
       swap a moved VM with the occupant of its home domain; two-step moves
       where one blocker leaves a domain (:func:`_kick`, budgeted); finally
       an unplaced VM may take a placed VM's room
       (:func:`_exchange_unplaced`).

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


def run(inst, max_passes=20, kick_budget=4000):
    """:func:`heuristic`, returning its working state (for tests)."""
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
    return state


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
            if (len(inst.current_touch[p]) >= len(inst.current_touch[u])
                    and _home(inst, u) < 0):
                # p left at its CPUs would fill as many caches as u does
                # there, and u has no home to go back to: no gain to try.
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
