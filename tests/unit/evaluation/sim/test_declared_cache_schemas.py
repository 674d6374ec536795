"""The cache scenario's and the probe matrix's declared schemas.

As ``test_declared_schemas``: each property mutates a valid document at
random and requires a typed value or a one-line refusal, never another
exception (what crashed the old walkers - an int beyond a float's range,
a ``"sizes"`` key over ``int()``'s digit limit - is refused in one line).
The tables pin the exact messages, the typed values and the defaults.
"""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware_evaluation.probe import analysis as contention_probe
from nova_cacheaware_evaluation.sim import cache_scenario
from nova_cacheaware_evaluation.sim import calibration
from nova_cacheaware_evaluation.sim import contention
from tests.unit.policy.test_declared_schemas import _edit
from tests.unit.policy.test_declared_schemas import KEYS
from tests.unit.policy.test_declared_schemas import mutate
from tests.unit.policy.test_declared_schemas import ODD
from tests.unit.policy.test_declared_schemas import outcome

#: The cache scenario's check.
LOAD = cache_scenario.load_scenario
HUGE = 10 ** 400
MORE_ODD = ODD + [
    HUGE, -HUGE, float('nan'), float('inf'), 'q6600', 'epyc-4ccx', 'chase',
    'stream', 'same', 'different', 'alone', 'nova-shared', 'credit', 'io',
    [[0, 1]], [[0], [0]], [[1, 0], []], {'period_s': 0}, {'passes': 'x'},
    {'period_s': 1, 'passes': None}, {'cpi_mem': HUGE}, {'cpi_mem': 0},
    {'1': HUGE}, {'0': 1}, {'01': 1}, {'memory': 0}, {'memory': 1},
    [{'vcpus': 1, 'workload': 'io'}], [{'id': 'vm0'}]]
MORE_KEYS = KEYS + [
    'host', 'model', 'seed', 'slices', 'cloud', 'cluster', 'configs',
    'policies', 'vms', 'hosts', 'arrivals', 'sample_every', 'warmup',
    'mean_interarrival', 'mean_lifetime', 'time_unit_s', 'mix', 'sizes',
    'declared', 'sigma', 'schedule', 'period_s', 'passes', 'interval_s',
    'cpi_mem', 'dirty_all', 'kernel', 'placement', 'factor', 'slowdown',
    'low', 'high', 'format_version', 'matrix', '2', '4']

HOST = {'seed': 2, 'slices': 300, 'host': [[1, 0], [2, 3]],
        'model': {'cpi_mem': 0.6, 'dirty_all': 1},
        'vms': [{'id': 'a', 'vcpus': 2, 'workload': 'memory'},
                {'vcpus': 1, 'workload': 'cpu'}],
        'policies': ['credit', 'agent']}
CLOUD = {'seed': 3, 'host': 'epyc-4ccx', 'model': {},
         'cloud': {'hosts': 4, 'arrivals': 60, 'mean_interarrival': 1,
                   'mean_lifetime': 30.0, 'sample_every': 20, 'warmup': 20,
                   'slices': 10, 'time_unit_s': 60,
                   'mix': {'memory': 2, 'cpu': 1.5},
                   'sizes': {'1': 1, '2': 1}, 'declared': 0.5, 'sigma': 0,
                   'schedule': {'period_s': 5, 'passes': 2}},
         'configs': ['nova-shared', 'required']}
PROBE = {'format_version': 1,
         'matrix': [{'kernel': 'chase', 'factor': 0.5, 'placement': 'same',
                     'slowdown': 1.2, 'low': 1, 'high': 1.3},
                    {'kernel': 'stream', 'factor': 2, 'placement':
                     'different', 'slowdown': 1.01, 'low': 0.9,
                     'high': 1.1}]}


class RandomDocumentsTest(testtools.TestCase):
    """A typed value or a one-line refusal, never another exception.

    Neither document is written by the package (the scenario is the
    operator's, the matrix the probe's), so there is no JSON to read back.
    """

    def _parsed(self, parse, data, base, kind):
        doc = mutate(data, base, data.draw(st.integers(0, 4)),
                     odd=MORE_ODD, keys=MORE_KEYS)
        got = outcome(parse, doc)
        self.assertIn(got[0], ('ok', 'bad'), (doc, got))
        if got[0] == 'bad':
            self.assertEqual(1, len(got[1].splitlines()), doc)
        else:
            self.assertIsInstance(got[1], kind, doc)
        return got

    @settings(max_examples=500, deadline=None)
    @given(st.data())
    def test_host_scenario(self, data):
        got = self._parsed(LOAD, data, HOST, dict)
        if got[0] == 'ok' and 'cloud' not in got[1]:
            self.assertEqual(['domains', 'model', 'seed', 'slices', 'vms',
                              'policies'], list(got[1]))

    @settings(max_examples=500, deadline=None)
    @given(st.data())
    def test_cloud_scenario(self, data):
        got = self._parsed(LOAD, data, CLOUD, dict)
        if got[0] == 'ok' and 'cloud' in got[1]:
            self.assertEqual(['domains', 'model', 'seed', 'slices', 'cloud',
                              'configs'], list(got[1]))

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_probe_matrix(self, data):
        got = self._parsed(calibration._cells, data, PROBE, list)
        if got[0] == 'ok':
            self.assertTrue(all(isinstance(c, contention_probe.Cell)
                                for c in got[1]))

    def test_bases_are_valid(self):
        for parse, doc in ((LOAD, HOST),
                           (LOAD, CLOUD),
                           (calibration._cells, PROBE)):
            self.assertEqual('ok', outcome(parse, doc)[0])


