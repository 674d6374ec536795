"""Simulate study 002's experiment under several memory policies.

The scenario (a JSON object; every key defaults to the study's setup, see
``DEFAULTS``) describes VMs that read 1 MiB files uniformly at random from
a working set that changes every ``phase_s`` seconds.  Each policy starts
from the static equal split with cold caches and sees only what a real
agent sees: every guest reports its hit ratio over its reporting interval,
its page-cache size, free and used memory; the host runs the policy every
``params.period_s`` (delta) seconds and the balloon moves at once.  Time
advances in ``tick_s`` steps of the closed-form page-cache model
(:mod:`nova_cacheaware.sim.pagecache`).

Results: for every (VM, phase) pair with a non-zero working set, the
pair's mean throughput (MiB read / phase length); the arithmetic and
geometric means over those pairs.
"""

import dataclasses
import itertools
import math
import random

from nova_cacheaware import exception
from nova_cacheaware.policy import balloon as study
from nova_cacheaware.policy import balloon_default
from nova_cacheaware.sim import pagecache

DEFAULTS = {
    'seed': 0,
    'duration_s': 6000,
    'phase_s': 600,
    'host_memory_mib': 7071,
    'vms': 3,
    'process_mib': 300,
    'files': 10000,
    'file_mib': 1,
    'working_sets': [0, 100, 1000, 2000, 3000, 4000, 5000, 7500, 10000],
    'disk_mib_s': 60.0,
    'cache_mib_s': 1200.0,
    'min_mib': None,        # default: process_mib + 128
    'max_mib': None,        # default: host_memory_mib - (vms - 1) * min_mib
    'committed_as_mib': None,   # default: process_mib
    'tick_s': 1.0,
    'params': {'threshold': 0.99, 'alpha': 0.1, 'beta': 0.1,
               'interval_s': 10.0, 'period_s': 5.0},
}
#: The most ticks a scenario may ask for (days of simulated time at the
#: study's 1 s tick); more is a typo, not an experiment.
MAX_TICKS = 10 ** 7
POLICIES = ('static', 'committed_as', 'mom', 'hit_ratio_a', 'hit_ratio_b',
            'default', 'oracle')


@dataclasses.dataclass
class Scenario:
    """A validated scenario; see ``DEFAULTS`` for the meaning of fields."""

    seed: int
    duration_s: float
    phase_s: float
    host_memory_mib: int
    vms: int
    process_mib: int
    files: int
    file_mib: int
    working_sets: list
    disk_mib_s: float
    cache_mib_s: float
    min_mib: int
    max_mib: int
    committed_as_mib: int
    tick_s: float
    threshold: float
    alpha: float
    beta: float
    interval_s: float
    period_s: float

    def phases(self):
        """Number of phases (the last may be shorter)."""
        return int(math.ceil(self.duration_s / self.phase_s - 1e-9))

    def schedule(self):
        """Working set (MiB) per phase per VM, drawn from ``seed``."""
        rng = random.Random(self.seed)
        return [[rng.choice(self.working_sets) * self.file_mib
                 for _ in range(self.vms)] for _ in range(self.phases())]


def _bad(what):
    raise exception.InvalidInput(reason='scenario: %s' % what)


def _num(doc, key, kind=float, minimum=0, strict=False):
    value = doc[key]
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value)):
        _bad('"%s" must be a number, not %r' % (key, value))
    if kind is int and value != int(value):
        _bad('"%s" must be an integer (%r)' % (key, value))
    if value < minimum or (strict and value == minimum):
        _bad('"%s" must be %s %s (%r)' % (key, '>' if strict else '>=',
                                          minimum, value))
    return kind(value)


