"""The agent's metrics as a real Prometheus server scrapes them.

A real ``prometheus`` (Debian's package, tools/setup.sh installs it)
scrapes the agent's ``[agent] metrics_listen`` endpoint on loopback every
second. The agent runs its daemon loop on libvirt's ``test:///default``,
publishes its live state over the machine's RabbitMQ and syncs with a
Placement that always fails (a failing bus is counted in
tests/unit/agent/test_metrics.py). It pins memory-bound
servers (repins, Clean domains) while Prometheus watches; once it stops,
every series Prometheus holds must equal what the agent did, counted
independently of the metrics code (its actuator's results, the
publishers' own counts, the Placement double's calls).
"""

import threading
import time
import uuid as uuid_mod

import kombu
from oslo_config import cfg
import oslo_messaging
import testtools.content

from nova_cacheaware.agent import metrics
from nova_cacheaware.agent import notify
from nova_cacheaware.agent import reporting
from nova_cacheaware.policy import state_cadence
from tests.fixtures import prometheus
from tests.functional.agent import base
from tests.functional.agent import test_faults
from tests.functional import test_host_state_bus as bus

FOUR = base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))
A = 'nova_cacheaware_agent_'


class DownPlacement(reporting.LoggingPlacementReporter):
    """Placement unreachable: every sync fails (and is counted here)."""

    def __init__(self):
        self.calls = 0

    def sync_domains(self, domain_set, usable_cpus):
        """Fail, as a Placement that does not answer."""
        self.calls += 1
        raise OSError('Placement does not answer (test)')


class Tally:
    """What the actuator did, pass by pass (the agent calls it once)."""

    def __init__(self, actuator):
        self.passes = self.done = self.deferred = self.failed = 0
        self._apply = actuator.apply
        actuator.apply = self.apply

    def apply(self, decisions):
        """The real apply, counted."""
        result = self._apply(decisions)
        self.passes += 1
        self.done += len(result.succeeded)
        self.deferred += len(result.deferred)
        self.failed += len(result.failed)
        return result


class AgentPrometheusTest(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.require(prometheus.binary() is not None,
                     'the prometheus server (Debian package prometheus, '
                     'installed by tools/setup.sh)')
        self.require(bus.rabbit_reachable(), 'RabbitMQ on 127.0.0.1:5672')
        run = uuid_mod.uuid4().hex[:12]
        self.exchange = 'cacheaware-test-%s' % run
        self.conf = cfg.ConfigOpts()
        self.conf([], project='cacheaware-test')
        # Registers the transport's options before one is overridden.
        oslo_messaging.get_notification_transport(
            self.conf, url=bus.RABBIT_URL).cleanup()
        self.conf.set_override('control_exchange', self.exchange)
        self.addCleanup(self._delete_exchange)

    def _delete_exchange(self):
        with kombu.Connection(bus.KOMBU_URL) as conn:
            conn.channel().exchange_delete(self.exchange)

    def publisher(self, url, agent):
        transport = oslo_messaging.get_notification_transport(self.conf,
                                                              url=url)
        self.addCleanup(transport.cleanup)
        return notify.NotificationStatePublisher(
            transport, 'compute-metrics', 'cacheaware_test_metrics',
            cadence=state_cadence.Cadence(heartbeat_s=1.0, resync_s=300.0),
            metrics=agent.metrics)

    def start(self, agent):
        port = prometheus.free_port()
        exporter = metrics.serve('127.0.0.1:%d' % port, agent.metrics)
        self.assertIsNotNone(exporter)
        self.addCleanup(exporter.stop)
        started = time.monotonic()
        self.prom = self.useFixture(prometheus.PrometheusServer(
            {'nova-cacheaware-agent': ['127.0.0.1:%d' % port]}))
        self.prom_start_s = time.monotonic() - started
        thread = threading.Thread(target=agent.run, args=(1.0,),
                                  daemon=True)
        thread.start()
        self.addCleanup(thread.join, 30)
        self.addCleanup(agent.stop)
        return thread

    def expect(self, expr, expected, timeout=30.0):
        seen = self.prom.wait_value(expr, expected, timeout)
        self.assertEqual(expected, seen, '%s in Prometheus' % expr)

    def test_prometheus_sees_what_the_agent_did(self):
        t0 = time.monotonic()
        agent = self.agent(FOUR)
        tally = Tally(agent.repin.actuator)
        agent.placement = placement = DownPlacement()
        agent.publisher = up = self.publisher(bus.RABBIT_URL, agent)
        thread = self.start(agent)
        # Servers start once the agent's connection is up (it reconnects
        # to the test driver when it starts listening to events).
        self.assertIsNotNone(test_faults.wait_until(
            lambda: tally.passes >= 1, 30))
        first = self.define(2, cpuset='0-7', workload='memory')
        self.define(2, cpuset='0-7', workload='cpu')

        # One memory-bound server pinned into one domain: Clean.
        self.expect(A + 'repins_total{outcome="done"}', 2.0)
        self.expect(A + 'cache_domains{state="clean"}', 1.0)
        self.expect(A + 'cache_domains{state="empty"}', 3.0)
        self.expect(A + 'servers{share="all"}', 1.0)
        self.expect(A + 'servers{share="partial"}', 1.0)
        self.expect(A + 'healthy', 1.0)
        self.assertEqual(1, len(set(self.live_pins(first).values())))

        # A second one starts: another domain turns Clean.
        self.define(2, cpuset='0-7', workload='memory')
        self.expect(A + 'repins_total{outcome="done"}', 4.0)
        self.expect(A + 'cache_domains{state="clean"}', 2.0)
        self.expect(A + 'servers{share="all"}', 2.0)

        agent.stop()
        thread.join(30)
        self.assertFalse(thread.is_alive())

        # Stopped: Prometheus's next scrapes hold the final counts.
        expected = {
            A + 'repins_total{outcome="done"}': tally.done,
            A + 'repins_total{outcome="deferred"}': tally.deferred,
            A + 'repins_total{outcome="failed"}': tally.failed,
            A + 'passes_total{result="ok"}': tally.passes,
            A + 'pass_duration_seconds_count': tally.passes,
            A + 'placement_sync_errors_total': placement.calls,
            'sum(%sbus_send_failures_total)' % A: up.failed,
            A + 'state_messages_total{kind="state"}': up.sent,
            A + 'state_messages_total{kind="heartbeat"}': up.heartbeats,
            A + 'cache_domains{state="clean"}': 2,
            A + 'cache_domains{state="dirty"}': 0,
        }
        for expr, value in sorted(expected.items()):
            self.expect(expr, float(value))
        self.assertEqual(4, tally.done)
        self.assertGreaterEqual(up.sent, 1)
        self.assertGreaterEqual(placement.calls, tally.passes)
        per_state = (self.prom.value(A + 'state_message_bytes_total'
                                     '{kind="state"}') / up.sent)
        self.assertGreater(per_state, 200)
        age = self.prom.value('time() - %slast_pass_timestamp_seconds' % A)
        self.assertLess(age, 60)
        self.addDetail('timings', testtools.content.text_content(
            'prometheus start %.2f s, test %.2f s, %d passes'
            % (self.prom_start_s, time.monotonic() - t0, tally.passes)))
