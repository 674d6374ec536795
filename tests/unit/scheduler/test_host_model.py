"""CacheDomainFilter in the host provider model (one cache child per host).

The allocation names the host's ``<root name>:cacheaware`` child, not a
domain: the filter checks per domain (live state plus this process's own
claims) that one has room, and predicts the domain the agent will choose.
"""

import datetime
import threading
import uuid

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_config import fixture as config_fixture
import testtools

from nova import objects
from nova.scheduler import host_manager
from nova.scheduler import weights as weights_mod

from nova_cacheaware.cachedomain import assignment as domain_assignment
from nova_cacheaware.cachedomain import choice as domain_choice
from nova_cacheaware import conf as ca_conf
from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import domain_order
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import weights
from tests.unit.scheduler import test_plugins

objects.register_all()
VCPU, MEMBOUND = names.RC_DOMAIN_VCPU, names.RC_DOMAIN_MEMBOUND
ROOT = '4d1d9a0c-6f4e-4c7a-9d59-2f6d0cfd1a10'
CHILD = domain_order.host_child_uuid(ROOT)

REQUIRED = {'cacheaware:cache_share': 'all', 'cacheaware:workload': 'memory',
            'cacheaware:cache_clean': 'required'}
PREFERRED = dict(REQUIRED, **{'cacheaware:cache_clean': 'preferred'})
CPU_OFF = {'cacheaware:cache_share': 'all', 'cacheaware:workload': 'cpu',
           'cacheaware:cache_clean': 'off'}


def host_candidate(vcpus=2, clean=True, child=CHILD):
    """The host model's one candidate: the cache group on the host child."""
    cache = {VCPU: vcpus}
    if clean:
        cache[MEMBOUND] = 1
    return {'allocations': {
        ROOT: {'resources': {'VCPU': vcpus, 'MEMORY_MB': 512}},
        child: {'resources': cache}},
        'mappings': {'': [ROOT], '_CACHE': [child]}}


def host(name='h1', candidates=None, ratio=1.0, root=ROOT, instances=0):
    state = host_manager.HostState(name, name, 'cell1')
    state.uuid = root
    state.cpu_allocation_ratio = ratio
    state.num_instances = instances
    state.allocation_candidates = list(
        [host_candidate()] if candidates is None else candidates)
    return state


def spec(extra_specs, vcpus=2, instance=None):
    flavor = objects.Flavor(flavorid='f1', vcpus=vcpus, memory_mb=512,
                            root_gb=1, ephemeral_gb=0, swap=0,
                            extra_specs=extra_specs)
    result = objects.RequestSpec(flavor=flavor, num_instances=1)
    if instance is not None:
        result.instance_uuid = instance
    return result


def live(domains, name='h1', healthy=True, host_provider=CHILD, vms=(),
         capacity=None, clean=None, required=None):
    """A host-model state (no domain names a provider).

    ``domains``: (usable CPUs, vCPUs used, memory-bound VMs) of ``d0``,
    ``d1``, ...; ``capacity`` and ``clean``: the payload 1.4
    ``vcpus_capacity`` and ``clean_holders`` of each (None: a 1.3 agent);
    ``required``: the payload 1.5 ``required_holders`` of each.
    """
    return hs.HostCacheState(
        host=name, timestamp=datetime.datetime.now(datetime.timezone.utc),
        agent_healthy=healthy, host_provider=host_provider,
        domains=tuple(wire.DomainState(
            'd%d' % i, wire.domain_state(len(mem)), tuple(mem), usable, None,
            used, (capacity or {}).get(i), (clean or {}).get(i),
            (required or {}).get(i))
            for i, (usable, used, mem) in enumerate(domains)),
        vms=tuple(wire.VmState(vm) for vm in vms))


def loads(*rows):
    """DomainLoads ``d0``... from (memory_bound, used, total) rows."""
    return tuple(domain_choice.DomainLoad('d%d' % i, m, u, t)
                 for i, (m, u, t) in enumerate(rows))


