"""Emitter and endpoint of cacheaware.host.state (no bus needed)."""

import datetime

import oslo_messaging
import testtools

from nova_cacheaware.contracts import state_wire
from nova_cacheaware import exception
from nova_cacheaware import notifications
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import state_cache

STATE = hs.HostCacheState(
    host='cmp1', agent_healthy=True,
    timestamp=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
    domains=(hs.DomainState('L3-0', 'empty'),))


class RecordingNotifier:
    """Stands in for oslo_messaging.Notifier: records info() calls."""

    def __init__(self):
        self.sent = []

    def info(self, ctxt, event_type, payload):
        self.sent.append((event_type, payload))


class NotificationsTest(testtools.TestCase):

    def test_publish_state_and_payload(self):
        notifier = RecordingNotifier()
        notifications.publish_host_state(notifier, STATE)
        notifications.publish_host_state(notifier, hs.to_payload(STATE))
        self.assertEqual([(hs.EVENT_TYPE, hs.to_payload(STATE))] * 2,
                         notifier.sent)

    def test_publish_refuses_malformed_payload(self):
        notifier = RecordingNotifier()
        self.assertRaises(exception.InvalidInput,
                          notifications.publish_host_state, notifier,
                          {'host': 'x'})
        self.assertEqual([], notifier.sent)

    def test_pool_name_per_process(self):
        self.assertEqual('pfx-sched1-42',
                         notifications.process_pool_name('pfx', 'sched1', 42))
        self.assertNotEqual(notifications.process_pool_name('p', 'h', 1),
                            notifications.process_pool_name('p', 'h', 2))

    def test_endpoint_feeds_cache_and_drops_garbage(self):
        cache = state_cache.HostStateCache(ttl=60)
        endpoint = notifications.HostStateEndpoint(cache)
        handled = oslo_messaging.NotificationResult.HANDLED
        self.assertEqual(handled, endpoint.info(
            {}, 'agent', hs.EVENT_TYPE, {'garbage': True}, {}))
        self.assertEqual(0, len(cache))
        self.assertEqual(handled, endpoint.info(
            {}, 'agent', hs.EVENT_TYPE, hs.to_payload(STATE), {}))
        self.assertEqual(STATE, cache.get('cmp1'))

    def test_endpoint_takes_compact_states_and_heartbeats(self):
        clock = [0.0]
        cache = state_cache.HostStateCache(ttl=60, clock=lambda: clock[0])
        endpoint = notifications.HostStateEndpoint(cache)
        state = hs.HostCacheState(
            host='cmp1', agent_healthy=True, generation=4,
            timestamp=STATE.timestamp, domains=STATE.domains)
        endpoint.info({}, 'agent', hs.EVENT_TYPE,
                      state_wire.to_compact(state), {})
        self.assertEqual((state.domains, 4), held(cache))
        clock[0] = 50.0
        endpoint.info({}, 'agent', state_wire.HEARTBEAT_EVENT,
                      state_wire.heartbeat_payload(
                          state_wire.Heartbeat('cmp1', 4)), {})
        clock[0] = 100.0
        self.assertEqual((state.domains, 4), held(cache))
        # A malformed heartbeat is dropped; one naming generation 5 says
        # a state was missed.
        endpoint.info({}, 'agent', state_wire.HEARTBEAT_EVENT,
                      {'host': 'cmp1'}, {})
        self.assertEqual((state.domains, 4), held(cache))
        endpoint.info({}, 'agent', state_wire.HEARTBEAT_EVENT,
                      state_wire.heartbeat_payload(
                          state_wire.Heartbeat('cmp1', 5)), {})
        self.assertIsNone(cache.get('cmp1'))
        self.assertTrue(endpoint.filter_rule.match(
            {}, 'agent', state_wire.HEARTBEAT_EVENT, {}, {}))


def held(cache):
    state = cache.get('cmp1')
    return None if state is None else (state.domains, state.generation)
