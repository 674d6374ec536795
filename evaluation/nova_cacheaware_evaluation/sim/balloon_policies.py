"""The policies of the ballooning simulator (:mod:`.balloon`).

Each policy sees what a real host agent sees (:class:`GuestView`: the
guest's reported hit ratio, cache, free and used memory) and returns new
memory per VM.  The oracle alone is clairvoyant: it knows every phase's
working sets (and, in the LRU model, each phase's true hit-ratio curve).
"""

import dataclasses
import math

from nova_cacheaware.balloon import default_balancer as balloon_default
from nova_cacheaware.balloon import study_balancer as study
from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import balloon_oracle

POLICIES = ('static', 'committed_as', 'mom', 'hit_ratio_a', 'hit_ratio_b',
            'default', 'oracle')


@dataclasses.dataclass
class GuestView:
    """What the host knows about one VM when a policy runs."""

    memory_mib: int
    hit_ratio: float
    cache_mib: float
    free_mib: float
    used_mib: float
    fresh: bool
    interval_s: float


class Policy:
    """Base: keeps every VM where it is."""

    name = 'static'

    def __init__(self, sc):
        self.sc = sc

    def start_phase(self, working_sets, caches):
        """Called at each phase start (only the oracle looks)."""

    def plan(self, views):
        """New memory per VM (ints, sum <= host memory)."""
        return [v.memory_mib for v in views]

    def interval(self, i):
        """Reporting interval the policy asks VM ``i`` for."""
        return self.sc.interval_s


class CommittedAs(Policy):
    """xenballoond self-ballooning: target = max(Committed_AS, minmb).

    Every second the guest moves 1/10 of the way down (downhysteresis 10)
    or all the way up (uphysteresis 1), as xenballoond's defaults do; up
    moves only as far as free host memory allows.
    """

    name = 'committed_as'
    DOWN_HYSTERESIS = 10

    def _minmb(self):
        mb = self.sc.max_mib
        pages = mb * 256
        if mb < 125:
            return 8 + (pages >> 9)
        if mb < 500:
            return 40 + (pages >> 10)
        if mb < 2000:
            return 104 + (pages >> 11)
        return 296 + (pages >> 13)

    def plan(self, views):
        target = max(self.sc.committed_as_mib, self._minmb(), self.sc.min_mib)
        keep = (1 - 1.0 / self.DOWN_HYSTERESIS) ** self.sc.period_s
        new = []
        free = self.sc.host_memory_mib - sum(v.memory_mib for v in views)
        for v in views:
            cur = v.memory_mib
            if cur > target:
                cur = max(target, int(math.ceil(target + (cur - target)
                                                * keep)))
            elif cur < target:
                up = min(target - cur, free)
                free -= up
                cur += up
            new.append(cur)
        return new


class Mom(Policy):
    """oVirt MoM's default ``balloon.rules`` (policy every delta seconds).

    Host free memory below 20 % (pressure): every guest shrinks by 5 % per
    round, not below min(guaranteed, used + guest_free% * current), with
    guest_free% scaled by host pressure (critical below 5 %).  Otherwise
    every ballooned guest grows by 5 % up to its maximum.  Changes smaller
    than 0.25 % are skipped.  MoM overcommits; here growth stops at the
    host's memory.  ``used`` is current - MemFree as MoM reads it.
    """

    name = 'mom'
    PRESSURE = 0.20
    CRITICAL = 0.05
    MIN_GUEST_FREE = 0.20
    MAX_CHANGE = 0.05
    MIN_CHANGE = 0.0025

    def plan(self, views):
        host = self.sc.host_memory_mib
        free = host - sum(v.memory_mib for v in views)
        host_free = free / host
        new = []
        for v in views:
            cur = v.memory_mib
            used = cur - v.free_mib
            if host_free < self.PRESSURE:
                if host_free <= self.CRITICAL:
                    guest_free = host_free - 0.05
                else:
                    guest_free = self.MIN_GUEST_FREE * host_free / \
                        self.PRESSURE
                floor = min(self.sc.min_mib, used + guest_free * cur)
                size = max(cur * (1 - self.MAX_CHANGE), floor)
                if size <= cur and cur - size > self.MIN_CHANGE * cur:
                    cur = int(math.ceil(max(size, self.sc.min_mib)))
            elif cur < self.sc.max_mib:
                floor = min(self.sc.min_mib,
                            used + self.MIN_GUEST_FREE * cur)
                size = min(cur * (1 + self.MAX_CHANGE), self.sc.max_mib)
                size = max(size, floor)
                if abs(size - cur) > self.MIN_CHANGE * cur:
                    up = min(int(size) - cur, free)
                    free -= max(0, up)
                    cur += max(0, up)
            new.append(cur)
        return new


