"""The state relay's rule: forward, fold into a digest, or drop."""

import datetime
import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_digest
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import exception
from nova_cacheaware import notifications
from nova_cacheaware.policy import state_cadence
from nova_cacheaware.policy import state_relay as sr
from nova_cacheaware.scheduler import state_cache

EPOCH = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
RULES = sr.Rules(resync_window_s=10.0, max_entries=2)
#: With the push of unchanged resyncs, one window in three.
TURNS = sr.Rules(resync_window_s=10.0, full_state_every=3, max_entries=2)


def payload(host, generation, content=0, at=0.0, healthy=True):
    """A 2.0 state of ``host``: ``content`` is its domain's usable CPUs."""
    state = host_state.HostCacheState(
        host=host, agent_healthy=healthy,
        timestamp=EPOCH + datetime.timedelta(seconds=at),
        domains=(host_state.DomainState('L3-0', 'empty',
                                        usable_cpus=content),),
        generation=generation)
    return state_wire.to_compact(state)


def beat(host, generation, healthy=True):
    """A heartbeat payload."""
    return state_wire.heartbeat_payload(
        state_wire.Heartbeat(host, generation, healthy))


def off_turn(host, every=3, window=10.0):
    """An agent time (s) in a resync window that is not ``host``'s turn."""
    for w in range(every):
        at = (EPOCH.timestamp() // window + w) * window
        if int(at // window) % every != sr.turn(host, every):
            return at - EPOCH.timestamp() + 1
    raise AssertionError('every window is the turn of %s' % host)


class RelayTableTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.table = sr.RelayTable(RULES, 'relay-a')

    def state(self, host, gen, content=0, at=None, now=0.0):
        at = off_turn(host) if at is None else at
        return self.table.state(
            sr.read_state(payload(host, gen, content, at), 1 << 20), now)

    def test_table(self):
        # (message, expected) in order, one host.
        steps = [
            (('state', 5, 0), sr.FORWARD),       # first message
            (('state', 5, 0), sr.FOLD),          # unchanged resync
            (('beat', 5), sr.FOLD),
            (('state', 6, 1), sr.FORWARD),       # a change
            (('beat', 5), sr.DROP),              # older than heard
            (('state', 5, 0), sr.DROP),
            (('beat', 8), sr.FOLD),              # 7 and 8 lost, or another
            (('state', 8, 3), sr.FOLD),          # relay forwarded them
            (('want',), None),                   # a scheduler lacks 8
            (('state', 8, 3), sr.FORWARD),
            (('state', 8, 3), sr.FOLD),
            (('state', 8, 4), sr.FORWARD),       # same generation, new body
            (('state', 9, 4), sr.FORWARD),       # newer than heard
        ]
        for i, (msg, expected) in enumerate(steps):
            if msg[0] == 'want':
                self.assertEqual(['cmp1'],
                                 self.table.want(['cmp1', 'other'], i))
                continue
            if msg[0] == 'state':
                got = self.state('cmp1', msg[1], msg[2], now=i)
            else:
                got = self.table.heartbeat(
                    sr.read_heartbeat(beat('cmp1', msg[1])), i)
            self.assertEqual(expected, got, (i, msg))

    def test_first_heartbeat_then_state_is_forwarded(self):
        # A restarted relay knows nothing: the first state goes out whole.
        self.assertEqual(sr.FOLD, self.table.heartbeat(
            sr.read_heartbeat(beat('cmp1', 5)), 0))
        self.assertEqual(sr.FORWARD, self.state('cmp1', 5))
        self.assertEqual(sr.FOLD, self.state('cmp1', 5))

    def test_an_unchanged_resync_goes_out_in_the_hosts_turn(self):
        every = TURNS.full_state_every
        self.table = sr.RelayTable(TURNS, 'relay-a')
        self.state('cmp1', 5)
        forwarded = [self.state('cmp1', 5, at=w * 10.0 + 1) == sr.FORWARD
                     for w in range(every * 4)]
        # One window in every: hosts take turns, the same windows always.
        self.assertEqual(4, sum(forwarded))
        windows = [w for w, f in enumerate(forwarded) if f]
        self.assertEqual([every] * 3, [b - a for a, b in
                                       zip(windows, windows[1:])])

    def test_turns_spread_hosts_over_windows(self):
        turns = [sr.turn('cmp%d' % i, 3) for i in range(300)]
        self.assertTrue(all(75 < turns.count(t) < 125 for t in range(3)))

    def test_every_resync_forwarded_with_full_state_every_1(self):
        table = sr.RelayTable(sr.Rules(full_state_every=1), 'r')
        msg = sr.read_state(payload('cmp1', 5), 1 << 20)
        self.assertEqual([sr.FORWARD] * 3,
                         [table.state(msg, t) for t in range(3)])

    def test_1x_states_are_always_forwarded(self):
        state = host_state.HostCacheState(
            host='old', agent_healthy=True, timestamp=EPOCH,
            domains=(host_state.DomainState('L3-0', 'empty'),))
        msg = sr.read_state(host_state.to_payload(state), 1 << 20)
        self.assertIsNone(msg.generation)
        self.assertEqual([sr.FORWARD] * 2,
                         [self.table.state(msg, t) for t in range(2)])
        self.assertEqual([], self.table.digest(5))

    def test_digest_lists_each_host_heard_once_with_its_age(self):
        self.state('a', 1, now=0)               # forwarded: not listed
        self.table.heartbeat(sr.read_heartbeat(beat('b', 2, False)), 0.25)
        self.table.heartbeat(sr.read_heartbeat(beat('b', 3, False)), 0.5)
        self.state('c', 4, now=0.1)
        self.state('c', 4, now=0.75)            # folded
        self.table.heartbeat(sr.read_heartbeat(beat('d', 9)), 0.9)
        digests = self.table.digest(1.0)
        self.assertEqual(
            [[('b', 3, 500, False), ('c', 4, 250, True)],
             [('d', 9, 100, True)]],
            [[(e.host, e.generation, e.age_ms, e.agent_healthy)
              for e in d.entries] for d in digests])
        self.assertEqual({'relay-a'}, {d.relay for d in digests})
        self.assertEqual([], self.table.digest(2.0))

    def test_forwarded_states_go_in_the_digest_newest_only(self):
        table = sr.RelayTable(sr.Rules(max_states=2, max_state_bytes=10 ** 6),
                              'relay-a')
        docs = {}
        for host, gen in (('a', 1), ('b', 1), ('a', 2), ('c', 1)):
            docs[host, gen] = payload(host, gen, gen, off_turn(host))
            table.state(sr.read_state(docs[host, gen], 1 << 20), 0.0,
                        docs[host, gen])
        digests = table.digest(1.0)
        # 'a' at 1 replaced by 'a' at 2 before the digest; two per message.
        self.assertEqual([(docs['b', 1], docs['a', 2]), (docs['c', 1],)],
                         [d.states for d in digests])
        self.assertEqual([(), ()], [d.entries for d in digests])
        self.assertEqual([], table.digest(2.0))

    def test_next_digest(self):
        # (last digest at, oldest waiting state since) -> due, with an
        # interval of 1 s and a state waiting 0.2 s at most.
        for last, waiting, due in ((10.0, None, 11.0),
                                   (10.0, 10.3, 10.5),
                                   (10.0, 10.9, 11.0),
                                   (10.0, 9.0, 9.2)):
            self.assertAlmostEqual(
                due, sr.next_digest(last, waiting, 1.0, 0.2))

    def test_waiting_since_is_the_oldest_waiting_state(self):
        self.assertIsNone(self.table.waiting_since)
        for host, now in (('a', 3.0), ('b', 3.5)):
            doc = payload(host, 1, 0, off_turn(host))
            self.table.state(sr.read_state(doc, 1 << 20), now, doc)
        self.assertEqual(3.0, self.table.waiting_since)
        self.table.heartbeat(sr.read_heartbeat(beat('c', 1)), 3.7)
        self.table.digest(4.0)
        self.assertIsNone(self.table.waiting_since)

    def test_state_bytes_split_the_digest_and_a_big_state_goes_alone(self):
        docs = [payload('h%d' % i, 1, 0, off_turn('h%d' % i))
                for i in range(3)]
        size = sr.read_state(docs[0], 1 << 20).size
        table = sr.RelayTable(sr.Rules(max_state_bytes=size), 'r')
        for doc in docs:
            table.state(sr.read_state(doc, 1 << 20), 0.0, doc)
        self.assertEqual([1, 1, 1], [len(d.states) for d in table.digest(1)])

    def test_a_state_that_did_not_get_out_is_sent_again(self):
        self.state('a', 1, now=0)
        self.table.not_forwarded('a', 0.5)
        self.assertEqual([('a', 1)], [(e.host, e.generation) for e in
                                      self.table.digest(1.0)[0].entries])
        self.assertEqual(sr.FORWARD, self.state('a', 1, now=2))

    def test_bounded_table_and_forgetting(self):
        table = sr.RelayTable(sr.Rules(max_hosts=2, forget_s=10), 'r')
        for i, host in enumerate(('a', 'b', 'c')):
            table.heartbeat(sr.read_heartbeat(beat(host, 1)), i)
        self.assertEqual(2, len(table))
        self.assertEqual(1, table.counts[('heartbeat', 'table_full')])
        table.heartbeat(sr.read_heartbeat(beat('b', 1)), 11.5)
        table.digest(11.5)           # forgets 'a' (heard at 0)
        self.assertEqual(sr.FOLD, table.heartbeat(
            sr.read_heartbeat(beat('c', 1)), 12))

    def test_read_refuses_what_schedulers_would_drop(self):
        bad = [
            ({'version': '2.0'}, 1 << 20),
            (payload('x' * 256, 1), 1 << 20),
            (payload('a', 1), 100),            # too large
            ('not a dict', 1 << 20),
        ]
        for doc, limit in bad:
            self.assertRaises(exception.InvalidInput, sr.read_state, doc,
                              limit)
        for doc in ({'version': '2.0', 'host': 'a'}, beat('a', -1),
                    dict(beat('a', 1), generation=2 ** 64),
                    dict(beat('a', 1), version='3.0'), []):
            self.assertRaises(exception.InvalidInput, sr.read_heartbeat,
                              doc)


class Region:
    """Agents -> (lossy, reordering) cell bus -> relay -> one scheduler.

    Time in whole seconds (ticks). Agents follow the real cadence
    (:mod:`.state_cadence`); the relay's forwards and digests go to a
    real scheduler endpoint and cache without loss.
    """

    CADENCE = state_cadence.Cadence(heartbeat_s=3.0, resync_s=10.0)
    TTL = 30.0

    def __init__(self, hosts, rng, rules=RULES, relays=1):
        self.now = 0.0
        self.cache = state_cache.HostStateCache(self.TTL,
                                                clock=lambda: self.now)
        # The scheduler's wants reach every relay (without loss).
        self.endpoint = notifications.HostStateEndpoint(
            self.cache, want=lambda hosts: [
                r.want(hosts, self.now) for r in self.relays])
        self.relays = [sr.RelayTable(rules, 'relay-%d' % i)
                       for i in range(relays)]
        self.forwarded = 0
        self.rng = rng
        self.sent = {h: state_cadence.Sent(generation=1000) for h in hosts}
        self.content = {h: 0 for h in hosts}
        self.inflight = []   # (arrives at, order, event type, payload)
        self.digest_sizes = []

    def tick(self, changes, lose, delays):
        """Agents pass (after ``changes``), the bus delivers, relay runs."""
        for i, host in enumerate(sorted(self.sent)):
            if host in changes:
                self.content[host] += 1
            self._pass(host, lose, delays[i % len(delays)])
        arrived = sorted(m for m in self.inflight if m[0] <= self.now)
        self.inflight = [m for m in self.inflight if m[0] > self.now]
        for _at, order, event, doc in arrived:
            # Competing consumers: each message reaches one relay.
            self._relay(self.relays[int(order * len(self.relays))], event,
                        doc)
        for relay in self.relays:
            for digest in relay.digest(self.now):
                self.digest_sizes.append(len(digest.entries))
                self.endpoint.info({}, 'relay', state_digest.DIGEST_EVENT,
                                   state_digest.digest_payload(digest), {})
        self.now += 1.0

    def _pass(self, host, lose, delay):
        sent = self.sent[host]
        kind, gen = state_cadence.next_message(
            sent, self.content[host], self.now, self.CADENCE)
        if kind is None:
            return
        if kind == state_cadence.STATE:
            event = host_state.EVENT_TYPE
            doc = payload(host, gen, self.content[host], self.now)
        else:
            event, doc = state_wire.HEARTBEAT_EVENT, beat(host, gen)
        if not lose:
            self.inflight.append((self.now + delay, self.rng.random(),
                                  event, doc))
        self.sent[host] = state_cadence.attempted(
            sent, kind, gen, self.content[host], self.now, True,
            resync_in=state_cadence.resync_after(self.CADENCE,
                                                 self.rng.random()))

    def _relay(self, relay, event, doc):
        if event == host_state.EVENT_TYPE:
            action = relay.state(sr.read_state(doc, 1 << 20), self.now, doc)
        else:
            action = relay.heartbeat(sr.read_heartbeat(doc), self.now)
        # A forwarded state goes out in the relay's next digest.
        self.forwarded += action == sr.FORWARD

    def wrong(self, host):
        """True when the scheduler trusts a state the agent replaced."""
        state = self.cache.get(host)
        return state is not None and (
            state.generation, state.domains[0].usable_cpus) != (
            self.sent[host].generation, self.content[host])

    def right(self, host):
        """True when the scheduler holds the agent's current state."""
        state = self.cache.get(host)
        return state is not None and (
            state.generation, state.domains[0].usable_cpus) == (
            self.sent[host].generation, self.content[host])


class LossAndOrderTest(testtools.TestCase):
    """Lost and reordered messages between agents and the relay."""

    HOSTS = ('cmp1', 'cmp2', 'cmp3')
    LOSSY = 40      # seconds with losses, then none
    QUIET = 25      # seconds after that, no losses

    @settings(max_examples=60, deadline=None)
    @given(st.integers(0, 2 ** 32), st.floats(0.0, 0.6),
           st.floats(0.0, 0.3), st.lists(st.integers(0, 2), min_size=1,
                                         max_size=5),
           st.integers(1, 3), st.sampled_from([RULES, TURNS]))
    def test_never_trusted_wrong_longer_than_the_resync(
            self, seed, loss, change, delays, relays, rules):
        rng = random.Random(seed)
        region = Region(self.HOSTS, rng, rules, relays)
        resync = Region.CADENCE.resync_s
        wrong_since = {}
        for t in range(self.LOSSY + self.QUIET):
            changes = {h for h in self.HOSTS if rng.random() < change}
            lose = t < self.LOSSY and rng.random() < loss
            region.tick(changes, lose, delays)
            for host in self.HOSTS:
                if not region.wrong(host):
                    wrong_since.pop(host, None)
                    continue
                since = wrong_since.setdefault(host, region.now)
                # Wrong for longer than a resync (+ bus delay and digest)
                # only while messages are being lost.
                self.assertLessEqual(region.now - max(since, self.LOSSY),
                                     resync + 3, (t, host))
        self.assertTrue(all(n <= RULES.max_entries
                            for n in region.digest_sizes))

    @settings(max_examples=60, deadline=None)
    @given(st.integers(0, 2 ** 32), st.floats(0.0, 0.8),
           st.lists(st.integers(0, 2), min_size=1, max_size=5),
           st.integers(1, 3), st.sampled_from([RULES, TURNS]))
    def test_right_again_within_the_resync_after_losses(
            self, seed, loss, delays, relays, rules):
        rng = random.Random(seed)
        region = Region(self.HOSTS, rng, rules, relays)
        for t in range(self.LOSSY):
            changes = {h for h in self.HOSTS if rng.random() < 0.2}
            region.tick(changes, rng.random() < loss, delays)
        # No change and no loss any more: one resync interval (plus the
        # bus's delay and a digest) repairs every host.
        for _ in range(int(Region.CADENCE.resync_s) + 3):
            region.tick(set(), False, delays)
        self.assertEqual([], [h for h in self.HOSTS
                              if not region.right(h)])

    def test_a_new_scheduler_has_every_state_within_the_resync(self):
        rng = random.Random(7)
        hosts = ['cmp%d' % i for i in range(30)]
        region = Region(hosts, rng, relays=2)
        for _ in range(20):
            region.tick(set(), False, [0])
        # A scheduler that starts now: empty cache, same relays. It wants
        # each host as digests name it (within a heartbeat); the next
        # resync of each is forwarded.
        region.cache.clear()
        bound = Region.CADENCE.heartbeat_s + Region.CADENCE.resync_s
        for _ in range(int(bound) + 2):
            region.tick(set(), False, [0])
        self.assertEqual([], [h for h in hosts if not region.right(h)])

    def test_steady_state_forwards_changes_not_resyncs(self):
        for relays, most in ((1, 30), (2, 36)):
            rng = random.Random(3)
            hosts = ['cmp%d' % i for i in range(40)]
            region = Region(hosts, rng, relays=relays)
            for _ in range(60):
                region.tick(set(), False, [0])
            # Two resync intervals without a change: nothing forwarded,
            # all still right (confirmed by digests).
            region.forwarded = 0
            for _ in range(20):
                region.tick(set(), False, [0])
            self.assertEqual(0, region.forwarded)
            self.assertEqual([], [h for h in hosts if not region.right(h)])
            # 30 changes: each forwarded once; with two relays sometimes
            # twice, when the other relay gets the change's resync before
            # any heartbeat naming it (here 2 heartbeats per resync, in
            # a region 4: rarer).
            for t in range(30):
                region.tick({hosts[t]}, False, [0])
            self.assertLessEqual(30, region.forwarded)
            self.assertGreaterEqual(most, region.forwarded, relays)
