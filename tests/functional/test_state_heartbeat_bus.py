"""Payload 2.0 over the machine's real RabbitMQ: lost, reordered, mixed.

The agents' real publisher (:class:`~nova_cacheaware.agent.notify.
NotificationStatePublisher`) and the schedulers' real listener, on a
topic and exchange of each test's own.
"""

import os
import time

import testtools

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import reporting
from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import notifications
from nova_cacheaware.policy import state_cadence
from tests.functional import test_host_state_bus as bus

VM_A = '00000000-0000-4000-8000-00000000000a'
VM_B = '00000000-0000-4000-8000-00000000000b'


def report(*memory_vms):
    """An agent report: two domains, ``memory_vms`` in the first."""
    return reporting.HostReport(
        memory_vms={'L3-0': memory_vms, 'L3-1': ()},
        vms={u: reporting.VmReport('memory', ('L3-0',), 2)
             for u in memory_vms})


def bound(cache, host):
    """The memory-bound VMs the cache holds for ``host`` (None: none)."""
    state = cache.get(host)
    return None if state is None else state.domains[0].memory_bound_vms


@testtools.skipUnless(bus.rabbit_reachable() or
                      os.environ.get('NOVA_CACHEAWARE_CI_SERVICES'),
                      'RabbitMQ not reachable on 127.0.0.1:5672')
class HeartbeatBusTest(bus.BusTestCase):

    def setUp(self):
        super().setUp()
        self.cache = self._listen(notifications.process_pool_name(
            self.prefix, 'sched', 1))

    def publisher(self, host, version='2.0', heartbeat_s=0.3, resync_s=60):
        return notify.NotificationStatePublisher(
            self.transport, host, self.topic, version=version,
            cadence=state_cadence.Cadence(heartbeat_s=heartbeat_s,
                                          resync_s=resync_s))

    def test_a_region_of_pinned_and_unpinned_agents(self):
        old = self.publisher('cmp-old', version='1.5')
        new = self.publisher('cmp-new')
        self.assertTrue(old.publish(report(VM_A)))
        self.assertTrue(new.publish(report(VM_B)))
        self.assertTrue(bus.wait_for(lambda: self.cache.get('cmp-old')
                                     and self.cache.get('cmp-new')))
        got_old, got_new = self.cache.get('cmp-old'), self.cache.get(
            'cmp-new')
        self.assertEqual(('1.5', None, (VM_A,)),
                         (got_old.version, got_old.generation,
                          got_old.domains[0].memory_bound_vms))
        self.assertEqual(('2.0', new.last.generation, (VM_B,), {VM_B}),
                         (got_new.version, got_new.generation,
                          got_new.domains[0].memory_bound_vms,
                          got_new.instance_uuids))

    def test_a_lost_state_is_noticed_and_repaired_by_the_resync(self):
        agent = self.publisher('cmp1', resync_s=2.0)
        agent.publish(report())
        self.assertTrue(bus.wait_for(
            lambda: bound(self.cache, 'cmp1') == ()))
        # The next state goes to a topic nobody listens on: lost.
        agent.topic = self.topic + '_void'
        self.queues = self._queues() + ['%s.info' % agent.topic]
        agent.publish(report(VM_A))
        agent.topic = self.topic
        lost_at = time.monotonic()
        # Its heartbeat names the new generation: the old state is not
        # given out any more, but the agent is alive and healthy.
        self.assertTrue(self._passes_until(
            agent, report(VM_A), lambda: self.cache.get('cmp1') is None))
        view = self.cache.live_view('cmp1')
        self.assertTrue(view.healthy)
        self.assertLess(view.age, 1.0)
        # The resync sends the state again: right within resync_s.
        self.assertTrue(self._passes_until(
            agent, report(VM_A),
            lambda: bound(self.cache, 'cmp1') == (VM_A,)))
        self.assertLess(time.monotonic() - lost_at, 2.0 + 1.5)

    def test_reordered_messages_never_go_back(self):
        agent = self.publisher('cmp1')
        agent.publish(report())
        first = agent.last.generation
        agent.publish(report(VM_A))
        self.assertTrue(bus.wait_for(
            lambda: bound(self.cache, 'cmp1') == (VM_A,)))
        # An older state and an older heartbeat arrive late.
        stale = state_wire.to_compact(notify.to_host_cache_state(
            report(), 'cmp1', now=self.cache.get('cmp1').timestamp.replace(
                year=2025)))
        stale['generation'] = first
        agent._send(host_state.EVENT_TYPE, stale)
        agent._send(state_wire.HEARTBEAT_EVENT, state_wire.heartbeat_payload(
            state_wire.Heartbeat('cmp1', first)))
        # A marker behind them: once it is in, they were handled.
        marker = self.publisher('cmp-marker')
        marker.publish(report())
        self.assertTrue(bus.wait_for(lambda: self.cache.get('cmp-marker')))
        self.assertEqual((VM_A,), bound(self.cache, 'cmp1'))

    def _passes_until(self, agent, state, predicate, timeout=bus.WAIT):
        # Agent passes every 0.1 s until the scheduler's cache agrees.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            agent.publish(state)
            if predicate():
                return True
            time.sleep(0.1)
        return predicate()
