"""The cache simulator: calibration points of study 000, policies, CLI."""

import json

import testtools

from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import cache
from nova_cacheaware_evaluation.sim import cache_scenario
from nova_cacheaware_evaluation.sim import contention
from tests.unit.cmd import base

Q6600 = [(0, 1), (2, 3)]
ALL = (0, 1, 2, 3)


def mem(vm_id, workload='memory', vcpus=2):
    return contention.SimVM(vm_id, vcpus, workload)


def perf(vms, allowed, slices=200, seed=1):
    stats = contention.simulate_host(Q6600, vms, allowed, slices,
                                     contention.new_rng(seed))
    return {k: v.performance for k, v in stats.items()}


class CalibrationTest(testtools.TestCase):
    """Study 000's CPI figures, exactly, where the pinning fixes them."""

    def test_all_share_is_the_reference(self):
        p = perf([mem('a'), mem('b')],
                 {'a': [(0, 1)] * 2, 'b': [(2, 3)] * 2})
        self.assertEqual({'a': 1.0, 'b': 1.0}, p)

    def test_partial_share_dirty_cpi_3_2(self):
        p = perf([mem('a'), mem('b')],
                 {'a': [(0, 1), (2, 3)], 'b': [(2, 3), (0, 1)]})
        self.assertAlmostEqual(0.5 / 3.2, p['a'])
        self.assertAlmostEqual(0.5 / 3.2, p['b'])

    def test_partial_share_clean_and_cpu_bound(self):
        p = perf([mem('m'), mem('c', 'cpu')],
                 {'m': [(0,), (2,)], 'c': [(1,), (3,)]})
        self.assertAlmostEqual(0.5 / 1.6, p['m'])  # "about 300 %"
        self.assertAlmostEqual(1 / 1.03, p['c'])   # < 5 %

    def test_all_share_dirty_costs_twelve_percent(self):
        # Two memory VMs of one vCPU each on the two CPUs of one L2.
        p = perf([mem('a', vcpus=1), mem('b', vcpus=1)],
                 {'a': [(0,)], 'b': [(1,)]})
        self.assertAlmostEqual(1 / 1.12, p['a'])

    def test_credit_is_all_share_a_third_of_the_time(self):
        # Random placement of 4 vCPUs on 4 CPUs: a VM's two vCPUs share a
        # chip with probability 1/3 -> 1/3 * 1 + 2/3 * 0.5/3.2 = 0.4375.
        p = perf([mem('a'), mem('b')], {'a': [ALL] * 2, 'b': [ALL] * 2},
                 slices=3000)
        self.assertAlmostEqual(0.4375, p['a'], delta=0.03)

    def test_io_vcpus_run_part_of_the_time(self):
        stats = contention.simulate_host(
            Q6600, [mem('io', 'io')], {'io': [ALL] * 2}, 1000,
            contention.new_rng(3))
        # Split now and then (two vCPUs float): < 5 % lost.
        self.assertAlmostEqual(1.0, stats['io'].performance, delta=0.05)
        # Either vCPU busy in a slice: 1 - 0.7 ** 2 = 0.51.
        self.assertAlmostEqual(0.51, stats['io'].running_slices / 1000,
                               delta=0.05)


class HostPolicyTest(testtools.TestCase):

    def _scenario(self, vms, policies):
        return cache_scenario.load_scenario(
            {'seed': 2, 'slices': 300, 'host': 'q6600', 'vms': vms,
             'policies': policies})

    def test_study000_two_vms(self):
        vms = [{'id': 'a', 'vcpus': 2, 'workload': 'memory'},
               {'id': 'b', 'vcpus': 2, 'workload': 'memory'}]
        out = cache.run(self._scenario(vms, list(cache.HOST_POLICIES)))
        pol = out['policies']
        self.assertEqual(1.0, pol['agent']['memory_geomean'])
        self.assertEqual(1.0, pol['optimum']['memory_geomean'])
        self.assertEqual(0.1562, pol['partial']['memory_geomean'])
        # All share runs in less than half of credit's time (study 000).
        self.assertLess(pol['agent']['time_vs_credit'], 0.5)
        self.assertGreater(pol['partial']['time_vs_credit'], 2.0)

    def test_planner_pins_memory_vms_to_whole_domains(self):
        vms = [contention.SimVM('m', 2, 'memory'),
               contention.SimVM('c', 2, 'cpu')]
        allowed = cache.planner_pinning(Q6600, vms)
        self.assertEqual([(0, 1), (0, 1)], allowed['m'])
        self.assertEqual([ALL, ALL], allowed['c'])

    def test_claimed_vm_stays_in_its_domain(self):
        vms = [contention.SimVM('m', 2, 'memory')]
        allowed = cache.planner_pinning(Q6600, vms, fixed={'m': 1})
        self.assertEqual([(2, 3), (2, 3)], allowed['m'])

    def test_nova_pinning_lowest_free_cpus(self):
        vms = [contention.SimVM('a', 1, 'cpu'),
               contention.SimVM('b', 2, 'memory')]
        allowed = cache.nova_pinning(Q6600, vms)
        self.assertEqual([(0,)], allowed['a'])
        self.assertEqual([(1,), (2,)], allowed['b'])  # split: cache-blind

    def test_optimum_refuses_large_searches(self):
        vms = [contention.SimVM('m%d' % i, 1, 'memory') for i in range(9)]
        self.assertRaises(exception.InvalidInput, cache.optimum_pinning,
                          Q6600, vms, 10, 1, contention.Model())


