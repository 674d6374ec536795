"""When the agent sends its state, a heartbeat or nothing."""

from hypothesis import given
from hypothesis import strategies as st
import testtools

from nova_cacheaware.policy import state_cadence as sc

CADENCE = sc.Cadence(heartbeat_s=60, resync_s=300)


class NextMessageTest(testtools.TestCase):

    def test_table(self):
        table = [
            # (sent, content, now, expected)
            (sc.Sent(5), 'a', 0, (sc.STATE, 6)),
            (sc.Sent(6, 'a', 0, 0), 'a', 10, (None, 6)),
            (sc.Sent(6, 'a', 0, 0), 'b', 10, (sc.STATE, 7)),
            (sc.Sent(6, 'a', 0, 0), 'a', 60, (sc.HEARTBEAT, 6)),
            (sc.Sent(6, 'a', 0, 250), 'a', 299, (None, 6)),
            (sc.Sent(6, 'a', 0, 250), 'a', 300, (sc.STATE, 6)),
            (sc.Sent(6, 'a', None, None), 'a', 1, (sc.STATE, 6)),
            # A drawn resync interval replaces resync_s.
            (sc.Sent(6, 'a', 0, 200, resync_in=240.0), 'a', 239, (None, 6)),
            (sc.Sent(6, 'a', 0, 200, resync_in=240.0), 'a', 240,
             (sc.STATE, 6)),
        ]
        for sent, content, now, expected in table:
            self.assertEqual(expected, sc.next_message(sent, content, now,
                                                       CADENCE), sent)

    def test_a_failed_state_uses_up_its_generation(self):
        sent = sc.attempted(sc.Sent(6, 'a', 0, 0), sc.STATE, 7, 'b', 10,
                            ok=False)
        self.assertEqual(sc.Sent(7, None, 0, 0), sent)
        # Even back to the content delivered before: a new generation.
        self.assertEqual((sc.STATE, 8), sc.next_message(sent, 'a', 20,
                                                        CADENCE))
        sent = sc.attempted(sent, sc.STATE, 8, 'c', 20, ok=True)
        self.assertEqual(sc.Sent(8, 'c', 20, 20), sent)
        sent = sc.attempted(sent, sc.HEARTBEAT, 8, 'c', 80, ok=True)
        self.assertEqual(sc.Sent(8, 'c', 20, 80), sent)

    def test_resync_interval_is_drawn_within_a_quarter_below(self):
        self.assertEqual(
            [300.0, 262.5, 225.0],
            [sc.resync_after(CADENCE, d) for d in (0.0, 0.5, 1.0)])
        sent = sc.attempted(sc.Sent(6, 'a', 0, 0), sc.STATE, 6, 'a', 300,
                            ok=True, resync_in=250.0)
        self.assertEqual(sc.Sent(6, 'a', 300, 300, 250.0), sent)
        # A heartbeat keeps the interval drawn at the state.
        sent = sc.attempted(sent, sc.HEARTBEAT, 6, 'a', 360, ok=True,
                            resync_in=299.0)
        self.assertEqual(250.0, sent.resync_in)

    @given(st.lists(st.floats(0, 1, exclude_max=True), min_size=2,
                    max_size=50))
    def test_agents_restarted_together_spread_their_resyncs(self, draws):
        # Every agent sent its state at 0; each resyncs within
        # [225, 300] s, never later than resync_s.
        due = [sc.resync_after(CADENCE, d) for d in draws]
        self.assertTrue(all(225.0 <= t <= 300.0 for t in due))

    @given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 120),
                              st.booleans()), max_size=60))
    def test_properties(self, passes):
        # Generations never go down and never name two contents; nothing
        # delivered is ever older than the heartbeat allows while the bus
        # works; every change is sent at the pass it happens.
        sent, now, named = sc.Sent(100), 0, {}
        for content, step, ok in passes:
            now += step
            kind, generation = sc.next_message(sent, content, now, CADENCE)
            self.assertGreaterEqual(generation, sent.generation)
            if content != sent.content:
                self.assertEqual(sc.STATE, kind)
            if kind == sc.STATE:
                self.assertEqual(content, named.setdefault(generation,
                                                           content))
            last = sent.any_at
            sent = sc.attempted(sent, kind or sc.HEARTBEAT, generation,
                                content, now, ok and kind is not None)
            if last is not None and kind is None:
                self.assertLess(now - last, CADENCE.heartbeat_s)


class RequestedStateTest(testtools.TestCase):
    """A scheduler asked for the state: it goes at the time drawn."""

    def test_table(self):
        sent = sc.Sent(6, 'a', 0, 0)
        table = [
            # (requested_at, now, expected)
            (None, 10, (None, 6)),
            (15.0, 14.9, (None, 6)),
            (15.0, 15.0, (sc.STATE, 6)),
            # A changed state answers with its own generation.
            (15.0, 20, (sc.STATE, 6)),
        ]
        for requested_at, now, expected in table:
            self.assertEqual(expected, sc.next_message(
                sent, 'a', now, CADENCE, requested_at), requested_at)
        self.assertEqual((sc.STATE, 7), sc.next_message(sent, 'b', 1,
                                                        CADENCE, 15.0))

    def test_requests_coalesce_to_the_earliest(self):
        self.assertEqual(30.0, sc.requested(None, 30.0))
        self.assertEqual(20.0, sc.requested(30.0, 20.0))
        self.assertEqual(20.0, sc.requested(20.0, 30.0))

    def test_a_state_sent_once_due_answers_it(self):
        self.assertIsNone(sc.answered(20.0, 20.0))
        self.assertIsNone(sc.answered(20.0, 25.0))
        self.assertIsNone(sc.answered(None, 25.0))
        # Sent before the request was due (a change): still pending.
        self.assertEqual(30.0, sc.answered(30.0, 25.0))
