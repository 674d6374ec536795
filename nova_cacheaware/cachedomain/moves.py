"""All-share heuristic: the larger local search moves.

Two-step moves (a blocker leaves a domain so that a VM can take it) and
exchanges of an unplaced VM with a placed one, both on
:class:`~nova_cacheaware.cachedomain.search_state.State` and budgeted.
"""

from nova_cacheaware.cachedomain.search import support
from nova_cacheaware.cachedomain.search_state import home as _home
from nova_cacheaware.cachedomain.search_state import inside
from nova_cacheaware.cachedomain.search_state import single as _single


def kick(state, placed, budget):
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
    whole = inside(state, placed)
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
            for w in whole.get(d, ()):
                if w == v:
                    continue
                if target[d] > state.free[d] + own[d] + inst.sizes[w]:
                    continue
                if not wide and state.placements[w] == inst.current[w]:
                    continue  # would trade one move for another
                improved, budget = _relocate(state, v, w, target, d,
                                             budget)
                if budget <= 0:
                    return improved, 0
                if improved:
                    return improved, budget
    return improved, budget


def _relocate(state, v, w, target, d, budget):
    """``v`` takes ``target`` and blocker ``w`` (in ``d``) another domain.

    Tries each domain ``e`` in order, one budget unit each, keeps the first
    that lowers the key. Returns ``(improved, budget left)``.
    """
    inst = state.inst
    own = state.placements[v]
    for e in range(inst.n_domains):
        if budget <= 0:
            return False, 0
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
                return True, budget
            state.set(w, None)
        state.set(v, old_v)
        state.set(w, old_w)
    return False, budget


def exchange_unplaced(state, place, budget=512, only=None):
    """Let an unplaced VM take the room of a placed VM.

    ``place(state, vm)`` is the greedy step that places ``vm``. The count
    placed stays optimal; the exchange is kept when it lowers the key (an
    unplaced VM stays at its current CPUs, and a floating one fills every
    cache, so which VMs stay unplaced matters). Only exchanges whose lower
    bound on ``(excess, dirt, moves)`` is below the current one are tried
    (:func:`_may_gain`), at most ``budget`` of them: hosts with many
    unplaced VMs are overloaded. ``only``: the unplaced VMs to try (all
    when None).
    """
    inst = state.inst
    index = _Occupants(state)
    failed = set()
    for u in range(len(inst.sizes)) if only is None else sorted(only):
        if state.placements[u] is not None:
            continue
        # VMs alike in size and current CPUs fare alike while nothing
        # changed: try one of each.
        alike = (inst.sizes[u], inst.current[u], inst.current_touch[u])
        if alike in failed:
            continue
        failed.add(alike)
        leave = -sum(state.count[d] >= 2 for d in inst.current_touch[u])
        empty = state.count.count(0)
        for p in index.candidates(u):
            if not _may_gain(state, u, p, (leave, empty)):
                continue
            if budget <= 0:
                return
            budget -= 1
            old = state.placements[p]
            before = state.key()
            state.set(p, None)
            place(state, u)
            if state.key() < before:
                index = _Occupants(state)
                failed = set()
                break
            state.set(u, None)
            state.set(p, old)


class _Occupants:
    """Placed VMs by the one domain they sit in (split ones apart)."""

    def __init__(self, state):
        self.state = state
        self.inside = {}
        self.split = []
        for p, old in enumerate(state.placements):
            if old is None:
                continue
            where = support(old)
            if len(where) == 1:
                self.inside.setdefault(next(iter(where)), []).append(p)
            else:
                self.split.append(p)

    def candidates(self, u):
        """Placed VMs whose room could take ``u`` (index order).

        When ``u`` fits one domain and no domain has room for it, only a
        split VM or one whose domain then has room can make way without
        splitting ``u`` (which would raise excess, the first criterion).
        """
        state = self.state
        inst, free = state.inst, state.free
        size = inst.sizes[u]
        total = sum(free)
        if inst.minspan(u) > 1 or max(free) >= size:
            found = [p for p, old in enumerate(state.placements)
                     if old is not None]
        else:
            found = [p for d, ps in self.inside.items()
                     for p in ps if free[d] + inst.sizes[p] >= size]
            found.extend(self.split)
            found.sort()
        return [p for p in found if total + inst.sizes[p] >= size
                and state.placements[p] is not None]


def _may_gain(state, u, p, u_state):
    """False when exchanging ``u`` for ``p`` cannot lower the objective.

    Lower bound of the change of ``(excess, dirt, moves)``: ``p`` gives
    back its excess and its move; ``u`` leaves its current CPUs and ``p``
    returns to its own (exact), ``u``'s new placement adds at least
    nothing. ``u_state``: the dirt change of ``u`` leaving its CPUs
    alone, and the count of domains without memory-bound VMs.
    """
    inst = state.inst
    t_u, t_p = inst.current_touch[u], inst.current_touch[p]
    if len(t_p) >= len(t_u) and _home(inst, u) < 0:
        # p left at its CPUs would fill as many caches as u does there,
        # and u has no home to go back to: no gain to try.
        return False
    old = state.placements[p]
    s_p = support(old)
    excess = inst.minspan(p) - len(s_p)
    if excess < 0:
        return True
    leave, empty = u_state
    if len(t_p) - empty > 2 * (len(t_u) + len(s_p)):
        # p at its CPUs fills more occupied caches than the exchange can
        # clean (each domain of t_u or s_p lowers dirt at most by one and
        # spares at most one of p's).
        return False
    count = state.count
    dirt = leave
    for d in s_p | t_p:
        here = count[d] - 1
        step = (d in t_p) - (d in s_p) - (d in t_u)
        dirt += max(0, here + step) - max(0, here)
        if d in t_u:
            dirt += here >= 1
    moves = (inst.current[u] is None) - (old != inst.current[p])
    return (dirt, moves) < (0, 0)
