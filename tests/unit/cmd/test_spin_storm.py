"""``nova-cacheaware spin-storm``: replay of the spin-storm detector."""

import json

from nova_cacheaware.vcpu_sizing import agent as vs
from tests.unit.cmd import base
from tests.unit.vcpu_sizing import test_agent as sizing_tests

HOT = {'run_delay': [0.6, 0.7]}
COLD = {'run_delay': [0.0, 0.05]}


class SpinStormCommandTest(base.CLITestCase):

    def test_a_sequence(self):
        got = self.cli_json(['spin-storm', '--input', '-'], stdin=json.dumps(
            {'signals': [HOT, HOT, COLD, COLD, COLD]}))
        self.assertEqual([False, True, True, True, False],
                         [d['storm'] for d in got])
        self.assertEqual(['storm', 'storm', 'quiet', 'quiet', 'quiet'],
                         [d['vote'] for d in got])
        self.assertAlmostEqual(0.65, got[0]['delay'])
        self.assertEqual({'storm': False, 'streak': 0, 'hold': 3,
                          'since_end': 0, 'storms': 1}, got[-1]['state'])

    def test_thresholds_and_state_given(self):
        got = self.cli_json(['spin-storm', '--input', '-'], stdin=json.dumps(
            {'thresholds': {'enter_delay': 0.9, 'leave_delay': 0.1},
             'state': {'storm': False, 'streak': 1},
             'signals': [HOT]}))
        self.assertEqual(('abstain', False), (got[0]['vote'],
                                              got[0]['storm']))

    def test_replays_the_agents_dump(self):
        # A real capability pass (unit doubles for guest and libvirt): the
        # dump's inputs replayed give the decision the agent took.
        t = sizing_tests.SpinStormTest('test_bad_apply_when')
        t.setUp()
        self.addCleanup(t.doCleanups)
        t.period(0.0)
        t.period(0.8)
        t.clock.now += 10.0
        report = t.cap.reconcile(sizing_tests.snapshot(
            [t.vm], {'vm': sizing_tests.APPLY},
            {'vm': {v: d + 8 * 10 ** 9 for v, d in t.delay.items()}}))
        dump = {'agent': {'capabilities': {'vcpu_sizing': report}}}
        got = self.cli_json(['spin-storm', '--input', '-'],
                            stdin=json.dumps(dump))
        self.assertEqual(report['vms']['vm']['storm']['storm'],
                         got['vm']['storm'])
        self.assertTrue(got['vm']['storm'])
        self.assertEqual(vs.STORM, t.cap.apply_when)

    def test_bad_inputs(self):
        for bad, fragment in (
                ([], 'expected a JSON object'),
                ({'signals': 'x'}, '"signals" must be a list'),
                ({'signals': [{'run_delay': [2.0]}]}, 'shares in 0..1'),
                ({'signals': [], 'state': {'bogus': 1}},
                 'unknown storm state fields: bogus'),
                ({'signals': [], 'thresholds': {'enter_delay': 0.1}},
                 'leave_delay < enter_delay'),
                ({'agent': {}}, 'has no agent.capabilities.vcpu_sizing'),
                ({'agent': {'capabilities': {'vcpu_sizing': {
                    'spin_storm': {'vms': [1]}}}}}, '"vms" must be')):
            self.assertOneLineError(['spin-storm', '--input', '-'], fragment,
                                    stdin=json.dumps(bad))
