"""The agent's publisher: state on change, heartbeats between, pinning.

The transport records what oslo.messaging would be handed (the real bus is
in tests/functional/agent/test_reporting.py and test_host_state_bus.py).
"""

import dataclasses

import testtools

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import reporting
from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_wire
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.policy import state_cadence

VM = '00000000-0000-4000-8000-000000000001'


class RecordingTransport:
    def __init__(self):
        self.sent = []
        self.down = False

    def _send_notification(self, target, ctxt, message, version, retry):
        if self.down:
            raise OSError('connection refused')
        self.sent.append((message['event_type'], message['payload']))


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def report(memory_vms=()):
    return reporting.HostReport(
        memory_vms={'L3-0': tuple(memory_vms), 'L3-1': ()},
        vms={u: reporting.VmReport('memory', ('L3-0',), 2)
             for u in memory_vms})


class PublisherTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.transport = RecordingTransport()
        self.clock = Clock()
        self.pub = self.publisher(draw=0.0)

    def publisher(self, draw):
        """A 60 s heartbeat, 300 s resync, jitter draws ``draw``."""
        return notify.NotificationStatePublisher(
            self.transport, 'cmp1', 'topic',
            cadence=state_cadence.Cadence(heartbeat_s=60, resync_s=300),
            clock=self.clock, draw=lambda: draw)

    def kinds(self):
        return [(event, payload['generation'])
                for event, payload in self.transport.sent]

    def run_passes(self, reports, period=10):
        for r in reports:
            self.assertTrue(self.pub.publish(r))
            self.clock.now += period

    def test_state_on_change_heartbeat_between_resync_at_interval(self):
        g = self.pub.last.generation
        state, beat = host_state.EVENT_TYPE, state_wire.HEARTBEAT_EVENT
        self.run_passes([report()] * 7 + [report([VM])] * 31)
        self.assertEqual(
            [(state, g + 1), (beat, g + 1), (state, g + 2),
             (beat, g + 2), (beat, g + 2), (beat, g + 2), (beat, g + 2),
             (state, g + 2)],
            self.kinds())
        # The state goes compact; the heartbeat names the generation.
        payload = self.transport.sent[2][1]
        self.assertEqual('2.0', payload['version'])
        self.assertEqual(
            {VM}, state_wire.parse_state(payload).instance_uuids)
        self.assertEqual(
            state_wire.Heartbeat('cmp1', g + 2),
            state_wire.parse_heartbeat(self.transport.sent[3][1]))

    def test_jitter_brings_the_resync_forward_by_at_most_a_quarter(self):
        # The highest draw: the resync comes 225 s after the state at t=70.
        self.pub = self.publisher(draw=1.0)
        g = self.pub.last.generation
        state, beat = host_state.EVENT_TYPE, state_wire.HEARTBEAT_EVENT
        self.run_passes([report()] * 7 + [report([VM])] * 31)
        self.assertEqual(
            [(state, g + 1), (beat, g + 1), (state, g + 2),
             (beat, g + 2), (beat, g + 2), (beat, g + 2), (state, g + 2),
             (beat, g + 2)],
            self.kinds())

    def test_a_requested_state_goes_at_the_first_pass_after_its_time(self):
        g = self.pub.last.generation
        state, beat = host_state.EVENT_TYPE, state_wire.HEARTBEAT_EVENT
        self.run_passes([report()] * 2)            # t=0 state, t=10 none
        self.pub.request_state(15.0)               # at t=20: due at 35
        self.pub.request_state(30.0)               # later: coalesced
        self.run_passes([report()] * 3)            # t=20, 30, 40
        self.assertEqual([(state, g + 1), (state, g + 1)], self.kinds())
        self.assertEqual(40.0, self.pub.last.state_at)
        # Answered: nothing more until the heartbeat (t=100).
        self.run_passes([report()] * 6)            # t=50..100
        self.assertEqual([(state, g + 1), (state, g + 1), (beat, g + 1)],
                         self.kinds())

    def test_a_request_not_delivered_is_still_pending(self):
        g = self.pub.last.generation
        state = host_state.EVENT_TYPE
        self.run_passes([report()])                # t=0
        self.pub.request_state(0.0)
        self.transport.down = True
        self.assertFalse(self.pub.publish(report()))   # t=10: refused
        self.transport.down = False
        self.clock.now += 10
        self.assertTrue(self.pub.publish(report()))    # t=20: a new one
        self.assertEqual([(state, g + 1), (state, g + 2)], self.kinds())
        self.clock.now += 10
        self.assertTrue(self.pub.publish(report()))    # t=30: nothing
        self.assertEqual(2, len(self.transport.sent))

    def test_bus_down_then_up(self):
        g = self.pub.last.generation
        self.transport.down = True
        self.assertFalse(self.pub.publish(report()))
        self.assertEqual((1, 0), (self.pub.failed, self.pub.sent))
        self.assertEqual('cmp1', self.pub.pending.host)
        self.clock.now += 10
        self.transport.down = False
        self.assertTrue(self.pub.publish(report()))
        self.assertEqual([(host_state.EVENT_TYPE, g + 2)], self.kinds())
        self.assertIsNone(self.pub.pending)

    def test_pinned_to_1_5_sends_the_whole_state_every_pass(self):
        pub = notify.NotificationStatePublisher(
            self.transport, 'cmp1', 'topic', version='1.5')
        for _ in range(3):
            pub.publish(report([VM]))
        self.assertEqual([host_state.EVENT_TYPE] * 3,
                         [event for event, _ in self.transport.sent])
        payload = self.transport.sent[0][1]
        self.assertEqual('1.5', payload['version'])
        self.assertEqual(VM, host_state.from_payload(
            payload).vms[0].instance_uuid)

    def test_unknown_version_refused(self):
        self.assertRaises(ValueError, notify.NotificationStatePublisher,
                          self.transport, 'cmp1', 'topic', version='3.0')


