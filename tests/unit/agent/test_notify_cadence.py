"""The agent's publisher: state on change, heartbeats between, pinning.

The transport records what oslo.messaging would be handed (the real bus is
in tests/functional/agent/test_reporting.py and test_host_state_bus.py).
"""

import testtools

from nova_cacheaware.agent import notify
from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_wire
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
    return {'health': 'ok',
            'domains': {'L3-0': {'memory_vms': list(memory_vms)},
                        'L3-1': {'memory_vms': []}},
            'vms': {u: {'workload': 'memory', 'domains': ['L3-0'],
                        'vcpus': 2} for u in memory_vms}}


class PublisherTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.transport = RecordingTransport()
        self.clock = Clock()
        self.pub = notify.NotificationStatePublisher(
            self.transport, 'cmp1', 'topic',
            cadence=state_cadence.Cadence(heartbeat_s=60, resync_s=300),
            clock=self.clock)

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
