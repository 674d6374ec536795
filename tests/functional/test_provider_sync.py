"""Cache domain provider sync against a real Placement.

The same scenarios run twice: on Placement's in-process fixture (fast) and
on a real Placement WSGI service on MariaDB on loopback. Conflicts are real
409s: a second client bumps the provider generation between our read and
our write.
"""

import uuid

import fixtures
from oslo_config import cfg
import testtools

from nova_cacheaware.conf import placement as placement_conf
from nova_cacheaware.contracts import placement as names
from nova_cacheaware import exception
from nova_cacheaware.placement import client as placement_client
from nova_cacheaware.placement import errors
from nova_cacheaware.placement import provider_sync
from nova_cacheaware.topology import domains as topo_domains
from tests import placement_fixtures

VCPU = names.RC_DOMAIN_VCPU
MEMBOUND = names.RC_DOMAIN_MEMBOUND


def _domain(ident, level, cpus):
    return topo_domains.CacheDomain(id=ident, level=level, cpus=tuple(cpus),
                                    size_kib=32768, numa_nodes=(0,))


# Two Zen CCXs of 8 CPUs each (L3 domains).
ZEN_2CCX = topo_domains.DomainSet(level=3, fallback=False, domains=(
    _domain('L3-0', 3, range(0, 8)), _domain('L3-1', 3, range(8, 16))))
# The same host after one CCX went offline.
ZEN_1CCX = topo_domains.DomainSet(level=3, fallback=False, domains=(
    _domain('L3-0', 3, range(0, 8)),))
# Intel E-core clusters: L2 domains of 4 CPUs.
ECORE_L2 = topo_domains.DomainSet(level=2, fallback=False, domains=(
    _domain('L2-8', 2, range(8, 12)), _domain('L2-12', 2, range(12, 16))))

NOVA_ROOT_TRAITS = {'COMPUTE_NODE', 'HW_CPU_X86_AVX2', 'CUSTOM_OPERATOR_TAG'}
NOVA_ROOT_INVENTORY = {
    'VCPU': {'total': 16, 'reserved': 0, 'min_unit': 1, 'max_unit': 16,
             'step_size': 1, 'allocation_ratio': 4.0},
    'MEMORY_MB': {'total': 8192, 'reserved': 512, 'min_unit': 1,
                  'max_unit': 8192, 'step_size': 1, 'allocation_ratio': 1.0},
}


class _BumpingClient(placement_client.PlacementClient):
    """Our client, with another writer bumping a provider's generation.

    After each read of ``target``'s traits, ``other`` (a second, unrelated
    client) adds a trait there, so the write that follows carries a stale
    generation and the real Placement answers 409 concurrent_update.
    """

    def __init__(self, adapter, other, target, times):
        super().__init__(adapter)
        self.other, self.target, self.times = other, target, times
        self.bumped = 0

    def get_traits(self, rp_uuid):
        doc = super().get_traits(rp_uuid)
        if rp_uuid == self.target and self.bumped < self.times:
            self.bumped += 1
            self.other.ensure_trait('CUSTOM_BUMP_%d' % self.bumped)
            now = self.other.get_traits(rp_uuid)
            self.other.put_traits(
                rp_uuid, now['resource_provider_generation'],
                set(now['traits']) | {'CUSTOM_BUMP_%d' % self.bumped})
        return doc


