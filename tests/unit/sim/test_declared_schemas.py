"""The simulators' declared schemas accept and refuse what the old walkers did.

As ``tests/unit/policy/test_declared_schemas``: each property mutates a
valid scenario part at random and requires the same typed value or the
same one-line message from the declared schema and the old walker (kept
in ``legacy/``); the tables pin the exact messages.
"""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware.sim import access
from nova_cacheaware.sim import balloon
from nova_cacheaware.sim import estimator
from nova_cacheaware.sim import numa
from tests.unit.policy.test_declared_schemas import _edit
from tests.unit.policy.test_declared_schemas import mutate
from tests.unit.policy.test_declared_schemas import outcome
from tests.unit.sim.legacy import access as old_access
from tests.unit.sim.legacy import balloon as old_balloon
from tests.unit.sim.legacy import estimator as old_estimator
from tests.unit.sim.legacy import numa as old_numa

ACCESS = {'pattern': 'hotcold', 'exponent': 1.2, 'hot_files': 0.3,
          'hot_share': 0.9, 'hot_reads': 500, 'scan_share': 0.2,
          'drift_reads': 7.0}
ESTIMATOR = {'nonfile_mib_s': 2, 'readahead': 0.5, 'blind_vms': [2, 0, 2],
             'sample_s': 1.5, 'cache_extra_mib': 16.0}
BALLOON = {'seed': 3, 'duration_s': 300, 'phase_s': 100.0,
           'host_memory_mib': 4000, 'vms': 2, 'process_mib': 300.0,
           'files': 2000, 'file_mib': 1, 'working_sets': [0, 20, 2000],
           'disk_mib_s': 60, 'cache_mib_s': 1200, 'min_mib': 500,
           'max_mib': 3000, 'committed_as_mib': None, 'tick_s': 1,
           'access': [{'pattern': 'zipf'}, {}],
           'estimator': {'readahead': 0.5},
           'params': {'threshold': 0.9, 'alpha': 0, 'period_s': 2}}
NUMA = {'nodes': 2, 'cpus_per_node': 4, 'node_bandwidth': 3, 'work': 20.0,
        'remote_penalty': 1.5, 'jobs': 2, 'period_s': 0, 'handoff_s': 0.5,
        'cpu_moves': 2, 'dt': 0.1}


class SameAsOldWalkerTest(testtools.TestCase):

    def _same(self, new, old, data, base):
        doc = mutate(data, base, data.draw(st.integers(0, 4)))
        self.assertEqual(outcome(old, doc), outcome(new, doc), doc)

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_access(self, data):
        self._same(access.access_from_dict, old_access.access_from_dict,
                   data, ACCESS)

    @settings(max_examples=400, deadline=None)
    @given(st.data(), st.integers(0, 4))
    def test_estimator(self, data, vms):
        # Wrapped so that the object itself can be replaced (by null too).
        self._same(
            lambda doc: estimator.estimator_from_dict(doc['estimator'], vms),
            lambda doc: old_estimator.estimator_from_dict(doc['estimator'],
                                                          vms),
            data, {'estimator': ESTIMATOR})

    @settings(max_examples=500, deadline=None)
    @given(st.data())
    def test_balloon_scenario(self, data):
        self._same(balloon.scenario_from_dict,
                   old_balloon.scenario_from_dict, data, BALLOON)

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_numa_scenario(self, data):
        # Stricter on purpose (finite numbers, whole counts, the memory
        # layout's two words): a scenario the declared schema accepts is
        # the old walker's, unless it sets blackbox_memory, which the old
        # walker never let through; one it refuses that the old walker
        # took has a value that is not finite or not whole.
        doc = mutate(data, NUMA, data.draw(st.integers(0, 4)))
        new = outcome(numa.scenario_from_dict, doc)
        old = outcome(old_numa.scenario_from_dict, doc)
        if new[0] == 'ok' and 'blackbox_memory' not in doc:
            self.assertEqual(old, new, doc)
        elif new[0] == 'bad' and old[0] == 'ok':
            self.assertRegex(new[1], 'must be a (finite|whole) number', doc)
        else:
            self.assertNotEqual('crash', new[0], doc)

    def test_bases_are_valid(self):
        for parse, doc in ((access.access_from_dict, ACCESS),
                           (numa.scenario_from_dict, NUMA),
                           (balloon.scenario_from_dict, BALLOON),
                           (lambda d: estimator.estimator_from_dict(d, 3),
                            ESTIMATOR)):
            self.assertEqual('ok', outcome(parse, doc)[0])


