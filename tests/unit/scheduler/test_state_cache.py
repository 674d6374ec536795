"""The TTL cache of live host state."""

import datetime

import testtools

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
                vms=tuple(hs.VmState(u) for u in uuids))
        table = [
            # (state, {uuid: host} afterwards)
            (listing('h1', 1, 'a', 'b'), {'a': 'h1', 'b': 'h1', 'c': None}),
            (listing('h2', 1, 'c'), {'a': 'h1', 'b': 'h1', 'c': 'h2'}),
            # 'b' left h1 (deleted or moved) and shows up on h2.
            (listing('h1', 2, 'a'), {'a': 'h1', 'b': None, 'c': 'h2'}),
            (listing('h2', 2, 'b', 'c'), {'a': 'h1', 'b': 'h2', 'c': 'h2'}),
            # An older state of h1 changes nothing.
            (listing('h1', 0, 'b'), {'a': 'h1', 'b': 'h2', 'c': 'h2'}),
        ]
        for state, where in table:
            self.cache.update(state)
            self.assertEqual(where, {u: self.cache.located(u)
                                     for u in where}, state)
        self.cache.clear()
        self.assertIsNone(self.cache.located('a'))

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
        self.assertEqual(1, self.cache.prune())
        self.assertEqual(1, len(self.cache))
        self.cache.forget('h2')
        self.assertEqual(0, len(self.cache))
        self.cache.update(at('h3', 0))
        self.cache.clear()
        self.assertIsNone(self.cache.get('h3'))

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
