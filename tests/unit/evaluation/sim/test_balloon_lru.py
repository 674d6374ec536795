"""The LRU page-cache model, its access patterns and the helper's error."""

import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import access
from nova_cacheaware_evaluation.sim import balloon as sim
from nova_cacheaware_evaluation.sim import balloon_oracle
from nova_cacheaware_evaluation.sim import estimator
from nova_cacheaware_evaluation.sim import lru


def stream(pattern, ws, files=100, seed=0, **kw):
    spec = access.access_from_dict(dict(kw, pattern=pattern))
    s = access.Stream(spec, files, random.Random(seed))
    s.start(ws)
    return s


def cache(pattern, ws, slots, files=100, **kw):
    c = lru.LruCache(stream(pattern, 0, files, **kw), 0, slots, 1)
    c.set_working_set(ws)
    return c


class TestAccess(testtools.TestCase):

    def test_defaults_and_label(self):
        spec = access.access_from_dict({})
        self.assertEqual('uniform', spec.label())
        self.assertEqual('zipf-1.2', access.access_from_dict(
            {'pattern': 'zipf', 'exponent': 1.2}).label())

    def test_bad_input(self):
        for doc in ({'pattern': 'lfu'}, {'colour': 1}, {'exponent': -1},
                    {'hot_share': 1.5}, {'drift_reads': 0},
                    {'hot_reads': 2.5}, {'exponent': True}, []):
            self.assertRaises(exception.InvalidInput,
                              access.access_from_dict, doc)

    def test_zipf_cumulative_exact(self):
        self.assertEqual((1.0, 1.5, 1.5 + 1 / 3),
                         access.zipf_cumulative(3, 1.0))

    def test_scan_in_order_over_phases(self):
        s = stream('scan', 3)
        self.assertEqual([0, 1, 2, 0, 1], s.draw(5))
        s.start(2)
        self.assertEqual([0, 1, 0], s.draw(3))

    def test_moving_window_slides(self):
        s = stream('moving', 1, files=4, drift_reads=2)
        # Window of one file, moving one file every two reads, wrapping.
        self.assertEqual([0, 1, 1, 2, 2, 3, 3, 0], s.draw(8))

    def test_idle_phase_reads_nothing(self):
        self.assertEqual([], stream('zipf', 0).draw(10))

    def test_zipf_is_skewed(self):
        draws = stream('zipf', 100, exponent=1.2).draw(20000)
        self.assertGreater(draws.count(0), 10 * draws.count(50))

    @settings(max_examples=60, deadline=None)
    @given(st.sampled_from(access.PATTERNS), st.integers(1, 50),
           st.integers(0, 200), st.integers(0, 3))
    def test_draws_in_range(self, pattern, ws, n, seed):
        files = 60
        out = stream(pattern, ws, files, seed, hot_reads=7,
                     drift_reads=3).draw(n)
        self.assertEqual(n, len(out))
        top = files if pattern in ('scan_mix', 'moving') else ws
        self.assertTrue(all(0 <= x < top for x in out), out)


class TestLru(testtools.TestCase):

    def test_cyclic_scan_larger_than_cache_never_hits(self):
        c = cache('scan', 3, 2)
        self.assertEqual(0, c.replay(30))
        c = cache('scan', 3, 3)
        self.assertEqual(27, c.replay(30))

    def test_time_accounting_and_debt(self):
        # Two files, room for two: two misses at 1 s, then hits at 0.1 s.
        c = cache('scan', 2, 2)
        self.assertEqual((2.0, 2.0), c.run(2.0, 1.0, 10.0))
        read, miss = c.run(1.0, 1.0, 10.0)
        self.assertEqual(0.0, miss)
        self.assertIn(read, (10.0, 11.0))       # float rounding of 0.1 s
        # A miss of 1 s in a 0.5-s step overruns it; the next step pays.
        c = cache('scan', 5, 5)
        self.assertEqual((1.0, 1.0), c.run(0.5, 1.0, 10.0))
        self.assertEqual((0.0, 0.0), c.run(0.5, 1.0, 10.0))
        self.assertEqual((1.0, 1.0), c.run(0.5, 1.0, 10.0))

    def test_shrinking_evicts_least_recently_used(self):
        c = cache('scan', 4, 4)
        c.replay(4)                             # files 0, 1, 2, 3
        c.set_memory(2)
        self.assertEqual([2, 3], list(c.files))
        self.assertEqual(2, c.total_cached())
        self.assertEqual(0, c.free())

    def test_no_room_no_cache(self):
        c = lru.LruCache(stream('uniform', 0), 300, 200, 1)
        c.set_working_set(10)
        read, miss = c.run(1.0, 10.0, 100.0)
        self.assertEqual(read, miss)
        self.assertEqual(0, c.total_cached())

    def test_uniform_steady_state_is_c_over_w(self):
        # The closed-form model's steady state, checked on real LRU.
        for slots in (100, 250, 400):
            c = cache('uniform', 500, slots, files=500)
            c.replay(5000)
            hit = c.replay(40000) / 40000
            self.assertAlmostEqual(slots / 500, hit, delta=0.015)

    @settings(max_examples=40, deadline=None)
    @given(st.sampled_from(access.PATTERNS), st.integers(1, 40),
           st.integers(0, 40), st.lists(st.integers(0, 40), max_size=4),
           st.floats(0.1, 5))
    def test_invariants(self, pattern, ws, slots, resizes, seconds):
        c = cache(pattern, ws, slots, files=50, hot_reads=5)
        spent = 0.0
        steps = resizes + [slots]
        for size in steps:
            c.set_memory(size)
            read, miss = c.run(seconds, 10.0, 100.0)
            self.assertLessEqual(miss, read)
            self.assertLessEqual(c.total_cached(), size)
            self.assertEqual(len(set(c.files)), len(c.files))
            spent += miss / 10.0 + (read - miss) / 100.0
        # Reads run back to back: the time charged is the time simulated
        # plus at most one read (a miss, 0.1 s) that overran the last step.
        total = seconds * len(steps)
        self.assertGreaterEqual(spent, total - 1e-6)
        self.assertLessEqual(spent, total + 0.1 + 1e-6)


