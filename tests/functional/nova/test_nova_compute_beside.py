"""nova-compute's own provider updates beside the agent's syncs (real Nova).

nova-compute keeps the root provider of its compute node in a cache with
the provider's generation and writes its inventory and traits with that
generation. Any write of ours on the root moves the generation under its
feet: its next update fails with HTTP 409, ``Failed to update inventory
... Got 409`` logged at ERROR, and is retried - operators page on such
lines. The agent therefore writes only its own providers; these tests run
nova-compute's periodic ``update_available_resource`` between the agent's
syncs and health changes, with a change for nova-compute to write each
time, and assert that nothing conflicts.
"""

from tests.functional.nova import base


class NovaComputeBesideAgentTest(base.CacheAwareTestBase):

    def _nova_writes_its_root(self, reserved_mb):
        """Give nova-compute something to write, and let it write it."""
        self.flags(reserved_host_memory_mb=reserved_mb)
        self._run_periodics()

    def _assert_nova_never_conflicted(self):
        output = self.stdlog.logger.output
        for line in output.splitlines():
            self.assertNotIn('Got 409', line)
            self.assertNotIn('generation conflict', line)
        self.assertNotIn('ResourceProviderUpdateConflict', output)

    def _alternate(self, hostname, sync):
        root = self.compute_rp_uuids[hostname]
        domain_set = self.domain_sets[hostname]
        inventory = []
        for step, healthy in enumerate((True, False, True, False, True)):
            sync(hostname, domain_set, agent_healthy=healthy)
            self._nova_writes_its_root(512 + 128 * step)
            inventory.append(self.placement.get(
                '/resource_providers/%s/inventories' % root).body[
                    'inventories']['MEMORY_MB']['reserved'])
        # nova-compute's every update reached Placement.
        self.assertEqual([512, 640, 768, 896, 1024], inventory)
        self._assert_nova_never_conflicted()

    def test_per_host_model(self):
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4,
                        model='host')
        self._alternate('compute1', self.sync_host_provider)

    def test_per_domain_model(self):
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4)
        self._alternate('compute1', self.sync_domains)