def sized(host_report, pcpus=(0, 1, 2, 3), vcpus=((0, 1, 2, 3),) * 2):
    """``host_report`` with a vcpu_sizing section: one VM's affinities."""
    affinity = pcpu_est.EstimateRequest.from_dict({
        'pcpus': list(pcpus),
        'vms': {VM: {'vcpus': {str(i): list(v)
                               for i, v in enumerate(vcpus)}}}})
    return dataclasses.replace(host_report, sections={
        'vcpu_sizing': reporting.SizingSection(affinity=affinity)})


class SizingViewTest(testtools.TestCase):
    """The affinities' derived values are computed once per change."""

    def setUp(self):
        super().setUp()
        self.calls = []
        real = notify.pcpu_levels

        def counting(affinity):
            self.calls.append(affinity)
            return real(affinity)
        self.patch(notify, 'pcpu_levels', counting)

    def test_levels_derived_once_per_change(self):
        pub = notify.NotificationStatePublisher(
            RecordingTransport(), 'cmp1', 'topic', clock=Clock())
        for doc in [sized(report())] * 3 + [sized(report(), pcpus=(0, 1))]:
            pub.publish(doc)
        self.assertEqual(2, len(self.calls))
        built = notify.to_host_cache_state(
            sized(report(), pcpus=(0, 1)), 'cmp1')
        # The same values as a state built without the view.
        self.assertEqual(built.pcpu_levels, notify.pcpu_levels(
            built.vcpu_affinity))
        self.assertEqual(state_wire.PcpuLevels(2, ((1, 1, 2),)),
                         built.pcpu_levels)

    def test_pinned_to_1_5_computes_no_levels(self):
        transport = RecordingTransport()
        pub = notify.NotificationStatePublisher(
            transport, 'cmp1', 'topic', version='1.5')
        pub.publish(sized(report()))
        self.assertEqual([], self.calls)
        payload = transport.sent[0][1]
        self.assertEqual(4, len(host_state.from_payload(
            payload).vcpu_affinity.pcpus))
