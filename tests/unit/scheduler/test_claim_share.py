"""Scheduler workers sharing their claims: payload, endpoint, ledger."""

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


def claim(provider='L3-1', instance='vm-1', vcpus=2, memory=True, at=100.0):
    return claims.Claim(provider, instance, vcpus, memory, at)


class PayloadTest(testtools.TestCase):

    def test_exact_payload_and_round_trip(self):
        payload = claim_share.to_payload('cn-1', claim(), 'sched-a-11')
        self.assertEqual({'version': '1.0', 'origin': 'sched-a-11',
                          'host': 'cn-1', 'domain': 'L3-1',
                          'instance': 'vm-1', 'vcpus': 2,
                          'memory_bound': True}, payload)
        self.assertEqual(('sched-a-11', 'cn-1', claim(at=7.5)),
                         claim_share.from_payload(payload, 7.5))
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

    def test_a_publisher_that_cannot_send_never_raises(self):
        class Broken:
            def info(self, *args):
                raise OSError('bus down')

        publisher = claim_share.ClaimPublisher.__new__(
            claim_share.ClaimPublisher)
        publisher.origin, publisher.sent, publisher.failed = 'o', 0, 0
        publisher._notifier = Broken()
        publisher('cn-1', claim())
        self.assertEqual((0, 1), (publisher.sent, publisher.failed))
