"""The simulators' declared schemas: refusals, defaults, random documents.

As ``tests/unit/policy/test_declared_schemas``: each property mutates a
valid scenario part at random and requires a typed value (for the NUMA
scenario, the same one again from what ``compare`` writes of it) or a
one-line refusal, never another exception. The tables pin the exact
messages, the accepted bounds and the defaults.
"""

import dataclasses

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import access
from nova_cacheaware_evaluation.sim import balloon
from nova_cacheaware_evaluation.sim import estimator
from nova_cacheaware_evaluation.sim import numa
from tests.unit.policy.test_declared_schemas import _edit
from tests.unit.policy.test_declared_schemas import mutate
from tests.unit.policy.test_declared_schemas import outcome

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


class RandomDocumentsTest(testtools.TestCase):
    """A typed value or a one-line refusal, never another exception."""

    def _parsed(self, parse, data, base):
        doc = mutate(data, base, data.draw(st.integers(0, 4)))
        got = outcome(parse, doc)
        self.assertIn(got[0], ('ok', 'bad'), (doc, got))
        if got[0] == 'bad':
            self.assertNotIn('\n', got[1], doc)
        return doc, got

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_access(self, data):
        doc, got = self._parsed(access.access_from_dict, data, ACCESS)
        if got[0] == 'ok':
            self.assertIsInstance(got[1], access.AccessSpec)

    @settings(max_examples=400, deadline=None)
    @given(st.data(), st.integers(0, 4))
    def test_estimator(self, data, vms):
        # Wrapped so that the object itself can be replaced (by null too)
        # or deleted (null: the exact ratios).
        def parse(doc):
            return estimator.estimator_from_dict(
                doc.get('estimator') if isinstance(doc, dict) else doc, vms)
        doc, got = self._parsed(parse, data, {'estimator': ESTIMATOR})
        if got[0] == 'ok':
            self.assertIsInstance(got[1], estimator.EstimatorModel)

    @settings(max_examples=500, deadline=None)
    @given(st.data())
    def test_balloon_scenario(self, data):
        doc, got = self._parsed(balloon.scenario_from_dict, data, BALLOON)
        if got[0] == 'ok':
            self.assertIsInstance(got[1], balloon.Scenario)

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_numa_scenario(self, data):
        # compare() writes the scenario it ran (dataclasses.asdict): read
        # back, it is the same scenario.
        doc, got = self._parsed(numa.scenario_from_dict, data, NUMA)
        if got[0] == 'ok':
            self.assertEqual(got[1], numa.scenario_from_dict(
                dataclasses.asdict(got[1])), doc)

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


class DefaultsTest(testtools.TestCase):
    """Absent keys: the exact defaults, every field spelt out."""

    def test_access(self):
        self.assertEqual(
            access.AccessSpec(pattern='uniform', exponent=0.9, hot_files=0.2,
                              hot_share=0.8, hot_reads=20000,
                              scan_share=0.1, drift_reads=10),
            access.access_from_dict({}))

    def test_estimator(self):
        exact = estimator.EstimatorModel(
            nonfile_mib_s=0.0, readahead=0.0, blind_vms=(), sample_s=None,
            cache_extra_mib=0.0)
        for doc in (None, {}, {'sample_s': None, 'blind_vms': []}):
            self.assertEqual(exact, estimator.estimator_from_dict(doc, 3))

    def test_balloon_scenario(self):
        # min_mib is process_mib + 128, committed_as_mib process_mib and
        # max_mib what the other VMs' min_mib leave of the host.
        self.assertEqual(
            balloon.Scenario(
                seed=0, duration_s=6000.0, phase_s=600.0,
                host_memory_mib=7071, vms=3, process_mib=300, files=10000,
                file_mib=1, working_sets=[0, 100, 1000, 2000, 3000, 4000,
                                          5000, 7500, 10000],
                disk_mib_s=60.0, cache_mib_s=1200.0, min_mib=428,
                max_mib=6215, committed_as_mib=300, tick_s=1.0,
                threshold=0.99, alpha=0.1, beta=0.1, interval_s=10.0,
                period_s=5.0, access=None,
                estimator=estimator.EstimatorModel()),
            balloon.scenario_from_dict({}))
        sc = balloon.scenario_from_dict(
            {'host_memory_mib': 4000, 'vms': 2, 'process_mib': 72,
             'access': {'pattern': 'scan'}})
        self.assertEqual(
            (200, 3800, 72, ('scan', 'scan')),
            (sc.min_mib, sc.max_mib, sc.committed_as_mib,
             tuple(a.pattern for a in sc.access)))

    def test_numa_scenario(self):
        self.assertEqual(
            numa.Scenario(nodes=2, cpus_per_node=8, node_bandwidth=6.0,
                          remote_penalty=1.25, work=240.0, jobs=4,
                          period_s=1.0, handoff_s=1.3, cpu_moves=1,
                          blackbox_memory='one-node', dt=0.01),
            numa.scenario_from_dict({}))


