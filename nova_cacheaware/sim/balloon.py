"""Simulate study 002's experiment under several memory policies.

The scenario (a JSON object; every key defaults to the study's setup, see
``DEFAULTS``) describes VMs that read 1 MiB files from a working set that
changes every ``phase_s`` seconds: uniformly at random through the
closed-form page-cache model (:mod:`nova_cacheaware.sim.pagecache`), or,
when the scenario has an ``access`` pattern (one for all VMs or a list,
one per VM; :mod:`nova_cacheaware.sim.access`), read by read through a
real LRU cache (:mod:`nova_cacheaware.sim.lru`).  Each policy starts
from the static equal split with cold caches and sees only what a real
agent sees: every guest reports its hit ratio over its reporting interval,
its page-cache size, free and used memory; the host runs the policy every
``params.period_s`` (delta) seconds and the balloon moves at once.  Time
advances in ``tick_s`` steps.  The reported hit ratio is exact unless the
scenario has an ``estimator`` (:mod:`nova_cacheaware.sim.estimator`: the
guest helper's errors).  The policies are in :mod:`.balloon_policies`.

Results: for every (VM, phase) pair with a non-zero working set, the
pair's mean throughput (MiB read / phase length); the arithmetic and
geometric means over those pairs.
"""

import dataclasses
import math
import random

from nova_cacheaware import exception
from nova_cacheaware.sim import access as access_mod
from nova_cacheaware.sim import balloon_oracle
from nova_cacheaware.sim import balloon_policies
from nova_cacheaware.sim import estimator as estimator_mod
from nova_cacheaware.sim import lru
from nova_cacheaware.sim import pagecache

# The policies and the oracle's split used to live here.
POLICIES = balloon_policies.POLICIES
GuestView = balloon_policies.GuestView
make_policy = balloon_policies.make_policy
oracle_split = balloon_oracle.oracle_split
steady_throughput = balloon_oracle.steady_throughput

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
    'access': None,         # None: closed-form uniform model; else LRU
    'estimator': None,      # None: exact hit ratios
    'params': {'threshold': 0.99, 'alpha': 0.1, 'beta': 0.1,
               'interval_s': 10.0, 'period_s': 5.0},
}
#: The most ticks a scenario may ask for (days of simulated time at the
#: study's 1 s tick); more is a typo, not an experiment.
MAX_TICKS = 10 ** 7


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
    #: None (closed-form model) or one AccessSpec per VM (LRU model).
    access: object = None
    estimator: object = estimator_mod.EstimatorModel()

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
    merged = _with_defaults(doc)
    out = {key: _num(merged, key, *NUMBER_FIELDS[key])
           for key in NUMBER_FIELDS}
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
    _memory_bounds(merged, out)
    if out['phase_s'] < out['tick_s']:
        _bad('"phase_s" must be at least "tick_s"')
    if out['duration_s'] / out['tick_s'] > MAX_TICKS:
        _bad('"duration_s" / "tick_s" must be at most %d ticks' % MAX_TICKS)
    out['access'] = _access(merged['access'], out['vms'])
    out['estimator'] = estimator_mod.estimator_from_dict(
        merged['estimator'], out['vms'])
    return Scenario(**out)


#: The scenario's plain numbers: ``(kind, minimum, strict)`` per key, in
#: the order they are checked (the first bad one is reported).
NUMBER_FIELDS = {
    'seed': (int, 0, False), 'duration_s': (float, 0, True),
    'phase_s': (float, 0, True), 'host_memory_mib': (int, 1, False),
    'vms': (int, 1, False), 'process_mib': (int, 0, False),
    'files': (int, 1, False), 'file_mib': (int, 1, False),
    'disk_mib_s': (float, 0, True), 'cache_mib_s': (float, 0, True),
    'tick_s': (float, 0, True), 'threshold': (float, 0, False),
    'alpha': (float, 0, False), 'beta': (float, 0, False),
    'interval_s': (float, 0, True), 'period_s': (float, 0, True)}


def _with_defaults(doc):
    """The document over the study's defaults, ``params`` flattened in."""
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
    return merged


