"""Study 003's experiment model: exact rates, ramps, CLI."""

import testtools

from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import numa
from tests.unit.cmd import base

S = numa.Scenario()


class RateTest(testtools.TestCase):

    def test_rates_of_the_three_configurations(self):
        # Blackbox, memory on node 0: 16 threads at 1/1.25 (the remote
        # ones, through the barrier), node 0 asked for 16 of 6.
        self.assertAlmostEqual(16 * 0.8 * 6 / 16,
                               numa.job_rate(S, [8, 8], [1.0, 0.0]))
        # Interleaved: every thread 1 / (0.5 + 0.5 * 1.25), 8 per node.
        self.assertAlmostEqual(16 / 1.125 * 6 / 8,
                               numa.job_rate(S, [8, 8], [0.5, 0.5]))
        self.assertEqual(8.0, numa.job_rate(S, [4, 4], None))    # vNUMA
        self.assertEqual(12.0, numa.job_rate(S, [7, 7], None))   # full
        self.assertEqual(0.0, numa.job_rate(S, [0, 0], None))

    def test_full_numa_ramps_one_cpu_per_node_per_step(self):
        s = numa.Scenario(work=120, jobs=1, period_s=1, handoff_s=0,
                          dt=0.5)
        # Job 1 starts from 4+4 (rate 8): at 1 s 5+5 (10), at 2 s 6+6 (12).
        # 8 + 10 + 102 / 12 = 10.5 s; job 2 starts from 1+1 (the floor).
        times = numa.job_times(s, 'full-numa')
        self.assertEqual(10.5, times[0])
        self.assertEqual(2, len(times))
        self.assertGreater(times[1], times[0])

    def test_static_policies(self):
        self.assertEqual([50.0] * 8, numa.job_times(S, 'blackbox'))
        self.assertEqual([30.0] * 8, numa.job_times(S, 'vnuma'))

    def test_compare_defaults(self):
        r = numa.compare(S)
        self.assertEqual({'blackbox': 50.0, 'vnuma': 30.0,
                          'full-numa': 25.185}, r['mean_job_s'])
        self.assertEqual({'blackbox': 0.496, 'vnuma': 0.161},
                         r['reduction'])

    def test_bad_scenarios(self):
        for doc in ({'bogus': 1}, {'cpus_per_node': 1},
                    {'blackbox_memory': 'x'}, {'remote_penalty': 0.5}):
            self.assertRaises(exception.InvalidInput,
                              numa.scenario_from_dict, doc)
        self.assertRaises(exception.InvalidInput, numa.job_times, S, 'x')


class CLITest(base.CLITestCase):

    def test_json_and_table(self):
        doc = self.cli_json(['simulate', 'numa', '--scenario', '-',
                             '--format', 'json'], '{"handoff_s": 0.09}')
        self.assertEqual(22.466, doc['mean_job_s']['full-numa'])
        code, out, _ = self.cli(['simulate', 'numa'])
        self.assertEqual(0, code)
        self.assertIn('blackbox', out)
        self.assertIn('55 %', out)

    def test_bad_scenario_is_one_line(self):
        self.assertOneLineError(['simulate', 'numa', '--scenario', '-'],
                                'unknown scenario keys: bogus',
                                '{"bogus": 1}')