class _ProviderSyncScenarios(object):
    """Scenarios; subclasses provide ``self.client`` (a PlacementClient)."""

    def make_compute_node(self):
        """A root provider set up the way nova-compute leaves it."""
        rp_uuid = str(uuid.uuid4())
        name = 'compute-%s.example.org' % rp_uuid[:8]
        self.client.post('/resource_providers',
                         {'name': name, 'uuid': rp_uuid})
        self.client.ensure_trait('CUSTOM_OPERATOR_TAG')
        doc = self.client.put_inventories(rp_uuid, 0, NOVA_ROOT_INVENTORY)
        self.client.put_traits(rp_uuid, doc['resource_provider_generation'],
                               NOVA_ROOT_TRAITS)
        return rp_uuid, name

    def children(self, root_uuid):
        return {p['name']: p for p in self.client.providers_in_tree(root_uuid)
                if p['uuid'] != root_uuid}

    def allocate(self, rp_uuid, resources):
        consumer = str(uuid.uuid4())
        self.client.put('/allocations/%s' % consumer, {
            'allocations': {rp_uuid: {'resources': resources}},
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            expected=(204,))
        return consumer

    def assert_root_untouched(self, root_uuid, extra_traits=()):
        inv = self.client.get_inventories(root_uuid)['inventories']
        self.assertEqual(NOVA_ROOT_INVENTORY, inv)
        self.assertEqual(NOVA_ROOT_TRAITS | set(extra_traits),
                         set(self.client.get_traits(root_uuid)['traits']))

    def test_creates_one_child_per_domain(self):
        root, name = self.make_compute_node()
        result = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, cpu_allocation_ratio=4.0)
        self.assertEqual(['L3-0', 'L3-1'], result.created)
        self.assertEqual([], result.updated + result.deleted)
        self.assertTrue(result.agent_trait_changed)
        kids = self.children(root)
        self.assertEqual(
            {name + ':cacheaware:L3-0', name + ':cacheaware:L3-1'},
            set(kids))
        for domain in ZEN_2CCX.domains:
            kid = kids[names.domain_provider_name(name, domain.id)]
            self.assertEqual(root, kid['parent_provider_uuid'])
            self.assertEqual(root, kid['root_provider_uuid'])
            self.assertEqual(
                provider_sync.domain_provider_uuid(root, domain.id),
                kid['uuid'])
            self.assertEqual(result.providers[domain.id], kid['uuid'])
            self.assertEqual({
                VCPU: {'total': 8, 'reserved': 0, 'min_unit': 1,
                       'max_unit': 8, 'step_size': 1,
                       'allocation_ratio': 4.0},
                MEMBOUND: {'total': 1, 'reserved': 0, 'min_unit': 1,
                           'max_unit': 1, 'step_size': 1,
                           'allocation_ratio': 1.0}},
                self.client.get_inventories(kid['uuid'])['inventories'])
            self.assertEqual(
                {'CUSTOM_CACHEAWARE_DOMAIN', 'CUSTOM_CACHE_L3',
                 'CUSTOM_CACHEAWARE_AGENT'},
                set(self.client.get_traits(kid['uuid'])['traits']))
        # The root is Nova's: never written.
        self.assert_root_untouched(root)

    def test_second_run_makes_no_write(self):
        root, _ = self.make_compute_node()
        first = provider_sync.sync_domain_providers(self.client, root,
                                                    ZEN_2CCX)
        # 2 children x (POST, inventories, traits), plus whatever custom
        # names this Placement did not know yet.
        self.assertEqual(6 + len(first.created_names), first.writes)
        second = provider_sync.sync_domain_providers(self.client, root,
                                                     ZEN_2CCX)
        self.assertEqual(0, second.writes)
        self.assertEqual(['L3-0', 'L3-1'], second.unchanged)
        self.assertEqual([], second.created + second.updated)
        self.assertEqual([], second.created_names)
        self.assertFalse(second.agent_trait_changed)
        self.assertEqual(first.providers, second.providers)

    def test_lean_model_has_no_child_traits(self):
        root, _ = self.make_compute_node()
        first = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, child_traits=False)
        # 2 children x (POST, inventories, the agent trait alone).
        self.assertEqual(6 + len(first.created_names), first.writes)
        for kid in self.children(root).values():
            self.assertEqual(
                ['CUSTOM_CACHEAWARE_AGENT'],
                self.client.get_traits(kid['uuid'])['traits'])
        self.assert_root_untouched(root)
        again = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, child_traits=False)
        self.assertEqual(0, again.writes)
        self.assertEqual(['L3-0', 'L3-1'], again.unchanged)

    def test_switching_to_lean_removes_only_our_child_traits(self):
        root, _ = self.make_compute_node()
        full = provider_sync.sync_domain_providers(self.client, root,
                                                   ZEN_2CCX)
        tagged = full.providers['L3-0']
        now = self.client.get_traits(tagged)
        self.client.put_traits(tagged, now['resource_provider_generation'],
                               set(now['traits']) | {'CUSTOM_OPERATOR_TAG'})
        lean = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, child_traits=False)
        self.assertEqual(2, lean.writes)
        self.assertEqual(['L3-0', 'L3-1'], lean.updated)
        self.assertEqual({'CUSTOM_OPERATOR_TAG', 'CUSTOM_CACHEAWARE_AGENT'},
                         set(self.client.get_traits(tagged)['traits']))
        self.assertEqual(['CUSTOM_CACHEAWARE_AGENT'], self.client.get_traits(
            lean.providers['L3-1'])['traits'])
        self.assertEqual(0, provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, child_traits=False).writes)
        # And back: the contract traits return, the operator's stays.
        back = provider_sync.sync_domain_providers(self.client, root,
                                                   ZEN_2CCX)
        self.assertEqual(2, back.writes)
        self.assertEqual(
            {'CUSTOM_OPERATOR_TAG', 'CUSTOM_CACHEAWARE_DOMAIN',
             'CUSTOM_CACHE_L3', 'CUSTOM_CACHEAWARE_AGENT'},
            set(self.client.get_traits(tagged)['traits']))

    def test_fractional_ratio_is_idempotent(self):
        root, _ = self.make_compute_node()
        provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, cpu_allocation_ratio=1.1)
        again = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, cpu_allocation_ratio=1.1)
        self.assertEqual(0, again.writes)

    def test_creates_missing_custom_names(self):
        root, _ = self.make_compute_node()
        result = provider_sync.sync_domain_providers(self.client, root,
                                                     ECORE_L2)
        known_rcs = self.client.existing_resource_classes()
        self.assertEqual(set(), {VCPU, MEMBOUND} - known_rcs)
        self.assertEqual(
            {'CUSTOM_CACHE_L2', 'CUSTOM_CACHEAWARE_DOMAIN',
             'CUSTOM_CACHEAWARE_AGENT'},
            self.client.existing_traits(
                ['CUSTOM_CACHE_L2', 'CUSTOM_CACHEAWARE_DOMAIN',
                 'CUSTOM_CACHEAWARE_AGENT']))
        self.assertEqual(['L2-12', 'L2-8'], result.created)

    def test_updates_only_what_changed(self):
        root, _ = self.make_compute_node()
        provider_sync.sync_domain_providers(self.client, root, ZEN_2CCX)
        result = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, membound_reserved={'L3-1': 1})
        self.assertEqual(['L3-1'], result.updated)
        self.assertEqual(['L3-0'], result.unchanged)
        self.assertEqual(1, result.writes)
        inv = self.client.get_inventories(
            result.providers['L3-1'])['inventories']
        # reserved == total (1.26+): a Dirty domain takes no declared
        # memory-bound VM.
        self.assertEqual((1, 1), (inv[MEMBOUND]['total'],
                                  inv[MEMBOUND]['reserved']))
        result = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, cpu_allocation_ratio=2.0)
        self.assertEqual(['L3-0', 'L3-1'], result.updated)
        self.assertEqual(2, result.writes)
        inv = self.client.get_inventories(
            result.providers['L3-1'])['inventories']
        self.assertEqual(2.0, inv[VCPU]['allocation_ratio'])
        self.assertEqual(0, inv[MEMBOUND]['reserved'])

    def test_usable_cpus_limit_the_domain_vcpus(self):
        root, _ = self.make_compute_node()
        result = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, usable_cpus=list(range(2, 8)))
        self.assertEqual(['L3-0'], result.created)
        inv = self.client.get_inventories(
            result.providers['L3-0'])['inventories']
        self.assertEqual((6, 6), (inv[VCPU]['total'], inv[VCPU]['max_unit']))

    def test_agent_trait_follows_health_and_the_root_is_untouched(self):
        root, _ = self.make_compute_node()
        first = provider_sync.sync_domain_providers(self.client, root,
                                                    ZEN_2CCX)
        self.assert_root_untouched(root)
        result = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, agent_healthy=False)
        self.assertTrue(result.agent_trait_changed)
        self.assertEqual(2, result.writes)
        self.assert_root_untouched(root)
        # Children stay: only the promise is withdrawn.
        self.assertEqual(2, len(self.children(root)))
        for kid in first.providers.values():
            self.assertEqual(
                {'CUSTOM_CACHEAWARE_DOMAIN', 'CUSTOM_CACHE_L3'},
                set(self.client.get_traits(kid)['traits']))
        again = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX, agent_healthy=False)
        self.assertEqual(0, again.writes)

    def test_foreign_child_traits_are_kept(self):
        root, _ = self.make_compute_node()
        result = provider_sync.sync_domain_providers(self.client, root,
                                                     ZEN_2CCX)
        kid = result.providers['L3-0']
        doc = self.client.get_traits(kid)
        self.client.put_traits(kid, doc['resource_provider_generation'],
                               set(doc['traits']) | {'CUSTOM_OPERATOR_TAG'})
        again = provider_sync.sync_domain_providers(self.client, root,
                                                    ZEN_2CCX)
        self.assertEqual(0, again.writes)
        self.assertIn('CUSTOM_OPERATOR_TAG',
                      self.client.get_traits(kid)['traits'])

    def test_nova_providers_are_never_touched(self):
        root, name = self.make_compute_node()
        # A provider nova-compute made (PCI / vGPU style) under the root.
        nova_child = str(uuid.uuid4())
        self.client.create_provider(name + '_pci_0000_81_00_0', nova_child,
                                    root)
        self.client.put_inventories(nova_child, 0,
                                    {'SRIOV_NET_VF': {'total': 8}})
        provider_sync.sync_domain_providers(self.client, root, ZEN_2CCX)
        result = provider_sync.sync_domain_providers(
            self.client, root, topo_domains.DomainSet(3, False, ()))
        self.assertEqual(['L3-0', 'L3-1'], result.deleted)
        self.assertEqual({name + '_pci_0000_81_00_0'},
                         set(self.children(root)))
        self.assert_root_untouched(root)

    def test_removes_providers_of_vanished_domains(self):
        root, name = self.make_compute_node()
        provider_sync.sync_domain_providers(self.client, root, ZEN_2CCX)
        result = provider_sync.sync_domain_providers(self.client, root,
                                                     ZEN_1CCX)
        self.assertEqual(['L3-1'], result.deleted)
        self.assertEqual(['L3-0'], result.unchanged)
        self.assertEqual(1, result.writes)
        self.assertEqual({name + ':cacheaware:L3-0'}, set(self.children(root)))

    def test_follows_a_renamed_compute_node(self):
        root, name = self.make_compute_node()
        first = provider_sync.sync_domain_providers(self.client, root,
                                                    ZEN_2CCX)
        self.client.rename_provider(root, name + '-renamed', None)
        result = provider_sync.sync_domain_providers(self.client, root,
                                                     ZEN_2CCX)
        self.assertEqual(['L3-0', 'L3-1'], result.updated)
        self.assertEqual(2, result.writes)
        self.assertEqual(first.providers, result.providers)
        self.assertEqual({name + '-renamed:cacheaware:L3-0',
                          name + '-renamed:cacheaware:L3-1'},
                         set(self.children(root)))
        again = provider_sync.sync_domain_providers(self.client, root,
                                                    ZEN_2CCX)
        self.assertEqual(0, again.writes)

    def test_keeps_vanished_domain_with_allocations(self):
        root, name = self.make_compute_node()
        first = provider_sync.sync_domain_providers(self.client, root,
                                                    ZEN_2CCX)
        gone = first.providers['L3-1']
        consumer = self.allocate(gone, {VCPU: 4, MEMBOUND: 1})
        result = provider_sync.sync_domain_providers(self.client, root,
                                                     ZEN_1CCX)
        self.assertEqual(['L3-1'], result.kept_with_allocations)
        self.assertEqual([], result.deleted)
        self.assertIn(name + ':cacheaware:L3-1', self.children(root))
        # Retired: fully reserved, so nothing new is placed there.
        inv = self.client.get_inventories(gone)['inventories']
        self.assertEqual((8, 8), (inv[VCPU]['total'], inv[VCPU]['reserved']))
        self.assertEqual((1, 1), (inv[MEMBOUND]['total'],
                                  inv[MEMBOUND]['reserved']))
        again = provider_sync.sync_domain_providers(self.client, root,
                                                    ZEN_1CCX)
        self.assertEqual(['L3-1'], again.kept_with_allocations)
        self.assertEqual(0, again.writes)
        # Once the VM is gone, the provider goes too.
        self.client.delete('/allocations/%s' % consumer)
        last = provider_sync.sync_domain_providers(self.client, root,
                                                   ZEN_1CCX)
        self.assertEqual(['L3-1'], last.deleted)
        self.assertNotIn(name + ':cacheaware:L3-1', self.children(root))

    def test_domain_back_after_retirement_is_restored(self):
        root, _ = self.make_compute_node()
        first = provider_sync.sync_domain_providers(self.client, root,
                                                    ZEN_2CCX)
        self.allocate(first.providers['L3-1'], {VCPU: 2})
        provider_sync.sync_domain_providers(self.client, root, ZEN_1CCX)
        back = provider_sync.sync_domain_providers(self.client, root,
                                                   ZEN_2CCX)
        self.assertEqual(['L3-1'], back.updated)
        inv = self.client.get_inventories(
            first.providers['L3-1'])['inventories']
        self.assertEqual(0, inv[VCPU]['reserved'])

    def test_retries_a_real_generation_conflict(self):
        root, _ = self.make_compute_node()
        kid = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX).providers['L3-0']
        bumping = _BumpingClient(self.client._adapter, self.other, kid,
                                 times=2)
        result = provider_sync.sync_domain_providers(
            bumping, root, ZEN_2CCX, agent_healthy=False)
        self.assertEqual(2, bumping.bumped)
        self.assertEqual(2, result.conflicts_retried)
        self.assertTrue(result.agent_trait_changed)
        # The withdrawal and the other writer's traits both stick.
        self.assertEqual(
            {'CUSTOM_CACHEAWARE_DOMAIN', 'CUSTOM_CACHE_L3', 'CUSTOM_BUMP_1',
             'CUSTOM_BUMP_2'}, set(self.client.get_traits(kid)['traits']))
        self.assert_root_untouched(root)

    def test_gives_up_after_repeated_conflicts(self):
        root, _ = self.make_compute_node()
        kid = provider_sync.sync_domain_providers(
            self.client, root, ZEN_2CCX).providers['L3-0']
        bumping = _BumpingClient(self.client._adapter, self.other, kid,
                                 times=100)
        e = self.assertRaises(errors.GenerationConflict,
                              provider_sync.sync_domain_providers,
                              bumping, root, ZEN_2CCX, agent_healthy=False)
        self.assertEqual(provider_sync.MAX_ATTEMPTS, bumping.bumped)
        self.assertIn(kid, str(e))

    def test_unknown_compute_node(self):
        missing = str(uuid.uuid4())
        e = self.assertRaises(errors.ResourceProviderNotFound,
                              provider_sync.sync_domain_providers,
                              self.client, missing, ZEN_2CCX)
        self.assertEqual(404, e.status)

    def test_name_taken_outside_the_tree(self):
        root, name = self.make_compute_node()
        # A leftover of an older compute node record with the same name.
        self.client.create_provider(name + ':cacheaware:L3-0',
                                    str(uuid.uuid4()), None)
        self.assertRaises(errors.ProviderNameTaken,
                          provider_sync.sync_domain_providers,
                          self.client, root, ZEN_2CCX)

    def test_bad_arguments_write_nothing(self):
        root, _ = self.make_compute_node()
        for kwargs in ({'cpu_allocation_ratio': 0},
                       {'cpu_allocation_ratio': float('nan')},
                       {'membound_total': 0},
                       {'membound_reserved': {'L3-9': 1}},
                       {'membound_reserved': {'L3-0': 2}}):
            self.assertRaises(exception.InvalidInput,
                              provider_sync.sync_domain_providers,
                              self.client, root, ZEN_2CCX, **kwargs)
        self.assertEqual({}, self.children(root))
        self.assert_root_untouched(root)


