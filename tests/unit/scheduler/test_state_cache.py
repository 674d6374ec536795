"""The TTL cache of live host state."""

import datetime

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import state_wire
from nova_cacheaware.policy import liveness
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import state_cache


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def at(host, second):
    return hs.HostCacheState(
        host=host, agent_healthy=True,
        timestamp=datetime.datetime(2026, 1, 1, 0, 0, second,
                                    tzinfo=datetime.timezone.utc))


class HostStateCacheTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()
        self.cache = state_cache.HostStateCache(ttl=60, clock=self.clock)

    def test_located_follows_the_latest_state_of_each_host(self):
        def listing(host, second, *uuids):
            return hs.HostCacheState(
                host=host, agent_healthy=True,
                timestamp=datetime.datetime(2026, 1, 1, 0, 0, second,
                                            tzinfo=datetime.timezone.utc),
                vms=tuple(wire.VmState(u) for u in uuids))
        table = [
            # (state, {uuid: host} afterwards). A host's first state says
            # nothing new: only instances that appear later are located.
            (listing('h1', 1, 'a'), {'a': None, 'b': None, 'c': None}),
            (listing('h2', 1), {'a': None, 'b': None, 'c': None}),
            (listing('h1', 2, 'a', 'b'), {'a': None, 'b': 'h1', 'c': None}),
            (listing('h2', 2, 'c'), {'a': None, 'b': 'h1', 'c': 'h2'}),
            # 'b' left h1 (deleted or moved) and shows up on h2.
            (listing('h1', 3, 'a'), {'a': None, 'b': None, 'c': 'h2'}),
            (listing('h2', 3, 'b', 'c'), {'a': None, 'b': 'h2', 'c': 'h2'}),
            # An older state of h1 changes nothing.
            (listing('h1', 0, 'b'), {'a': None, 'b': 'h2', 'c': 'h2'}),
        ]
        for state, where in table:
            self.cache.update(state)
            self.assertEqual(where, {u: self.cache.located(u)
                                     for u in where}, state)
        # Forgotten after recent_s (120 s by default).
        self.clock.now += 121
        self.assertIsNone(self.cache.located('b'))
        self.cache.update(listing('h1', 4, 'a', 'd'))
        self.assertEqual(['d'], list(self.cache._arrived))
        self.cache.clear()
        self.assertIsNone(self.cache.located('d'))

    def test_fresh_until_ttl_then_missing(self):
        self.assertIsNone(self.cache.get('h1'))
        self.assertTrue(self.cache.update(at('h1', 0)))
        self.clock.now += 60
        self.assertEqual(at('h1', 0), self.cache.get('h1'))
        self.clock.now += 0.001
        self.assertIsNone(self.cache.get('h1'))

    def test_freshness_counts_from_receipt_not_agent_clock(self):
        # An agent whose clock is a year behind still counts as fresh.
        self.cache.update(at('h1', 0))
        self.clock.now += 30
        self.assertIsNotNone(self.cache.get('h1'))

    def test_older_state_never_replaces_newer(self):
        self.cache.update(at('h1', 10))
        self.assertFalse(self.cache.update(at('h1', 5)))
        self.assertEqual(at('h1', 10), self.cache.get('h1'))
        self.assertTrue(self.cache.update(at('h1', 10)))

    def test_prune_forget_clear(self):
        self.cache.update(at('h1', 0))
        self.clock.now += 30
        self.cache.update(at('h2', 0))
        self.clock.now += 31
        # Stale, but kept for FORGET_TTLS TTLs.
        self.assertEqual(0, self.cache.prune())
        self.clock.now += 540
        self.assertEqual(1, self.cache.prune())
        self.assertEqual(1, len(self.cache))
        self.cache.forget('h2')
        self.assertEqual(0, len(self.cache))
        self.cache.update(at('h3', 0))
        self.cache.clear()
        self.assertIsNone(self.cache.get('h3'))

    def test_arrivals_prune_hosts_unheard_for_ten_ttls(self):
        # A removed compute's state does not stay in memory for ever: an
        # arrival (at most one walk per TTL) drops it.
        self.cache.update(at('gone', 0))
        self.clock.now += 599
        self.cache.update(at('h1', 0))
        self.assertEqual(2, len(self.cache))
        self.clock.now += 59
        self.cache.heartbeat(beat('h1', 1))
        self.assertEqual(2, len(self.cache))
        self.clock.now += 1
        self.cache.heartbeat(beat('h1', 1))
        self.assertEqual(1, len(self.cache))
        self.assertIsNone(self.cache.get('gone'))
        # Its liveness view is that of a host never heard: refused as a
        # stale one would be once the bus is warm.
        self.assertIsNone(self.cache.live_view('gone').age)

    def test_live_view_ages_and_the_bus(self):
        view = self.cache.live_view('h1')
        self.assertEqual((None, None, 0.0, False),
                         (view.age, view.quiet_for, view.heard_for,
                          view.healthy))
        self.cache.update(at('h1', 0))
        self.clock.now += 20
        self.cache.update(at('h2', 0))
        self.clock.now += 5
        view = self.cache.live_view('h1')
        self.assertEqual((60.0, 25.0, True, 5.0, 25.0),
                         (view.ttl, view.age, view.healthy, view.quiet_for,
                          view.heard_for))
        # A silence of more than ttl/2, then the bus is heard again.
        self.clock.now += 31
        self.cache.update(at('h2', 1))
        self.clock.now += 2
        view = self.cache.live_view('h1')
        self.assertEqual((58.0, 2.0, 2.0),
                         (view.age, view.quiet_for, view.heard_for))
        self.cache.clear()
        self.assertIsNone(self.cache.live_view('h2').quiet_for)