def rows(*values):
    """Domain rows ``d0``... from (memory_bound, used, capacity) values.

    The Clean holders are the memory-bound instances.
    """
    return tuple(('d%d' % i, m, m, u, t)
                 for i, (m, u, t) in enumerate(values))


def fresh_filter(test):
    """``(live-state cache, CacheDomainFilter)`` with nothing remembered.

    No listener (the tests feed the cache); the process's live state and
    claims are reset now and after ``test``.
    """
    test.useFixture(config_fixture.Config(ca_conf.CONF)).config(
        listen_for_host_state=False, group='cacheaware_scheduler')
    live_state.reset()
    test.addCleanup(live_state.reset)
    claims.reset()
    test.addCleanup(claims.reset)
    return live_state.get_cache(), filters.CacheDomainFilter()


def new_uuid(index):
    return str(uuid.UUID(int=index + 1))


class HostProviderTest(testtools.TestCase):

    def test_host_child_uuid(self):
        self.assertEqual(str(uuid.uuid5(uuid.UUID(ROOT), 'cacheaware')),
                         CHILD)
        self.assertIsNone(domain_order.host_child_uuid('h1'))
        self.assertIsNone(domain_order.host_child_uuid(None))

    def test_is_host_provider_table(self):
        named = live([(3, 0, ())], host_provider='rp-host')
        unnamed = live([(3, 0, ())], host_provider=None)
        domain_model = hs.HostCacheState(
            host='h1', timestamp=named.timestamp, agent_healthy=True,
            domains=(wire.DomainState('d0', 'empty', (), 3, 'rp-d0', 0),))
        table = [
            # (provider, host uuid, live) -> host model?
            ('rp-host', ROOT, named, True),
            (CHILD, ROOT, named, False),      # the state names another
            ('rp-d0', ROOT, domain_model, False),
            ('rp-other', ROOT, domain_model, True),
            (CHILD, ROOT, unnamed, True),     # no names: the agent's uuid
            ('rp-other', ROOT, unnamed, False),
            (CHILD, ROOT, None, True),        # no live state
            ('rp-d0', ROOT, None, False),
            (CHILD, None, None, False),       # a host without uuid
        ]
        for provider, root, state, expected in table:
            self.assertEqual(expected, domain_order.is_host_provider(
                provider, root, state), (provider, state))


class RoomReasonTest(testtools.TestCase):

    def test_table(self):
        full = (0, 3, 3)
        table = [
            # (loads, vCPUs, clean required, own claims, reason or None)
            (rows(full, (0, 1, 3)), 2, True, 0, None),
            (rows(full, (1, 1, 3)), 2, False, 0, None),
            (rows(full, (1, 1, 3)), 2, True, 0,
             'no cache domain with room for 2 vCPUs is free of memory-bound '
             "instances in its agent's live state: 1 of 2 domains have "
             'room, all hold one'),
            (rows(full, (0, 2, 3)), 2, False, 0,
             "no cache domain has room for 2 vCPUs in its agent's live "
             'state: 2 domains, the most room is 1 vCPUs in d1'),
            (rows(full, (0, 2, 3)), 2, False, 3,
             "no cache domain has room for 2 vCPUs in its agent's live "
             'state (counting 3 recent claims of this scheduler): 2 '
             'domains, the most room is 1 vCPUs in d1'),
            # Unknown capacity is never "too small": Placement decides.
            (rows(full, (0, 0, None)), 8, True, 0, None),
            ((), 2, False, 0, "its agent's live state lists no cache domain"),
        ]
        for values, vcpus, clean, own, expected in table:
            self.assertEqual(expected, domain_order.room_reason(
                values, vcpus, clean, own), values)
        # A memory-bound request that does not require Clean passes the
        # domains holding a cache_clean=required instance.
        self.assertEqual(
            'every cache domain with room for 2 vCPUs holds a '
            "cache_clean=required instance in its agent's live state: 1 of "
            '2 domains have room',
            domain_order.room_reason(rows(full, (1, 1, 3)), 2, False,
                                     closed=frozenset({'d1'})))
        self.assertIsNone(domain_order.room_reason(
            rows((1, 1, 3), (1, 1, 3)), 2, False, closed=frozenset({'d1'})))
        # Clean holders that are not memory-bound (an 'auto' instance)
        # order the prediction but never refuse cache_clean=required.
        self.assertIsNone(domain_order.room_reason(
            (('d0', 0, 1, 0, 4),), 2, True))


class HostModelFilterTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.cache, self.filt = fresh_filter(self)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.scheduler.filters'))

    def ledger(self):
        opts = ca_conf.CONF.cacheaware_scheduler
        return claims.get_ledger(opts.claim_memory_seconds,
                                 opts.claim_settle_seconds)

    def predicted(self, state):
        handout = self.ledger().handed_out(state.uuid)
        return None if handout is None else handout.provider

    def test_verdict_and_prediction_table(self):
        # d0 full, d1 holds a memory-bound VM, d2 has 2 free, d3 1 free.
        domains = [(3, 3, ()), (3, 0, ('x',)), (3, 1, ()), (3, 2, ())]
        table = [
            # (extra specs, vCPUs, CPU ratio, passes, predicted domain)
            (REQUIRED, 2, 1.0, True, 'd2'),    # the only Clean room
            (PREFERRED, 2, 1.0, True, 'd2'),   # Empty before Dirty
            (CPU_OFF, 2, 1.0, True, 'd1'),     # best fit: keep d2 Empty
            (CPU_OFF, 1, 1.0, True, 'd1'),     # memory-bound domain first
            (REQUIRED, 1, 1.0, True, 'd3'),    # tightest Clean: 1 left
            (REQUIRED, 3, 1.0, False, None),   # only d1 has 3: not Clean
            (PREFERRED, 3, 1.0, True, 'd1'),   # Dirty allowed
            (CPU_OFF, 4, 1.0, False, None),
            (CPU_OFF, 4, 2.0, True, 'd1'),     # capacity 6 per domain
            (REQUIRED, 4, 2.0, True, 'd3'),    # d2: 5 free, d3: 4 (fits)
        ]
        for extra, vcpus, ratio, passes, domain in table:
            claims.reset()
            self.cache.update(live(domains))
            state = host(candidates=[host_candidate(
                vcpus, clean=extra is REQUIRED)], ratio=ratio)
            request = spec(extra, vcpus, instance=new_uuid(0))
            self.assertEqual(passes, self.filt.host_passes(state, request),
                             (extra, vcpus, ratio))
            self.assertEqual(domain, self.predicted(state),
                             (extra, vcpus, ratio))
            # The candidate is never reordered or changed.
            self.assertEqual([host_candidate(vcpus, clean=extra is REQUIRED)],
                             state.allocation_candidates)

    def test_agent_capacity_wins_over_novas_ratio_table(self):
        # Two 2-CPU domains, 1 vCPU used in each. Nova's ratio is 4.0
        # (its default); the agent sizes the domains with its own ratio.
        domains = [(2, 1, ()), (2, 1, ())]
        table = [
            # (agent capacity per domain (None: a 1.3 agent), vCPUs,
            #  passes, predicted domain)
            (None, 4, True, 'd0'),     # 2 x 4.0 = 8; tie by hash
            (None, 8, False, None),
            ({0: 2, 1: 2}, 2, False, None),  # the agent's ratio 1.0
            ({0: 2, 1: 2}, 1, True, 'd0'),   # best fit, tie by hash
            ({0: 2, 1: 4}, 3, True, 'd1'),   # only d1 has room
            ({0: 0, 1: 0}, 1, False, None),  # capacity 0: known, full
        ]
        for capacity, vcpus, passes, domain in table:
            claims.reset()
            self.cache.update(live(domains, capacity=capacity))
            state = host(candidates=[host_candidate(vcpus, clean=False)],
                         ratio=4.0)
            self.assertEqual(passes, self.filt.host_passes(
                state, spec(CPU_OFF, vcpus, instance=new_uuid(0))),
                (capacity, vcpus))
            state.num_instances += 1
            self.assertEqual(domain, self.predicted(state),
                             (capacity, vcpus))

    def test_prediction_counts_the_agents_clean_holders(self):
        # d0 and d1 hold no memory-bound VM, but the agent's choice counts
        # an 'auto' instance in d0 against Clean (payload 1.4): a
        # memory-bound request is predicted in d1, whatever the hash says.
        domains = [(4, 1, ()), (4, 0, ())]
        for index in range(8):
            claims.reset()
            self.cache.update(live(domains, clean={0: 1, 1: 0}))
            state = host()
            self.assertTrue(self.filt.host_passes(
                state, spec(REQUIRED, instance=new_uuid(index))))
            self.assertEqual('d1', self.predicted(state), index)
        # Without the field (a 1.3 agent) both look Empty: the tighter
        # one (d0, a vCPU used) whatever the hash says.
        picked = set()
        for index in range(8):
            claims.reset()
            self.cache.update(live(domains))
            state = host()
            self.filt.host_passes(state, spec(REQUIRED,
                                              instance=new_uuid(index)))
            picked.add(self.predicted(state))
        self.assertEqual({'d0'}, picked)

    def test_required_instances_domains_are_closed_to_memory_bound(self):
        # d0 holds a cache_clean=required VM with room left, d1 is full:
        # a preferred memory-bound request would take d0's Clean from it.
        self.cache.update(live([(4, 1, ('r',)), (4, 4, ())],
                               required={0: 1}))
        self.assertFalse(self.filt.host_passes(
            host(candidates=[host_candidate(1, clean=False)]),
            spec(PREFERRED, 1, instance=new_uuid(0))))
        self.assertIn('holds a cache_clean=required instance',
                      self.log.output)
        # A cpu-bound request may share it.
        state = host(candidates=[host_candidate(1, clean=False)])
        self.assertTrue(self.filt.host_passes(
            state, spec(CPU_OFF, 1, instance=new_uuid(0))))
        self.assertEqual('d0', self.predicted(state))
        # With room in d1 beside a preferred VM, a preferred request is
        # predicted there, whatever the hash says (as the agent chooses).
        for index in range(8):
            claims.reset()
            self.cache.update(live([(4, 1, ('r',)), (4, 1, ('p',))],
                                   required={0: 1}))
            state = host(candidates=[host_candidate(1, clean=False)])
            self.assertTrue(self.filt.host_passes(
                state, spec(PREFERRED, 1, instance=new_uuid(index))))
            self.assertEqual('d1', self.predicted(state), index)

    def test_a_required_claim_closes_its_domain_before_the_state_does(self):
        # The claim of a cache_clean=required instance closes its domain
        # at once: in a burst the agent's state does not list it yet.
        self.cache.update(live([(4, 0, ()), (4, 4, ())]))
        state = host(candidates=[host_candidate(2)])
        required = spec(REQUIRED, 2, instance=new_uuid(0))
        self.assertTrue(self.filt.host_passes(state, required))
        filters.record_consumed(state, required)
        self.assertEqual(
            [('d0', True)],
            [(c.provider, c.clean_required) for c in
             self.ledger().claims(ROOT, self.cache.received('h1'),
                                  frozenset())])
        self.assertFalse(self.filt.host_passes(
            host(candidates=[host_candidate(1, clean=False)]),
            spec(PREFERRED, 1, instance=new_uuid(1))))
        self.assertTrue(self.filt.host_passes(
            host(candidates=[host_candidate(1, clean=False)]),
            spec(CPU_OFF, 1, instance=new_uuid(2))))

    def test_the_hand_out_marks_a_required_claim(self):
        # Nova without consume_from_request: the claim is the hand-out,
        # seen claimed when the host's instance count grows; a required
        # one closes its domain as the exact claim does.
        for extra, required in ((REQUIRED, True), (PREFERRED, False)):
            claims.reset()
            self.cache.update(live([(4, 0, ()), (4, 4, ())]))
            state = host(candidates=[host_candidate(
                2, clean=extra is REQUIRED)])
            self.assertTrue(self.filt.host_passes(
                state, spec(extra, 2, instance=new_uuid(0))))
            state.num_instances += 1
            self.ledger().observe(state.uuid, state.num_instances)
            self.assertEqual(
                [('d0', required)],
                [(c.provider, c.clean_required) for c in
                 self.ledger().claims(ROOT, self.cache.received('h1'),
                                      frozenset())])

    def test_prediction_is_the_agents_choice(self):
        # The agent orders the same loads with the same seed.
        domains = [(4, 0, ()), (4, 0, ()), (4, 0, ()), (4, 0, ())]
        self.cache.update(live(domains))
        for index in range(8):
            claims.reset()
            instance = new_uuid(index)
            state = host()
            self.assertTrue(self.filt.host_passes(
                state, spec(REQUIRED, instance=instance)))
            agent = domain_choice.order_domains(
                loads(*[(0, 0, 4)] * 4), 2, True, instance,
                best_fit=True)[0]
            self.assertEqual(agent, self.predicted(state))

    def test_burst_predictions_are_the_agents_assignment(self):
        # The agent assigns the host-held instances of a burst one after
        # the other in uuid order (assign_domains); the scheduler predicted
        # each one with what it knew: its own earlier claims.
        for extra, vcpus, count in ((REQUIRED, 2, 4), (PREFERRED, 1, 7),
                                    (CPU_OFF, 1, 9), (CPU_OFF, 2, 4)):
            claims.reset()
            self.cache.update(live([(3, 0, ())] * 4))
            state = host(candidates=[host_candidate(
                vcpus, clean=extra is REQUIRED)])
            request = spec(extra, vcpus)
            predicted = {}
            for index in range(count):
                request.instance_uuid = new_uuid(index)
                self.assertTrue(self.filt.host_passes(state, request),
                                (extra, vcpus, index, self.log.output))
                predicted[new_uuid(index)] = self.predicted(state)
                state.num_instances += 1
            agent = domain_assignment.assign_domains(
                {'d%d' % i: 3 for i in range(4)},
                [domain_assignment.HostHeld(u, vcpus, extra is not CPU_OFF)
                 for u in predicted])
            self.assertEqual(agent, predicted, (extra, vcpus))

    def test_rejection_is_logged_with_the_reason(self):
        self.cache.update(live([(3, 3, ()), (3, 2, ())]))
        self.assertFalse(self.filt.host_passes(host(), spec(CPU_OFF)))
        self.assertIn(
            "CacheDomainFilter rejects host h1 (node h1): no cache domain "
            "has room for 2 vCPUs in its agent's live state: 2 domains, "
            'the most room is 1 vCPUs in d1', self.log.output)

    def test_burst_counts_own_claims_until_every_domain_is_taken(self):
        # A multi-create: one RequestSpec, one instance uuid after the
        # other; Nova consumes the host (num_instances + 1) after a claim.
        for extra, domains, fits in (
                (REQUIRED, [(3, 0, ())] * 4, 4),
                (PREFERRED, [(3, 0, ())] * 4, 4),
                (CPU_OFF, [(4, 0, ())] * 2, 4)):
            claims.reset()
            self.cache.update(live(domains))
            state = host()
            request = spec(extra)
            predicted = []
            for index in range(fits):
                request.instance_uuid = new_uuid(index)
                self.assertTrue(self.filt.host_passes(state, request),
                                (extra, index))
                predicted.append(self.predicted(state))
                state.num_instances += 1
            request.instance_uuid = new_uuid(fits)
            self.assertFalse(self.filt.host_passes(state, request), extra)
            self.assertIn('counting %d recent claims of this scheduler'
                          % fits, self.log.output)
            if extra is CPU_OFF:
                self.assertEqual(['d0', 'd0', 'd1', 'd1'], sorted(predicted))
            else:
                self.assertEqual(['d0', 'd1', 'd2', 'd3'], sorted(predicted))

    def test_claim_ends_when_the_state_lists_the_instance(self):
        self.cache.update(live([(3, 0, ())]))
        state = host()
        self.assertTrue(self.filt.host_passes(
            state, spec(CPU_OFF, instance=new_uuid(0))))
        state.num_instances += 1
        # Counted: the only domain has 1 vCPU left.
        self.assertFalse(self.filt.host_passes(
            state, spec(CPU_OFF, instance=new_uuid(1))))
        # The agent pinned it there: counted once, by the state alone.
        self.cache.update(live([(3, 2, ())], vms=[new_uuid(0)]))
        self.assertFalse(self.filt.host_passes(
            state, spec(CPU_OFF, vcpus=2, instance=new_uuid(1))))
        state.allocation_candidates = [host_candidate(1, clean=False)]
        self.assertTrue(self.filt.host_passes(
            state, spec(CPU_OFF, vcpus=1, instance=new_uuid(1))))
        rows_, own = domain_order.host_domain_rows(
            state, self.cache.get('h1'), self.cache.received('h1'),
            self.ledger())
        self.assertEqual([], own)
        self.assertEqual(rows((0, 2, 3)), rows_)

    def test_without_live_state_placement_decides_nothing_recorded(self):
        state = host()
        for index in range(3):
            self.assertTrue(self.filt.host_passes(
                state, spec(REQUIRED, instance=new_uuid(index))))
            state.num_instances += 1
        self.assertIsNone(self.predicted(state))
        self.assertEqual([], self.ledger().claims(ROOT))

    def test_unhealthy_agent_is_refused(self):
        self.cache.update(live([(3, 0, ())], healthy=False))
        self.assertFalse(self.filt.host_passes(host(), spec(REQUIRED)))
        self.assertIsNone(self.predicted(host()))

    def test_candidate_checks_still_apply(self):
        self.cache.update(live([(3, 0, ())]))
        # Clean required but the candidate claims no memory-bound slot.
        state = host(candidates=[host_candidate(2, clean=False)])
        self.assertFalse(self.filt.host_passes(state, spec(REQUIRED)))
        self.assertIn('claims no %s slot' % MEMBOUND, self.log.output)

    def test_contention_weigher_reads_domains_not_providers(self):
        domains = [(3, 0, ()), (3, 0, ('a',)), (3, 0, ('b', 'c'))]
        host_model = live(domains)
        domain_model = hs.HostCacheState(
            host='h1', timestamp=host_model.timestamp, agent_healthy=True,
            domains=tuple(wire.DomainState(
                d.id, d.state, d.memory_bound_vms, d.usable_cpus,
                'rp-%s' % d.id, d.vcpus_used) for d in host_model.domains))
        # One Clean place of three, three memory-bound instances.
        self.assertAlmostEqual(0.75 + (1 / 3 - 1.0) / 4,
                               weights.contention_score(host_model))
        self.assertEqual(weights.contention_score(domain_model),
                         weights.contention_score(host_model))
        self.cache.update(host_model)
        [got] = test_plugins.part_weights(
            self, test_plugins.CONTENTION, [host()], spec(PREFERRED))
        self.assertAlmostEqual(0.75 + (1 / 3 - 1.0) / 4, got)


