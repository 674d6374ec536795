"""A short run of ``benchmarks/region_relay.py`` on the real RabbitMQ.

30 hosts at a 1 s period through two relay processes against direct
mode, a 5 s window and a storm: the figures are not the point (the
evaluation page has the real run's), the plumbing is - every change
reaches both listeners, digests and no heartbeat reach the relayed one,
and the run's exchanges and queues are deleted.
"""

import testtools

from benchmarks import region_relay
from tests.functional import test_host_state_bus as bus


class RegionRelayBenchTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if not bus.rabbit_reachable():
            self.skipTest('RabbitMQ not reachable on 127.0.0.1:5672')

    def test_short_run(self):
        got = region_relay.run_relay(30, 16, seed=1, relays=2,
                                     window_periods=5, warmup_periods=5,
                                     storm_periods=3)
        # Every change reaches the direct listener; through the relays a
        # change may be replaced by its host's newer state while it waited
        # (a relay forwards the newest), never lost.
        self.assertEqual(0, got['direct']['latency']['superseded'])
        for mode in ('direct', 'relayed'):
            self.assertEqual(0, got[mode]['latency']['not_seen'], mode)
            self.assertGreater(got[mode]['cores'], 0.0)
            # Every agent restarted at once: each host's new state seen.
            self.assertIsNotNone(got[mode]['storm']['drain_s'], mode)
        relay = got['relay']
        self.assertEqual(2, len(relay['relays']))
        self.assertGreater(relay['digests_per_s'], 0.5)
        # The relayed listener got fewer deliveries than the direct one:
        # heartbeats came folded into digests.
        self.assertLess(got['relayed']['deliveries_per_s'],
                        got['direct']['deliveries_per_s'])
        self.assertIn('heartbeat/folded', relay['counts'])