def gen(host, second, generation, healthy=True):
    """A payload 2.0 state: it carries a generation."""
    return hs.HostCacheState(
        host=host, agent_healthy=healthy, generation=generation,
        timestamp=datetime.datetime(2026, 1, 1, 0, 0, second,
                                    tzinfo=datetime.timezone.utc))


def beat(host, generation, healthy=True):
    return state_wire.Heartbeat(host, generation, healthy)


class HeartbeatTest(testtools.TestCase):
    """Payload 2.0: heartbeats confirm the state they name."""

    def setUp(self):
        super().setUp()
        self.clock = Clock()
        self.cache = state_cache.HostStateCache(ttl=60, clock=self.clock)

    def test_a_matching_heartbeat_keeps_the_state_fresh(self):
        self.cache.update(gen('h1', 0, 5))
        for _ in range(4):
            self.clock.now += 50
            self.assertTrue(self.cache.heartbeat(beat('h1', 5)))
            self.assertEqual(gen('h1', 0, 5), self.cache.get('h1'))
        # Claims are judged against when the state was last confirmed.
        self.assertEqual(1200.0, self.cache.received('h1'))
        self.clock.now += 61
        self.assertIsNone(self.cache.get('h1'))
        self.assertEqual(0, self.cache.prune())
        self.clock.now += 540
        self.assertEqual(1, self.cache.prune())

    def test_prune_keeps_an_outdated_state_its_agent_still_confirms(self):
        self.cache.update(gen('h1', 0, 5))
        self.clock.now += 50
        self.cache.heartbeat(beat('h1', 6))
        self.clock.now += 580
        # The state is 630 s old and outdated, but its host was heard
        # 580 s ago: the next state is still compared with it.
        self.assertEqual(0, self.cache.prune())
        self.assertEqual(1, len(self.cache))
        self.clock.now += 21
        self.assertEqual(1, self.cache.prune())

    def test_a_newer_generation_outdates_the_state_but_not_the_agent(self):
        self.cache.update(gen('h1', 0, 5))
        self.clock.now += 10
        self.cache.heartbeat(beat('h1', 6))
        # A state was lost: the held one is not given out, the agent is
        # alive and healthy (Placement decides for the host).
        self.assertIsNone(self.cache.get('h1'))
        self.assertIsNone(self.cache.received('h1'))
        view = self.cache.live_view('h1')
        self.assertEqual((0.0, True), (view.age, view.healthy))
        # The resync brings it back.
        self.clock.now += 5
        self.cache.update(gen('h1', 1, 6))
        self.assertEqual(gen('h1', 1, 6), self.cache.get('h1'))

    def test_an_older_heartbeat_changes_nothing(self):
        self.cache.update(gen('h1', 0, 5))
        self.assertFalse(self.cache.heartbeat(beat('h1', 4)))
        self.assertEqual(gen('h1', 0, 5), self.cache.get('h1'))

    def test_the_newest_word_on_health_counts(self):
        self.cache.update(gen('h1', 0, 5))
        self.clock.now += 1
        self.cache.heartbeat(beat('h1', 5, healthy=False))
        self.assertFalse(self.cache.live_view('h1').healthy)
        self.clock.now += 1
        self.cache.update(gen('h1', 1, 6, healthy=True))
        self.assertTrue(self.cache.live_view('h1').healthy)

    def test_a_heartbeat_without_a_state_makes_the_agent_alive(self):
        self.cache.heartbeat(beat('h1', 9))
        self.assertIsNone(self.cache.get('h1'))
        self.clock.now += 3
        view = self.cache.live_view('h1')
        self.assertEqual((3.0, True, 3.0), (view.age, view.healthy,
                                            view.quiet_for))
        self.cache.forget('h1')
        self.assertIsNone(self.cache.live_view('h1').age)

    def test_a_heartbeat_naming_a_state_not_held_calls_on_missing(self):
        missing = []
        self.cache.on_missing = missing.append
        self.cache.heartbeat(beat('h1', 9))        # no state at all
        self.cache.update(gen('h2', 0, 5))
        self.cache.heartbeat(beat('h2', 5))        # the one held: fine
        self.cache.heartbeat(beat('h2', 6))        # a lost state
        self.cache.heartbeat(beat('h2', 4))        # out of order: ignored
        self.cache.update(at('h3', 0))
        self.cache.heartbeat(beat('h3', 1))        # 1.x held, 2.0 missed
        self.assertEqual(['h1', 'h2', 'h3'], missing)

    def test_a_1_x_state_ignores_heartbeats(self):
        self.cache.update(at('h1', 0))
        self.clock.now += 50
        self.cache.heartbeat(beat('h1', 1))
        self.clock.now += 11
        self.assertIsNone(self.cache.get('h1'))


