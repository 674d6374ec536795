"""One WARNING per outage, one INFO when it ends."""

import logging

import fixtures
import testtools

from nova_cacheaware.agent import outage


class OutagesTest(testtools.TestCase):

    def test_transitions_only(self):
        now = [100.0]
        log = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        o = outage.Outages(clock=lambda: now[0],
                           log=logging.getLogger('outage-test'))
        self.assertIsNone(o.ok('Placement'))
        self.assertTrue(o.failed('Placement', 'refused', 'retrying'))
        for _ in range(50):
            now[0] += 1
            self.assertFalse(o.failed('Placement', 'refused again'))
        self.assertTrue(o.failed('libvirtd', 'gone'))
        self.assertEqual({'Placement', 'libvirtd'}, o.down())
        now[0] += 0.4
        self.assertAlmostEqual(50.4, o.ok('Placement'))
        self.assertIsNone(o.ok('Placement'))
        self.assertEqual(
            'Placement is unreachable (refused); retrying\n'
            'libvirtd is unreachable (gone); retrying every pass\n'
            'Placement recovered after 50 s\n', log.output)
