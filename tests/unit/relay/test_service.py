"""The state relay's adapter and command, with recording transports."""

import threading
import time

import fixtures
import testtools

from nova_cacheaware.cmd import state_relay as cmd
from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_digest
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import exception
from nova_cacheaware.policy import state_relay as sr
from nova_cacheaware.relay import service
from tests.unit.policy import test_state_relay as core


class Sink:
    """Records what a transport is asked to send; may fail."""

    def __init__(self):
        self.sent = []
        self.fail = False
        self.cleaned = False

    def _send_notification(self, target, ctxt, message, version, retry=None):
        if self.fail:
            raise OSError('bus down')
        self.sent.append((target.topic, message['event_type'],
                          message['payload']))

    def cleanup(self):
        self.cleaned = True


class StateRelayTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 0.0
        self.sink = Sink()
        self.relay = service.StateRelay(
            Sink(), self.sink, sr.RelayTable(core.RULES, 'relay-a'),
            'in', 'out', 'pool', max_state_bytes=1 << 16,
            clock=lambda: self.now)

    def test_forwards_changes_in_the_digest_with_the_hosts_heard(self):
        state = core.payload('cmp1', 5, 1, core.off_turn('cmp1'))
        self.relay.received('agent', host_state.EVENT_TYPE, state)
        self.relay.received('agent', host_state.EVENT_TYPE, state)
        self.relay.received('agent', state_wire.HEARTBEAT_EVENT,
                            core.beat('cmp2', 9))
        # Nothing goes out before the digest.
        self.assertEqual([], self.sink.sent)
        self.now = 0.5
        self.assertEqual(1, self.relay.flush())
        self.assertEqual([
            ('out.info', state_digest.DIGEST_EVENT,
             {'version': '1.0', 'relay': 'relay-a', 'states': [state],
              'entries': [['cmp1', 5, 500, True], ['cmp2', 9, 500, True]]}),
        ], self.sink.sent)
        self.assertEqual(1, self.relay.sent[state_digest.DIGEST_EVENT][0])
        self.assertEqual(0, self.relay.flush())

    def test_a_waiting_state_brings_the_digest_forward(self):
        relay = service.StateRelay(
            Sink(), self.sink, sr.RelayTable(core.RULES, 'relay-a'),
            'in', 'out', 'pool', digest_interval_s=60.0,
            max_state_delay_s=0.05)
        relay._thread = threading.Thread(target=relay._run, daemon=True)
        relay._thread.start()
        self.addCleanup(relay.stop, cleanup=False)
        state = core.payload('cmp1', 5, 1, core.off_turn('cmp1'))
        relay.received('agent', host_state.EVENT_TYPE, state)
        deadline = time.monotonic() + 30
        while not self.sink.sent and time.monotonic() < deadline:
            time.sleep(0.01)
        # Sent within the state's delay, not the 60 s interval.
        self.assertEqual([[state]],
                         [p.get('states') for _t, _e, p in self.sink.sent])

    def test_garbage_is_counted_never_raised(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_cacheaware.policy.state_relay.read_heartbeat',
            lambda doc: 1 / 0))
        for event, doc in ((host_state.EVENT_TYPE, {'x': 1}),
                           (host_state.EVENT_TYPE, 'text'),
                           (host_state.EVENT_TYPE,
                            core.payload('big' * 30000, 1)),
                           (state_wire.HEARTBEAT_EVENT,
                            core.beat('a', 1))):
            self.relay.received('agent', event, doc)
        self.assertEqual({('state', 'invalid'): 3,
                          ('heartbeat', 'invalid'): 1},
                         self.relay.table.counts)
        self.assertEqual([], self.sink.sent)

    def test_a_failed_forward_is_sent_again_at_the_next_state(self):
        state = core.payload('cmp1', 5, 1, core.off_turn('cmp1'))
        self.sink.fail = True
        self.relay.received('agent', host_state.EVENT_TYPE, state)
        self.relay.flush()
        self.assertEqual(1, self.relay.table.counts[
            (state_digest.DIGEST_EVENT, 'send_failed')])
        self.sink.fail = False
        # The same state again: forwarded, not folded.
        self.relay.received('agent', host_state.EVENT_TYPE, state)
        self.relay.flush()
        self.assertEqual([[state]],
                         [p.get('states') for _t, _e, p in self.sink.sent])

    def test_wants_mark_hosts_for_their_next_state(self):
        state = core.payload('cmp1', 5, 1, core.off_turn('cmp1'))
        for _ in range(2):
            self.relay.received('agent', host_state.EVENT_TYPE, state)
            self.relay.flush()
        self.relay.wanted('sched', state_digest.want_payload('s', ['cmp1']))
        self.relay.wanted('sched', {'hosts': 'garbage'})
        self.relay.received('agent', host_state.EVENT_TYPE, state)
        self.relay.flush()
        # Forwarded the first time and once wanted; folded in between.
        self.assertEqual([[state], None, [state]],
                         [p.get('states') for _t, _e, p in self.sink.sent])
        self.assertEqual(1, self.relay.table.counts[('want', 'invalid')])
        rule = service.WantEndpoint.filter_rule
        self.assertTrue(rule.match({}, 'p', state_digest.WANT_EVENT, {}, {}))
        self.assertFalse(rule.match({}, 'p', host_state.EVENT_TYPE, {}, {}))

    def test_wanted_hosts_agents_are_asked(self):
        asked = []

        class Requester:
            def host(self, host):
                asked.append(host)

            def everyone(self):
                asked.append('*')

        self.relay.requester = Requester()
        for i in range(service.FANOUT_AT + 1):
            self.relay.received('agent', state_wire.HEARTBEAT_EVENT,
                                core.beat('cmp%d' % i, 1))
        want = state_digest.want_payload
        self.relay.wanted('s', want('s', ['cmp1', 'unknown']))
        self.assertEqual(['cmp1'], asked)
        hosts = ['cmp%d' % i for i in range(service.FANOUT_AT + 1)]
        self.relay.wanted('s', want('s', hosts))
        self.relay.wanted('s', want('s', hosts))    # within a minute
        self.assertEqual(['cmp1', '*'], asked)
        self.now = service.FANOUT_EVERY_S
        self.relay.wanted('s', want('s', hosts))
        self.assertEqual(['cmp1', '*', '*'], asked)

    def test_endpoint_filter_takes_agent_messages_only(self):
        rule = service.RelayEndpoint.filter_rule
        self.assertTrue(rule.match({}, 'p', host_state.EVENT_TYPE, {}, {}))
        self.assertTrue(rule.match({}, 'p', state_wire.HEARTBEAT_EVENT, {},
                                   {}))
        # Its own digests (and the schedulers' claims) are not read.
        self.assertFalse(rule.match({}, 'p', state_digest.DIGEST_EVENT, {},
                                    {}))
        self.assertFalse(rule.match({}, 'p', 'cacheaware.claim', {}, {}))


class CommandTest(testtools.TestCase):

    def test_refuses_to_read_what_it_sends(self):
        conf = cmd.make_conf([])
        self.assertRaises(exception.InvalidInput, cmd.build, conf, 'r')

    def test_builds_from_its_file(self):
        path = self.useFixture(fixtures.TempDir()).join('relay.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = rabbit://u:p@cell1:5672/\n'
                    '[oslo_messaging_notifications]\n'
                    'transport_url = rabbit://u:p@api:5672/\n'
                    '[state_relay]\ndigest_interval_s = 2\n'
                    'full_state_every = 4\nagent_resync_s = 600\n')
        relay = cmd.build(cmd.make_conf(['--config-file', path]), 'r')
        self.addCleanup(relay.sink.cleanup)
        self.addCleanup(relay.source.cleanup)
        self.addCleanup(relay.rpc_transport.cleanup)
        self.assertIsNotNone(relay.requester)
        self.assertEqual((2.0, 4, 600.0, 'cacheaware-state-relay'),
                         (relay.digest_interval_s,
                          relay.table.rules.full_state_every,
                          relay.table.rules.resync_window_s, relay.pool))