class TestCurveAndOracle(testtools.TestCase):

    def test_scan_curve_is_a_step(self):
        spec = access.access_from_dict({'pattern': 'scan'})
        curve = lru.hit_curve(spec, 100, 100, measure_reads=1000)
        for slots, hit in curve:
            self.assertEqual(1.0 if slots >= 100 else 0.0, hit, slots)

    def test_interpolate(self):
        curve = [(0, 0.0), (10, 0.5), (20, 1.0)]
        self.assertEqual(0.25, lru.interpolate(curve, 5))
        self.assertEqual(0.75, lru.interpolate(curve, 15))
        self.assertEqual(1.0, lru.interpolate(curve, 99))
        self.assertEqual(0.0, lru.interpolate(curve, -1))

    def _scenario(self, **over):
        doc = dict({'files': 250, 'file_mib': 4, 'host_memory_mib': 2000,
                    'vms': 2, 'process_mib': 100,
                    'working_sets': [0, 50, 150, 250],
                    'access': {'pattern': 'scan'}}, **over)
        return sim.scenario_from_dict(doc)

    def test_scan_oracle_satisfies_what_fits(self):
        # Scans gain nothing until the whole set fits: 600 or 1000 MiB
        # (plus 100 of process) fit next to the other VM's floor, not both.
        sc = self._scenario(host_memory_mib=1500)
        split = balloon_oracle.curve_split(sc, [600, 1000])
        self.assertLessEqual(sum(split), sc.host_memory_mib)
        whole = [split[0] >= 700, split[1] >= 1100]
        self.assertEqual(1, sum(whole), split)
        self.assertEqual(sc.min_mib, split[whole.index(False)])

    @settings(max_examples=20, deadline=None)
    @given(st.lists(st.sampled_from([0, 200, 600, 1000]), min_size=2,
                    max_size=2),
           st.sampled_from(['uniform', 'zipf', 'scan']))
    def test_oracle_split_in_bounds(self, ws, pattern):
        sc = self._scenario(access={'pattern': pattern})
        split = balloon_oracle.curve_split(sc, ws)
        self.assertLessEqual(sum(split), sc.host_memory_mib)
        for m in split:
            self.assertTrue(sc.min_mib <= m <= sc.max_mib)


class TestEstimator(testtools.TestCase):

    def test_exact_by_default(self):
        self.assertEqual(0.75, estimator.EstimatorModel().ratio(0, 8, 2, 1))
        self.assertEqual(1.0, estimator.EstimatorModel().ratio(0, 0, 0, 1))

    def test_errors(self):
        m = estimator.EstimatorModel(nonfile_mib_s=2.0, readahead=0.5,
                                     blind_vms=(1,), cache_extra_mib=16)
        # 8 MiB read + 2 MiB/s for 1 s non-file; 2 MiB missed, 3 fetched.
        self.assertEqual(0.7, m.ratio(0, 8, 2, 1))
        self.assertEqual(1.0, m.ratio(1, 8, 8, 1))      # blind: all hits
        self.assertEqual(0.0, m.ratio(0, 1, 1, 0))      # clamped
        self.assertEqual(116, m.cache(100))

    def test_bad_input(self):
        for doc in ({'x': 1}, {'blind_vms': [3]}, {'blind_vms': 'a'},
                    {'nonfile_mib_s': -1}, {'sample_s': 0}, []):
            self.assertRaises(exception.InvalidInput,
                              estimator.estimator_from_dict, doc, 3)


class TestScenarioLru(testtools.TestCase):

    DOC = {'duration_s': 300, 'phase_s': 100, 'files': 2500, 'file_mib': 4,
           'working_sets': [0, 25, 250, 750],
           'access': {'pattern': 'zipf'},
           'estimator': {'nonfile_mib_s': 1, 'sample_s': 5}}

    def test_bad_access(self):
        for access_doc in ([{}, {}], {'pattern': 'nope'}):
            self.assertRaises(exception.InvalidInput, sim.scenario_from_dict,
                              dict(self.DOC, access=access_doc))

    def test_per_vm_patterns(self):
        sc = sim.scenario_from_dict(dict(self.DOC, access=[
            {'pattern': 'scan'}, {}, {'pattern': 'zipf'}]))
        self.assertEqual(['scan', 'uniform', 'zipf-0.9'],
                         [a.label() for a in sc.access])

    def test_all_policies_run_and_repeat(self):
        sc = sim.scenario_from_dict(self.DOC)
        res = sim.simulate(sc)
        again = sim.simulate_policy(sc, 'default')
        self.assertEqual(res['default'].throughput, again.throughput)
        for name, r in res.items():
            self.assertGreater(r.geo_mean(), 0, name)
            for sample in r.trace_memory:
                self.assertLessEqual(sum(sample), sc.host_memory_mib)
                self.assertGreaterEqual(min(sample), sc.min_mib)
