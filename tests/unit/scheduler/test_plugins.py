"""CacheDomainFilter and CacheAwareWeigher on Nova's own objects."""

import dataclasses
import datetime

import fixtures

from oslo_config import fixture as config_fixture
import testtools

from nova import objects
from nova.scheduler import host_manager
from nova.scheduler import weights as weights_base

from nova_cacheaware import conf as ca_conf
from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.scheduler import candidates
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import request
from nova_cacheaware.scheduler import weights

objects.register_all()
VCPU, MEMBOUND = names.RC_DOMAIN_VCPU, names.RC_DOMAIN_MEMBOUND
ROOT = 'root-rp'


def candidate(*domains):
    """An allocation candidate: VCPU on the root plus the given domains."""
    allocations = {ROOT: {'resources': {'VCPU': 2, 'MEMORY_MB': 512}}}
    for uuid, resources in domains:
        allocations[uuid] = {'resources': resources}
    return {'allocations': allocations, 'mappings': {'': [ROOT]}}


def spec(extra_specs, vcpus=2):
    flavor = objects.Flavor(flavorid='f1', vcpus=vcpus, memory_mb=512,
                            root_gb=1, ephemeral_gb=0, swap=0,
                            extra_specs=extra_specs)
    return objects.RequestSpec(flavor=flavor, num_instances=1)


def host(name, candidates):
    state = host_manager.HostState(name, name, 'cell1')
    state.allocation_candidates = list(candidates)
    return state


def live(name, vms_per_domain, healthy=True, providers=None):
    providers = providers or [None] * len(vms_per_domain)
    return hs.HostCacheState(
        host=name, timestamp=datetime.datetime.now(datetime.timezone.utc),
        agent_healthy=healthy,
        domains=tuple(wire.DomainState('d%d' % i, wire.domain_state(len(v)),
                                       tuple(v), 4, p)
                      for i, (v, p) in enumerate(zip(vms_per_domain,
                                                     providers))))


class PluginTestCase(testtools.TestCase):
    def setUp(self):
        super().setUp()
        fixture = self.useFixture(config_fixture.Config(ca_conf.CONF))
        fixture.config(listen_for_host_state=False,
                       group='cacheaware_scheduler')
        live_state.reset()
        self.addCleanup(live_state.reset)
        self.cache = live_state.get_cache()


ALL_CLEAN = {'cacheaware:cache_share': 'all', 'cacheaware:workload': 'memory',
             'cacheaware:cache_clean': 'required'}


class CandidateReasonTest(testtools.TestCase):

    def test_table(self):
        ok = ('d1', {VCPU: 2, MEMBOUND: 1})
        table = [
            (candidate(ok), False, set(), None),
            (candidate(('d1', {VCPU: 2})), False, set(), None),
            (candidate(), False, set(), 'has no %s allocation' % VCPU),
            (candidate(('d1', {VCPU: 1}), ('d2', {VCPU: 1})), False, set(),
             'spreads the vCPUs over 2 cache domains'),
            (candidate(('d1', {VCPU: 1})), False, set(),
             'claims 1 of 2 vCPUs'),
            (candidate(('d1', {VCPU: 2})), True, set(),
             'claims no %s slot in domain provider d1' % MEMBOUND),
            (candidate(ok), True, {'d1'},
             'reports domain provider d1 holding a memory-bound instance'),
            (candidate(ok), True, {'d2'}, None),
        ]
        for cand, clean, busy, expected in table:
            reason = candidates.reason(cand, 2, clean, busy)
            if expected is None:
                self.assertIsNone(reason, cand)
            else:
                self.assertIn(expected, reason)


