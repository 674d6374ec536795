"""Scenario tests: cache-aware flavors on a cloud with nova-cacheaware.

What an operator checks after deploying the extension:

* All-share memory-bound servers get distinct cache domain providers in
  their Placement allocations (one domain each, never shared);
* two such servers on one host land in different domains of that host;
* a multi-create of such servers gets one domain per server, and
  concurrent boots all go ACTIVE, each in its own domain (hosts in the
  per-domain provider model, selected by the domain trait);
* on a host in the per-host provider model (the agent's default) a
  multi-create holds the host provider's counts, one Clean slot each;
* bad ``cacheaware:`` extra specs are refused with HTTP 400;
* servers without the specs are unaffected (no domain in the allocation).

Tests that need admin skip when tempest has no admin credentials; tests that
need the extension skip, with the reason, when the cloud lacks it (no
provider with the domain trait, validators not deployed).
"""

from concurrent import futures

from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from nova_cacheaware_tempest_plugin.tests.scenario import base

CONF = config.CONF
CacheAwareScenarioTest = base.CacheAwareScenarioTest


class AllShareTest(CacheAwareScenarioTest):
    """All-share memory-bound servers and their cache domains."""

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a01')
    def test_allshare_servers_get_distinct_domains(self):
        """Two All-share memory-bound servers never share a domain."""
        domains = self.require_domains(minimum=2)
        flavor = self.create_flavor(self.allshare_specs())
        first = self.boot(flavor)
        second = self.boot(flavor)
        d1 = self.domain_of(first, domains)
        d2 = self.domain_of(second, domains)
        self.assertNotEqual(d1, d2)
        rc = CONF.cacheaware.domain_resource_class
        self.assertEqual(CONF.cacheaware.flavor_vcpus,
                         self.allocation(first)[d1][rc])

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a02')
    def test_two_servers_one_host_different_domains(self):
        """On one host with two domains, two servers get one each."""
        domains = self.require_domains(minimum=2)
        host, _ = self.host_with_domains(domains, 2)
        flavor = self.create_flavor(self.allshare_specs())
        first = self.boot(flavor, host=host)
        second = self.boot(flavor, host=host)
        self.assertEqual(host, first['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(host, second['OS-EXT-SRV-ATTR:host'])
        self.assertNotEqual(self.domain_of(first, domains),
                            self.domain_of(second, domains))


class BurstTest(CacheAwareScenarioTest):
    """Cache-aware servers booted the way users boot them: in bursts."""

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a07')
    def test_multi_create_one_domain_each(self):
        """A multi-create on one host: every server in its own domain."""
        domains = self.require_domains(minimum=2)
        host, own = self.host_with_domains(domains, 2)
        count = min(len(own), 3)
        flavor = self.create_flavor(self.allshare_specs())
        servers = self.boot(flavor, host=host, count=count)
        used = [self.domain_of(s, domains) for s in servers]
        self.assertEqual(count, len(set(used)), used)
        self.assertTrue(set(used) <= set(own), used)

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a08')
    def test_concurrent_boots_all_active(self):
        """Concurrent boots all go ACTIVE, each holding one domain.

        Distinct domains are not asserted here: Placement 16 can accept two
        concurrent claims of a provider's last unit (see the project's
        ``doc/source/evaluation/placement-claim-race.rst``), so two servers
        racing for the same Clean slot may both get it. The multi-create
        test above covers distinct domains.
        """
        domains = self.require_domains(minimum=3)
        flavor = self.create_flavor(self.allshare_specs())
        with futures.ThreadPoolExecutor(max_workers=3) as pool:
            servers = list(pool.map(lambda _: self.boot(flavor), range(3)))
        self.assertEqual(3, len({s['id'] for s in servers}))
        for server in servers:
            self.assertEqual('ACTIVE', server['status'])
            self.domain_of(server, domains)

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a0a')
    def test_exact_fit_burst_takes_every_clean_place_of_a_host(self):
        """Concurrent boots for exactly a host's free Clean places.

        Separate requests, all at once, for one host whose every free
        domain they fill: Nova claims the first candidate of the host and
        never a second one, so a request whose claim collides with a
        concurrent one would end in NoValidHost while a domain is still
        free. Every server must be ACTIVE in a domain of its own, and one
        more request is refused (no place left).
        """
        domains = self.require_domains(minimum=2)
        host, own = self.host_with_domains(domains, 2)
        free = [rp for rp in own if self.has_clean_place(rp)]
        if len(free) < 2:
            raise self.skipException('host %s has %d free Clean places '
                                     '(need 2)' % (host, len(free)))
        flavor = self.create_flavor(self.allshare_specs())
        with futures.ThreadPoolExecutor(max_workers=len(free)) as pool:
            servers = list(pool.map(
                lambda _: self.boot(flavor, host=host), free))
        self.assertEqual(['ACTIVE'] * len(free),
                         [s['status'] for s in servers])
        self.assertEqual(sorted(free),
                         sorted(self.domain_of(s, domains) for s in servers))
        self.boot(flavor, host=host, status='ERROR')

    def has_clean_place(self, rp):
        """Whether a domain provider has room for one more such server."""
        inventory = self.rp_client.list_resource_provider_inventories(rp)[
            'inventories']
        usages = self.rp_client.list_resource_provider_usages(rp)['usages']
        vcpu = CONF.cacheaware.domain_resource_class
        membound = CONF.cacheaware.domain_membound_class

        def room(rc):
            inv = inventory.get(rc)
            if inv is None:
                return 0
            return ((inv['total'] - inv['reserved']) * inv['allocation_ratio']
                    - usages.get(rc, 0))
        return (room(membound) >= 1
                and room(vcpu) >= CONF.cacheaware.flavor_vcpus)


class HostModelTest(CacheAwareScenarioTest):
    """A host in the per-host provider model (the agent's default)."""

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a09')
    def test_multi_create_counted_on_the_host_provider(self):
        """A multi-create on it: each server holds the host's counts.

        The allocation names the host's one cache provider with the
        server's vCPUs and one Clean slot (the agent chooses the domain on
        the host); its memory-bound usage counts every server.
        """
        providers = self.host_providers()
        if not providers:
            raise self.skipException(
                'no compute host has a per-host cache provider '
                '("<compute node>:cacheaware"): no agent runs with '
                '[placement] provider_model = host')
        host = rp = None
        for uuid, provider in sorted(providers.items()):
            host = self.host_of_root(provider['root_provider_uuid'])
            if host is not None:
                rp = uuid
                break
        if host is None:
            raise self.skipException('no hypervisor owns a host provider')
        inventory = self.rp_client.list_resource_provider_inventories(rp)[
            'inventories']
        membound = CONF.cacheaware.domain_membound_class
        slots = inventory[membound]['total'] - inventory[membound]['reserved']
        count = min(2, slots)
        if count < 1:
            raise self.skipException('the host provider has no free slot')
        before = self.rp_client.list_resource_provider_usages(rp)[
            'usages'].get(membound, 0)
        flavor = self.create_flavor(self.allshare_specs(domain_model=False))
        servers = self.boot(flavor, host=host, count=count)
        if count == 1:
            servers = [servers]
        vcpu = CONF.cacheaware.domain_resource_class
        for server in servers:
            self.assertEqual(host, server['OS-EXT-SRV-ATTR:host'])
            held = self.allocation(server).get(rp)
            self.assertIsNotNone(held, 'server %s holds no room of the host '
                                 'provider %s' % (server['id'], rp))
            self.assertEqual({vcpu: CONF.cacheaware.flavor_vcpus,
                              membound: 1}, held)
        self.assertEqual(before + count, self.rp_client.
                         list_resource_provider_usages(rp)['usages'][
                             membound])


class ExtraSpecValidationTest(CacheAwareScenarioTest):
    """Bad ``cacheaware:`` specs are refused by nova-api."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.cacheaware.api_validators:
            raise cls.skipException(
                'the nova-cacheaware extra-spec validators are not deployed '
                '([cacheaware] api_validators = False)')

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a03')
    def test_bad_value_refused(self):
        """An unknown value of a known key is HTTP 400."""
        flavor = self.create_flavor()
        self.assertRaises(lib_exc.BadRequest,
                          self.flavors_client.set_flavor_extra_spec,
                          flavor['id'],
                          **{'cacheaware:cache_share': 'everything'})

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a04')
    def test_unknown_key_refused(self):
        """An unknown key in the namespace is HTTP 400."""
        flavor = self.create_flavor()
        self.assertRaises(lib_exc.BadRequest,
                          self.flavors_client.set_flavor_extra_spec,
                          flavor['id'], **{'cacheaware:no_such_key': 'x'})

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a05')
    def test_good_specs_accepted(self):
        """The documented keys and values are accepted."""
        flavor = self.create_flavor()
        body = self.flavors_client.set_flavor_extra_spec(
            flavor['id'], **{'cacheaware:cache_share': 'all',
                             'cacheaware:workload': 'memory'})
        self.assertEqual('all', body['extra_specs']['cacheaware:cache_share'])


class PlainServerTest(CacheAwareScenarioTest):
    """Servers without cache-aware specs are unaffected."""

    @decorators.idempotent_id('0c7b8f0e-8f7a-4d8e-9a61-3c1f5b1f6a06')
    def test_plain_server_holds_no_domain(self):
        """A plain flavor boots and its allocation names no domain."""
        domains = self.domain_providers()
        server = self.boot(self.create_flavor())
        allocation = self.allocation(server)
        self.assertTrue(allocation, 'server has no allocation')
        self.assertEqual([], [rp for rp in allocation if rp in domains])
        rc = CONF.cacheaware.domain_resource_class
        self.assertFalse(any(rc in r for r in allocation.values()))