class CloudScenarioTest(testtools.TestCase):

    def test_small_cloud(self):
        scenario = cache_scenario.load_scenario({
            'seed': 3, 'host': 'epyc-4ccx',
            'cloud': {'hosts': 4, 'arrivals': 60, 'mean_interarrival': 1.0,
                      'mean_lifetime': 30.0, 'sample_every': 20,
                      'warmup': 20, 'slices': 10},
            'configs': ['nova-shared', 'required']})
        out = cache.run(scenario)
        self.assertEqual('cloud', out['kind'])
        self.assertEqual(60, out['arrivals'])
        self.assertEqual({'nova-shared', 'required'}, set(out['configs']))
        got = out['configs']
        self.assertGreater(got['required']['memory_clean'],
                           got['nova-shared']['memory_clean'])
        for figures in got.values():
            self.assertLessEqual(figures['memory_perf'],
                                 out['upper_bound']['memory_perf'])
        # Same seed, same result.
        self.assertEqual(out, cache.run(scenario))

    def test_cluster_and_cacheaware_are_retired(self):
        e = self.assertRaises(exception.InvalidInput,
                              cache_scenario.load_scenario, {'cluster': {}})
        self.assertIn('retired', str(e))
        self.assertRaises(exception.InvalidInput, cache_scenario.load_scenario,
                          {'policies': ['cacheaware'],
                           'vms': [{'vcpus': 1, 'workload': 'cpu'}]})


class SimulateCommandTest(base.CLITestCase):

    def test_host_json(self):
        doc = self.cli_json(['simulate', 'cache', '--scenario', '-'],
                            stdin=json.dumps({
                                'slices': 50, 'policies': ['credit',
                                                           'agent'],
                                'vms': [{'id': 'a', 'vcpus': 2,
                                         'workload': 'memory'}]}))
        self.assertEqual('host', doc['kind'])
        self.assertEqual({'credit', 'agent'}, set(doc['policies']))
        self.assertEqual(
            {'workload': 'memory', 'performance': 1.0, 'all_share': 1.0},
            doc['policies']['agent']['vms']['a'])

    def test_bad_scenarios(self):
        cases = [
            ('[]', 'must be a JSON object'),
            ('{"host": "vax"}', 'unknown host'),
            ('{"host": [[0, 0]], "vms": []}', 'distinct'),
            ('{"vms": []}', '"vms" must be a non-empty list'),
            ('{"vms": [{"vcpus": 1, "workload": "gpu"}]}', '"workload"'),
            ('{"vms": [{"vcpus": 0, "workload": "cpu"}]}', '"vcpus"'),
            ('{"model": {"cpi_mem": -1}, "vms": [{"vcpus": 1, '
             '"workload": "cpu"}]}', '"model"'),
            ('{"model": {"bogus": 1}, "vms": [{"vcpus": 1, '
             '"workload": "cpu"}]}', '"model"'),
            ('{"configs": ["optimum"], "cloud": {}}', '"configs"'),
            ('{"cloud": {"mix": {"gpu": 1}}}', '"mix"'),
            ('{"cloud": {"hosts": 0}}', '"hosts"'),
            ('{"cloud": {"declared": 2}}', '"declared"'),
            ('{"cloud": {"sigma": -1}}', '"sigma"'),
            ('{"cloud": {"schedule": {"passes": 0}}}', '"schedule"'),
            ('{"cluster": {}}', 'retired'),
            # A key over int()'s 4300 digits was a ValueError traceback.
            ('{"cloud": {"sizes": {"1%s": 1}}}' % ('0' * 5000), '"sizes"'),
        ]
        for text, fragment in cases:
            err = self.assertOneLineError(
                ['simulate', 'cache', '--scenario', '-'], fragment,
                stdin=text)
            self.assertTrue(
                err.startswith('nova-cacheaware simulate cache: error'), err)
