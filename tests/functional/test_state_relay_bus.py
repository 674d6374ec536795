"""State relays between a cell's bus and the API bus, on the real RabbitMQ.

Two vhosts of the test's own (:class:`~tests.functional.test_cells_bus.
VhostTestCase`): the cell's bus, where real agents' publishers
(:class:`~nova_cacheaware.agent.notify.NotificationStatePublisher`, built
from a cell compute's agent file) send, and the API-level bus, where a
real scheduler listener (:func:`~nova_cacheaware.notifications.
start_host_state_listener` on a :class:`~nova_cacheaware.scheduler.
state_cache.HostStateCache`) reads. Between them two
``nova-cacheaware-state-relay`` processes, started as an operator would
(``python -m nova_cacheaware.cmd.state_relay --config-file F``), share one
queue on the cell's bus:

* states arrive, heartbeats arrive as digests (no heartbeat reaches the
  scheduler);
* a scheduler worker that starts late gets every host's state by asking
  the relays for it (``cacheaware.host.want``) within a resync;
* ``kill -9`` of one relay: the other does the work;
* both relays stopped: the cell's hosts go stale by the liveness rule
  (refused while other agents are heard).
"""

import os
import signal
import subprocess
import sys
import time

from oslo_config import cfg

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import reporting
from nova_cacheaware import notifications
from nova_cacheaware.policy import liveness
from nova_cacheaware.scheduler import state_cache
from tests.functional import test_cells_bus as cells
from tests.functional import test_host_state_bus as bus

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
#: The scheduler's host_state_ttl: short, so that hosts go stale in time.
TTL = 4
VM = cells.VM


def report(vms=()):
    """A cell compute's agent report with ``vms`` memory-bound in L3-0."""
    return reporting.HostReport(
        memory_vms={'L3-0': tuple(vms), 'L3-1': ()},
        vms={u: reporting.VmReport('memory', ('L3-0',), 2) for u in vms})