class CacheDomainFilterTest(PluginTestCase):

    def setUp(self):
        super().setUp()
        self.filt = filters.CacheDomainFilter()

    def test_requests_without_keys_pass_untouched(self):
        cands = [candidate(), candidate(('d1', {VCPU: 1}))]
        state = host('h1', cands)
        self.cache.update(live('h1', [[]], healthy=False))
        self.assertTrue(self.filt.host_passes(state, spec({'hw:x': '1'})))
        self.assertEqual(cands, state.allocation_candidates)

    def test_any_share_request_passes(self):
        state = host('h1', [candidate()])
        self.assertTrue(self.filt.host_passes(
            state, spec({'cacheaware:workload': 'memory'})))
        self.assertEqual(1, len(state.allocation_candidates))

    def test_prunes_candidates_without_one_domain(self):
        good = candidate(('d2', {VCPU: 2, MEMBOUND: 1}))
        state = host('h1', [candidate(('d1', {VCPU: 2})), good, candidate()])
        self.assertTrue(self.filt.host_passes(state, spec(ALL_CLEAN)))
        self.assertEqual([good], state.allocation_candidates)

    def test_rejects_when_nothing_left_and_logs_reason(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.scheduler.filters'))
        state = host('h1', [candidate()])
        self.assertFalse(self.filt.host_passes(
            state, spec({'cacheaware:cache_share': 'all'}, vcpus=4)))
        self.assertEqual([], state.allocation_candidates)
        self.assertIn('CacheDomainFilter rejects host h1 (node h1): no '
                      'allocation candidate puts all 4 vCPUs in one cache '
                      'domain (1 candidates; first refused because it has '
                      'no %s allocation' % VCPU, log.output)

    def test_unhealthy_agent_rejected_missing_state_relies_on_placement(self):
        cands = [candidate(('d1', {VCPU: 2, MEMBOUND: 1}))]
        self.assertTrue(self.filt.host_passes(host('h1', cands),
                                              spec(ALL_CLEAN)))
        self.cache.update(live('h1', [[]], healthy=False))
        self.assertFalse(self.filt.host_passes(host('h1', cands),
                                               spec(ALL_CLEAN)))

    def test_stale_or_missing_state_refused_while_others_are_heard(self):
        clock = [1000.0]
        self.cache._clock = lambda: clock[0]
        ttl = self.cache.ttl
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.scheduler.filters'))
        cands = [candidate(('d1', {VCPU: 2, MEMBOUND: 1}))]

        def passes(name, extra=ALL_CLEAN):
            return self.filt.host_passes(host(name, cands), spec(extra))

        self.cache.update(live('h1', [[]]))
        self.cache.update(live('h2', [[]]))
        # Warm-up: h3 has not reported yet, Placement decides.
        self.assertTrue(passes('h3'))
        # h1 and h3 go silent; h2 keeps reporting.
        for _ in range(int(ttl // 10) + 1):
            clock[0] += 10
            self.cache.update(live('h2', [[]]))
        self.assertEqual([False, True, False],
                         [passes(h) for h in ('h1', 'h2', 'h3')])
        self.assertIn('rejects host h1 (node h1): the live state of its '
                      'nova-cacheaware agent is %.0f s old' % (
                          (int(ttl // 10) + 1) * 10), log.output)
        self.assertIn('rejects host h3 (node h3): no live state from its '
                      'nova-cacheaware agent', log.output)
        # Requests without All-share/Clean are not affected.
        self.assertTrue(passes('h1', {'cacheaware:workload': 'memory'}))
        # h1's agent is back.
        self.cache.update(live('h1', [[]]))
        self.assertTrue(passes('h1'))
        # The bus goes quiet for ttl/2: nobody is blamed.
        clock[0] += ttl / 2 + 1
        self.assertTrue(passes('h3'))
        # trust_placement: only fresh health counts.
        clock[0] -= ttl / 2 + 1
        self.useFixture(config_fixture.Config(ca_conf.CONF)).config(
            stale_host_state='trust_placement', group='cacheaware_scheduler')
        self.assertTrue(passes('h3'))

    def test_clean_required_skips_domains_reported_busy(self):
        busy = candidate(('rp-a', {VCPU: 2, MEMBOUND: 1}))
        free = candidate(('rp-b', {VCPU: 2, MEMBOUND: 1}))
        self.cache.update(live('h1', [['vm'], []],
                               providers=['rp-a', 'rp-b']))
        state = host('h1', [busy, free])
        self.assertTrue(self.filt.host_passes(state, spec(ALL_CLEAN)))
        self.assertEqual([free], state.allocation_candidates)
        # preferred: busy domains stay (the weigher deals with them).
        state = host('h1', [busy, free])
        self.assertTrue(self.filt.host_passes(state, spec(
            dict(ALL_CLEAN, **{'cacheaware:cache_clean': 'preferred'}))))
        self.assertEqual(2, len(state.allocation_candidates))

    def test_contradicting_specs_rejected_with_reason(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.scheduler.filters'))
        cands = [candidate(('d1', {VCPU: 2, MEMBOUND: 1}))]
        for extra_specs, why in (
                (dict(ALL_CLEAN, **{'cacheaware:memory_min_mb': '1024'}),
                 "cacheaware:memory_min_mb=1024 is above the flavor's RAM "
                 '(512 MB)'),
                (dict(ALL_CLEAN, **{'cacheaware:cache_share': 'any'}),
                 'cacheaware:cache_clean=required with workload=memory '
                 'needs cache_share=all (it has any)')):
            state = host('h1', cands)
            self.assertFalse(self.filt.host_passes(state, spec(extra_specs)))
            self.assertIn('CacheDomainFilter rejects host h1 (node h1): '
                          'flavor f1 has contradicting extra specs: ' + why,
                          log.output)
        # The same keys without the contradiction pass.
        self.assertTrue(self.filt.host_passes(
            host('h1', cands), spec(dict(
                ALL_CLEAN, **{'cacheaware:memory_min_mb': '512'}))))

    def test_invalid_specs_rejected(self):
        self.assertFalse(self.filt.host_passes(
            host('h1', [candidate()]), spec({'cacheaware:oops': '1'})))

    def test_all_filters(self):
        self.assertEqual([filters.CacheDomainFilter, filters.FullNUMAFilter],
                         filters.all_filters())


#: CacheAwareWeigher's parts by their multiplier option.
CONTENTION = 'cache_contention_weight_multiplier'
AVAILABILITY = 'pcpu_availability_weight_multiplier'


def part_weights(test, option, hosts, spec_obj):
    """One part's raw weights in ``[-1, 1]`` (0 where it does not apply).

    CacheAwareWeigher with that part's multiplier 2 and the other's 0:
    its weight is then ``raw + 1``.
    """
    fixture = test.useFixture(config_fixture.Config(ca_conf.CONF))
    for name in (CONTENTION, AVAILABILITY):
        fixture.config(group='cacheaware_scheduler',
                       **{name: 2.0 if name == option else 0.0})
    got = weights.CacheAwareWeigher().weigh_objects(
        [weights_base.WeighedHost(h, 0.0) for h in hosts], spec_obj)
    if got == weights.NO_ORDER:
        return [0.0] * len(hosts)
    return [w - 1.0 for w in got]


class ContentionPartTest(PluginTestCase):

    def test_score_table(self):
        table = [
            (None, 0.0),
            (live('h', []), 0.0),
            (live('h', [[], []], healthy=False), 0.0),
            (live('h', [[], [], [], []]), 1.0),
            (live('h', [['a'], [], [], []]), 0.75 + (0.75 - 0.25) / 4),
            (live('h', [['a'], ['b'], ['c'], ['d']]), -1.0),
            (live('h', [['a', 'b', 'c'], [], []]),
             0.75 + (2 / 3 - 1.0) / 4),
            (live('h', [['a', 'b', 'c', 'd', 'e'], []]),
             0.75 + (0.5 - 1.0) / 4),
            (live('h', [['a'], ['b', 'c']]), -0.75 - 1.0 / 4),
        ]
        for state, expected in table:
            self.assertAlmostEqual(expected, weights.contention_score(state))

    def test_weigh_by_request(self):
        self.cache.update(live('h1', [[], []]))
        self.cache.update(live('h2', [['a'], ['b']]))
        h1, h2, h3 = host('h1', []), host('h2', []), host('h3', [])
        table = [
            ({}, [0.0, 0.0, 0.0]),
            ({'cacheaware:workload': 'cpu'}, [0.0, 0.0, 0.0]),
            ({'cacheaware:workload': 'memory',
              'cacheaware:cache_clean': 'off'}, [0.0, 0.0, 0.0]),
            ({'cacheaware:workload': 'memory'}, [1.0, -1.0, 0.0]),
            ({'cacheaware:cache_share': 'all'}, [1.0, -1.0, 0.0]),
            ({'cacheaware:bad': 'x'}, [0.0, 0.0, 0.0]),
        ]
        for extra, expected in table:
            got = part_weights(self, CONTENTION, (h1, h2, h3), spec(extra))
            self.assertEqual(expected, got, extra)

    def test_claims_the_state_lacks_count(self):
        # h1's agent last saw one Empty and one memory-bound domain; since
        # then a memory-bound instance was claimed in the Empty one (by
        # this process or another worker): no Clean place is left.
        claims.reset()
        self.addCleanup(claims.reset)
        self.cache.update(live('h1', [[], ['a']]))
        self.cache.update(live('h2', [[], ['b']]))
        h1, h2 = host('h1', []), host('h2', [])
        h1.uuid, h2.uuid = 'rp-1', 'rp-2'
        ledger = claims.get_ledger(600, 60)
        ledger.add('rp-1', claims.Claim(
            provider='d0', instance='new', vcpus=1, memory_bound=True,
            at=ledger.now()))
        got = part_weights(self, CONTENTION, (h1, h2),
                           spec({'cacheaware:workload': 'memory'}))
        # No Clean place left on h1: the lower band; h2 keeps one.
        self.assertEqual([-0.75 - 1.0 / 4, 0.75], got)
        # A cpu-bound claim takes vCPUs, not the Clean place.
        claims.reset()
        ledger = claims.get_ledger(600, 60)
        ledger.add('rp-1', claims.Claim(
            provider='d0', instance='new', vcpus=1, memory_bound=False,
            at=ledger.now()))
        self.assertEqual([0.75, 0.75], part_weights(
            self, CONTENTION, (h1, h2),
            spec({'cacheaware:workload': 'memory'})))


def with_vms(name, vms, pcpus=(0, 1, 2, 3), healthy=True, storm=None):
    """A fresh state whose vcpu_affinity holds ``vms`` (pcpu-est input)."""
    return hs.HostCacheState(
        host=name, timestamp=datetime.datetime.now(datetime.timezone.utc),
        agent_healthy=healthy,
        vms=(wire.VmState('s', spin_storm=storm),) if storm else (),
        vcpu_affinity=pcpu_est.EstimateRequest.from_dict(
            {'pcpus': list(pcpus), 'vms': vms}))


def floating(n, cpus, caps=None):
    vm = {'vcpus': {str(i): list(cpus) for i in range(n)}}
    if caps:
        vm['caps'] = {str(i): c for i, c in caps.items()}
    return vm


class AvailabilityPartTest(PluginTestCase):

    def test_score_table(self):
        busy = {'a': floating(6, range(4))}          # 6 vCPUs on 4 pCPUs
        table = [
            # (state, new vCPUs, cap, score)
            (None, 2, None, 0.0),
            (live('h', [[]]), 2, None, 0.0),          # 1.0 payload: unknown
            (with_vms('h', {}), 2, None, 1.0),        # empty host: all 2
            (with_vms('h', {}), 8, None, 2 * 4 / 8 - 1),
            # 8 vCPUs on 4 pCPUs: the new 2 get 2 x 0.5.
            (with_vms('h', busy), 2, None, 2 * 1.0 / 2 - 1),
            # Capped at 0.25 each: 0.5 of 2.
            (with_vms('h', {}), 2, 0.25, 2 * 0.5 / 2 - 1),
            # A VM pinned to pCPUs 0-1 leaves the new VM 2 pCPUs of 4.
            (with_vms('h', {'p': floating(4, (0, 1))}), 4, None, 0.0),
            (with_vms('h', busy, healthy=False), 2, None, 0.0),
            (with_vms('h', {}, pcpus=()), 2, None, 0.0),
            # A VM of the host in a spin storm: the lowest weight.
            (with_vms('h', {}, storm=True), 2, None, -1.0),
        ]
        for state, vcpus, cap, expected in table:
            self.assertAlmostEqual(
                expected, weights.availability_score(state, vcpus, cap),
                msg=str((state, vcpus, cap)))

    def test_flavor_cap(self):
        self.assertIsNone(request.flavor_cap({}))
        self.assertIsNone(request.flavor_cap({'quota:cpu_quota': '-1'}))
        self.assertEqual(0.5, request.flavor_cap(
            {'quota:cpu_quota': '50000'}))
        self.assertEqual(0.25, request.flavor_cap(
            {'quota:cpu_quota': '5000', 'quota:cpu_period': '20000'}))
        self.assertEqual(1.0, request.flavor_cap(
            {'quota:cpu_quota': '300000'}))
        self.assertIsNone(request.flavor_cap({'quota:cpu_quota': 'lots'}))

    def test_weigh_by_request(self):
        self.cache.update(with_vms('h1', {}))
        self.cache.update(with_vms('h2', {'a': floating(6, range(4))}))
        h1, h2, h3 = host('h1', []), host('h2', []), host('h3', [])
        sizing = {'cacheaware:vcpu_sizing': 'recommend'}
        table = [
            ({}, [0.0, 0.0, 0.0]),                   # no cacheaware: keys
            (sizing, [1.0, 0.0, 0.0]),
            ({'cacheaware:workload': 'cpu'}, [1.0, 0.0, 0.0]),
            (dict(sizing, **{'hw:cpu_policy': 'dedicated'}),
             [0.0, 0.0, 0.0]),
            (dict(sizing, **{'quota:cpu_quota': '25000'}),
             [-0.5, -0.5, 0.0]),            # 2 x 0.25 anywhere
            ({'cacheaware:bad': 'x'}, [0.0, 0.0, 0.0]),
        ]
        for extra, expected in table:
            got = part_weights(self, AVAILABILITY, (h1, h2, h3), spec(extra))
            for want, value in zip(expected, got):
                self.assertAlmostEqual(want, value, msg=str(extra))


class CacheAwareWeigherTest(PluginTestCase):
    """Both parts together, as Nova's handler would add two weighers."""

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(ca_conf.CONF))
        # h1: two Empty domains and 4 idle pCPUs; h2: both domains hold a
        # memory-bound VM and 6 vCPUs float on the 4 pCPUs; h3: no state.
        h1 = with_vms('h1', {})
        h1 = dataclasses.replace(live('h1', [[], []]),
                                 vcpu_affinity=h1.vcpu_affinity)
        h2 = with_vms('h2', {'a': floating(6, range(4))})
        h2 = dataclasses.replace(live('h2', [['a'], ['b']]),
                                 vcpu_affinity=h2.vcpu_affinity)
        for state in (h1, h2):
            self.cache.update(state)
        self.hosts = [host('h1', []), host('h2', []), host('h3', [])]

    def weigh(self, extra):
        return weights.CacheAwareWeigher().weigh_objects(
            [weights_base.WeighedHost(h, 0.0) for h in self.hosts],
            spec(extra))

    def test_weight_is_the_sum_of_the_parts_normalised_and_multiplied(self):
        self.conf.config(group='cacheaware_scheduler',
                         cache_contention_weight_multiplier=10.0,
                         pcpu_availability_weight_multiplier=3.0)
        # contention raw 1 / -1 / 0, availability raw 1 / 0 / 0:
        # 10 * (raw + 1) / 2 + 3 * (raw + 1) / 2.
        self.assertEqual([10.0 + 3.0, 0.0 + 1.5, 5.0 + 1.5],
                         self.weigh({'cacheaware:workload': 'memory'}))
        # A CPU-bound request: the contention part does not apply.
        self.assertEqual([3.0, 1.5, 1.5],
                         self.weigh({'cacheaware:workload': 'cpu'}))

    def test_a_part_at_multiplier_0_is_off_and_none_left_is_no_order(self):
        self.conf.config(group='cacheaware_scheduler',
                         cache_contention_weight_multiplier=0.0,
                         pcpu_availability_weight_multiplier=2.0)
        self.assertEqual([2.0, 1.0, 1.0],
                         self.weigh({'cacheaware:workload': 'memory'}))
        self.conf.config(group='cacheaware_scheduler',
                         pcpu_availability_weight_multiplier=0.0)
        self.assertEqual(weights.NO_ORDER,
                         self.weigh({'cacheaware:workload': 'memory'}))
        self.assertEqual(weights.NO_ORDER, self.weigh({}))

    def test_an_aggregate_key_turns_on_a_part_the_option_turns_off(self):
        self.conf.config(group='cacheaware_scheduler',
                         cache_contention_weight_multiplier=0.0,
                         pcpu_availability_weight_multiplier=0.0)
        self.hosts[1].aggregates = [objects.Aggregate(
            id=1, name='a', hosts=['h2'],
            metadata={'cache_contention_weight_multiplier': '4'})]
        # Only h2 is weighed: its contention raw -1 gives 4 * 0 / 2, but
        # a list (not NO_ORDER): the part is on.
        self.assertEqual([0.0, 0.0, 0.0],
                         self.weigh({'cacheaware:workload': 'memory'}))
        self.hosts[0].aggregates = [objects.Aggregate(
            id=2, name='b', hosts=['h1'],
            metadata={'cache_contention_weight_multiplier': '4'})]
        self.assertEqual([4.0, 0.0, 0.0],
                         self.weigh({'cacheaware:workload': 'memory'}))

    def test_aggregate_keys_override_each_part_per_host(self):
        self.conf.config(group='cacheaware_scheduler',
                         cache_contention_weight_multiplier=10.0,
                         pcpu_availability_weight_multiplier=3.0)
        self.hosts[0].aggregates = [objects.Aggregate(
            id=1, name='a', hosts=['h1'],
            metadata={'cache_contention_weight_multiplier': '7.5',
                      'pcpu_availability_weight_multiplier': '0'})]
        self.assertEqual([7.5 + 0.0, 0.0 + 1.5, 5.0 + 1.5],
                         self.weigh({'cacheaware:workload': 'memory'}))

    def test_one_host_of_a_request_no_part_applies_to_weighs_0(self):
        self.assertEqual(0.0, weights.CacheAwareWeigher()._weigh_object(
            self.hosts[0], spec({})))

    def test_nova_applies_no_multiplier_of_its_own(self):
        self.assertEqual(1.0, weights.CacheAwareWeigher().weight_multiplier(
            self.hosts[0]))
        self.assertEqual((0.0, 1.0), (weights.CacheAwareWeigher.minval,
                                      weights.CacheAwareWeigher.maxval))

    def test_all_weighers(self):
        self.assertEqual([weights.CacheAwareWeigher],
                         weights.all_weighers())