_DOMAIN = st.tuples(st.integers(1, 6), st.integers(0, 12),
                    st.integers(0, 2))


class HostModelPropertyTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        fresh_filter(self)

    @settings(max_examples=150, deadline=None)
    @given(st.lists(_DOMAIN, min_size=1, max_size=6),
           st.sampled_from([REQUIRED, PREFERRED, CPU_OFF]),
           st.integers(1, 6), st.sampled_from([1.0, 2.0, 4.0]),
           st.integers(1, 8))
    def test_a_passed_host_has_a_domain_whose_room_fits(
            self, rows, extra, vcpus, ratio, burst):
        """A host passed in the host model has a domain whose room fits.

        Counting the earlier instances of the burst, with Clean when
        required; the predicted domain is one of them; a rejected host has
        none.
        """
        live_state.reset()
        claims.reset()
        cache = live_state.get_cache()
        domains = [(usable, min(used, int(usable * ratio)),
                    tuple('m%d-%d' % (i, k) for k in range(mem)))
                   for i, (usable, used, mem) in enumerate(rows)]
        cache.update(live(domains))
        filt = filters.CacheDomainFilter()
        clean = extra is REQUIRED
        state = host(candidates=[host_candidate(vcpus, clean=clean)],
                     ratio=ratio)
        request = spec(extra, vcpus)
        opts = ca_conf.CONF.cacheaware_scheduler
        ledger = claims.get_ledger(opts.claim_memory_seconds,
                                   opts.claim_settle_seconds)
        # Room per domain as the agent counts it, plus what the burst took.
        room = {'d%d' % i: usable * ratio - used
                for i, (usable, used, _) in enumerate(domains)}
        memory = {'d%d' % i: len(mem) for i, (_, _, mem) in enumerate(domains)}
        for index in range(burst):
            request.instance_uuid = new_uuid(index)
            fitting = [d for d in room
                       if room[d] >= vcpus and not (clean and memory[d])]
            passed = filt.host_passes(state, request)
            self.assertEqual(bool(fitting), passed, (domains, index))
            if not passed:
                break
            domain = ledger.handed_out(ROOT).provider
            self.assertIn(domain, fitting)
            room[domain] -= vcpus
            memory[domain] += int(extra is not CPU_OFF)
            state.num_instances += 1