class InProcessPlacement(object):
    """Placement's in-process fixture per test.

    ``self.client`` (ours) and ``self.other`` (a second, unrelated client).
    """

    def setUp(self):
        super().setUp()
        placement = self.useFixture(placement_fixtures.InProcessPlacement())
        self.client = placement.client
        self.other = placement_fixtures.client_for_endpoint(
            placement.endpoint)


class TestProviderSyncInProcess(InProcessPlacement, _ProviderSyncScenarios,
                                testtools.TestCase):
    """On Placement's in-process fixture (SQLite in memory)."""


class MariaDBPlacement(object):
    """One Placement WSGI service on MariaDB for the class.

    ``self.client`` (ours) and ``self.other`` (a second, unrelated client)
    per test.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not placement_fixtures.mariadb_available():
            raise AssertionError('MariaDB is not reachable at %s'
                                 % placement_fixtures.MARIADB_URL)
        cls.service = placement_fixtures.PlacementService()
        cls.service.setUp()

    @classmethod
    def tearDownClass(cls):
        cls.service.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.client = self.service.client
        self.other = placement_fixtures.client_for_endpoint(
            self.service.endpoint)


class TestProviderSyncMariaDB(MariaDBPlacement, _ProviderSyncScenarios,
                              testtools.TestCase):
    """On a real Placement WSGI service on MariaDB, over loopback HTTP."""

    def test_from_conf_admin_token(self):
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        path = self.useFixture(fixtures.TempDir()).join('agent.conf')
        with open(path, 'w') as f:
            f.write('[placement]\nauth_type = admin_token\n'
                    'endpoint = %s\ntoken = admin\n' % self.service.endpoint)
        conf(['--config-file', path], default_config_files=[])
        client = placement_client.PlacementClient.from_conf(conf)
        root, _ = self.make_compute_node()
        result = provider_sync.sync_domain_providers(client, root, ZEN_1CCX)
        self.assertEqual(['L3-0'], result.created)


class TestUnreachablePlacement(testtools.TestCase):

    def test_connection_refused_is_typed(self):
        # Port 9 (discard) is closed on loopback: a refused connection.
        client = placement_fixtures.client_for_endpoint('http://127.0.0.1:9')
        e = self.assertRaises(errors.PlacementUnavailable,
                              provider_sync.sync_domain_providers,
                              client, str(uuid.uuid4()), ZEN_1CCX)
        self.assertIn('GET /resource_providers/', str(e))