class MessageTableTest(testtools.TestCase):
    """Exact one-line messages (what the CLI prints after its prefix)."""

    def _table(self, parse, cases):
        for doc, message in cases:
            e = self.assertRaises(exception.InvalidInput, parse, doc)
            self.assertEqual('invalid input: ' + message, str(e))

    def test_access(self):
        a = ACCESS
        self._table(access.access_from_dict, [
            ([], 'access: must be a JSON object'),
            (_edit(a, z=1, b=2), 'access: unknown key(s): b, z'),
            (_edit(a, pattern='lfu'),
             "access: unknown \"pattern\" 'lfu' (one of uniform, zipf, "
             'hotcold, scan, scan_mix, moving)'),
            (_edit(a, exponent=True),
             'access: "exponent" must be a number, not True'),
            (_edit(a, exponent=float('nan')),
             'access: "exponent" must be a number, not nan'),
            (_edit(a, exponent=5.5), 'access: "exponent" must be in 0..5 '
             '(5.5)'),
            (_edit(a, hot_share=-1),
             'access: "hot_share" must be in 0..1 (-1)'),
            (_edit(a, hot_reads=2.5),
             'access: "hot_reads" must be an integer (2.5)'),
            (_edit(a, hot_reads=-2.5),
             'access: "hot_reads" must be an integer (-2.5)'),
            (_edit(a, drift_reads=0),
             'access: "drift_reads" must be in 1..1000000000 (0)'),
        ])
        e = self.assertRaises(exception.InvalidInput,
                              access.access_from_dict, {'exponent': None},
                              'scenario: access[2]')
        self.assertEqual('invalid input: scenario: access[2]: "exponent" '
                         'must be a number, not None', str(e))

    def test_access_values(self):
        spec = access.access_from_dict({'exponent': 1, 'hot_reads': 3.0})
        self.assertEqual((1.0, float, 3, int),
                         (spec.exponent, type(spec.exponent),
                          spec.hot_reads, type(spec.hot_reads)))
        self.assertEqual(access.AccessSpec(), access.access_from_dict({}))

    def test_estimator(self):
        e, w = ESTIMATOR, 'scenario: "estimator": '
        self._table(lambda doc: estimator.estimator_from_dict(doc, 3), [
            ([], w + 'must be a JSON object'),
            (_edit(e, z=1, b=2), w + 'unknown key(s): b, z'),
            (_edit(e, blind_vms=[3]),
             w + '"blind_vms" must be a list of VM numbers 0..2'),
            (_edit(e, blind_vms=[True]),
             w + '"blind_vms" must be a list of VM numbers 0..2'),
            (_edit(e, blind_vms='a'),
             w + '"blind_vms" must be a list of VM numbers 0..2'),
            (_edit(e, sample_s=-1),
             w + '"sample_s" must be a non-negative number, not -1'),
            (_edit(e, sample_s=0), w + '"sample_s" must be positive'),
            (_edit(e, nonfile_mib_s=-1), w + '"nonfile_mib_s" must be a '
             'non-negative number, not -1'),
            (_edit(e, readahead='1'),
             w + '"readahead" must be a non-negative number, not \'1\''),
            (_edit(e, cache_extra_mib=float('inf')), w + '"cache_extra_mib"'
             ' must be a non-negative number, not inf'),
        ])

    def test_estimator_values(self):
        self.assertEqual(estimator.EstimatorModel(),
                         estimator.estimator_from_dict(None, 3))
        self.assertEqual(estimator.EstimatorModel(),
                         estimator.estimator_from_dict({}, 3))
        self.assertEqual(
            estimator.EstimatorModel(nonfile_mib_s=2.0, readahead=0.5,
                                     blind_vms=(0, 2), sample_s=1.5,
                                     cache_extra_mib=16.0),
            estimator.estimator_from_dict(ESTIMATOR, 3))

    def test_balloon_scenario(self):
        b, w = BALLOON, 'scenario: '
        self._table(balloon.scenario_from_dict, [
            ([], w + 'must be a JSON object'),
            (_edit(b, z=1, b=2), w + 'unknown key(s): b, z'),
            (_edit(b, params=[]), w + '"params" must be an object'),
            (_edit(b, 'params', z=1, y=2), w + 'unknown params key(s): y, z'),
            (_edit(b, seed=None), w + '"seed" must be a number, not None'),
            (_edit(b, vms=1.5), w + '"vms" must be an integer (1.5)'),
            (_edit(b, vms=0), w + '"vms" must be >= 1 (0)'),
            (_edit(b, duration_s=0), w + '"duration_s" must be > 0 (0)'),
            # Numbers in the table's order, params among them.
            (_edit(b, tick_s='x', params={'alpha': -1, 'beta': True}),
             w + '"tick_s" must be a number, not \'x\''),
            (_edit(b, 'params', threshold=1.5),
             w + '"threshold" must be between 0 and 1'),
            (_edit(b, disk_mib_s=2000),
             w + '"disk_mib_s" must not exceed "cache_mib_s"'),
            (_edit(b, working_sets=[2001]), w + '"working_sets" must be a '
             'non-empty list of file counts between 0 and "files"'),
            (_edit(b, working_sets=[]), w + '"working_sets" must be a '
             'non-empty list of file counts between 0 and "files"'),
            (_edit(b, min_mib=-1), w + '"min_mib" must be >= 0 (-1)'),
            (_edit(b, max_mib=0.5), w + '"max_mib" must be an integer (0.5)'),
            (_edit(b, committed_as_mib='1'),
             w + '"committed_as_mib" must be a number, not \'1\''),
            (_edit(b, min_mib=2001),
             w + 'vms * min_mib exceeds host_memory_mib'),
            (_edit(b, max_mib=1999),
             w + 'the static split must lie in [min_mib, max_mib]'),
            (_edit(b, phase_s=0.5), w + '"phase_s" must be at least "tick_s"'),
            (_edit(b, duration_s=10 ** 8, phase_s=10),
             w + '"duration_s" / "tick_s" must be at most 10000000 ticks'),
            (_edit(b, access=[{}]),
             w + '"access" must be one pattern or a list of 2'),
            (_edit(b, access=[{}, {'x': 1}]),
             w + 'access[1]: unknown key(s): x'),
            (_edit(b, access={'hot_reads': 0}),
             w + 'access: "hot_reads" must be in 1..1000000000 (0)'),
            (_edit(b, estimator={'blind_vms': [2]}), w + '"estimator": '
             '"blind_vms" must be a list of VM numbers 0..1'),
        ])

    def test_balloon_scenario_values(self):
        sc = balloon.scenario_from_dict(BALLOON)
        self.assertEqual(
            (3, 300.0, float, 300, int, 500, 3000, 300, 0.9, 0.0, 0.1, 2.0,
             10.0, ('zipf-0.9', 'uniform'), 0.5),
            (sc.seed, sc.duration_s, type(sc.duration_s), sc.process_mib,
             type(sc.process_mib), sc.min_mib,
             sc.max_mib, sc.committed_as_mib, sc.threshold, sc.alpha,
             sc.beta, sc.period_s, sc.interval_s,
             tuple(a.label() for a in sc.access), sc.estimator.readahead))
        self.assertEqual(old_balloon.scenario_from_dict({}),
                         balloon.scenario_from_dict({}))

    def test_numa_scenario(self):
        n, k = NUMA, 'scenario key '
        bounds = ('bandwidth, work, dt > 0; remote_penalty >= 1; '
                  'jobs, cpu_moves >= 1; period_s, handoff_s >= 0')
        self._table(numa.scenario_from_dict, [
            ([], 'the scenario must be a JSON object'),
            (_edit(n, z=1, b=2), 'unknown scenario keys: b, z'),
            (_edit(n, nodes=True),
             k + 'nodes must be a finite number, not True'),
            (_edit(n, dt=None), k + 'dt must be a finite number, not None'),
            (_edit(n, dt=float('nan')),
             k + 'dt must be a finite number, not nan'),
            (_edit(n, work=float('inf')),
             k + 'work must be a finite number, not inf'),
            (_edit(n, nodes=2.5), k + 'nodes must be a whole number, not 2.5'),
            (_edit(n, jobs=10 ** 400),
             k + 'jobs must be a finite number, not %r' % 10 ** 400),
            # The document's order, not the fields'.
            ({'dt': '1', 'nodes': '2'},
             k + "dt must be a finite number, not '1'"),
            (_edit(n, cpus_per_node=1), 'need at least one node of two CPUs'),
            (_edit(n, remote_penalty=0.5), bounds),
            (_edit(n, blackbox_memory=1),
             k + "blackbox_memory must be 'one-node' or 'interleaved', "
             "not 1"),
            (_edit(n, blackbox_memory='striped'),
             k + "blackbox_memory must be 'one-node' or 'interleaved', "
             "not 'striped'"),
        ])

    def test_numa_values(self):
        # Numbers are taken as given, an int for a float field too; a
        # whole float for a count becomes an int.
        sc = numa.scenario_from_dict(NUMA)
        self.assertEqual((3, int, 2, 0.1), (sc.node_bandwidth,
                                            type(sc.node_bandwidth),
                                            sc.nodes, sc.dt))
        self.assertEqual(numa.Scenario(), numa.scenario_from_dict({}))
        sc = numa.scenario_from_dict(_edit(NUMA, nodes=4.0, jobs=3.0))
        self.assertEqual((4, int, 3, int), (sc.nodes, type(sc.nodes),
                                            sc.jobs, type(sc.jobs)))

    def test_numa_interleaved_memory(self):
        # The old walker refused every string, so this was unreachable.
        sc = numa.scenario_from_dict(_edit(NUMA,
                                           blackbox_memory='interleaved'))
        self.assertEqual('interleaved', sc.blackbox_memory)
        self.assertNotEqual(numa.compare(sc)['mean_job_s']['blackbox'],
                            numa.compare(numa.scenario_from_dict(NUMA))[
                                'mean_job_s']['blackbox'])


class HugeIntegerTest(testtools.TestCase):
    """An int beyond a float's range: refused in one line (was a crash)."""

    def test_refused(self):
        huge = 10 ** 400
        for parse, doc, key in (
                (access.access_from_dict, {'hot_reads': huge}, 'hot_reads'),
                (lambda d: estimator.estimator_from_dict(d, 3),
                 {'readahead': huge}, 'readahead'),
                (balloon.scenario_from_dict, {'seed': huge}, 'seed'),
                (balloon.scenario_from_dict, {'min_mib': -huge}, 'min_mib')):
            e = self.assertRaises(exception.InvalidInput, parse, doc)
            self.assertIn('"%s" must be a' % key, str(e))
            self.assertEqual(1, len(str(e).splitlines()))
