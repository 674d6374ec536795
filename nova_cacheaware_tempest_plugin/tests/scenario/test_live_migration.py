"""Scenario test: live migration of a server the agent has pinned.

The agent repins floating vCPUs live, and a live migration would carry
those pins to the destination; the libvirt hook that nova-cacheaware
installs (``nova-cacheaware install-hook``) drops exactly the agent's pins
from the incoming domain, and the destination's agent pins the guest again
for its own host. This test live-migrates a cache-aware server between two
libvirt computes (``[cacheaware] live_migration_hosts``, source first) and
back, and checks through public APIs that:

* the migration completes (``os-migrations``: a ``live-migration`` record,
  ``completed``, from the source to the destination), and the server is
  ACTIVE on the destination;
* the server's Placement allocation moved: it holds exactly one cache
  provider of the destination (the cache vCPUs and its memory-bound slot)
  and nothing of the source, whose domain is free again;
* the guest runs there: server diagnostics (libvirt, ``running``, its vCPU
  time growing), and Nova serves its console output from there;
* back on the source (per-domain provider model), the server again holds
  one domain provider of the source.

With ``[cacheaware] libvirt_uris`` (the devcloud's private daemons) it also
reads the domains read-only: before the migration the agent has pinned the
vCPU into one domain and recorded that pin in the domain XML; on the
destination the running domain carries neither (the hook dropped them
from the incoming definition); back on the source the agent pins it again.
(The destination's *persistent* definition still carries both: libvirt
runs the hook on the live definition only, and Nova 34 sends the source's
live XML as the persistent one too; see doc/source/admin/tempest.rst.)
"""

import time

from tempest import config
from tempest.lib import decorators

from nova_cacheaware_tempest_plugin.tests.scenario import base

CONF = config.CONF
MIGRATION_TIMEOUT_S = 300
PIN_TIMEOUT_S = 120