def scenario_from_dict(doc):
    """Validate a scenario document, filling in the study's defaults."""
    if not isinstance(doc, dict):
        _bad('must be a JSON object')
    unknown = set(doc) - set(DEFAULTS)
    if unknown:
        _bad('unknown key(s): %s' % ', '.join(sorted(unknown)))
    merged = dict(DEFAULTS)
    merged.update(doc)
    params = dict(DEFAULTS['params'])
    if not isinstance(merged['params'], dict):
        _bad('"params" must be an object')
    unknown = set(merged['params']) - set(params)
    if unknown:
        _bad('unknown params key(s): %s' % ', '.join(sorted(unknown)))
    params.update(merged['params'])
    merged.update(params)
    del merged['params']
    out = {'seed': _num(merged, 'seed', int),
           'duration_s': _num(merged, 'duration_s', strict=True),
           'phase_s': _num(merged, 'phase_s', strict=True),
           'host_memory_mib': _num(merged, 'host_memory_mib', int, 1),
           'vms': _num(merged, 'vms', int, 1),
           'process_mib': _num(merged, 'process_mib', int),
           'files': _num(merged, 'files', int, 1),
           'file_mib': _num(merged, 'file_mib', int, 1),
           'disk_mib_s': _num(merged, 'disk_mib_s', strict=True),
           'cache_mib_s': _num(merged, 'cache_mib_s', strict=True),
           'tick_s': _num(merged, 'tick_s', strict=True),
           'threshold': _num(merged, 'threshold'),
           'alpha': _num(merged, 'alpha'),
           'beta': _num(merged, 'beta'),
           'interval_s': _num(merged, 'interval_s', strict=True),
           'period_s': _num(merged, 'period_s', strict=True)}
    if out['threshold'] > 1:
        _bad('"threshold" must be between 0 and 1')
    if out['disk_mib_s'] > out['cache_mib_s']:
        _bad('"disk_mib_s" must not exceed "cache_mib_s"')
    ws = merged['working_sets']
    if (not isinstance(ws, list) or not ws
            or any(isinstance(w, bool) or not isinstance(w, int)
                   or not 0 <= w <= out['files'] for w in ws)):
        _bad('"working_sets" must be a non-empty list of file counts '
             'between 0 and "files"')
    out['working_sets'] = list(ws)
    for key, default in (
            ('min_mib', out['process_mib'] + 128),
            ('committed_as_mib', out['process_mib'])):
        out[key] = (default if merged[key] is None
                    else _num(merged, key, int))
    default_max = out['host_memory_mib'] - (out['vms'] - 1) * out['min_mib']
    out['max_mib'] = (default_max if merged['max_mib'] is None
                      else _num(merged, 'max_mib', int))
    if out['min_mib'] * out['vms'] > out['host_memory_mib']:
        _bad('vms * min_mib exceeds host_memory_mib')
    if not out['min_mib'] <= out['host_memory_mib'] // out['vms'] \
            <= out['max_mib']:
        _bad('the static split must lie in [min_mib, max_mib]')
    if out['phase_s'] < out['tick_s']:
        _bad('"phase_s" must be at least "tick_s"')
    if out['duration_s'] / out['tick_s'] > MAX_TICKS:
        _bad('"duration_s" / "tick_s" must be at most %d ticks' % MAX_TICKS)
    return Scenario(**out)


# ------------------------------------------------------------------ policies

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
    """Our default policy (:mod:`nova_cacheaware.policy.balloon_default`)."""

    name = 'default'

    def __init__(self, sc):
        super().__init__(sc)
        self.params = balloon_default.DefaultParams(threshold=sc.threshold)
        self.state = [{} for _ in range(sc.vms)]

    def plan(self, views):
        vms = [balloon_default.VmView(
            id=str(i), memory_mib=v.memory_mib, hit_ratio=v.hit_ratio,
            cache_mib=v.cache_mib, free_mib=v.free_mib, used_mib=v.used_mib,
            min_mib=self.sc.min_mib, max_mib=self.sc.max_mib, fresh=v.fresh,
            **self.state[i]) for i, v in enumerate(views)]
        free = self.sc.host_memory_mib - sum(v.memory_mib for v in views)
        result = balloon_default.default_plan(self.params, vms, free)
        new = []
        for i in range(len(views)):
            d = dataclasses.asdict(result.vms[str(i)])
            new.append(d.pop('memory_mib'))
            self.state[i] = d
        return new


def steady_throughput(sc, memory_mib, ws_mib):
    """MiB/s of a warm cache of ``memory - process`` over ``ws_mib``."""
    if ws_mib <= 0:
        return 0.0
    r = min(1.0, max(0.0, memory_mib - sc.process_mib) / ws_mib)
    return 1.0 / (r / sc.cache_mib_s + (1 - r) / sc.disk_mib_s)


def oracle_split(sc, working_sets):
    """Memory per VM maximising the sum of log warm throughputs.

    log throughput is convex in memory up to ``process + W`` and flat after,
    so an optimum is a vertex: every VM at its floor or at its useful cap
    except at most one.  All such vertices are enumerated (n * 2**(n-1)).
    """
    n = len(working_sets)
    lo = [sc.min_mib] * n
    hi = [max(sc.min_mib, min(sc.max_mib, sc.process_mib + w))
          if w > 0 else sc.min_mib for w in working_sets]
    budget = sc.host_memory_mib
    if sum(hi) <= budget:
        return hi

    def score(alloc):
        return sum(math.log(steady_throughput(sc, m, w))
                   for m, w in zip(alloc, working_sets) if w > 0)
    best, best_score = list(lo), -math.inf
    for k in range(n):
        others = [i for i in range(n) if i != k]
        for picks in itertools.product((0, 1), repeat=len(others)):
            alloc = [0] * n
            for i, p in zip(others, picks):
                alloc[i] = hi[i] if p else lo[i]
            rest = budget - sum(alloc)
            if not lo[k] <= rest:
                continue
            alloc[k] = min(hi[k], rest)
            s = score(alloc)
            if s > best_score + 1e-12:
                best, best_score = alloc, s
    return best


