"""The scheduler process's claim ledger and the candidate ordering."""

import datetime

import testtools

from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import domain_order
from nova_cacheaware.scheduler import host_state as hs


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def claim(provider, instance='vm', vcpus=2, memory=True, at=100.0):
    return claims.Claim(provider, instance, vcpus, memory, at)


class ClaimLedgerTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()
        self.ledger = claims.ClaimLedger(memory=600, settle=60,
                                         clock=self.clock)

    def test_hand_out_counts_only_once_the_host_grew(self):
        self.ledger.hand_out('h', 3, claim('a'))
        self.ledger.observe('h', 3)
        self.assertEqual([], self.ledger.claims('h'))
        self.ledger.observe('h', 4)
        self.assertEqual([claim('a')], self.ledger.claims('h'))
        # The hand-out is consumed: a second growth adds nothing.
        self.ledger.observe('h', 5)
        self.assertEqual([claim('a')], self.ledger.claims('h'))

    def test_claim_ends_when_live_state_lists_the_instance(self):
        self.ledger.hand_out('h', 0, claim('a', instance='vm-1'))
        self.ledger.observe('h', 1)
        self.assertEqual([], self.ledger.claims('h', received=101.0,
                                                listed={'vm-1'}))

    def test_claim_ends_when_a_settled_state_lacks_it(self):
        self.ledger.hand_out('h', 0, claim('a'))
        self.ledger.observe('h', 1)
        self.assertEqual(1, len(self.ledger.claims('h', received=159.0)))
        self.assertEqual([], self.ledger.claims('h', received=160.0))

    def test_claim_ends_after_its_memory_without_state(self):
        self.ledger.hand_out('h', 0, claim('a'))
        self.ledger.observe('h', 1)
        self.clock.now = 700.0
        self.assertEqual(1, len(self.ledger.claims('h')))
        self.clock.now = 700.1
        self.assertEqual([], self.ledger.claims('h'))

    def test_claim_ends_when_another_hosts_state_lists_the_instance(self):
        # The hand-outs of one request on two hosts, both seen grown (the
        # second by another instance): the one whose instance another
        # host's state lists is dropped there.
        for host in ('h1', 'h2'):
            self.ledger.hand_out(host, 0, claim('a', instance='vm-1'))
            self.ledger.observe(host, 1)
        where = {'vm-1': 'h2'}
        self.assertEqual([], self.ledger.claims(
            'h1', elsewhere=lambda u: where.get(u, 'h1') != 'h1'))
        self.assertEqual([claim('a', instance='vm-1')], self.ledger.claims(
            'h2', elsewhere=lambda u: where.get(u, 'h2') != 'h2'))

    def test_claims_per_host_are_bounded(self):
        for n in range(claims.MAX_CLAIMS_PER_HOST + 10):
            self.ledger.hand_out('h', n, claim('a', instance=str(n)))
            self.ledger.observe('h', n + 1)
        held = self.ledger.claims('h')
        self.assertEqual(claims.MAX_CLAIMS_PER_HOST, len(held))
        self.assertEqual('10', held[0].instance)


def candidate(root, provider, vcpus=2, membound=True):
    resources = {names.RC_DOMAIN_VCPU: vcpus}
    if membound:
        resources[names.RC_DOMAIN_MEMBOUND] = 1
    return {'allocations': {root: {'resources': {'VCPU': vcpus}},
                            provider: {'resources': resources}},
            'mappings': {}}


class FakeHostState:
    """Only the HostState attributes the ordering reads."""

    def __init__(self, uuid='root', num_instances=0, ratio=1.0):
        self.uuid = uuid
        self.host = 'compute1'
        self.num_instances = num_instances
        self.cpu_allocation_ratio = ratio


def live(domains, required=()):
    """A HostCacheState: ``domains`` is ``[(provider, [vms], used)]``.

    ``required``: the providers whose domain holds a
    ``cache_clean=required`` instance.
    """
    return hs.HostCacheState(
        host='compute1',
        timestamp=datetime.datetime.now(datetime.timezone.utc),
        agent_healthy=True,
        domains=tuple(wire.DomainState(
            id='L3-%d' % i, state=wire.domain_state(len(vms)),
            memory_bound_vms=tuple(vms), usable_cpus=4,
            provider_uuid=provider, vcpus_used=used,
            required_holders=int(provider in required))
            for i, (provider, vms, used) in enumerate(domains)))


class OrderCandidatesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()
        self.ledger = claims.ClaimLedger(600, 60, clock=self.clock)
        self.cands = [candidate('root', p) for p in ('a', 'b', 'c', 'd')]

    def first(self, host, vcpus=2, memory=True, instance='vm-0',
              state=None, received=None, cands=None):
        ordered = domain_order.order_candidates(
            host, cands or self.cands, vcpus, memory, instance, state,
            received, self.ledger)
        return domain_order.candidate_provider(ordered[0])

    def test_multi_create_gets_a_new_domain_per_instance(self):
        host = FakeHostState()
        used = []
        for n in range(4):
            used.append(self.first(host, instance='vm-%d' % n))
            host.num_instances += 1     # what Nova's claim + consume does
        self.assertEqual(['a', 'b', 'c', 'd'], sorted(used))

    def test_repeated_multi_creates_with_stale_claims(self):
        # Servers of earlier multi-creates were deleted without the
        # scheduler knowing; each new multi-create still gets 4 domains.
        host = FakeHostState()
        for round_ in range(5):
            used = []
            for n in range(4):
                ordered = domain_order.order_candidates(
                    host, self.cands, 2, True, 'vm-%d-%d' % (round_, n),
                    None, None, self.ledger, request=round_)
                used.append(domain_order.candidate_provider(ordered[0]))
                host.num_instances += 1
                self.clock.now += 0.1
            self.assertEqual(['a', 'b', 'c', 'd'], sorted(used), round_)
            host.num_instances = 0      # deleted; the compute reported it
            self.clock.now += 5

    def test_live_state_memory_bound_domains_come_last(self):
        state = live([('a', ['x'], 2), ('b', [], 0), ('c', ['y'], 2),
                      ('d', ['z'], 2)])
        self.assertEqual('b', self.first(FakeHostState(), state=state,
                                         received=100.0))

    def test_best_fit_with_live_capacity(self):
        state = live([('a', [], 0), ('b', ['x'], 2), ('c', ['y'], 4),
                      ('d', ['z'], 1)])
        cands = [candidate('root', p, membound=False) for p in 'abcd']
        # c is full (4 of 4): b (2 of 4) is the fullest that fits.
        self.assertEqual('b', self.first(FakeHostState(), memory=False,
                                         state=state, received=100.0,
                                         cands=cands))

    def test_own_claims_add_to_live_state(self):
        state = live([('a', [], 0), ('b', [], 0)])
        host = FakeHostState()
        cands = [candidate('root', p) for p in 'ab']
        first = self.first(host, state=state, received=100.0, cands=cands)
        host.num_instances += 1
        second = self.first(host, instance='vm-1', state=state,
                            received=100.0, cands=cands)
        self.assertEqual({'a', 'b'}, {first, second})

    def test_candidates_without_a_domain_keep_their_place_at_the_end(self):
        plain = {'allocations': {'root': {'resources': {'VCPU': 2}}}}
        ordered = domain_order.order_candidates(
            FakeHostState(), [plain] + self.cands[:1], 2, True, 'vm', None,
            None, self.ledger)
        self.assertEqual([self.cands[0], plain], ordered)


class ClosedDomainsTest(testtools.TestCase):
    """Per-domain model: a required instance's domain is closed."""

    def setUp(self):
        super().setUp()
        self.ledger = claims.ClaimLedger(600, 60, clock=Clock())
        self.cands = [candidate('root', p, membound=False) for p in 'ab']

    def order(self, host, memory, state=None, instance='vm-0',
              clean_required=False):
        ordered = domain_order.order_candidates(
            host, self.cands, 1, memory, instance, state,
            None if state is None else 100.0, self.ledger,
            request=instance, clean_required=clean_required)
        return [domain_order.candidate_provider(c) for c in ordered]

    def test_live_state_closes_the_domain_to_memory_bound(self):
        # a holds a required VM (with room left), b a preferred one.
        state = live([('a', ['r'], 1), ('b', ['p'], 1)], required={'a'})
        for n in range(8):
            self.assertEqual(['b'], self.order(FakeHostState(), True,
                                               state, 'vm-%d' % n))
        # A cpu-bound request may share it: best fit keeps both.
        self.assertEqual(2, len(self.order(FakeHostState(), False, state)))

    def test_only_closed_domains_leave_no_candidate(self):
        state = live([('a', ['r'], 1), ('b', ['s'], 1)], required={'a', 'b'})
        self.assertEqual([], self.order(FakeHostState(), True, state))
        self.assertIsNone(self.ledger.handed_out('root'))

    def test_a_required_claim_closes_its_domain_at_once(self):
        # The live state does not list the required instance yet.
        state = live([('a', [], 0), ('b', [], 0)])
        host = FakeHostState()
        first = self.order(host, True, state, clean_required=True)[0]
        host.num_instances += 1     # what Nova's claim + consume does
        self.ledger.observe('root', host.num_instances)
        self.assertEqual(
            [(first, True)],
            [(c.provider, c.clean_required)
             for c in self.ledger.claims('root')])
        other = 'b' if first == 'a' else 'a'
        self.assertEqual([other],
                         self.order(host, True, state, instance='vm-1'))

    def test_without_live_state_claims_only_reorder(self):
        # A claim may be of a server deleted since: it must not cost a
        # placement, so a required claim's domain only comes last.
        host = FakeHostState()
        first = self.order(host, True, clean_required=True)[0]
        host.num_instances += 1
        other = 'b' if first == 'a' else 'a'
        for n in range(8):
            self.assertEqual([other, first],
                             self.order(host, True, instance='vm-%d' % n))

    def test_a_required_request_is_not_refused_by_a_claim(self):
        # Placement's MEMBOUND slot decides for a required request; a
        # stale required claim (its server deleted) only reorders.
        state = live([('a', [], 0), ('b', [], 0)])
        host = FakeHostState()
        self.ledger.hand_out('root', 0, claims.Claim(
            'a', 'gone', 1, True, self.ledger.now(), clean_required=True))
        host.num_instances += 1
        self.assertEqual(['b', 'a'], self.order(
            host, True, state, instance='vm-1', clean_required=True))
