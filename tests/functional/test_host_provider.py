"""The per-host cache provider and the migration to it, on a real Placement.

In-process fixture and a WSGI Placement on MariaDB, like
``test_provider_sync``. The migration moves real allocations with a real
``POST /reshaper``; a concurrent writer makes it retry.
"""

import uuid

import testtools

from nova_cacheaware.contracts import placement as names
from nova_cacheaware import exception
from nova_cacheaware.placement import host_provider
from nova_cacheaware.placement import provider_sync
from tests.functional import test_provider_sync as base
from tests import placement_fixtures

VCPU = names.RC_DOMAIN_VCPU
MEMBOUND = names.RC_DOMAIN_MEMBOUND


def _inv(total, max_unit, ratio, slots, reserved=0, vcpu_reserved=0):
    return {
        VCPU: {'total': total, 'reserved': vcpu_reserved, 'min_unit': 1,
               'max_unit': max_unit, 'step_size': 1,
               'allocation_ratio': ratio},
        MEMBOUND: {'total': slots, 'reserved': reserved, 'min_unit': 1,
                   'max_unit': 1, 'step_size': 1, 'allocation_ratio': 1.0}}


class _Helpers(object):
    """Helpers shared with the provider-sync tests; ``self.client`` set."""

    make_compute_node = base._ProviderSyncScenarios.make_compute_node
    children = base._ProviderSyncScenarios.children
    allocate = base._ProviderSyncScenarios.allocate
    assert_root_untouched = base._ProviderSyncScenarios.assert_root_untouched

    def allocations(self, consumer):
        return {rp: a['resources'] for rp, a in self.client.get(
            '/allocations/%s' % consumer)['allocations'].items()}

    def _instance(self, root, domain_rp, cache):
        consumer = str(uuid.uuid4())
        self.client.put('/allocations/%s' % consumer, {
            'allocations': {root: {'resources': {'VCPU': cache[VCPU],
                                                 'MEMORY_MB': 512}},
                            domain_rp: {'resources': cache}},
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            expected=(204,))
        return consumer


class _HostProviderScenarios(_Helpers):
    """Scenarios; subclasses provide ``self.client`` and ``self.other``."""

    def test_creates_one_child_with_host_counts(self):
        root, name = self.make_compute_node()
        result = host_provider.sync_host_provider(
            self.client, root, base.ZEN_2CCX, cpu_allocation_ratio=4.0)
        self.assertTrue(result.created)
        self.assertTrue(result.agent_trait_changed)
        kids = self.children(root)
        self.assertEqual([name + ':cacheaware'], list(kids))
        kid = kids[name + ':cacheaware']
        self.assertEqual(host_provider.host_provider_uuid(root), kid['uuid'])
        self.assertEqual(kid['uuid'], result.provider_uuid)
        # 16 CPUs, the largest domain holds 8 x 4 vCPUs, 2 Clean slots.
        self.assertEqual(_inv(16, 32, 4.0, 2), self.client.get_inventories(
            kid['uuid'])['inventories'])
        self.assertEqual([names.TRAIT_AGENT],
                         self.client.get_traits(kid['uuid'])['traits'])
        # The root is Nova's: never written.
        self.assert_root_untouched(root)

    def test_second_run_writes_nothing(self):
        root, _ = self.make_compute_node()
        host_provider.sync_host_provider(self.client, root, base.ZEN_2CCX)
        again = host_provider.sync_host_provider(self.client, root,
                                                 base.ZEN_2CCX)
        self.assertEqual(0, again.writes)
        self.assertFalse(again.created or again.updated)

    def test_max_unit_and_reserved_follow_the_agent(self):
        root, _ = self.make_compute_node()
        result = host_provider.sync_host_provider(
            self.client, root, base.ZEN_2CCX, vcpu_max_unit=3,
            membound_reserved=1)
        self.assertTrue(result.updated or result.created)
        self.assertEqual(_inv(16, 3, 1.0, 2, reserved=1),
                         self.client.get_inventories(
                             result.provider_uuid)['inventories'])
        # Cut to what the host can hold.
        result = host_provider.sync_host_provider(
            self.client, root, base.ZEN_2CCX, vcpu_max_unit=99,
            membound_reserved=7)
        self.assertEqual(_inv(16, 8, 1.0, 2, reserved=2),
                         self.client.get_inventories(
                             result.provider_uuid)['inventories'])

    def test_deleted_by_hand_comes_back(self):
        root, name = self.make_compute_node()
        first = host_provider.sync_host_provider(self.client, root,
                                                 base.ZEN_2CCX)
        self.client.delete_provider(first.provider_uuid)
        again = host_provider.sync_host_provider(self.client, root,
                                                 base.ZEN_2CCX)
        self.assertTrue(again.created)
        self.assertEqual([name + ':cacheaware'], list(self.children(root)))

    def test_total_never_below_allocations(self):
        root, _ = self.make_compute_node()
        first = host_provider.sync_host_provider(
            self.client, root, base.ZEN_2CCX, cpu_allocation_ratio=1.0)
        for _ in range(2):
            self.allocate(first.provider_uuid, {VCPU: 6})
        # One CCX offline: 8 CPUs wanted, 12 used.
        result = host_provider.sync_host_provider(
            self.client, root, base.ZEN_1CCX, cpu_allocation_ratio=1.0)
        inv = self.client.get_inventories(first.provider_uuid)['inventories']
        self.assertEqual(12, inv[VCPU]['total'])
        self.assertEqual(['%s:%s' % (first.provider_uuid, VCPU)],
                         result.floored)

    def test_migrates_domain_providers_with_their_allocations(self):
        root, name = self.make_compute_node()
        old = provider_sync.sync_domain_providers(
            self.client, root, base.ZEN_2CCX, cpu_allocation_ratio=4.0)
        rp0, rp1 = old.providers['L3-0'], old.providers['L3-1']
        # Two instances in domain 0 (one Clean), one in domain 1, each
        # with its compute-node share as Nova writes it.
        a = self._instance(root, rp0, {VCPU: 4, MEMBOUND: 1})
        b = self._instance(root, rp0, {VCPU: 2})
        c = self._instance(root, rp1, {VCPU: 8, MEMBOUND: 1})
        before = {x: self.allocations(x) for x in (a, b, c)}

        result = host_provider.sync_host_provider(
            self.client, root, base.ZEN_2CCX, cpu_allocation_ratio=4.0)

        host = result.provider_uuid
        self.assertEqual(sorted([a, b, c]), result.reshaped)
        self.assertEqual(['L3-0', 'L3-1'], result.deleted)
        self.assertEqual([name + ':cacheaware'], list(self.children(root)))
        for consumer, resources in ((a, {VCPU: 4, MEMBOUND: 1}),
                                    (b, {VCPU: 2}),
                                    (c, {VCPU: 8, MEMBOUND: 1})):
            after = self.allocations(consumer)
            self.assertEqual(resources, after[host])
            # The compute node part is untouched.
            self.assertEqual(before[consumer][root], after[root])
            self.assertEqual({root, host}, set(after))
        self.assertEqual({VCPU: 14, MEMBOUND: 2}, self.client.get(
            '/resource_providers/%s/usages' % host)['usages'])
        again = host_provider.sync_host_provider(
            self.client, root, base.ZEN_2CCX, cpu_allocation_ratio=4.0)
        self.assertEqual(0, again.writes)

    def test_migration_retries_a_concurrent_change(self):
        root, _ = self.make_compute_node()
        old = provider_sync.sync_domain_providers(self.client, root,
                                                  base.ZEN_2CCX)
        a = self._instance(root, old.providers['L3-0'], {VCPU: 2})
        client = _RacingClient(self.client._adapter, self.other,
                               old.providers['L3-1'])
        result = host_provider.sync_host_provider(client, root,
                                                  base.ZEN_2CCX)
        self.assertEqual(1, result.conflicts_retried)
        self.assertEqual([a], result.reshaped)
        self.assertEqual({VCPU: 2}, self.allocations(a)[
            result.provider_uuid])

    def test_no_usable_cpu_removes_an_empty_provider(self):
        root, _ = self.make_compute_node()
        host_provider.sync_host_provider(self.client, root, base.ZEN_2CCX)
        result = host_provider.sync_host_provider(
            self.client, root, base.ZEN_2CCX, usable_cpus=[])
        self.assertIsNone(result.provider_uuid)
        self.assertEqual({}, self.children(root))

    def test_unhealthy_agent_takes_the_trait_off(self):
        root, _ = self.make_compute_node()
        host_provider.sync_host_provider(self.client, root, base.ZEN_2CCX)
        result = host_provider.sync_host_provider(
            self.client, root, base.ZEN_2CCX, agent_healthy=False)
        self.assertTrue(result.agent_trait_changed)
        self.assertEqual([], self.client.get_traits(
            result.provider_uuid)['traits'])
        self.assert_root_untouched(root)

    def test_bad_arguments_write_nothing(self):
        root, _ = self.make_compute_node()
        for kwargs in ({'vcpu_max_unit': -1}, {'membound_reserved': 1.5},
                       {'cpu_allocation_ratio': 0}, {'membound_total': 0}):
            self.assertRaises(exception.InvalidInput,
                              host_provider.sync_host_provider,
                              self.client, root, base.ZEN_2CCX, **kwargs)
        self.assertEqual({}, self.children(root))


class _RacingClient(base.placement_client.PlacementClient):
    """Bumps ``target``'s generation once, just before our reshape."""

    def __init__(self, adapter, other, target):
        super().__init__(adapter)
        self.other, self.target, self.raced = other, target, False

    def post(self, url, body, expected=(200,)):
        if url == '/reshaper' and not self.raced:
            self.raced = True
            self.other.ensure_trait('CUSTOM_RACE')
            now = self.other.get_traits(self.target)
            self.other.put_traits(self.target,
                                  now['resource_provider_generation'],
                                  set(now['traits']) | {'CUSTOM_RACE'})
        return super().post(url, body, expected=expected)


class TestHostProviderInProcess(base.InProcessPlacement,
                                _HostProviderScenarios, testtools.TestCase):
    """On Placement's in-process fixture."""


class TestHostProviderMariaDB(base.MariaDBPlacement, _HostProviderScenarios,
                              testtools.TestCase):
    """On a real Placement WSGI service on MariaDB."""


class TestReshapeWithoutServiceRole(_Helpers, testtools.TestCase):
    """Placement's default policy (WSGI service): reshaping needs "service".

    An agent user without it loses nothing: the allocations stay on their
    domain providers, which are retired (fully reserved) meanwhile.
    """

    def setUp(self):
        super().setUp()
        if not placement_fixtures.mariadb_available():
            raise AssertionError('MariaDB is not reachable at %s'
                                 % placement_fixtures.MARIADB_URL)
        service = self.useFixture(placement_fixtures.PlacementService())
        self.client = service.client
        self.admin_only = placement_fixtures.client_for_endpoint(
            service.endpoint)
        self.admin_only._adapter.additional_headers = {'X-Roles': 'admin'}

    def test_domain_providers_kept_fully_reserved(self):
        root, _ = self.make_compute_node()
        old = provider_sync.sync_domain_providers(self.client, root,
                                                  base.ZEN_2CCX)
        rp0 = old.providers['L3-0']
        consumer = self._instance(root, rp0, {VCPU: 2})
        result = host_provider.sync_host_provider(self.admin_only, root,
                                                  base.ZEN_2CCX)
        self.assertEqual([], result.reshaped)
        self.assertEqual(['L3-0'], result.kept_with_allocations)
        self.assertEqual(['L3-1'], result.deleted)
        self.assertEqual({VCPU: 2}, self.allocations(consumer)[rp0])
        inv = self.client.get_inventories(rp0)['inventories']
        self.assertEqual(inv[VCPU]['total'], inv[VCPU]['reserved'])
