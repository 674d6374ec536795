"""Schedulers ask agents for their state, over the real RabbitMQ.

A listener that starts after the agents sent their states, and one that
lost a state, each get it at the agent's next pass instead of at its
resync (300 s): the scheduler casts ``send_state`` to the agents' real
RPC servers, the agents' real publishers answer.
"""

import time

import kombu
import testtools

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import rpc as agent_rpc
from nova_cacheaware import notifications
from nova_cacheaware.policy import state_cadence
from nova_cacheaware.scheduler import state_cache
from nova_cacheaware.scheduler import state_requests
from tests.functional import test_host_state_bus as bus
from tests.unit.agent.test_notify_cadence import report

HOST = 'cmp-req'
VM1 = '6f1e3c56-0000-4000-8000-000000000001'
VM2 = '6f1e3c56-0000-4000-8000-000000000002'


class Agent:
    """What the RPC endpoint reads of the agent: its publisher."""

    def __init__(self, publisher):
        self.publisher = publisher


@testtools.skipUnless(bus.rabbit_reachable() or
                      bus.os.environ.get('NOVA_CACHEAWARE_CI_SERVICES'),
                      'RabbitMQ not reachable on 127.0.0.1:5672')
class StateRequestTest(bus.BusTestCase):

    def setUp(self):
        super().setUp()
        self.rpc_topic = '%s_agent' % self.topic
        # The agent's RPC transport (it registers what oslo.messaging's
        # RPC reads from the global configuration on this test's own).
        self.rpc_transport = agent_rpc.transport(self.conf,
                                                 url=bus.RABBIT_URL)
        self.addCleanup(self.rpc_transport.cleanup)
        self.queues = [self.rpc_topic, '%s.%s' % (self.rpc_topic, HOST)]
        # Heartbeats every 0.2 s, no resync during the test.
        self.publisher = notify.NotificationStatePublisher(
            self.transport, HOST, self.topic,
            cadence=state_cadence.Cadence(heartbeat_s=0.2, resync_s=3600))
        server = agent_rpc.start_server(
            self.rpc_transport, self.rpc_topic, HOST,
            [agent_rpc.StateRequestEndpoint(Agent(self.publisher), 0.0)])
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)

    def passes_until(self, predicate, content, timeout=bus.WAIT):
        """The agent's passes (every 0.1 s) until ``predicate()``."""
        deadline = time.monotonic() + timeout
        while not predicate():
            self.assertLess(time.monotonic(), deadline, 'never happened')
            self.publisher.publish(content)
            time.sleep(0.1)

    def test_a_starting_listener_gets_a_state_sent_before_it_listened(self):
        self.publisher.publish(report([VM1]))
        generation = self.publisher.last.generation
        pool = notifications.process_pool_name(self.prefix, 'sched', 1)
        cache = self._listen(pool)
        time.sleep(1.0)
        # Nothing changed, no resync due: only heartbeats would come.
        self.publisher.publish(report([VM1]))
        self.assertIsNone(cache.get(HOST))
        requester = state_requests.StateRequester(self.rpc_transport,
                                                  self.rpc_topic)
        self.assertTrue(requester.everyone())
        self.passes_until(lambda: cache.get(HOST) is not None,
                          report([VM1]))
        got = cache.get(HOST)
        # The same state again, under its own generation.
        self.assertEqual((generation, frozenset({VM1})),
                         (got.generation, frozenset(got.instance_uuids)))

    def test_a_lost_state_is_asked_for_when_a_heartbeat_names_it(self):
        pool = notifications.process_pool_name(self.prefix, 'sched', 1)
        cache = state_cache.HostStateCache(ttl=60)
        self.queues = self._queues() + [pool]
        listener = notifications.start_host_state_listener(
            self.transport, cache, self.topic, pool)
        self.passes_until(lambda: cache.get(HOST) is not None,
                          report([VM1]))
        # The scheduler's queue loses what the agent sends next.
        listener.stop()
        listener.wait()
        self.publisher.publish(report([VM1, VM2]))
        newer = self.publisher.last.generation
        with kombu.Connection(bus.KOMBU_URL) as conn:
            conn.channel().queue_purge(pool)
        requester = state_requests.StateRequester(self.rpc_transport,
                                                  self.rpc_topic)
        cache.on_missing = requester.host
        listener = notifications.start_host_state_listener(
            self.transport, cache, self.topic, pool)
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        # A heartbeat names the lost generation: the cache asks the agent,
        # whose next pass sends the state again.
        self.passes_until(
            lambda: getattr(cache.get(HOST), 'generation', None) == newer,
            report([VM1, VM2]))
        self.assertEqual(frozenset({VM1, VM2}),
                         frozenset(cache.get(HOST).instance_uuids))
