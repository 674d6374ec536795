"""Emitter and endpoint of cacheaware.host.state (no bus needed)."""

import dataclasses
import datetime

import fixtures
import oslo_messaging
import testtools

from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import state_digest
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import exception
from nova_cacheaware import notifications
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import state_cache

STATE = hs.HostCacheState(
    host='cmp1', agent_healthy=True,
    timestamp=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
    domains=(wire.DomainState('L3-0', 'empty'),))


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
        notifications.publish_host_state(notifier, wire.to_payload(STATE))
        self.assertEqual([(wire.EVENT_TYPE, wire.to_payload(STATE))] * 2,
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
            {}, 'agent', wire.EVENT_TYPE, {'garbage': True}, {}))
        self.assertEqual(0, len(cache))
        self.assertEqual(handled, endpoint.info(
            {}, 'agent', wire.EVENT_TYPE, wire.to_payload(STATE), {}))
        self.assertEqual(STATE, cache.get('cmp1'))

    def test_endpoint_takes_compact_states_and_heartbeats(self):
        clock = [0.0]
        cache = state_cache.HostStateCache(ttl=60, clock=lambda: clock[0])
        endpoint = notifications.HostStateEndpoint(cache)
        state = hs.HostCacheState(
            host='cmp1', agent_healthy=True, generation=4,
            timestamp=STATE.timestamp, domains=STATE.domains)
        endpoint.info({}, 'agent', wire.EVENT_TYPE,
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


class DigestEndpointTest(testtools.TestCase):
    """A scheduler applies a relay's digest; old event types unchanged."""

    def setUp(self):
        super().setUp()
        self.now = 100.0
        self.cache = state_cache.HostStateCache(ttl=60,
                                                clock=lambda: self.now)
        self.counted = []
        self.wanted = []
        self.endpoint = notifications.HostStateEndpoint(
            self.cache, count=lambda *k: self.counted.append(k),
            want=self.wanted.append)

    def state(self, generation):
        return state_wire.to_compact(dataclasses.replace(
            STATE, generation=generation))

    def digest(self, *entries):
        return self.endpoint.info({}, 'relay', state_digest.DIGEST_EVENT,
                                  state_digest.digest_payload(
                                      state_digest.Digest('r', entries)),
                                  {})

    def test_entries_count_as_heard_at_their_age(self):
        self.endpoint.info({}, 'agent', wire.EVENT_TYPE, self.state(7), {})
        self.now = 150.0
        self.digest(state_digest.Entry('cmp1', 7, 2000, True),
                    state_digest.Entry('cmp2', 3, 500, False))
        # Confirmed 2 s before the digest arrived: fresh until 208.
        self.assertEqual(148.0, self.cache.received('cmp1'))
        self.now = 207.9
        self.assertIsNotNone(self.cache.get('cmp1'))
        self.now = 208.1
        self.assertIsNone(self.cache.get('cmp1'))
        view = self.cache.live_view('cmp2')
        self.assertEqual((False, 58.6), (view.healthy, round(view.age, 1)))
        self.assertEqual([('state', 'stored'), ('digest', 'stored')],
                         self.counted)

    def test_a_newer_generation_outdates_the_held_state(self):
        self.endpoint.info({}, 'agent', wire.EVENT_TYPE, self.state(7), {})
        self.digest(state_digest.Entry('cmp1', 8, 0, True))
        self.assertIsNone(self.cache.get('cmp1'))
        # Alive and healthy for the liveness rule meanwhile.
        self.assertTrue(self.cache.live_view('cmp1').healthy)
        self.endpoint.info({}, 'relay', wire.EVENT_TYPE, self.state(8), {})
        self.assertEqual(8, self.cache.get('cmp1').generation)

    def test_an_older_entry_changes_nothing(self):
        self.endpoint.info({}, 'agent', wire.EVENT_TYPE, self.state(7), {})
        self.now = 110.0
        self.digest(state_digest.Entry('cmp1', 6, 0, False))
        self.assertEqual(100.0, self.cache.received('cmp1'))
        self.assertEqual(('digest', 'out_of_order'), self.counted[-1])
        # An entry of the same generation heard before what is held.
        self.digest(state_digest.Entry('cmp1', 7, 20000, True))
        self.assertEqual(100.0, self.cache.received('cmp1'))

    def test_wants_what_it_lacks_once_per_generation_or_ttl(self):
        self.endpoint.info({}, 'agent', wire.EVENT_TYPE, self.state(7), {})
        entries = [state_digest.Entry('cmp1', 7, 0, True),   # held
                   state_digest.Entry('cmp2', 3, 0, True),   # none held
                   state_digest.Entry('cmp3', 1, 0, True)]
        self.digest(*entries)
        self.assertEqual([['cmp2', 'cmp3']], self.wanted)
        self.now = 130.0
        self.digest(*entries)                  # asked already: quiet
        self.digest(state_digest.Entry('cmp1', 8, 0, True))  # newer
        self.assertEqual([['cmp2', 'cmp3'], ['cmp1']], self.wanted)
        self.now = 161.0                       # a TTL later: again
        self.digest(*entries[1:])
        self.assertEqual(['cmp2', 'cmp3'], self.wanted[-1])
        self.endpoint.info({}, 'relay', wire.EVENT_TYPE, self.state(8), {})
        self.now = 300.0
        self.digest(state_digest.Entry('cmp1', 8, 0, True))
        self.assertEqual(3, len(self.wanted))

    def test_states_in_a_digest_are_read_first_and_one_by_one(self):
        bad = dict(self.state(9), version='9.0')
        digest = state_digest.Digest(
            'r', (state_digest.Entry('cmp1', 8, 0, True),),
            states=(bad, self.state(8)))
        self.endpoint.info({}, 'relay', state_digest.DIGEST_EVENT,
                           state_digest.digest_payload(digest), {})
        # The good state is held and the entry naming it confirms it (no
        # want); the state of an unknown major alone is dropped.
        self.assertEqual(8, self.cache.get('cmp1').generation)
        self.assertEqual([], self.wanted)
        self.assertEqual([('state', 'invalid'), ('state', 'stored'),
                          ('digest', 'stored')], self.counted)

    def test_invalid_digest_dropped_and_counted(self):
        handled = oslo_messaging.NotificationResult.HANDLED
        self.assertEqual(handled, self.endpoint.info(
            {}, 'relay', state_digest.DIGEST_EVENT,
            {'version': '1.0', 'relay': 'r', 'entries': [['x']]}, {}))
        self.assertEqual([('digest', 'invalid')], self.counted)
        self.assertEqual(0, len(self.cache))

    def test_event_types_the_listener_accepts(self):
        rule = notifications.HostStateEndpoint.filter_rule
        for event in (wire.EVENT_TYPE, state_wire.HEARTBEAT_EVENT,
                      state_digest.DIGEST_EVENT):
            self.assertTrue(rule.match({}, 'p', event, {}, {}), event)
        self.assertFalse(rule.match({}, 'p', 'cacheaware.host.digestx', {},
                                    {}))


class WantPublisherTest(testtools.TestCase):

    def test_wants_go_on_their_own_topic_in_chunks(self):
        sent = []

        class Notifier:
            def __init__(self, transport, **kwargs):
                sent.append(kwargs['topics'])

            def info(self, ctxt, event, payload):
                sent.append((event, len(payload['hosts'])))

        self.useFixture(fixtures.MonkeyPatch('oslo_messaging.Notifier',
                                             Notifier))
        want = notifications.WantPublisher(None, 'topic', 'sched-1')
        want(['h%d' % i for i in range(state_digest.MAX_ENTRIES + 1)])
        self.assertEqual([['topic_want'],
                          (state_digest.WANT_EVENT, state_digest.MAX_ENTRIES),
                          (state_digest.WANT_EVENT, 1)], sent)


class RollingUpgradeTest(testtools.TestCase):
    """An old scheduler's endpoint never sees a digest (dispatch by type)."""

    def test_unknown_event_type_is_acked_without_a_call(self):
        from oslo_messaging.notify import dispatcher

        class OldEndpoint:
            # The filter of the release before the relay.
            filter_rule = oslo_messaging.NotificationFilter(
                event_type=r'^(cacheaware\.host\.state|'
                           r'cacheaware\.host\.heartbeat)$')
            calls = []

            def info(self, *args):
                self.calls.append(args[2])

        class Incoming:
            def __init__(self, event):
                self.ctxt = {}
                self.message = {'priority': 'info', 'event_type': event,
                                'publisher_id': 'relay', 'payload': {},
                                'timestamp': 't', 'message_id': 'm'}

        old = OldEndpoint()
        d = dispatcher.NotificationDispatcher([old], None)
        handled = oslo_messaging.NotificationResult.HANDLED
        self.assertEqual(handled, d.dispatch(Incoming(
            state_digest.DIGEST_EVENT)))
        self.assertEqual([], old.calls)
        d.dispatch(Incoming(state_wire.HEARTBEAT_EVENT))
        self.assertEqual([state_wire.HEARTBEAT_EVENT], old.calls)
