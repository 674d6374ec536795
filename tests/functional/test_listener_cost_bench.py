"""A short run of ``benchmarks/listener_cost.py`` on the real RabbitMQ.

Four small hosts, one rate, one second a step: the figures are not the
point (the evaluation page has the real run's), the plumbing is - every
message sent is delivered to the project's listener in its own process,
and each step reports the listener's CPU.
"""

import testtools

from benchmarks import listener_cost
from tests.functional import test_host_state_bus as bus


class ListenerCostBenchTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if not bus.rabbit_reachable():
            self.skipTest('RabbitMQ not reachable on 127.0.0.1:5672')

    def test_short_run(self):
        got = listener_cost.main(['--hosts', '4', '--vms', '16',
                                  '--seconds', '1', '--rates', '3'])
        kinds = [(s['kind'], s['together']) for s in got['steps']]
        self.assertEqual([('idle', False), ('heartbeat', False),
                          ('state', False), ('digest', False),
                          ('state', True)], kinds)
        for step in got['steps']:
            # Method frames read: the deliveries and little else.
            self.assertGreaterEqual(step['delivered'], step['sent'], step)
            self.assertGreaterEqual(step['cores'], 0.0)
        self.assertEqual({'heartbeat', 'state', 'digest'},
                         set(got['fit_spread']))
