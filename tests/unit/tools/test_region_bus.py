"""The region benchmarks' accounting of the window's changes."""

import types

import testtools

from benchmarks import region_bus


class LatencyTest(testtools.TestCase):

    def test_seen_superseded_and_not_seen(self):
        # (host, changed at, passed at, generation)
        run = types.SimpleNamespace(changes=[
            ('a', 10.0, 10.1, 1), ('a', 11.0, 11.1, 2),
            ('b', 10.0, 10.1, 5), ('c', 10.0, 10.1, 7)])
        stored = [('a', 2, 11.3), ('b', 5, 10.4), ('b', 5, 10.9),
                  ('c', 6, 9.0)]
        got = region_bus._latency(run, stored)
        # a/1 replaced by a/2 before it was stored; c/7 never came and
        # nothing newer did either.
        self.assertEqual(4, got['changes'])
        self.assertEqual(1, got['superseded'])
        self.assertEqual(1, got['not_seen'])
        # Staleness from the first time each seen change was stored: a/2
        # 0.3 s, b/5 0.4 s (not its second delivery).
        self.assertEqual(0.4, got['staleness_p50_s'])
        self.assertEqual(0.4, got['staleness_max_s'])
        self.assertEqual(0.3, got['delivery_p50_s'])