class Study(Policy):
    """Study 002's algorithm (mode A or B) via :func:`study.study_plan`."""

    def __init__(self, sc, mode):
        super().__init__(sc)
        self.name = 'hit_ratio_%s' % mode.lower()
        self.params = study.BalloonParams(
            threshold=sc.threshold, alpha=sc.alpha, beta=sc.beta, mode=mode,
            interval_s=sc.interval_s)
        self.streak = [0] * sc.vms
        self.intervals = [sc.interval_s] * sc.vms

    def plan(self, views):
        vms = [study.VmMemory(id=str(i), memory_mib=v.memory_mib,
                              hit_ratio=v.hit_ratio, streak=self.streak[i],
                              min_mib=self.sc.min_mib, max_mib=self.sc.max_mib)
               for i, v in enumerate(views)]
        free = self.sc.host_memory_mib - sum(v.memory_mib for v in views)
        result = study.study_plan(self.params, vms, free)
        new = []
        for i in range(len(views)):
            d = result.vms[str(i)]
            self.streak[i] = d.streak
            self.intervals[i] = d.interval_s
            new.append(d.memory_mib)
        return new

    def interval(self, i):
        return self.intervals[i]


class Default(Policy):
    """Our default policy (:mod:`nova_cacheaware.balloon.default_balancer`).

    ``module`` may be another version of that module (the benchmarks
    compare with the one before a change).
    """

    name = 'default'

    def __init__(self, sc, module=balloon_default, name=None):
        super().__init__(sc)
        self.module = module
        self.name = name or self.name
        self.params = module.DefaultParams(threshold=sc.threshold)
        self.state = [{} for _ in range(sc.vms)]

    def plan(self, views):
        vms = [self.module.VmView(
            id=str(i), memory_mib=v.memory_mib, hit_ratio=v.hit_ratio,
            cache_mib=v.cache_mib, free_mib=v.free_mib, used_mib=v.used_mib,
            min_mib=self.sc.min_mib, max_mib=self.sc.max_mib, fresh=v.fresh,
            **self.state[i]) for i, v in enumerate(views)]
        free = self.sc.host_memory_mib - sum(v.memory_mib for v in views)
        result = self.module.default_plan(self.params, vms, free)
        new = []
        for i in range(len(views)):
            d = dataclasses.asdict(result.vms[str(i)])
            new.append(d.pop('memory_mib'))
            self.state[i] = d
        return new


class Oracle(Policy):
    """Clairvoyant reference: the best warm split, set at each phase start.

    Knows every phase's working sets (and, in the LRU model, each phase's
    measured hit-ratio curve), applies the split maximising the sum of log
    warm throughputs (:mod:`.balloon_oracle`) at the phase start and warms
    the caches instantly (no misses to fill them).
    """

    name = 'oracle'

    def start_phase(self, working_sets, caches):
        split = balloon_oracle.best_split(self.sc, working_sets)
        for cache, mem in zip(caches, split):
            cache.set_memory(mem)
            cache.warm()

    def plan(self, views):
        return [v.memory_mib for v in views]


def make_policy(sc, name):
    """The policy object for ``name`` (one of :data:`POLICIES`)."""
    if name == 'static':
        return Policy(sc)
    if name == 'committed_as':
        return CommittedAs(sc)
    if name == 'mom':
        return Mom(sc)
    if name in ('hit_ratio_a', 'hit_ratio_b'):
        return Study(sc, name[-1].upper())
    if name == 'default':
        return Default(sc)
    if name == 'oracle':
        return Oracle(sc)
    raise exception.InvalidInput(reason='unknown policy %r' % name)
