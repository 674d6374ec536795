"""Scenario test: the agent repins a memory-bound server when a domain frees.

On ``[cacheaware] repin_host`` (an agent in the per-domain provider model),
one All-share, Clean server per cache domain holds every domain: its
allocation names the domain provider, uses its one memory-bound slot and,
with as many vCPUs as the domain has CPUs, all of its room. A server of a
flavor that only declares ``cacheaware:workload=memory`` (no cache group:
Placement gives it no domain) then fits in no domain: the agent leaves it
floating and counts it nowhere. When one of the domain holders is deleted,
the agent pins the memory-bound server into the freed domain, and says so
to Placement: it sets ``reserved = 1`` of the memory-bound slot of that
domain provider (the slot the server now takes without an allocation), so
that the scheduler keeps Clean requests out of it. The test observes that
through Placement alone: after the deletion exactly the freed domain has a
reserved slot, every other domain none, and once the server is deleted the
reservation is gone. (Before the deletion Placement cannot tell: the agent
clamps ``reserved`` to what allocations leave, and the holders use every
slot.)

With ``[cacheaware] libvirt_uris`` for the host (the devcloud) it also
reads the domains read-only: the memory-bound server floats on every CPU
before (for a few agent passes), and is pinned to exactly the CPUs the
deleted holder was pinned to after.
"""

import time

from tempest import config
from tempest.lib import decorators

from nova_cacheaware_tempest_plugin.tests.scenario import base

CONF = config.CONF
WAIT_S = 120
#: The most domains the test fills (one TCG guest each).
MAX_DOMAINS = 4
#: How long the memory-bound server must stay floating while every domain
#: is held (a few agent passes: the devcloud's agents pass every 3 s).
FLOATING_S = 8


class RepinTest(base.CacheAwareScenarioTest):
    """A freed cache domain goes to the memory-bound server without one."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.cacheaware.repin_host:
            raise cls.skipException(
                '[cacheaware] repin_host is empty: the test needs a libvirt '
                'compute whose agent runs the per-domain provider model')

    def reserved(self, rp):
        """The memory-bound slots the agent reserved on a domain provider."""
        inv = self.rp_client.list_resource_provider_inventories(rp)[
            'inventories']
        return inv[CONF.cacheaware.domain_membound_class]['reserved']

    def wait_for_reserved(self, own, wanted):
        """Wait until ``{rp: reserved}`` of ``own`` equals ``wanted``."""
        deadline = time.time() + WAIT_S
        while True:
            now = {rp: self.reserved(rp) for rp in own}
            if now == wanted or time.time() > deadline:
                self.assertEqual(wanted, now, 'memory-bound slots reserved '
                                 'by the agent on the domain providers')
                return
            time.sleep(2)

    def wait_for_pin(self, view, server, wanted=None):
        """vCPU 0's CPUs once pinned (to ``wanted``, if given)."""
        deadline = time.time() + WAIT_S
        while True:
            cpus = view.pins(server['id'])[0]
            if (cpus == wanted if wanted else cpus != view.host_cpus()):
                return cpus
            if time.time() > deadline:
                self.fail('vCPU 0 of %s on %s after %d s, wanted %s'
                          % (server['id'], cpus, WAIT_S,
                             wanted or 'fewer CPUs'))
            time.sleep(1)

    def assert_floating(self, view, server, seconds):
        """The server's vCPU stays on every CPU for ``seconds``."""
        deadline = time.time() + seconds
        while True:
            self.assertEqual({0: view.host_cpus()}, view.pins(server['id']))
            if time.time() > deadline:
                return
            time.sleep(1)

    def holders(self, host, own):
        """One All-share, Clean server per domain of ``host``, filling it."""
        vcpu = CONF.cacheaware.domain_resource_class
        inv = self.rp_client.list_resource_provider_inventories(own[0])[
            'inventories'][vcpu]
        specs = self.allshare_specs()
        specs['resources_CACHE:' + vcpu] = str(inv['total'])
        flavor = self.create_flavor(specs, vcpus=inv['total'])
        servers = self.boot(flavor, host=host, count=len(own))
        domains = {rp: None for rp in own}
        for server in servers:
            domains[self.domain_of(server, domains)] = server
        self.assertNotIn(None, domains.values(), 'one holder per domain')
        return domains

    @decorators.idempotent_id('7a4d2e9c-1f3b-4c6a-8d5e-0b9a7c6e5f01')
    def test_memory_bound_server_repinned_into_a_freed_domain(self):
        """Held domains, a floating memory-bound server, one freed."""
        host = CONF.cacheaware.repin_host
        domains = self.require_domains(minimum=2)
        own = sorted(rp for rp, p in domains.items()
                     if self.host_of_root(p['root_provider_uuid']) == host)
        if not 2 <= len(own) <= MAX_DOMAINS:
            raise self.skipException(
                '%s has %d domain providers; the test needs 2 to %d'
                % (host, len(own), MAX_DOMAINS))
        view = self.libvirt_view(host)
        holders = self.holders(host, own)
        none = {rp: 0 for rp in own}
        # Registered first, so it runs after the server's deletion.
        self.addCleanup(self.wait_for_reserved, own, none)
        floating = self.boot(self.create_flavor(
            {'cacheaware:workload': 'memory'}, vcpus=1), host=host)
        self.assertEqual([], [rp for rp in self.allocation(floating)
                              if rp in domains])
        if view:
            freed_cpus = self.wait_for_pin(view, holders[own[-1]])
            self.assert_floating(view, floating, FLOATING_S)

        self.admin_servers_client.delete_server(holders[own[-1]]['id'])
        self.wait_for_reserved(own, dict(none, **{own[-1]: 1}))
        if view:
            self.wait_for_pin(view, floating, freed_cpus)