class StateRelayBusTest(cells.VhostTestCase):

    def setUp(self):
        super().setUp()
        self.counted = []
        self.cache = self.scheduler()
        self.relays = [self.relay('a'), self.relay('b')]
        # Both relays consume the one shared queue before agents send.
        self.assertTrue(bus.wait_for(
            lambda: self.consumers(self.cell).get(self.pool) == 2),
            self.consumers(self.cell))
        self.agents = {h: self.agent(h) for h in ('cmp1', 'cmp2')}
        for agent in self.agents.values():
            # Resyncs within the test: a late scheduler's wants are
            # answered by the next one.
            agent.cadence = notify.state_cadence.Cadence(heartbeat_s=1.0,
                                                         resync_s=3.0)

    @property
    def pool(self):
        return '%s-relay' % self.prefix

    def consumers(self, vhost):
        """``{queue: consumers}`` of ``vhost``."""
        out = cells.rabbitmqctl('list_queues', '-p', vhost, 'name',
                                'consumers', '--no-table-headers')
        lines = [line for line in out.stdout.splitlines() if line.strip()]
        return {n: int(c) for n, c in (line.split('\t') for line in lines)}

    def scheduler(self, name='sched'):
        """A scheduler worker's listener and cache on the API bus."""
        conf = cfg.ConfigOpts()
        conf([], project='relay-test')
        transport = notify.notification_transport(
            conf, url=cells.url(self.api))
        self.addCleanup(transport.cleanup)
        cache = state_cache.HostStateCache(TTL)
        listener = notifications.start_host_state_listener(
            transport, cache, self.topic,
            notifications.process_pool_name(self.prefix, name, 1),
            count=lambda *k: self.counted.append(k))
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        return cache

    def relay(self, name):
        """A relay process built from its own file."""
        path = os.path.join(self.tmp, 'relay-%s.conf' % name)
        with open(path, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\n'
                    '[oslo_messaging_notifications]\ntransport_url = %s\n'
                    '[state_relay]\ninput_topic = %s\noutput_topic = %s\n'
                    'pool = %s\ndigest_interval_s = 0.3\n'
                    'stats_interval_s = 1\n'
                    % (cells.url(self.cell), cells.url(self.api),
                       self.topic, self.topic, self.pool))
        log = open(os.path.join(self.tmp, 'relay-%s.log' % name), 'w')
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [sys.executable, '-m', 'nova_cacheaware.cmd.state_relay',
             '--config-file', path], cwd=ROOT, stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=ROOT))
        self.addCleanup(self._end, proc)
        return proc

    def _end(self, proc):
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def run_agents(self, seconds, reports=None):
        """Agents pass every 0.1 s for ``seconds``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for host, agent in self.agents.items():
                agent.publish((reports or {}).get(host, report()))
            time.sleep(0.1)

    def bound(self, host):
        state = self.cache.get(host)
        return None if state is None else state.domains[0].memory_bound_vms

    def test_states_heartbeats_failover_and_stale(self):
        # States arrive, forwarded as they came.
        self.run_agents(0.5)
        self.assertTrue(bus.wait_for(lambda: all(
            self.cache.get(h) for h in self.agents)))
        for host, agent in self.agents.items():
            self.assertEqual(agent.last.generation,
                             self.cache.get(host).generation)
        # Heartbeats (every 1 s) reach the scheduler folded in digests.
        received = self.cache.received('cmp1')
        self.run_agents(3.0)
        # On a loaded machine the digests may come later: wait for them
        # (agents keep publishing) rather than for a fixed time.
        self.assertTrue(bus.wait_for(lambda: (
            self.run_agents(0.2)
            or self.cache.received('cmp1') > received + 1.5)))
        self.assertGreaterEqual(self.agents['cmp1'].heartbeats, 2)
        kinds = {k for k, _o in self.counted}
        self.assertEqual({'state', 'digest'}, kinds, self.counted)
        self.assertNotIn(('digest', 'invalid'), self.counted)
        # A scheduler worker that starts now asks the relays for the
        # hosts the digests name (cacheaware.host.want): their next
        # resyncs are forwarded, though unchanged.
        late = self.scheduler('late')
        start = time.monotonic()
        self.run_agents(1.0)
        self.assertTrue(bus.wait_for(lambda: (
            self.run_agents(0.2) or all(
                late.get(h) and late.get(h).generation == a.last.generation
                for h, a in self.agents.items()))))
        # Within a heartbeat and a resync (1 s + 3 s), plus the bus.
        self.assertLess(time.monotonic() - start, 1.0 + 3.0 + 5.0)
        # kill -9 one relay: the other does the work (RabbitMQ hands it
        # what the dead one had not acknowledged).
        self.relays[0].send_signal(signal.SIGKILL)
        self.relays[0].wait()
        self.run_agents(0.5, {'cmp1': report([VM])})
        self.assertTrue(bus.wait_for(lambda: self.bound('cmp1') == (VM,)))
        received = self.cache.received('cmp2')
        self.run_agents(2.5, {'cmp1': report([VM])})
        self.assertTrue(bus.wait_for(lambda: (
            self.run_agents(0.2, {'cmp1': report([VM])})
            or self.cache.received('cmp2') > received + 1.0)))
        # Both relays gone (the second cleanly: SIGTERM, exit 0), while
        # an agent of another cell still reaches the schedulers directly.
        self.relays[1].send_signal(signal.SIGTERM)
        self.assertEqual(0, self.relays[1].wait(timeout=30))
        direct = self.direct_agent('other-cell-cmp')
        heard = time.monotonic()
        while time.monotonic() - heard < TTL + 1.5:
            self.run_agents(0.2, {'cmp1': report([VM])})
            direct.publish(report())
        for host in self.agents:
            self.assertIsNone(self.cache.get(host))
            why = liveness.ineligible_reason(self.cache.live_view(host))
            self.assertIn('while other agents report', why or '')
        self.assertIsNotNone(self.cache.get('other-cell-cmp'))

    def direct_agent(self, host):
        """An agent that publishes on the API bus (direct mode)."""
        conf = cfg.ConfigOpts()
        conf([], project='relay-test')
        transport = notify.notification_transport(
            conf, url=cells.url(self.api))
        agent = notify.NotificationStatePublisher(
            transport, host, self.topic,
            cadence=notify.state_cadence.Cadence(heartbeat_s=0.5,
                                                 resync_s=60))
        self.addCleanup(agent.close)
        return agent
