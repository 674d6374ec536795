"""The agent's Prometheus metrics (the real Prometheus scrape is in
tests/functional/agent/test_metrics_prometheus.py)."""

import socket
import types
import urllib.request

import fixtures
import testtools

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import metrics
from nova_cacheaware.agent import notify
from nova_cacheaware.cachedomain import model
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.policy import state_cadence
from tests.unit.agent import test_notify_cadence as cadence


def decision(uuid, share):
    return repinning.Decision(
        uuid=uuid, name=uuid, workload='memory', movable=True, reason='',
        action=repinning.KEEP, current={}, desired={}, allowed={},
        share=share)


def one_pass(shares, states, result=None, capabilities=None):
    """A :class:`~.service.Pass` with only what the metrics read."""
    return types.SimpleNamespace(
        decisions=[decision('vm-%d' % i, s) for i, s in enumerate(shares)],
        plan_output=model.Plan(vms={}, unplaced=(), domains={
            'd%d' % i: model.DomainPlan(state=s, memory_vms=())
            for i, s in enumerate(states)}),
        result=result or actuator.ApplyResult(),
        capabilities=capabilities or {})


class AgentMetricsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.m = metrics.AgentMetrics(clock=lambda: 1234.0)

    def value(self, name, **labels):
        return self.m.registry.get_sample_value(name, labels)

    def test_every_series_exists_at_zero(self):
        self.assertEqual(0, self.value('nova_cacheaware_agent_repins_total',
                                       outcome='deferred'))
        self.assertEqual(0, self.value('nova_cacheaware_agent_cache_domains',
                                       state='dirty'))
        self.assertEqual(0, self.value(
            'nova_cacheaware_agent_bus_send_failures_total',
            kind='heartbeat'))
        self.assertEqual(0, self.value('nova_cacheaware_agent_healthy'))

    def test_a_pass(self):
        ok = [('vm-0', 0, (1,))] * 3
        self.m.observe_pass(one_pass(
            ['all', 'all', 'partial', ''], ['clean', 'empty', 'empty'],
            actuator.ApplyResult(succeeded=ok, deferred=ok[:1])), 0.2)
        self.m.observe_pass(one_pass(
            ['all', 'partial', 'partial', ''], ['dirty', 'empty', 'empty'],
            actuator.ApplyResult(succeeded=ok[:1])), 0.3)
        self.assertEqual(
            [1, 2, 1], [self.value('nova_cacheaware_agent_servers', share=s)
                        for s in metrics.SHARES])
        self.assertEqual(
            [2, 0, 1], [self.value('nova_cacheaware_agent_cache_domains',
                                   state=s)
                        for s in ('empty', 'clean', 'dirty')])
        self.assertEqual(
            [4, 1, 0], [self.value('nova_cacheaware_agent_repins_total',
                                   outcome=o)
                        for o in metrics.REPIN_OUTCOMES])
        self.assertEqual(2, self.value(
            'nova_cacheaware_agent_pass_duration_seconds_count'))
        self.assertEqual(0.3, self.value(
            'nova_cacheaware_agent_last_pass_duration_seconds'))
        self.assertEqual(1234.0, self.value(
            'nova_cacheaware_agent_last_pass_timestamp_seconds'))
        self.assertEqual(1, self.value('nova_cacheaware_agent_healthy'))
        self.m.failed_pass(0.01)
        self.assertEqual(0, self.value('nova_cacheaware_agent_healthy'))
        self.assertEqual(1, self.value('nova_cacheaware_agent_passes_total',
                                       result='failed'))

    def test_capabilities(self):
        storm = {'vms': {'a': {'storm': {'storm': True}},
                         'b': {'storm': {'storm': False}}, 'c': {}}}
        balloon = {'moved_mib': 512, 'moves': 2, 'vms': {}}
        for report in (balloon, dict(balloon, next_round_in_s=3.0),
                       {'error': 'x'}):
            self.m.observe_pass(one_pass([], [], capabilities={
                'vcpu_sizing': storm, 'balloon': report}), 0.1)
        self.assertEqual(1, self.value(
            'nova_cacheaware_agent_spin_storm_servers'))
        # Rounds repeated between intervals are counted once.
        self.assertEqual(2, self.value(
            'nova_cacheaware_agent_balloon_moves_total'))
        self.assertEqual(512, self.value(
            'nova_cacheaware_agent_balloon_moved_mib_total'))

    def test_publisher_counts_messages_bytes_and_failures(self):
        transport = cadence.RecordingTransport()
        clock = cadence.Clock()
        pub = notify.NotificationStatePublisher(
            transport, 'cmp1', 'topic', clock=clock, metrics=self.m,
            cadence=state_cadence.Cadence(heartbeat_s=60, resync_s=300))
        pub.publish(cadence.report())
        clock.now += 61
        pub.publish(cadence.report())
        transport.down = True
        clock.now += 61
        pub.publish(cadence.report())
        self.assertEqual(
            [1, 1], [self.value('nova_cacheaware_agent_state_messages_total',
                                kind=k) for k in metrics.MESSAGE_KINDS])
        self.assertGreater(self.value(
            'nova_cacheaware_agent_state_message_bytes_total',
            kind='state'), self.value(
            'nova_cacheaware_agent_state_message_bytes_total',
            kind='heartbeat'))
        self.assertGreater(self.value(
            'nova_cacheaware_agent_state_message_bytes_total',
            kind='heartbeat'), 100)
        self.assertEqual(1, self.value(
            'nova_cacheaware_agent_bus_send_failures_total',
            kind='heartbeat'))


class ServeTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.agent.metrics'))
        self.m = metrics.AgentMetrics()

    def test_off_when_empty(self):
        self.assertIsNone(metrics.serve('', self.m))

    def test_serves_on_loopback(self):
        exporter = metrics.serve('127.0.0.1:0', self.m)
        # Port 0 is refused: an operator gives a port.
        self.assertIsNone(exporter)
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        exporter = metrics.serve('127.0.0.1:%d' % port, self.m)
        self.addCleanup(exporter.stop)
        body = urllib.request.urlopen(exporter.url(), timeout=5).read()
        self.assertIn(b'nova_cacheaware_agent_healthy 0.0', body)

    def test_a_taken_port_is_logged_and_the_agent_goes_on(self):
        taken = socket.socket()
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        self.addCleanup(taken.close)
        self.assertIsNone(metrics.serve(
            '127.0.0.1:%d' % taken.getsockname()[1], self.m))
        self.assertIn('no metrics endpoint', self.log.output)

    def test_bad_values(self):
        for bad in ('9465', 'host:', 'host:99999', ':9465', 'a:b'):
            self.assertIsNone(metrics.serve(bad, self.m), bad)
        self.assertEqual(5, self.log.output.count('must be <address>:'))
