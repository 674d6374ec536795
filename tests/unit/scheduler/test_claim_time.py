"""The domain chosen when Nova claims (per-domain model), under concurrency.

Nova's scheduler filters, weighs and claims one request in one thread and
claims ``host_state.allocation_candidates[0]``; these tests read index 0
exactly as Nova does, from real threads, with the filter's ordering and
the process's claim ledger.
"""

import threading

import testtools

from nova_cacheaware.scheduler import claim_time
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import domain_order
from tests.unit.scheduler import test_claims as tc


def provider(candidate):
    return domain_order.candidate_provider(candidate)


class Cache(object):
    """The live-state cache's read side: one state for every host."""

    def __init__(self, live=None, received=None):
        self.live, self.at = live, received

    def get(self, host):
        return self.live

    def received(self, host):
        return self.at

    def located(self, uuid):
        return None


class ReservationLedgerTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = tc.Clock()
        self.ledger = claims.ClaimLedger(600, 60, clock=self.clock,
                                         pending=10)

    def reserve(self, host, domain, instance='vm-1'):
        self.ledger.reserve(host, claims.Claim(
            domain, instance, 2, True, self.clock.now, pending=True))

    def test_a_reservation_counts_until_its_pending_time(self):
        self.reserve('h', 'a')
        self.clock.now += 10
        self.assertEqual(['a'], [c.provider for c in self.ledger.claims('h')])
        self.clock.now += 0.5
        self.assertEqual([], self.ledger.claims('h'))

    def test_the_consumed_claim_replaces_the_reservation(self):
        self.reserve('h', 'a')
        self.ledger.record('h', claims.Claim('a', 'vm-1', 2, True,
                                             self.clock.now))
        held = self.ledger.claims('h')
        self.assertEqual([('a', False)], [(c.provider, c.pending)
                                          for c in held])
        # A claim lives its memory, not the pending time.
        self.clock.now += 30
        self.assertEqual(1, len(self.ledger.claims('h')))

    def test_a_reservation_on_another_host_replaces_the_failed_one(self):
        # Placement refused the claim on h1; Nova moved on to h2.
        self.reserve('h1', 'a')
        self.reserve('h2', 'x')
        self.assertEqual([], self.ledger.claims('h1'))
        self.assertEqual(['x'], [c.provider for c in self.ledger.claims('h2')])

    def test_other_requests_reservations_stay(self):
        self.reserve('h', 'a', instance='vm-1')
        self.reserve('h', 'b', instance='vm-2')
        self.assertEqual(['a', 'b'],
                         [c.provider for c in self.ledger.claims('h')])

    def test_a_shared_claim_replaces_the_instance_on_every_host(self):
        self.ledger.add('h1', claims.Claim('a', 'vm-1', 2, True, 100.0,
                                           pending=True))
        self.ledger.add('h2', claims.Claim('x', 'vm-1', 2, True, 100.0))
        self.assertEqual([], self.ledger.claims('h1'))
        self.assertEqual(1, len(self.ledger.claims('h2')))

    def test_no_memory_means_no_reservation_either(self):
        ledger = claims.ClaimLedger(0, 60, clock=self.clock, pending=10)
        ledger.reserve('h', claims.Claim('a', 'vm', 2, True, 100.0,
                                         pending=True))
        self.clock.now += 0.1
        self.assertEqual([], ledger.claims('h'))


