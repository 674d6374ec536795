"""Scheduler workers sharing their claims: payload, endpoint, ledger."""

import dataclasses
import logging
import threading

import fixtures
from oslo_config import fixture as config_fixture
import oslo_messaging
import testtools

from nova_cacheaware import conf as ca_conf
from nova_cacheaware import exception
from nova_cacheaware.scheduler import claim_share
from nova_cacheaware.scheduler import claims


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def claim(provider='L3-1', instance='vm-1', vcpus=2, memory=True, at=100.0,
          clean_required=False):
    return claims.Claim(provider, instance, vcpus, memory, at,
                        clean_required=clean_required)


class PayloadTest(testtools.TestCase):

    def test_exact_payload_and_round_trip(self):
        payload = claim_share.to_payload('cn-1', claim(), 'sched-a-11')
        self.assertEqual({'version': '1.2', 'origin': 'sched-a-11',
                          'host': 'cn-1', 'domain': 'L3-1',
                          'instance': 'vm-1', 'vcpus': 2,
                          'memory_bound': True, 'clean_required': False,
                          'pending': False},
                         payload)
        self.assertEqual(('sched-a-11', 'cn-1', claim(at=7.5)),
                         claim_share.from_payload(payload, 7.5))
        required = claim(clean_required=True)
        self.assertEqual(('sched-a-11', 'cn-1', claim(at=7.5,
                                                      clean_required=True)),
                         claim_share.from_payload(claim_share.to_payload(
                             'cn-1', required, 'sched-a-11'), 7.5))
        reserved = dataclasses.replace(claim(), pending=True)
        self.assertTrue(claim_share.from_payload(claim_share.to_payload(
            'cn-1', reserved, 'sched-a-11'), 7.5)[2].pending)
        # A 1.1 sender shares claims only, never reservations.
        older = dict(payload, version='1.1')
        del older['pending']
        self.assertEqual(claim(at=7.5),
                         claim_share.from_payload(older, 7.5)[2])
        # A 1.0 sender's claim: not known to be required.
        older = dict(payload, version='1.0')
        del older['clean_required'], older['pending']
        self.assertEqual(claim(at=7.5),
                         claim_share.from_payload(older, 7.5)[2])
        # A later minor version with more fields is read.
        self.assertEqual('cn-1', claim_share.from_payload(
            dict(payload, version='1.3', extra=1), 7.5)[1])

    def test_refusals(self):
        good = claim_share.to_payload('cn-1', claim(), 'sched-a-11')
        cases = [
            ([], 'payload must be an object'),
            (dict(good, version='2.0'), "version '2.0' not supported"),
            (dict(good, version=None), 'version None not supported'),
            (dict(good, origin=''), 'origin must be a non-empty string'),
            (dict(good, host=3), 'host must be a non-empty string'),
            (dict(good, domain=None), 'domain must be a non-empty string'),
            (dict(good, instance=4), 'instance must be a string'),
            (dict(good, vcpus=0), 'vcpus must be an int >= 1'),
            (dict(good, vcpus=True), 'vcpus must be an int >= 1'),
            (dict(good, vcpus='2'), 'vcpus must be an int >= 1'),
            (dict(good, memory_bound='yes'), 'memory_bound must be a bool'),
            (dict(good, clean_required=1), 'clean_required must be a bool'),
        ]
        for payload, message in cases:
            ex = self.assertRaises(exception.InvalidInput,
                                   claim_share.from_payload, payload, 1.0)
            self.assertIn(message, str(ex))


class LedgerSharingTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()
        self.ledger = claims.ClaimLedger(memory=600, settle=60,
                                         clock=self.clock)

    def test_recorded_claims_are_handed_to_on_claim(self):
        sent = []
        self.ledger.on_claim = lambda host, c: sent.append((host, c))
        self.ledger.hand_out('h', 0, claim(provider=None),
                             resolve=lambda: 'L3-2')
        self.assertEqual([], sent)          # handed out, not claimed
        self.ledger.observe('h', 1)
        self.assertEqual([('h', claim('L3-2'))], sent)

    def test_added_claims_count_like_own_and_once(self):
        self.ledger.add('h', claim('L3-0', 'vm-9'))
        self.ledger.add('h', claim('L3-0', 'vm-9'))   # heard twice
        self.ledger.add('h', claim('L3-1', 'vm-8'))
        self.assertEqual([claim('L3-0', 'vm-9'), claim('L3-1', 'vm-8')],
                         self.ledger.claims('h'))
        # They end as own claims do: listed by the live state...
        self.assertEqual([claim('L3-1', 'vm-8')],
                         self.ledger.claims('h', received=101.0,
                                            listed={'vm-9'}))
        # ... or not listed by a state received settle seconds later.
        self.assertEqual([], self.ledger.claims('h', received=160.0))

    def test_endpoint_adds_others_claims_skips_own_and_bad(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.scheduler.claim_share'))
        endpoint = claim_share.HostClaimEndpoint(lambda: self.ledger,
                                                 'sched-a-11')
        other = claim_share.to_payload('cn-1', claim(), 'sched-a-12')
        own = claim_share.to_payload('cn-1', claim('L3-3', 'vm-2'),
                                     'sched-a-11')
        for payload in (other, own, dict(other, vcpus=-1)):
            self.assertEqual(
                oslo_messaging.NotificationResult.HANDLED,
                endpoint.info({}, 'p', claim_share.EVENT_TYPE, payload, {}))
        self.assertEqual([claim()], self.ledger.claims('cn-1'))
        self.assertIn('Dropping cacheaware.host.claim from p: invalid input: '
                      'vcpus must '
                      'be an int >= 1', log.output)


class ShareWithTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        conf = self.useFixture(config_fixture.Config(ca_conf.CONF))
        conf.config(listen_for_host_state=False,
                    group='cacheaware_scheduler')
        claims.reset()
        self.addCleanup(claims.reset)
        self.addCleanup(claims.share_with, None)

    def test_the_ledger_gets_the_publisher_before_or_after_creation(self):
        def sink(host, c):
            return None
        claims.share_with(sink)
        self.assertIs(sink, claims.get_ledger(60, 30).on_claim)
        claims.share_with(None)
        self.assertIsNone(claims.get_ledger(60, 30).on_claim)
        claims.reset()
        claims.share_with(sink)
        self.assertIs(sink, claims.get_ledger(60, 30).on_claim)

    def test_the_default_publisher_sends_the_payload_on_the_topic(self):
        sent = []

        class Transport:
            def _send_notification(self, target, ctxt, message, version,
                                   retry=None):
                sent.append((target.topic, ctxt, version, retry,
                             {k: v for k, v in message.items()
                              if k not in ('message_id', 'timestamp')}))

        publisher = claim_share.ClaimPublisher(Transport(), 'topic-t', 'w1')
        publisher('cn-1', claim())
        self.assertTrue(publisher.stop(timeout=10))
        # What the messagingv2 notification driver sends, one attempt.
        self.assertEqual([('topic-t.info', {}, 2.0, 0, {
            'publisher_id': 'nova-cacheaware-scheduler.w1',
            'event_type': 'cacheaware.host.claim', 'priority': 'INFO',
            'payload': claim_share.to_payload('cn-1', claim(), 'w1')})],
            sent)
        self.assertEqual((1, 1, 0, 0), (publisher.queued, publisher.sent,
                                        publisher.failed, publisher.dropped))

    def test_a_delivery_failure_is_counted_not_sent(self):
        class Transport:
            def _send_notification(self, *args, **kwargs):
                raise oslo_messaging.MessageDeliveryFailure('refused')

        publisher = claim_share.ClaimPublisher(Transport(), 't', 'w1')
        publisher('cn-1', claim())
        self.assertTrue(publisher.stop(timeout=10))
        self.assertEqual((1, 0, 1, 0), (publisher.queued, publisher.sent,
                                        publisher.failed, publisher.dropped))


class BackgroundSenderTest(testtools.TestCase):
    """The request path only queues; one thread sends; full drops oldest."""

    def test_full_queue_drops_the_oldest_and_counts(self):
        taken, release = threading.Event(), threading.Event()
        sent, threads = [], set()

        def send(host, c):
            threads.add(threading.current_thread().name)
            taken.set()
            release.wait(10)     # the bus hangs until released
            sent.append((host, c.instance))

        publisher = claim_share.ClaimPublisher(None, 't', 'o', send=send,
                                               size=3)
        publisher('cn-1', claim(instance='vm-0'))
        self.assertTrue(taken.wait(10))   # the sender holds vm-0
        for index in range(1, 6):
            publisher('cn-1', claim(instance='vm-%d' % index))
        # Six calls returned while the one send hangs: vm-1 and vm-2 were
        # pushed out by vm-4 and vm-5.
        self.assertEqual(['vm-3', 'vm-4', 'vm-5'],
                         [c.instance for _, c in publisher.pending()])
        self.assertEqual((6, 0, 0, 2), (publisher.queued, publisher.sent,
                                        publisher.failed, publisher.dropped))
        release.set()
        self.assertTrue(publisher.stop(timeout=10))
        self.assertEqual([('cn-1', 'vm-0'), ('cn-1', 'vm-3'),
                          ('cn-1', 'vm-4'), ('cn-1', 'vm-5')], sent)
        self.assertEqual((6, 4, 0, 2), (publisher.queued, publisher.sent,
                                        publisher.failed, publisher.dropped))
        self.assertEqual({'cacheaware-claim-share'}, threads)

    def test_a_publisher_that_cannot_send_never_raises(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))

        def send(host, c):
            raise OSError('bus down')

        publisher = claim_share.ClaimPublisher(None, 't', 'o', send=send)
        for index in range(3):
            publisher('cn-%d' % index, claim())
        self.assertTrue(publisher.stop(timeout=10))
        self.assertEqual((3, 0, 3, 0), (publisher.queued, publisher.sent,
                                        publisher.failed, publisher.dropped))
        self.assertIn('cannot share claim on cn-2: bus down', log.output)

    def test_one_sender_thread_for_many_claims(self):
        started = []
        real = threading.Thread

        def counting(*args, **kwargs):
            started.append(kwargs.get('name'))
            return real(*args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(threading, 'Thread',
                                                 counting))
        publisher = claim_share.ClaimPublisher(
            None, 't', 'o', send=lambda host, c: None)
        self.assertEqual([], started)     # none before the first claim
        for index in range(20):
            publisher('cn-1', claim(instance='vm-%d' % index))
        self.assertTrue(publisher.stop(timeout=10))
        self.assertEqual(['cacheaware-claim-share'], started)
        self.assertEqual((20, 20, 0, 0), (publisher.queued, publisher.sent,
                                          publisher.failed,
                                          publisher.dropped))

    def test_stopped_before_any_claim(self):
        publisher = claim_share.ClaimPublisher(
            None, 't', 'o', send=lambda host, c: None, size=2)
        self.assertTrue(publisher.stop())
        for index in range(3):
            publisher('cn-1', claim(instance='vm-%d' % index))
        # No thread any more: claims are kept (the newest two), not sent.
        self.assertEqual(['vm-1', 'vm-2'],
                         [c.instance for _, c in publisher.pending()])
        self.assertEqual((3, 0, 0, 1), (publisher.queued, publisher.sent,
                                        publisher.failed, publisher.dropped))