class MessageTableTest(testtools.TestCase):
    """Exact one-line messages (what the CLI prints after its prefix)."""

    def _table(self, parse, cases):
        for doc, message in cases:
            e = self.assertRaises(exception.InvalidInput, parse, doc)
            self.assertEqual('invalid input: ' + message, str(e))

    def test_host_scenario(self):
        h, w = HOST, 'scenario: '
        model = ('nova_cacheaware_evaluation.sim.contention.Model() '
                 'argument after ** '
                 'must be a mapping, not list')
        self._table(LOAD, [
            ([], w + 'must be a JSON object'),
            (_edit(h, host='xeon'), w + "unknown host 'xeon' (known: "
             'epyc-4ccx, q6600)'),
            (_edit(h, host=[[0], []]),
             w + '"host" must name a host or list CPU lists'),
            (_edit(h, host=[[0], [0]]),
             w + '"host" CPU ids must be distinct integers 0..8191'),
            (_edit(h, host=[[True]]),
             w + '"host" CPU ids must be distinct integers 0..8191'),
            (_edit(h, model=[]), w + '"model": ' + model),
            (_edit(h, model={'x': 1}), w + '"model": Model.__init__() got '
             "an unexpected keyword argument 'x'"),
            (_edit(h, model={'io_busy': 0}),
             w + '"model" values must be positive numbers'),
            (_edit(h, model={'io_busy': HUGE}),
             w + '"model" values must be positive numbers'),
            (_edit(h, seed=-1), w + '"seed" must be an integer >= 0'),
            (_edit(h, slices=2.0), w + '"slices" must be an integer >= 1'),
            (_edit(h, cluster={}), w + '"cluster" and its "cacheaware" '
             'policy are retired: give "cloud" and "configs" (see '
             'doc/source/evaluation/cache-scheduling.rst)'),
            (_edit(h, vms=[]),
             w + '"vms" must be a non-empty list (or give "cloud")'),
            (_edit(h, vms=[{}, 1]), w + "VM 'vm0': \"workload\" must be "
             'one of memory, cpu, io'),
            # Every VM before the policies.
            (_edit(h, vms=[{'vcpus': 1, 'workload': 'io'}, 1], policies=1),
             w + 'vms[1] must be an object'),
            (_edit(h, vms=[{'id': 'vm1', 'vcpus': 1, 'workload': 'io'}, {}]),
             w + 'vms[1]: "id" must be a unique string'),
            (_edit(h, 'vms', 0, id=7), w + 'vms[0]: "id" must be a unique '
             'string'),
            (_edit(h, 'vms', 0, vcpus=0),
             w + "VM 'a': \"vcpus\" must be an integer 1..4096"),
            (_edit(h, policies=['cacheaware']), w + '"policies" must be a '
             'non-empty list of credit, nova, agent, optimum, partial'),
        ])

    def test_cloud_scenario(self):
        c, w = CLOUD, 'scenario: '
        self._table(LOAD, [
            (_edit(c, cloud=[]), w + '"cloud" must be an object'),
            (_edit(c, 'cloud', hosts=0), w + '"hosts" must be an integer '
             '>= 1'),
            (_edit(c, 'cloud', warmup=-1, slices=0),
             w + '"warmup" must be an integer >= 0'),
            (_edit(c, 'cloud', slices=0),
             w + '"cloud slices" must be an integer >= 1'),
            (_edit(c, 'cloud', mean_lifetime=HUGE),
             w + '"mean_lifetime" must be a number > 0'),
            (_edit(c, 'cloud', time_unit_s=float('inf')),
             w + '"time_unit_s" must be a number > 0'),
            (_edit(c, 'cloud', mix={'disk': 1}),
             w + '"mix" must map memory/cpu/io to weights > 0'),
            (_edit(c, 'cloud', sizes={'0': 1}),
             w + '"sizes" must map vCPU counts to weights > 0'),
            (_edit(c, 'cloud', sizes={'1' * 5000: 1}),
             w + '"sizes" must map vCPU counts to weights > 0'),
            (_edit(c, 'cloud', declared=1.5),
             w + '"declared" must be a number in 0..1'),
            (_edit(c, 'cloud', sigma=-HUGE), w + '"sigma" must be a number '
             '>= 0'),
            (_edit(c, 'cloud', schedule=[]), w + '"schedule" must be an '
             'object'),
            (_edit(c, 'cloud', schedule={'passes': 0}), w + '"schedule": '
             'period_s > 0, passes >= 1, interval_s >= 0'),
            (_edit(c, configs=[]), w + '"configs" must be a non-empty list '
             'of nova-shared, nova-dedicated, spread-cache, agent-auto, '
             'required, preferred, off, all-auto'),
        ])

    def test_scenario_values(self):
        sc = LOAD(HOST)
        self.assertEqual(
            {'domains': [(0, 1), (2, 3)], 'model': contention.Model(
                cpi_mem=0.6, dirty_all=1), 'seed': 2, 'slices': 300,
             'vms': [contention.SimVM('a', 2, 'memory'),
                     contention.SimVM('vm1', 1, 'cpu')],
             'policies': ['credit', 'agent']}, sc)
        sc = LOAD({'cloud': {}})
        self.assertEqual(
            {'hosts': 100, 'arrivals': 1000, 'sample_every': 100,
             'warmup': 0, 'slices': 40, 'mean_interarrival': 1.0,
             'mean_lifetime': 400.0, 'time_unit_s': 60.0,
             'mix': {'memory': 3, 'cpu': 5, 'io': 2},
             'sizes': {'1': 2, '2': 4, '4': 2}, 'declared': 1.0,
             'sigma': 0.1, 'schedule': {}}, sc['cloud'])
        self.assertEqual(float, type(LOAD(CLOUD)['cloud'][
            'mean_interarrival']))

    def test_scenario_defaults(self):
        q6600 = [(0, 1), (2, 3)]
        common = {'domains': q6600, 'model': contention.Model(
            cpi_mem=0.5, cpi_cpu=1.0, split_mem=3.2, split_cpu=0.03,
            dirty_all=0.12, dirty_partial=1.0, io_busy=0.3), 'seed': 0,
            'slices': 2000}
        self.assertEqual(
            dict(common, vms=[contention.SimVM('vm0', 1, 'io')],
                 policies=['credit', 'nova', 'agent', 'optimum',
                           'partial']),
            LOAD({'vms': [{'vcpus': 1, 'workload': 'io'}]}))
        self.assertEqual(
            dict(common, cloud={
                'hosts': 100, 'arrivals': 1000, 'sample_every': 100,
                'warmup': 0, 'slices': 40, 'mean_interarrival': 1.0,
                'mean_lifetime': 400.0, 'time_unit_s': 60.0,
                'mix': {'memory': 3, 'cpu': 5, 'io': 2},
                'sizes': {'1': 2, '2': 4, '4': 2}, 'declared': 1.0,
                'sigma': 0.1, 'schedule': {}},
                configs=['nova-shared', 'nova-dedicated', 'spread-cache',
                         'agent-auto', 'required', 'preferred', 'off',
                         'all-auto']),
            LOAD({'cloud': {}}))

    def test_cloud_values(self):
        sc = LOAD(CLOUD)
        self.assertEqual(
            {'domains': [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11),
                         (12, 13, 14, 15)],
             'model': contention.Model(), 'seed': 3, 'slices': 2000,
             'cloud': {'hosts': 4, 'arrivals': 60, 'sample_every': 20,
                       'warmup': 20, 'slices': 10, 'mean_interarrival': 1.0,
                       'mean_lifetime': 30.0, 'time_unit_s': 60.0,
                       'mix': {'memory': 2, 'cpu': 1.5},
                       'sizes': {'1': 1, '2': 1}, 'declared': 0.5,
                       'sigma': 0.0,
                       'schedule': {'period_s': 5, 'passes': 2}},
             'configs': ['nova-shared', 'required']}, sc)
        self.assertEqual((float, float, float), tuple(
            type(sc['cloud'][k]) for k in ('time_unit_s', 'declared',
                                           'sigma')))

    def test_accepted_edges(self):
        for doc, part, key, value in (
                (_edit(HOST, host='q6600'), None, 'domains',
                 [(0, 1), (2, 3)]),
                (_edit(HOST, host=[[8191]]), None, 'domains', [(8191,)]),
                (_edit(HOST, seed=0), None, 'seed', 0),
                (_edit(HOST, slices=1), None, 'slices', 1),
                (_edit(HOST, model={'io_busy': 1e-9}), None, 'model',
                 contention.Model(io_busy=1e-9)),
                (_edit(HOST, 'vms', 0, vcpus=4096), None, 'vms',
                 [contention.SimVM('a', 4096, 'memory'),
                  contention.SimVM('vm1', 1, 'cpu')]),
                (_edit(HOST, policies=['partial', 'partial']), None,
                 'policies', ['partial', 'partial']),
                (_edit(CLOUD, 'cloud', warmup=0), 'cloud', 'warmup', 0),
                (_edit(CLOUD, 'cloud', declared=0), 'cloud', 'declared',
                 0.0),
                (_edit(CLOUD, 'cloud', declared=1), 'cloud', 'declared',
                 1.0),
                (_edit(CLOUD, 'cloud', sizes={'4096': 0.5}), 'cloud',
                 'sizes', {'4096': 0.5}),
                (_edit(CLOUD, 'cloud', mix={'io': 1}), 'cloud', 'mix',
                 {'io': 1}),
                (_edit(CLOUD, 'cloud', schedule={}), 'cloud', 'schedule',
                 {})):
            got = LOAD(doc)
            got = got[part] if part else got
            self.assertEqual(value, got[key], doc)

    def test_probe_matrix(self):
        p, w = PROBE, 'calibration: '
        self._table(calibration._cells, [
            ([], w + 'must be the JSON object of nova-cacheaware probe '
             '--format json'),
            (_edit(p, format_version=2), w + 'format_version must be 1 '
             '(nova-cacheaware probe --format json), not 2'),
            (_edit(p, matrix={}), w + '"matrix" must be a non-empty list'),
            (_edit(p, matrix=[1]), w + 'matrix[0] must be an object'),
            (_edit(p, 'matrix', 1, kernel='walk'),
             w + 'matrix[1].kernel must be one of chase, stream'),
            (_edit(p, 'matrix', 0, placement='alone'),
             w + 'matrix[0].placement must be one of same, different'),
            (_edit(p, 'matrix', 0, slowdown=0, factor=None),
             w + 'matrix[0].factor must be a positive number'),
            (_edit(p, 'matrix', 0, high=HUGE),
             w + 'matrix[0].high must be a positive number'),
        ])
        # format_version compares equal to 1: true and 1.0 pass, as before.
        for version in (True, 1.0):
            self.assertEqual(2, len(calibration._cells(
                _edit(p, format_version=version))))
        self.assertEqual(
            [contention_probe.Cell(kernel='chase', factor=0.5,
                                   placement='same', slowdown=1.2, low=1.0,
                                   high=1.3),
             contention_probe.Cell(kernel='stream', factor=2.0,
                                   placement='different', slowdown=1.01,
                                   low=0.9, high=1.1)],
            calibration._cells(PROBE))
        self.assertEqual([float] * 8, [
            type(getattr(c, k)) for c in calibration._cells(PROBE)
            for k in ('factor', 'slowdown', 'low', 'high')])