class ClaimTimeTest(testtools.TestCase):
    """Requests of one process, each in its own thread, as in Nova."""

    def setUp(self):
        super().setUp()
        self.clock = tc.Clock()
        self.shared = []
        self.ledger = claims.ClaimLedger(
            600, 60, clock=self.clock, pending=10,
            on_claim=lambda host, claim: self.shared.append((host, claim)))
        self.host = tc.FakeHostState()
        self.cands = [tc.candidate('root', p) for p in ('a', 'b', 'c', 'd')]

    def filter_host(self, request, instance, live=None, cands=None):
        """What CacheDomainFilter does for the host in this thread."""
        cands = cands or self.cands
        claim_time.begin(request, instance)
        ordered = domain_order.order_candidates(
            self.host, cands, 2, True, instance, live, None, self.ledger,
            request=request)
        claim_time.offer(self.host.uuid, cands, self.host, self.terms(
            instance, request, Cache(live)))
        return claim_time.ClaimTimeCandidates(ordered, self.host.uuid)

    def terms(self, instance, request, cache=None):
        return claim_time.Terms(2, True, instance, request, False,
                                cache or Cache(), self.ledger)

    def same_first(self, count):
        """``count`` instance uuids the filter orders alike on the host.

        The tie-break between equally good domains is a stable hash of
        the instance: these are the instances that collide.
        """
        found = {}
        for n in range(500):
            instance = 'vm-%d' % n
            _ordered, first = domain_order.rank_candidates(
                self.host, self.cands, 2, True, instance, None, None,
                self.ledger)
            found.setdefault(first, []).append(instance)
            if len(found[first]) == count:
                return found[first]
        raise AssertionError('no %d instances ordered alike' % count)

    def test_requests_filtered_together_claim_distinct_domains(self):
        # Every request is filtered before any reads its candidate, and
        # the filter puts the same domain first for all of them: the race
        # the README demo lost servers to.
        count = 4
        instances = self.same_first(count)
        filtered = threading.Barrier(count)
        firsts, claimed = {}, {}

        def request(instance):
            lst = self.filter_host(object(), instance)
            firsts[instance] = provider(list.__getitem__(lst, 0))
            filtered.wait(timeout=10)
            claimed[instance] = provider(lst[0])   # Nova's read, its claim

        threads = [threading.Thread(target=request, args=(i,))
                   for i in instances]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual(1, len(set(firsts.values())), firsts)
        self.assertEqual(['a', 'b', 'c', 'd'], sorted(claimed.values()))
        self.assertEqual(count, len(self.shared))
        self.assertTrue(all(c.pending for _h, c in self.shared))

    def test_a_list_replaced_by_another_request_still_claims_ours(self):
        # Nova keeps one HostState per host: request 2 sets its list on
        # it after request 1 filtered; request 1 reads request 2's list.
        lists = {}
        done = threading.Event()

        def first():
            lists[1] = self.filter_host(object(), 'vm-1')
            done.wait(10)
            lists['read-by-1'] = provider(lists[2][0])

        t = threading.Thread(target=first)
        t.start()
        other = threading.Thread(target=lambda: lists.__setitem__(
            2, self.filter_host(object(), 'vm-2')))
        other.start()
        other.join(10)
        done.set()
        t.join(10)
        # Request 1's own choice, reserved in the ledger under vm-1.
        held = {c.instance: c.provider for c in self.ledger.claims('root')}
        self.assertEqual({'vm-1': lists['read-by-1']}, held)

    def test_the_same_read_again_returns_the_same_candidate(self):
        lst = self.filter_host(object(), 'vm-1')
        first = lst[0]
        self.assertIs(first, lst[0])
        self.assertIs(first, claim_time.picked(self.host.uuid))
        self.assertEqual(1, len(self.ledger.claims('root')))

    def test_alternates_after_the_claims_reserve_nothing(self):
        request = object()
        lst = self.filter_host(request, 'vm-1')
        lst[0]
        claim_time.consumed('vm-1')
        # Nova filters again for the alternates of the same instance.
        other_host = tc.FakeHostState(uuid='root-2')
        claim_time.begin(request, 'vm-1')
        claim_time.offer(other_host.uuid, self.cands, other_host,
                         self.terms('vm-1', request))
        alternate = claim_time.ClaimTimeCandidates(self.cands, 'root-2')
        self.assertEqual(self.cands[0], alternate[0])
        self.assertEqual([], self.ledger.claims('root-2'))
        self.assertEqual(1, len(self.ledger.claims('root')))

    def test_another_thread_or_no_filter_sees_the_list_as_ordered(self):
        lst = claim_time.ClaimTimeCandidates(self.cands[::-1], 'root')
        self.assertEqual('d', provider(lst[0]))
        self.assertEqual(['d', 'c'], [provider(c) for c in lst[:2]])
        self.assertEqual([], self.ledger.claims('root'))

    def test_every_domain_closed_since_the_filter_falls_back(self):
        # Live state arriving between filter and claim closes both
        # domains to a preferred memory-bound request.
        cands = [tc.candidate('root', p) for p in 'ab']
        closed = tc.live([('a', [], 0), ('b', [], 0)], required=('a', 'b'))
        request = object()
        claim_time.begin(request, 'vm-1')
        claim_time.offer(self.host.uuid, cands, self.host, self.terms(
            'vm-1', request, Cache(closed, 100.0)))
        lst = claim_time.ClaimTimeCandidates(cands, self.host.uuid)
        self.assertEqual(cands[0], lst[0])
        self.assertEqual([], self.ledger.claims('root'))