class Oracle(Policy):
    """Clairvoyant reference: the best warm split, set at each phase start.

    Knows every phase's working sets, applies :func:`oracle_split` at the
    phase start and warms the caches instantly (no misses to fill them).
    """

    name = 'oracle'

    def start_phase(self, working_sets, caches):
        split = oracle_split(self.sc, working_sets)
        for cache, mem in zip(caches, split):
            cache.set_memory(mem)
            cache.cached = [0.0] * len(cache.cached)
            room = cache.capacity
            for b in range(cache._nband):
                cache.cached[b] = min(cache.size[b], room * cache.size[b]
                                      / max(cache.ws_mib, 1e-9))

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


# ---------------------------------------------------------------- simulation

@dataclasses.dataclass
class PolicyResult:
    """Throughput per (phase, VM) and the memory trace of one policy."""

    name: str
    throughput: list        # [phase][vm] MiB/s, None for idle pairs
    trace_t: list           # seconds
    trace_memory: list      # [sample][vm] MiB

    def pair_values(self):
        """Mean throughputs of the pairs with a non-zero working set."""
        return [x for row in self.throughput for x in row if x is not None]

    def arith_mean(self):
        """Arithmetic mean over the active (VM, phase) pairs."""
        vals = self.pair_values()
        return sum(vals) / len(vals) if vals else 0.0

    def geo_mean(self):
        """Geometric mean over the active (VM, phase) pairs."""
        vals = self.pair_values()
        if not vals or min(vals) <= 0:
            return 0.0
        return math.exp(sum(math.log(v) for v in vals) / len(vals))


def _band_edges(sc):
    edges = {0, sc.files * sc.file_mib}
    edges.update(w * sc.file_mib for w in sc.working_sets)
    return sorted(edges)


def simulate_policy(sc, name, schedule=None):
    """Run one policy over the scenario; returns a :class:`PolicyResult`."""
    schedule = schedule if schedule is not None else sc.schedule()
    policy = make_policy(sc, name)
    static = sc.host_memory_mib // sc.vms
    edges = _band_edges(sc)
    caches = [pagecache.PageCache(edges, sc.process_mib, static)
              for _ in range(sc.vms)]
    eps = 1e-9
    read = [[0.0] * sc.vms for _ in schedule]
    acc_read = [0.0] * sc.vms
    acc_miss = [0.0] * sc.vms
    reported = [None] * sc.vms
    fresh = [False] * sc.vms
    next_report = [policy.interval(i) for i in range(sc.vms)]
    next_plan = sc.period_s
    trace_t, trace_mem = [0.0], [[static] * sc.vms]
    ticks = int(round(sc.duration_s / sc.tick_s))
    phase = -1
    for step in range(ticks):
        t = step * sc.tick_s
        p = min(int(t / sc.phase_s + eps), len(schedule) - 1)
        if p != phase:
            phase = p
            for cache, w in zip(caches, schedule[p]):
                cache.set_working_set(w)
            policy.start_phase(schedule[p], caches)
        for i, cache in enumerate(caches):
            if t + eps >= next_report[i]:
                ratio = (1.0 - acc_miss[i] / acc_read[i]
                         if acc_read[i] > 0 else 1.0)
                reported[i] = (max(0.0, min(1.0, ratio)),
                               cache.total_cached(), cache.free())
                fresh[i] = True
                acc_read[i] = acc_miss[i] = 0.0
                next_report[i] = t + policy.interval(i)
        if t + eps >= next_plan:
            next_plan += sc.period_s
            if all(r is not None for r in reported):
                views = [GuestView(memory_mib=c.memory_mib, hit_ratio=r[0],
                                   cache_mib=r[1], free_mib=r[2],
                                   used_mib=sc.process_mib, fresh=f,
                                   interval_s=policy.interval(i))
                         for i, (c, r, f) in enumerate(zip(caches, reported,
                                                           fresh))]
                new = policy.plan(views)
                assert sum(new) <= sc.host_memory_mib, (name, new)
                for cache, mem in zip(caches, new):
                    cache.set_memory(mem)
                fresh = [False] * sc.vms
            trace_t.append(t)
            trace_mem.append([c.memory_mib for c in caches])
        for i, cache in enumerate(caches):
            r, m = cache.run(sc.tick_s, sc.disk_mib_s, sc.cache_mib_s)
            read[p][i] += r
            acc_read[i] += r
            acc_miss[i] += m
    throughput = []
    for p, row in enumerate(read):
        length = min(sc.phase_s, sc.duration_s - p * sc.phase_s)
        throughput.append([x / length if w > 0 else None
                           for x, w in zip(row, schedule[p])])
    return PolicyResult(name=name, throughput=throughput, trace_t=trace_t,
                        trace_memory=trace_mem)


def simulate(sc, policies=POLICIES):
    """Run every policy on the same schedule; name -> PolicyResult."""
    schedule = sc.schedule()
    return {name: simulate_policy(sc, name, schedule) for name in policies}


def summary(results):
    """The ``simulate balloon --format json`` document."""
    return {'policies': {name: {'arith_mean_mib_s': r.arith_mean(),
                                'geo_mean_mib_s': r.geo_mean()}
                         for name, r in results.items()}}
