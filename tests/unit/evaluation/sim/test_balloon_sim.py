"""The page-cache model against closed forms, and the policy ranking."""

import math

import testtools

from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import balloon as sim
from nova_cacheaware_evaluation.sim import pagecache

DISK, CACHE = 60.0, 1200.0


def cache_for(ws, memory, process=300, edges=(0, 1000, 3000, 10000)):
    c = pagecache.PageCache(list(edges), process, memory)
    c.set_working_set(ws)
    return c


class TestPageCacheModel(testtools.TestCase):

    def test_warmup_follows_coupon_collector(self):
        # Cache bigger than W: after reading R MiB, m = exp(-R / W).
        c = cache_for(3000, 5000)
        read, miss = c.run(60, DISK, CACHE)
        m = 1 - c.hit_ratio()
        self.assertAlmostEqual(math.exp(-read / 3000), m, places=6)
        self.assertAlmostEqual(3000 * (1 - m), miss, places=6)
        # And the time formula: t = W (ln(1/m)/cache + (1-m)(1/disk-1/cache))
        t = 3000 * (math.log(1 / m) / CACHE
                    + (1 - m) * (1 / DISK - 1 / CACHE))
        self.assertAlmostEqual(60.0, t, places=5)

    def test_steady_state_hit_ratio_is_c_over_w(self):
        for ws, memory in ((3000, 1300), (10000, 2300), (1000, 5000)):
            c = cache_for(ws, memory)
            for _ in range(400):
                c.run(10, DISK, CACHE)
            expected = min(1.0, (memory - 300) / ws)
            self.assertAlmostEqual(expected, c.hit_ratio(), places=3)
            read, miss = c.run(10, DISK, CACHE)
            r = expected
            x = 1 / (r / CACHE + (1 - r) / DISK)
            if r < 1:
                self.assertAlmostEqual(10 * x, read, delta=1e-6 * read)
                self.assertAlmostEqual(1 - r, miss / read, places=6)

    def test_fill_never_exceeds_capacity(self):
        c = cache_for(10000, 1300)
        for _ in range(100):
            c.run(10, DISK, CACHE)
            self.assertLessEqual(c.total_cached(), c.capacity + 1e-6)

    def test_shrink_evicts_stale_first_and_nested_sets_stay_cached(self):
        c = cache_for(3000, 5000)
        for _ in range(200):
            c.run(10, DISK, CACHE)
        self.assertAlmostEqual(1.0, c.hit_ratio(), places=3)
        c.set_working_set(1000)          # the first 1000 MiB stay cached
        self.assertAlmostEqual(1.0, c.hit_ratio(), places=3)
        c.set_memory(1300 + 300)        # 1300 MiB of cache: stale goes
        self.assertAlmostEqual(1.0, c.hit_ratio(), places=3)
        self.assertAlmostEqual(1300, c.total_cached(), places=3)
        c.set_memory(800)               # 500 MiB: working set evicted
        self.assertAlmostEqual(0.5, c.hit_ratio(), places=3)

    def test_idle_vm_reads_nothing(self):
        c = cache_for(0, 2000)
        self.assertEqual((0.0, 0.0), c.run(10, DISK, CACHE))
        self.assertEqual(1.0, c.hit_ratio())


class TestScenario(testtools.TestCase):

    def test_defaults_are_the_study(self):
        sc = sim.scenario_from_dict({})
        self.assertEqual((7071, 3, 600, 10000, 1), (
            sc.host_memory_mib, sc.vms, sc.phase_s, sc.files, sc.file_mib))
        self.assertEqual((0.99, 0.1, 0.1, 10.0, 5.0), (
            sc.threshold, sc.alpha, sc.beta, sc.interval_s, sc.period_s))
        self.assertEqual(10, len(sc.schedule()))
        self.assertEqual(sc.schedule(), sim.scenario_from_dict({}).schedule())

    def test_invalid(self):
        for doc in ([], {'x': 1}, {'params': {'gamma': 1}},
                    {'params': {'threshold': 2}}, {'phase_s': 0},
                    {'working_sets': []}, {'seed': 1.5},
                    {'disk_mib_s': 5000}):
            self.assertRaises(exception.InvalidInput,
                              sim.scenario_from_dict, doc)

    def test_oracle_split_satisfies_small_sets_first(self):
        sc = sim.scenario_from_dict({})
        split = sim.oracle_split(sc, [2000, 3000, 7500])
        self.assertEqual([2300, 3300, 7071 - 5600], split)
        self.assertEqual([2300, 428, 428], sim.oracle_split(sc, [2000, 0, 0]))


def _means(doc, seed=0, **over):
    scenario = dict({'seed': seed, 'tick_s': 5}, **over)
    sc = sim.scenario_from_dict(scenario)
    res = sim.simulate(sc, ('static', 'hit_ratio_a', 'default'))
    return {k: (r.arith_mean(), r.geo_mean()) for k, r in res.items()}


class TestPolicyRanking(testtools.TestCase):
    """The default beats static (both means) and mode A (geometric mean).

    The full 20-scenario run is benchmarks/balloon_sim_scenarios.py; the
    study scenario and three random ones run here (a few seconds).
    """

    def _check(self, means):
        st, a, de = means['static'], means['hit_ratio_a'], means['default']
        self.assertGreater(de[0], st[0])
        self.assertGreater(de[1], st[1])
        self.assertGreater(de[1], a[1])

    def test_study_scenario(self):
        self._check(_means(None))

    def test_random_scenarios(self):
        from benchmarks import balloon_sim_scenarios as bench
        for seed in (1, 6, 14):
            doc = dict(bench.random_scenario(seed), tick_s=5)
            self._check(_means(None, **doc))

    def test_all_policies_run(self):
        sc = sim.scenario_from_dict({'duration_s': 1200, 'tick_s': 5})
        res = sim.simulate(sc)
        self.assertEqual(set(sim.POLICIES), set(res))
        oracle = res['oracle'].geo_mean()
        for name, r in res.items():
            self.assertGreater(r.arith_mean(), 0, name)
            self.assertLessEqual(r.geo_mean(), oracle * 1.02, name)
            for sample in r.trace_memory:
                self.assertLessEqual(sum(sample), sc.host_memory_mib)
                self.assertGreaterEqual(min(sample), sc.min_mib)