class OldCrashesTest(testtools.TestCase):
    """What crashed the old walkers is refused in one line."""

    def test_refused(self):
        c, w = CLOUD, 'invalid input: scenario: '
        for parse, doc, message in (
                # OverflowError before.
                (LOAD, _edit(HOST, model={'io_busy': HUGE}),
                 w + '"model" values must be positive numbers'),
                (LOAD, _edit(c, 'cloud', mix={'cpu': HUGE}),
                 w + '"mix" must map memory/cpu/io to weights > 0'),
                (LOAD, _edit(c, 'cloud', sizes={'1': HUGE}),
                 w + '"sizes" must map vCPU counts to weights > 0'),
                (LOAD, _edit(c, 'cloud', declared=HUGE),
                 w + '"declared" must be a number in 0..1'),
                (LOAD, _edit(c, 'cloud', sigma=HUGE),
                 w + '"sigma" must be a number >= 0'),
                (LOAD, _edit(c, 'cloud', mean_interarrival=HUGE),
                 w + '"mean_interarrival" must be a number > 0'),
                (LOAD, _edit(c, 'cloud', time_unit_s=HUGE),
                 w + '"time_unit_s" must be a number > 0'),
                (calibration._cells, _edit(PROBE, 'matrix', 1, factor=-HUGE),
                 'invalid input: calibration: matrix[1].factor must be a '
                 'positive number'),
                # ValueError before (int()'s digit limit).
                (LOAD, _edit(c, 'cloud', sizes={'1' * 5000: 1}),
                 w + '"sizes" must map vCPU counts to weights > 0'),
                # AttributeError before. Not JSON (a Python caller's
                # dict), but refused too.
                (LOAD, _edit(c, 'cloud', sizes={1: 1}),
                 w + '"sizes" must map vCPU counts to weights > 0')):
            e = self.assertRaises(exception.InvalidInput, parse, doc)
            self.assertEqual(message, str(e))
