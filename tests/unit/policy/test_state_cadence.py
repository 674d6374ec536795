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
