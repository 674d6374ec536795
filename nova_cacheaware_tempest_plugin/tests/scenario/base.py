"""The shared base of the nova-cacheaware scenario tests: clients, flavors
and servers deleted at cleanup, Placement allocations, skips with reasons."""

import collections

from tempest.common import credentials_factory
from tempest.common import waiters
from tempest import config
from tempest.lib.common import api_microversion_fixture
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import exceptions as lib_exc
from tempest import test

from nova_cacheaware_tempest_plugin.tests.scenario import libvirt_view

CONF = config.CONF
# 2.74: "host" in server create (admin); 2.86: Nova validates extra specs.
COMPUTE_MICROVERSION = '2.86'
PLACEMENT_MICROVERSION = '1.39'


class CacheAwareScenarioTest(test.BaseTestCase):
    """Shared setup: clients, flavors with cleanup, boot and allocation."""

    credentials = ['primary', 'admin']

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not credentials_factory.is_admin_available(
                identity_version=CONF.identity.auth_version):
            raise cls.skipException(
                'nova-cacheaware scenario tests need admin credentials '
                '(flavor extra specs and Placement allocations are '
                'admin-only)')

    @classmethod
    def skip_without_live_migration(cls, option):
        """Skip unless ``[cacheaware] option`` names two hosts to migrate.

        And unless the cloud live-migrates at all.
        """
        hosts = getattr(CONF.cacheaware, option)
        if len(hosts) != 2:
            raise cls.skipException(
                '[cacheaware] %s must name two libvirt computes (source, '
                'destination), not %s' % (option, hosts))
        if not CONF.compute_feature_enabled.live_migration:
            raise cls.skipException('[compute-feature-enabled] '
                                    'live_migration is False')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.servers_client = cls.os_primary.servers_client
        cls.admin_servers_client = cls.os_admin.servers_client
        cls.flavors_client = cls.os_admin.flavors_client
        cls.placement_client = cls.os_admin.placement_client
        cls.rp_client = cls.os_admin.resource_providers_client

    def setUp(self):
        super().setUp()
        self.useFixture(api_microversion_fixture.APIMicroversionFixture(
            compute_microversion=COMPUTE_MICROVERSION,
            placement_microversion=PLACEMENT_MICROVERSION))

    # -- helpers ---------------------------------------------------------
    def domain_providers(self):
        """``{rp uuid: provider}`` of every cache domain provider."""
        try:
            self.placement_client.show_trait(CONF.cacheaware.domain_trait)
        except lib_exc.NotFound:
            # Placement refuses to filter on a trait it does not know.
            return {}
        rps = self.rp_client.list_resource_providers(
            required=CONF.cacheaware.domain_trait)['resource_providers']
        return {rp['uuid']: rp for rp in rps}

    def require_domains(self, minimum=1):
        """Skip unless the cloud has ``minimum`` domain providers."""
        domains = self.domain_providers()
        if len(domains) < minimum:
            raise self.skipException(
                'the cloud has %d resource providers with trait %s (need '
                '%d): nova-cacheaware domain providers are not deployed'
                % (len(domains), CONF.cacheaware.domain_trait, minimum))
        return domains

    def create_flavor(self, extra_specs=None, vcpus=None, ram=None):
        """An admin flavor, the configured size by default; cleaned up."""
        flavor = self.flavors_client.create_flavor(
            name=data_utils.rand_name('cacheaware'),
            vcpus=vcpus or CONF.cacheaware.flavor_vcpus,
            ram=ram or CONF.cacheaware.flavor_ram_mb,
            disk=CONF.cacheaware.flavor_disk_gb)['flavor']
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.flavors_client.delete_flavor, flavor['id'])
        if extra_specs:
            self.flavors_client.set_flavor_extra_spec(flavor['id'],
                                                      **extra_specs)
        return flavor

    def allshare_specs(self, domain_model=True):
        """The specs of an All-share memory-bound flavor that needs Clean.

        What ``nova-cacheaware flavor set --cache-share all --workload
        memory --cache-clean required`` writes, less the agent-health
        trait: the domain's vCPUs and its one memory-bound slot in one
        granular group, so Placement itself keeps two such servers out of
        one domain (with ``cache_clean=preferred`` that is only the
        weigher's preference, which a test cannot rely on).

        ``domain_model``: the group also requires the domain trait, so
        only hosts in the per-domain provider model qualify (where the
        allocation names the domain, which these tests check); a host in
        the per-host model (the agent's default) has no such trait.
        """
        group = 'resources_CACHE:'
        specs = {'cacheaware:cache_share': 'all',
                 'cacheaware:workload': 'memory',
                 'cacheaware:cache_clean': 'required',
                 group + CONF.cacheaware.domain_resource_class:
                     str(CONF.cacheaware.flavor_vcpus),
                 group + CONF.cacheaware.domain_membound_class: '1',
                 'group_policy': 'none'}
        if domain_model:
            specs['trait_CACHE:' + CONF.cacheaware.domain_trait] = 'required'
        return specs

    def host_providers(self):
        """``{rp uuid: provider}`` of every per-host cache provider."""
        rps = self.rp_client.list_resource_providers()['resource_providers']
        return {rp['uuid']: rp for rp in rps
                if rp['name'].endswith(':cacheaware')
                and rp['parent_provider_uuid']}

    def host_of_root(self, root):
        """The compute service host of a compute node provider, or None."""
        hypervisors = self.os_admin.hypervisor_client.list_hypervisors(
            detail=True)['hypervisors']
        for h in hypervisors:
            if h['id'] == root:
                return h['service']['host']
        return None

    def boot(self, flavor, host=None, count=1, image=None, status='ACTIVE'):
        """Boot ``count`` servers in one request, wait for ``status``.

        Returns the server (``count`` 1) or the list of servers; each is
        deleted at cleanup.
        """
        kwargs = {'name': data_utils.rand_name('cacheaware'),
                  'imageRef': (image or CONF.cacheaware.image_ref
                               or CONF.compute.image_ref),
                  'flavorRef': flavor['id']}
        if CONF.cacheaware.networks_none:
            kwargs['networks'] = 'none'
        client = self.servers_client
        if host:
            kwargs['host'] = host
            client = self.admin_servers_client
        if count > 1:
            kwargs.update(min_count=count, max_count=count,
                          return_reservation_id=True)
            reservation = client.create_server(**kwargs)['reservation_id']
            ids = [s['id'] for s in client.list_servers(
                reservation_id=reservation)['servers']]
        else:
            ids = [client.create_server(**kwargs)['server']['id']]
        for server_id in ids:
            self.addCleanup(waiters.wait_for_server_termination,
                            client, server_id,
                            ignore_error=(status == 'ERROR'))
            self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                            client.delete_server, server_id)
        for server_id in ids:
            waiters.wait_for_server_status(
                client, server_id, status,
                raise_on_error=(status != 'ERROR'))
        servers = [self.admin_servers_client.show_server(i)['server']
                   for i in ids]
        return servers[0] if count == 1 else servers

    def host_with_domains(self, domains, minimum):
        """A compute host with ``minimum`` domain providers, and them."""
        per_root = collections.defaultdict(list)
        for rp in domains.values():
            per_root[rp['root_provider_uuid']].append(rp['uuid'])
        hypervisors = self.os_admin.hypervisor_client.list_hypervisors(
            detail=True)['hypervisors']
        by_uuid = {h['id']: h for h in hypervisors}
        for root, own in sorted(per_root.items(), key=lambda x: -len(x[1])):
            if len(own) >= minimum and root in by_uuid:
                return by_uuid[root]['service']['host'], own
        raise self.skipException('no compute host has %d or more cache '
                                 'domain providers' % minimum)

    def allocation(self, server):
        """``{rp uuid: resources}`` of a server's Placement allocation."""
        allocs = self.placement_client.list_allocations(server['id'])
        return {rp: a['resources']
                for rp, a in allocs['allocations'].items()}

    def domain_of(self, server, domains):
        """The one domain provider in a server's allocation."""
        used = [rp for rp in self.allocation(server) if rp in domains]
        self.assertEqual(1, len(used),
                         'server %s should hold exactly one cache domain, '
                         'its allocation names %s' % (server['id'], used))
        return used[0]

    def libvirt_view(self, host):
        """A read-only :class:`~.libvirt_view.LibvirtView` of ``host``.

        None without its ``[cacheaware] libvirt_uris`` entry.
        """
        uri = CONF.cacheaware.libvirt_uris.get(host)
        if not uri:
            return None
        view = libvirt_view.LibvirtView(uri)
        self.addCleanup(view.close)
        return view
