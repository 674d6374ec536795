"""Working state of the All-share heuristic (incremental key).

Holds the placements of the movable memory-bound VMs of an
:class:`~nova_cacheaware.cachedomain.search.Instance` and keeps the
search key ``(excess, dirt, moves, crowding)`` up to date on every
:meth:`State.set`, so that a local search step costs a few operations.
"""

from nova_cacheaware.cachedomain.search import support


class State:
    """Mutable working state of the heuristic."""

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


def single(inst, d, size):
    """Counts putting all ``size`` vCPUs in domain ``d``."""
    counts = [0] * inst.n_domains
    counts[d] = size
    return tuple(counts)


def home(inst, vm):
    """The one domain ``vm`` is wholly in now, or -1."""
    cur = inst.current[vm]
    if cur is None:
        return -1
    where = support(cur)
    return next(iter(where)) if len(where) == 1 else -1


def inside(state, placed):
    """Domain -> the VMs of ``placed`` wholly in it (in ``placed`` order)."""
    found = {}
    for vm in placed:
        where = support(state.placements[vm])
        if len(where) == 1:
            found.setdefault(next(iter(where)), []).append(vm)
    return found