class LiveMigrationTest(base.CacheAwareScenarioTest):
    """A pinned cache-aware server live-migrates and back."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        cls.skip_without_live_migration('live_migration_hosts')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.migrations_client = cls.os_admin.migrations_client

    def cache_holding(self, server, root):
        """The server's one cache provider under ``root``, and its room."""
        vcpu = CONF.cacheaware.domain_resource_class
        rps = self.rp_client.list_resource_providers(
            in_tree=root)['resource_providers']
        tree = {rp['uuid'] for rp in rps}
        held = [(rp, res) for rp, res in self.allocation(server).items()
                if rp in tree and vcpu in res]
        self.assertEqual(1, len(held), 'server %s should hold one cache '
                         'provider of %s, it holds %s'
                         % (server['id'], root, self.allocation(server)))
        return held[0]

    def root_of(self, host):
        """The compute node provider of a compute service host."""
        for h in self.os_admin.hypervisor_client.list_hypervisors(
                detail=True)['hypervisors']:
            if h['service']['host'] == host:
                return h['id']
        raise self.skipException('no hypervisor of host %s' % host)

    def wait_for_pin(self, view, server, pinned):
        """Wait until the agent pinned (or left unpinned) the vCPU."""
        deadline = time.time() + PIN_TIMEOUT_S
        every = view.host_cpus()
        while True:
            pins = view.pins(server['id'])
            record = view.agent_record(server['id'])
            if pinned == (pins[0] != every and record is not None):
                return pins, record
            if time.time() > deadline:
                self.fail('vCPU 0 of %s: pins %s, agent record %s after '
                          '%d s (wanted pinned=%s)' % (
                              server['id'], pins, record, PIN_TIMEOUT_S,
                              pinned))
            time.sleep(2)

    def live_migrate(self, server, source, dest):
        """Live-migrate to ``dest``; wait for ACTIVE there, and the record."""
        self.admin_servers_client.live_migrate_server(
            server['id'], host=dest, block_migration='auto')
        deadline = time.time() + MIGRATION_TIMEOUT_S
        while True:
            body = self.admin_servers_client.show_server(server['id'])
            now = body['server']
            if now['status'] == 'ERROR':
                self.fail('server %s went to ERROR migrating to %s: %s'
                          % (server['id'], dest, now.get('fault')))
            if (now['status'] == 'ACTIVE'
                    and now['OS-EXT-STS:task_state'] is None):
                break
            if time.time() > deadline:
                self.fail('server %s still %s/%s after %d s'
                          % (server['id'], now['status'],
                             now['OS-EXT-STS:task_state'],
                             MIGRATION_TIMEOUT_S))
            time.sleep(2)
        self.assertEqual(dest, now['OS-EXT-SRV-ATTR:host'],
                         'the migration of %s to %s did not happen (rolled '
                         'back?)' % (server['id'], dest))
        # Nova clears the task state before it marks the migration
        # completed (the source's clean-up comes last): wait for that.
        while True:
            migrations = [m for m in self.migrations_client.list_migrations(
                instance_uuid=server['id'])['migrations']
                if m['migration_type'] == 'live-migration'
                and m['dest_compute'] == dest]
            self.assertEqual(1, len(migrations), migrations)
            if (migrations[0]['status'] not in ('running', 'post-migrating')
                    or time.time() > deadline):
                break
            time.sleep(1)
        self.assertEqual(('completed', source),
                         (migrations[0]['status'],
                          migrations[0]['source_compute']))
        return now

    def assert_runs(self, server):
        """Diagnostics: libvirt, running, one vCPU whose time grows."""
        diag = self.admin_servers_client.show_server_diagnostics
        first = diag(server['id'])
        self.assertEqual(('libvirt', 'running', 1),
                         (first['driver'], first['state'],
                          first['num_cpus']))
        deadline = time.time() + 60
        while True:
            time.sleep(2)
            later = diag(server['id'])
            if (later['cpu_details'][0]['time']
                    > first['cpu_details'][0]['time']):
                return later
            self.assertLess(time.time(), deadline,
                            'vCPU time of %s does not grow' % server['id'])

    @decorators.idempotent_id('5f2a7c1e-9b3d-4e8a-a6c4-0d1e2f3a4b01')
    def test_pinned_server_live_migrates_and_back(self):
        """There and back: completed, ACTIVE, cache room moved each time."""
        source, dest = CONF.cacheaware.live_migration_hosts
        src_root, dst_root = self.root_of(source), self.root_of(dest)
        domains = self.domain_providers()
        specs = self.allshare_specs(domain_model=False)
        specs['resources_CACHE:' + CONF.cacheaware.domain_resource_class] = '1'
        image = CONF.cacheaware.guest_image_ref or None
        server = self.boot(self.create_flavor(specs, vcpus=1), host=source,
                           image=image)
        vcpu = CONF.cacheaware.domain_resource_class
        membound = CONF.cacheaware.domain_membound_class
        room = {vcpu: 1, membound: 1}
        held, res = self.cache_holding(server, src_root)
        self.assertEqual(room, res)
        self.assertIn(held, domains, 'the source must be in the per-domain '
                      'provider model: %s is no domain provider' % held)
        src_view = self.libvirt_view(source)
        dst_view = self.libvirt_view(dest)
        if src_view:
            self.wait_for_pin(src_view, server, pinned=True)

        self.live_migrate(server, source, dest)
        there, res = self.cache_holding(server, dst_root)
        self.assertEqual(room, res)
        self.assertEqual(0, self.rp_client.list_resource_provider_usages(
            held)['usages'].get(membound, 0))
        self.assert_runs(server)
        # Nova serves the console from the destination (a new log there:
        # with local disks the old one stays on the source).
        self.admin_servers_client.get_console_output(server['id'])
        if dst_view:
            # The hook dropped the agent's pin and record on the way in.
            self.assertIsNone(dst_view.agent_record(server['id']))
            self.assertEqual(dst_view.host_cpus(),
                             dst_view.pins(server['id'])[0])

        self.live_migrate(server, dest, source)
        back, res = self.cache_holding(server, src_root)
        self.assertEqual(room, res)
        self.assertIn(back, domains)
        self.assert_runs(server)
        if src_view:
            self.wait_for_pin(src_view, server, pinned=True)
