"""Act: only the difference, never outside Nova's CPUs, rate-limited."""

import fixtures
import testtools

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.cachedomain import repinning

ALL = (0, 1, 2, 3)


class RecordingHypervisor(hv.Hypervisor):
    """Unit-test double of the narrow Hypervisor interface (not libvirt).

    Records calls; uuids in ``gone`` behave like a destroyed domain.
    """

    def __init__(self, gone=(), broken=()):
        self.pins = []
        self.records = []
        self.gone = set(gone)
        self.broken = set(broken)

    def pin_vcpu(self, uuid, vcpu, cpus):
        if uuid in self.gone:
            raise hv.DomainGone(uuid=uuid, reason='destroyed')
        if (uuid, vcpu) in self.broken:
            raise RuntimeError('boom')
        self.pins.append((uuid, vcpu, tuple(cpus)))

    def record_pins(self, uuid, metadata_xml):
        self.records.append((uuid, metadata_xml))

    def host_cpus(self):
        return ALL

    def list_instances(self):
        return []

    def vcpu_stats(self):
        return {}

    def vcpu_threads(self, uuid):
        return {}

    def start(self, on_event):
        pass

    def stop(self):
        pass


def decision(uuid, current, desired, allowed=None, movable=True,
             action=repinning.REPIN, nova_pinned=False):
    allowed = allowed or {v: ALL for v in current}
    return repinning.Decision(
        uuid=uuid, name=uuid, workload='memory', movable=movable,
        reason='test', action=action, current=current, desired=desired,
        allowed=allowed, nova_pinned=nova_pinned)


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class ActuatorTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger())

    def test_only_the_difference_is_applied(self):
        h = RecordingHypervisor()
        d = decision('a', {0: (0, 1), 1: ALL}, {0: (0, 1), 1: (0, 1)})
        result = actuator.Actuator(h).apply([d])
        self.assertEqual([('a', 1, (0, 1))], h.pins)
        self.assertEqual([('a', 1, (0, 1))], result.succeeded)
        self.assertEqual(1, result.repins)
        # Nothing to do: no call at all, not even the metadata.
        h2 = RecordingHypervisor()
        actuator.Actuator(h2).apply([decision('a', {0: (0, 1)},
                                              {0: (0, 1)})])
        self.assertEqual(([], []), (h2.pins, h2.records))

    def test_metadata_recorded_before_pinning(self):
        h = RecordingHypervisor()
        actuator.Actuator(h).apply([decision('a', {0: ALL, 1: ALL},
                                             {0: (2, 3), 1: ALL})])
        self.assertEqual(
            [('a', '<pins><vcpu id="0" nova_cpuset=""/></pins>')],
            h.records)

    def test_restore_records_the_pins_being_undone(self):
        h = RecordingHypervisor()
        actuator.Actuator(h).apply([decision(
            'a', {0: (0, 1)}, {0: ALL}, action=repinning.RESTORE)])
        self.assertEqual([('a', 0, ALL)], h.pins)
        self.assertEqual(
            [('a', '<pins><vcpu id="0" nova_cpuset=""/></pins>'),
             ('a', '<pins></pins>')], h.records)

    def test_refuses_outside_nova_allowed(self):
        h = RecordingHypervisor()
        d = decision('a', {0: (0, 1)}, {0: (1, 2)},
                     allowed={0: (0, 1)})
        result = actuator.Actuator(h).apply([d])
        self.assertEqual([], h.pins)
        self.assertEqual([], h.records)
        self.assertEqual(1, len(result.failed))
        self.assertIn("CPUs 2 are outside Nova's allowed 0-1",
                      result.failed[0][2])

    def test_refuses_empty_cpuset_and_unmovable(self):
        h = RecordingHypervisor()
        result = actuator.Actuator(h).apply([
            decision('a', {0: (0, 1)}, {0: ()}),
            decision('b', {0: (0,)}, {0: (1,)}, movable=False),
            decision('c', {0: (0,)}, {0: (1,)}),
        ])
        self.assertEqual([('c', 0, (1,))], h.pins)
        self.assertEqual(['a', 'b'], [f[0] for f in result.failed])
        self.assertIn('empty cpuset', result.failed[0][2])
        self.assertIn('not movable', result.failed[1][2])

    def test_one_whole_instance_refused_if_any_vcpu_is_unsafe(self):
        h = RecordingHypervisor()
        d = decision('a', {0: ALL, 1: ALL}, {0: (0,), 1: (9,)})
        actuator.Actuator(h).apply([d])
        self.assertEqual([], h.pins)

    def test_destroyed_domain_is_skipped_and_others_go_on(self):
        h = RecordingHypervisor(gone={'a'})
        result = actuator.Actuator(h).apply([
            decision('a', {0: ALL, 1: ALL}, {0: (0,), 1: (0,)}),
            decision('b', {0: ALL}, {0: (1,)}),
        ])
        self.assertEqual([('b', 0, (1,))], h.pins)
        self.assertEqual([('a', 0)], [f[:2] for f in result.failed])
        self.assertEqual([('b', 0, (1,))], result.succeeded)

    def test_unexpected_error_on_one_vcpu(self):
        h = RecordingHypervisor(broken={('a', 0)})
        result = actuator.Actuator(h).apply([
            decision('a', {0: ALL, 1: ALL}, {0: (0,), 1: (0,)})])
        self.assertEqual([('a', 1, (0,))], h.pins)
        self.assertEqual([('a', 0, 'boom')], result.failed)

    def test_dry_run_changes_nothing(self):
        h = RecordingHypervisor()
        result = actuator.Actuator(h, dry_run=True).apply([
            decision('a', {0: ALL}, {0: (1,)})])
        self.assertEqual(([], []), (h.pins, h.records))
        self.assertEqual([('a', 0, (1,))], result.dry_run)
        self.assertIn('dry run: would pin a vCPU 0 to 1', self.log.output)

    def test_rate_limit_defers_and_recovers(self):
        clock = FakeClock()
        h = RecordingHypervisor()
        act = actuator.Actuator(h, actuator.RateLimiter(3, 10.0, clock))
        d = decision('a', {v: ALL for v in range(5)},
                     {v: (v % 4,) for v in range(5)})
        first = act.apply([d])
        self.assertEqual(3, first.repins)
        self.assertEqual([3, 4], [x[1] for x in first.deferred])
        clock.now += 5  # same window: still full
        self.assertEqual(0, act.apply([d]).repins)
        clock.now += 5  # window over
        self.assertEqual(3, act.apply([d]).repins)


class RateLimiterTest(testtools.TestCase):

    def test_sliding_window(self):
        clock = FakeClock()
        limiter = actuator.RateLimiter(2, 10.0, clock)
        self.assertEqual([True, True, False],
                         [limiter.allow() for _ in range(3)])
        clock.now += 9.9
        self.assertFalse(limiter.allow())
        clock.now += 0.1
        self.assertEqual([True, True, False],
                         [limiter.allow() for _ in range(3)])

    def test_unlimited(self):
        limiter = actuator.RateLimiter(None, 1.0)
        self.assertTrue(all(limiter.allow() for _ in range(1000)))