class AcceptedValuesTest(testtools.TestCase):
    """The edges each field accepts, and the type it gives."""

    def _table(self, parse, base, cases):
        for edit, key, value, kind in cases:
            got = getattr(parse(_edit(base, **edit)), key)
            self.assertEqual((value, kind), (got, type(got)), edit)

    def test_access(self):
        self._table(access.access_from_dict, ACCESS, [
            ({'exponent': 0}, 'exponent', 0.0, float),
            ({'exponent': 5}, 'exponent', 5.0, float),
            ({'hot_files': 1}, 'hot_files', 1.0, float),
            ({'hot_share': 0.0}, 'hot_share', 0.0, float),
            ({'scan_share': 1}, 'scan_share', 1.0, float),
            ({'hot_reads': 1}, 'hot_reads', 1, int),
            ({'hot_reads': 1e9}, 'hot_reads', 10 ** 9, int),
            ({'drift_reads': 7.0}, 'drift_reads', 7, int),
        ] + [({'pattern': p}, 'pattern', p, str)
             for p in ('uniform', 'zipf', 'hotcold', 'scan', 'scan_mix',
                       'moving')])

    def test_estimator(self):
        self._table(lambda d: estimator.estimator_from_dict(d, 3),
                    ESTIMATOR, [
            ({'nonfile_mib_s': 0}, 'nonfile_mib_s', 0.0, float),
            ({'readahead': 3}, 'readahead', 3.0, float),
            ({'cache_extra_mib': 0}, 'cache_extra_mib', 0.0, float),
            ({'sample_s': 2}, 'sample_s', 2.0, float),
            ({'sample_s': None}, 'sample_s', None, type(None)),
            ({'blind_vms': []}, 'blind_vms', (), tuple),
            ({'blind_vms': [2, 2, 1, 0]}, 'blind_vms', (0, 1, 2), tuple),
        ])

    def test_balloon_scenario(self):
        self._table(balloon.scenario_from_dict, BALLOON, [
            ({'seed': 0}, 'seed', 0, int),
            ({'seed': 4.0}, 'seed', 4, int),
            ({'process_mib': 0}, 'process_mib', 0, int),
            ({'params': {'threshold': 0}}, 'threshold', 0.0, float),
            ({'params': {'threshold': 1}}, 'threshold', 1.0, float),
            ({'params': {'beta': 0}}, 'beta', 0.0, float),
            ({'params': {'interval_s': 1}}, 'interval_s', 1.0, float),
            ({'working_sets': [0, 2000]}, 'working_sets', [0, 2000], list),
            ({'disk_mib_s': 1200}, 'disk_mib_s', 1200.0, float),
            ({'phase_s': 1}, 'phase_s', 1.0, float),
            ({'duration_s': 10 ** 7}, 'duration_s', 1e7, float),
            ({'min_mib': 0}, 'min_mib', 0, int),
            ({'min_mib': 2000}, 'min_mib', 2000, int),
            ({'max_mib': 2000}, 'max_mib', 2000, int),
            ({'committed_as_mib': 0}, 'committed_as_mib', 0, int),
            ({'estimator': None}, 'estimator', estimator.EstimatorModel(),
             estimator.EstimatorModel),
            ({'access': None}, 'access', None, type(None)),
        ])

    def test_numa_scenario(self):
        self._table(numa.scenario_from_dict, NUMA, [
            ({'nodes': 1, 'cpus_per_node': 2}, 'cpus_per_node', 2, int),
            ({'remote_penalty': 1}, 'remote_penalty', 1, int),
            ({'period_s': 0}, 'period_s', 0, int),
            ({'handoff_s': 0.0}, 'handoff_s', 0.0, float),
            ({'jobs': 1, 'cpu_moves': 1}, 'cpu_moves', 1, int),
            ({'work': 0.5}, 'work', 0.5, float),
            ({'blackbox_memory': 'one-node'}, 'blackbox_memory',
             'one-node', str),
        ])


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
