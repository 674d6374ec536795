"""Simulate study 002's experiment under several memory policies.

The scenario (a JSON object; every key defaults to the study's setup, see
``DEFAULTS``) describes VMs that read 1 MiB files from a working set that
changes every ``phase_s`` seconds: uniformly at random through the
closed-form page-cache model (:mod:`.pagecache`), or,
when the scenario has an ``access`` pattern (one for all VMs or a list,
one per VM; :mod:`.access`), read by read through a
real LRU cache (:mod:`.lru`).  Each policy starts
from the static equal split with cold caches and sees only what a real
agent sees: every guest reports its hit ratio over its reporting interval,
its page-cache size, free and used memory; the host runs the policy every
``params.period_s`` (delta) seconds and the balloon moves at once.  Time
advances in ``tick_s`` steps.  The reported hit ratio is exact unless the
scenario has an ``estimator`` (:mod:`.estimator`: the
guest helper's errors).  The policies are in :mod:`.balloon_policies`.

Results: for every (VM, phase) pair with a non-zero working set, the
pair's mean throughput (MiB read / phase length); the arithmetic and
geometric means over those pairs.
"""

import dataclasses
import math
import random

from nova_cacheaware.contracts import schema
from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import access as access_mod
from nova_cacheaware_evaluation.sim import balloon_oracle
from nova_cacheaware_evaluation.sim import balloon_policies
from nova_cacheaware_evaluation.sim import estimator as estimator_mod
from nova_cacheaware_evaluation.sim import lru
from nova_cacheaware_evaluation.sim import pagecache

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


WHERE = 'scenario'


def _bad(what):
    raise exception.InvalidInput(reason='%s: %s' % (WHERE, what))


def _invalid(message):
    return exception.InvalidInput(reason=message)


def _at_least(kind, minimum):
    return schema.sim_number(kind, lambda value: value >= minimum,
                             '>= %s' % minimum)


def _positive(kind=float):
    return schema.sim_number(kind, lambda value: value > 0, '> 0')


#: The scenario's plain numbers (``params`` flattened in), in the order
#: they are checked (the first bad one is reported).
NUMBER_SCHEMA = {
    'seed': _at_least(int, 0), 'duration_s': _positive(),
    'phase_s': _positive(), 'host_memory_mib': _at_least(int, 1),
    'vms': _at_least(int, 1), 'process_mib': _at_least(int, 0),
    'files': _at_least(int, 1), 'file_mib': _at_least(int, 1),
    'disk_mib_s': _positive(), 'cache_mib_s': _positive(),
    'tick_s': _positive(), 'threshold': _at_least(float, 0),
    'alpha': _at_least(float, 0), 'beta': _at_least(float, 0),
    'interval_s': _positive(), 'period_s': _positive()}
#: ``null`` (the default worked out from the others) or a count.
_OPTIONAL_MIB = schema.All(
    schema.Check(lambda value: value is None or schema.is_sim_number(value),
                 schema.SIM_NUMBER.message),
    schema.Check(lambda value: value is None or schema.is_integral(value),
                 schema.SIM_WHOLE.message),
    schema.Check(lambda value: value is None or value >= 0,
                 '%(where)s: "%(key)s" must be >= 0 (%(value)r)'),
    convert=lambda value: value if value is None else int(value))
MEMORY_FIELDS = dict.fromkeys(('min_mib', 'committed_as_mib', 'max_mib'),
                              _OPTIONAL_MIB)
PARAMS = schema.Check(schema.is_object,
                      '%(where)s: "%(key)s" must be an object')


def _file_counts(files):
    return schema.Check(
        lambda value: isinstance(value, list) and value and all(
            type(w) is int and 0 <= w <= files for w in value),
        '%(where)s: "%(key)s" must be a non-empty list of file counts '
        'between 0 and "files"', convert=list)


def _fields(doc, checks):
    return schema.fields(doc, {key: (field, schema.REQUIRED)
                               for key, field in checks.items()}, WHERE)


def scenario_from_dict(doc):
    """Validate a scenario document, filling in the study's defaults."""
    with schema.reraise(_invalid):
        merged = _with_defaults(doc)
        out = _fields(merged, NUMBER_SCHEMA)
        if out['threshold'] > 1:
            _bad('"threshold" must be between 0 and 1')
        if out['disk_mib_s'] > out['cache_mib_s']:
            _bad('"disk_mib_s" must not exceed "cache_mib_s"')
        out.update(_fields(merged, {
            'working_sets': _file_counts(out['files'])}))
        _memory_bounds(_fields(merged, MEMORY_FIELDS), out)
    if out['phase_s'] < out['tick_s']:
        _bad('"phase_s" must be at least "tick_s"')
    if out['duration_s'] / out['tick_s'] > MAX_TICKS:
        _bad('"duration_s" / "tick_s" must be at most %d ticks' % MAX_TICKS)
    out['access'] = _access(merged['access'], out['vms'])
    out['estimator'] = estimator_mod.estimator_from_dict(
        merged['estimator'], out['vms'])
    return Scenario(**out)


def _with_defaults(doc):
    """The document over the study's defaults, ``params`` flattened in."""
    schema.obj(doc, WHERE)
    schema.only_keys(doc, DEFAULTS, WHERE,
                     '%(where)s: unknown key(s): %(keys)s')
    merged = dict(DEFAULTS, **doc)
    params = PARAMS.check(merged.pop('params'), 'params', WHERE)
    schema.only_keys(params, DEFAULTS['params'], WHERE,
                     '%(where)s: unknown params key(s): %(keys)s')
    merged.update(DEFAULTS['params'], **params)
    return merged


def _memory_bounds(given, out):
    """Fill ``min_mib``, ``committed_as_mib`` and ``max_mib`` into ``out``."""
    for key, default in (
            ('min_mib', out['process_mib'] + 128),
            ('committed_as_mib', out['process_mib'])):
        out[key] = default if given[key] is None else given[key]
    default_max = out['host_memory_mib'] - (out['vms'] - 1) * out['min_mib']
    out['max_mib'] = (default_max if given['max_mib'] is None
                      else given['max_mib'])
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