class PreferredCleanSlotTest(testtools.TestCase):
    """The Clean slot a ``preferred`` request adds when Nova reads [0].

    The filter, the weigher and Nova's read of each host's first
    candidate, in the order Nova's scheduler makes them for one instance.
    """

    ROOT2 = '8b1e2f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b'

    def setUp(self):
        super().setUp()
        self.cache, self.filt = fresh_filter(self)
        self.weigher = weights.CacheAwareWeigher()

    def hosts(self, first_memory=(), second_memory=()):
        """h1 (2 domains) and h2 (2 domains); memory-bound VMs as given."""
        child2 = domain_order.host_child_uuid(self.ROOT2)
        self.cache.update(live([(3, 1 if i in first_memory else 0,
                                 ('x%d' % i,) if i in first_memory else ())
                                for i in range(2)]))
        self.cache.update(live([(3, 1 if i in second_memory else 0,
                                 ('y%d' % i,) if i in second_memory else ())
                                for i in range(2)], name='h2',
                               host_provider=child2))
        return (host(candidates=[host_candidate(clean=False)]),
                host('h2', candidates=[host_candidate(clean=False,
                                                      child=child2)],
                     root=self.ROOT2))

    def schedule(self, hosts, extra=PREFERRED, instance=None):
        """Filter and weigh ``hosts`` for one instance, as Nova does."""
        request = spec(extra, instance=instance or new_uuid(0))
        passed = list(self.filt.filter_all(hosts, request))
        if len(passed) > 1:
            # Nova calls no weigher for a single host.
            self.weigher.weigh_objects(
                [weights_mod.WeighedHost(h, 0.0) for h in passed], request)
        return request, passed

    def slot(self, candidate):
        return sum(a['resources'].get(MEMBOUND, 0)
                   for a in candidate['allocations'].values())

    def test_a_free_clean_place_gets_a_slot_while_another_host_remains(self):
        h1, h2 = self.hosts(first_memory=(0,))
        self.schedule([h1, h2])
        self.assertEqual(1, self.slot(h1.allocation_candidates[0]))
        # Placement refused it; Nova tries h2, its last host: no slot.
        self.assertEqual(0, self.slot(h2.allocation_candidates[0]))
        # The candidate Placement gave is left as it was.
        self.assertEqual(0, self.slot(list.__getitem__(
            h1.allocation_candidates, 0)))

    def test_no_clean_place_no_slot(self):
        h1, h2 = self.hosts(first_memory=(0, 1))
        self.schedule([h1, h2])
        self.assertEqual(0, self.slot(h1.allocation_candidates[0]))

    def test_a_single_host_is_the_last(self):
        h1, _h2 = self.hosts()
        self.schedule([h1])
        self.assertEqual(0, self.slot(h1.allocation_candidates[0]))

    def test_only_declared_memory_bound_preferred_requests_take_one(self):
        auto = {'cacheaware:cache_share': 'all',
                'cacheaware:workload': 'auto'}
        for extra in (auto, CPU_OFF):
            claims.reset()
            h1, h2 = self.hosts()
            self.schedule([h1, h2], extra)
            self.assertEqual(0, self.slot(h1.allocation_candidates[0]),
                             extra)

    def test_consumption_records_the_domain_reserved_at_the_read(self):
        h1, h2 = self.hosts(first_memory=(0,))
        request, _ = self.schedule([h1, h2])
        h1.allocation_candidates[0]
        ledger = claims.get_ledger(600, 60)
        (reserved,) = ledger.claims(ROOT)
        self.assertEqual(('d1', True), (reserved.provider, reserved.pending))
        filters.record_consumed(h1, request)
        (claim,) = ledger.claims(ROOT)
        self.assertEqual(('d1', False, new_uuid(0)),
                         (claim.provider, claim.pending, claim.instance))

    def test_requests_read_together_both_ask_placement(self):
        # Two requests filtered and weighed before either reads h1's
        # candidate; h1 has one Clean place. The second sees the first's
        # reservation (contested) and asks for the slot too: Placement
        # admits one of them, the other moves on.
        h1, h2 = self.hosts(first_memory=(0,), second_memory=(0,))
        weighed = threading.Barrier(2)
        read = {}

        def one(index):
            self.schedule([h1, h2], instance=new_uuid(index))
            weighed.wait(timeout=10)
            with lock:
                read[index] = self.slot(h1.allocation_candidates[0])

        lock = threading.Lock()
        threads = [threading.Thread(target=one, args=(i,)) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual({0: 1, 1: 1}, read)

    def test_a_state_without_domains_at_the_read_claims_as_filtered(self):
        h1, h2 = self.hosts()
        self.schedule([h1, h2])
        # The agent's next state lists no domain (its topology could not
        # be read); it arrives between the filter and Nova's read.
        self.cache.update(live([]))
        self.assertEqual(host_candidate(clean=False),
                         h1.allocation_candidates[0])
        self.assertEqual([], claims.get_ledger(600, 60).claims(ROOT))

    def test_no_live_state_no_slot_and_nothing_reserved(self):
        # The agent is dead or the bus is down (its state expired, with
        # stale_host_state = trust_placement): Placement's host counts
        # decide, as for any request without live state.
        child2 = domain_order.host_child_uuid(self.ROOT2)
        h1 = host(candidates=[host_candidate(clean=False)])
        h2 = host('h2', candidates=[host_candidate(clean=False,
                                                   child=child2)],
                  root=self.ROOT2)
        self.schedule([h1, h2])
        self.assertEqual(host_candidate(clean=False),
                         h1.allocation_candidates[0])
        self.assertEqual([], claims.get_ledger(600, 60).claims(ROOT))