class AdmitTest(testtools.TestCase):
    """``admit`` says what ``get``, ``received`` and the rule would."""

    @hypothesis.settings(max_examples=300)
    @hypothesis.given(st.lists(st.tuples(
        st.sampled_from(('state', 'beat', 'wait')), st.integers(0, 3),
        st.booleans(), st.integers(1, 90)), max_size=6))
    def test_admit_is_fresh_and_the_liveness_rule_in_one_read(self, steps):
        clock = Clock()
        cache = state_cache.HostStateCache(ttl=60, clock=clock)
        for second, (kind, generation, healthy, wait) in enumerate(steps):
            if kind == 'state':
                cache.update(gen('h1', second, generation, healthy))
            elif kind == 'beat':
                cache.heartbeat(beat('h1', generation, healthy))
            else:
                clock.now += wait
            # Another host heard lately: the rule refuses the silent ones.
            cache.update(at('h2', second))
            fresh, view = cache.admit('h1')
            state = cache.get('h1')
            self.assertEqual(
                None if state is None else (cache.received('h1'), state),
                fresh)
            for policy in liveness.CHOICES:
                expected = liveness.ineligible_reason(
                    cache.live_view('h1'), policy)
                if view is None:
                    self.assertIsNone(expected, (steps, policy))
                else:
                    self.assertEqual(cache.live_view('h1'), view)