def _memory_bounds(merged, out):
    """Fill ``min_mib``, ``committed_as_mib`` and ``max_mib`` into ``out``."""
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


def _access(doc, vms):
    if doc is None:
        return None
    if isinstance(doc, list):
        if len(doc) != vms:
            _bad('"access" must be one pattern or a list of %d' % vms)
        return tuple(access_mod.access_from_dict(d, 'scenario: access[%d]'
                                                 % i)
                     for i, d in enumerate(doc))
    spec = access_mod.access_from_dict(doc, 'scenario: access')
    return (spec,) * vms


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


def make_caches(sc, memory_mib):
    """One cache per VM for the scenario's model, every stream seeded."""
    if sc.access is None:
        edges = _band_edges(sc)
        return [pagecache.PageCache(edges, sc.process_mib, memory_mib)
                for _ in range(sc.vms)]
    return [lru.LruCache(access_mod.Stream(spec, sc.files,
                                           random.Random(sc.seed * 1009 + i)),
                         sc.process_mib, memory_mib, sc.file_mib)
            for i, spec in enumerate(sc.access)]


class _Reports:
    """Per-VM reads since the last report and the last report itself."""

    def __init__(self, sc, policy):
        self.sc, self.policy = sc, policy
        self.window = [[] for _ in range(sc.vms)]   # (read, miss) per tick
        self.last = [None] * sc.vms
        self.fresh = [False] * sc.vms
        self.due = [policy.interval(i) for i in range(sc.vms)]

    def add(self, i, read, miss):
        self.window[i].append((read, miss))

    def report(self, i, t, cache):
        """Report VM ``i`` at ``t`` if it is due."""
        if t + 1e-9 < self.due[i]:
            return
        est, ticks = self.sc.estimator, self.window[i]
        if est.sample_s is not None:
            ticks = ticks[-max(1, int(round(est.sample_s
                                            / self.sc.tick_s))):]
        read = sum(r for r, _ in ticks)
        miss = sum(m for _, m in ticks)
        ratio = est.ratio(i, read, miss, len(ticks) * self.sc.tick_s)
        extra = est.cache_extra_mib
        self.last[i] = (max(0.0, min(1.0, ratio)),
                        cache.total_cached() + extra,
                        max(0.0, cache.free() - extra))
        self.fresh[i] = True
        self.window[i] = []
        self.due[i] = t + self.policy.interval(i)

    def views(self, caches):
        """The policy's inputs, or None until every VM has reported."""
        if any(r is None for r in self.last):
            return None
        return [GuestView(memory_mib=c.memory_mib, hit_ratio=r[0],
                          cache_mib=r[1], free_mib=r[2],
                          used_mib=self.sc.process_mib, fresh=f,
                          interval_s=self.policy.interval(i))
                for i, (c, r, f) in enumerate(zip(caches, self.last,
                                                  self.fresh))]


def simulate_policy(sc, name, schedule=None, policy=None):
    """Run one policy over the scenario; returns a :class:`PolicyResult`.

    ``policy``: a policy object to run instead of the one named ``name``.
    """
    schedule = schedule if schedule is not None else sc.schedule()
    policy = policy or make_policy(sc, name)
    static = sc.host_memory_mib // sc.vms
    caches = make_caches(sc, static)
    eps = 1e-9
    read = [[0.0] * sc.vms for _ in schedule]
    reports = _Reports(sc, policy)
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
            reports.report(i, t, cache)
        if t + eps >= next_plan:
            next_plan += sc.period_s
            views = reports.views(caches)
            if views is not None:
                new = policy.plan(views)
                assert sum(new) <= sc.host_memory_mib, (name, new)
                for cache, mem in zip(caches, new):
                    cache.set_memory(mem)
                reports.fresh = [False] * sc.vms
            trace_t.append(t)
            trace_mem.append([c.memory_mib for c in caches])
        for i, cache in enumerate(caches):
            r, m = cache.run(sc.tick_s, sc.disk_mib_s, sc.cache_mib_s)
            read[p][i] += r
            reports.add(i, r, m)
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
