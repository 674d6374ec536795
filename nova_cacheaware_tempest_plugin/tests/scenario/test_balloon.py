"""Scenario test: the agent's ``balloon`` capability on real guests.

Servers whose flavor has ``cacheaware:memory_policy=hit_ratio`` boot at
their flavor RAM, like every Nova server; the agent on ``[cacheaware]
agent_host`` (``[agent] capabilities = balloon``) runs the guest helper in
them through the QEMU guest agent and holds back the memory an idle,
satisfied guest leaves free, never more than the operator's ``[balloon]
pool_mib`` (``[cacheaware] balloon_pool_mib``) for the host's opted-in
servers together and never below a server's ``cacheaware:memory_min_mb``.
The devcloud's guests read nothing (satisfied) and leave most of their
memory free, so every size is exact:

* a server whose floor is 32 MiB under its flavor RAM gives exactly those
  32 MiB (the floor binds: the pool has more room);
* a second server, floor 128 MiB, gives exactly the pool's rest
  (``pool_mib - 32``: the pool binds), while the first stays at its floor;
* once the first is deleted, the second gives the 32 MiB freed in the pool.

The balloon is observed through server diagnostics: the legacy format
(compute API 2.1-2.47) has libvirt's balloon statistics, ``memory-actual``
in KiB (the 2.48 format's ``memory_details`` is rounded to whole GiB).
Not on the guest's console: Nova gives the balloon ``autodeflate`` (the
guest may take memory back under OOM), and with that feature Linux leaves
MemTotal unchanged when the balloon inflates.
"""

import time

from tempest import config
from tempest.lib import decorators
from tempest.lib.services.compute import base_compute_client

from nova_cacheaware_tempest_plugin.tests.scenario import test_vcpu_sizing

CONF = config.CONF
#: Server diagnostics with the balloon statistics (before 2.48).
LEGACY_DIAGNOSTICS = '2.47'
#: What the first server may give above its floor.
FLOOR_GAP_MIB = 32
#: The least ``cacheaware:memory_min_mb``.
MIN_FLOOR_MIB = 128
WAIT_S = 180


class BalloonTest(test_vcpu_sizing.AgentCapabilityTest):
    """``cacheaware:memory_policy=hit_ratio``: idle memory held back."""

    capability = 'balloon'

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        pool = CONF.cacheaware.balloon_pool_mib
        ram = CONF.cacheaware.flavor_ram_mb
        # Exact sizes need a pool the idle guests can fill from free
        # memory: at most half their RAM.
        if not FLOOR_GAP_MIB < pool <= ram // 2:
            raise cls.skipException(
                '[cacheaware] balloon_pool_mib (%d) must be above %d and '
                'at most half of flavor_ram_mb (%d): with the agent\'s '
                'default pool_mib = 0 nothing is ever held back'
                % (pool, FLOOR_GAP_MIB, ram))

    def balloon_flavor(self, floor_mib):
        """One vCPU, the configured RAM, hit-ratio ballooning, a floor."""
        return self.create_flavor({'cacheaware:memory_policy': 'hit_ratio',
                                   'cacheaware:memory_min_mb': str(floor_mib)},
                                  vcpus=1)

    def balloon_kib(self, server):
        """The balloon's size (``memory-actual``, KiB) from diagnostics."""
        saved = base_compute_client.COMPUTE_MICROVERSION
        base_compute_client.COMPUTE_MICROVERSION = LEGACY_DIAGNOSTICS
        try:
            diag = self.admin_servers_client.show_server_diagnostics(
                server['id'])
        finally:
            base_compute_client.COMPUTE_MICROVERSION = saved
        # None until libvirt has the balloon's statistics.
        return diag.get('memory-actual')

    def wait_for_sizes(self, wanted, floors):
        """Wait until each ``{name: (server, MiB)}`` balloon has that size.

        Every reading on the way must lie between the server's floor and
        its flavor RAM.
        """
        ram = CONF.cacheaware.flavor_ram_mb
        deadline = time.time() + WAIT_S
        while True:
            now = {}
            for name, (server, _mib) in wanted.items():
                kib = now[name] = self.balloon_kib(server)
                self.assertTrue(
                    kib is None or floors[name] * 1024 <= kib <= ram * 1024,
                    'server %s (%s): balloon %s KiB outside [floor %d MiB, '
                    'flavor %d MiB]' % (name, server['id'], kib,
                                        floors[name], ram))
            if all(now[n] == mib * 1024 for n, (_s, mib) in wanted.items()):
                return
            if time.time() > deadline:
                self.fail('balloons after %d s: %s KiB, wanted %s MiB'
                          % (WAIT_S, now, {n: mib for n, (_s, mib)
                                           in wanted.items()}))
            time.sleep(2)

    @decorators.idempotent_id('3c8e1f20-6b7d-4a59-9e0c-2d4f6a8b1c01')
    def test_idle_memory_is_held_back_within_floor_and_pool(self):
        """Floor binds, then the pool; a freed share of the pool is used."""
        self.require_alone()
        ram = CONF.cacheaware.flavor_ram_mb
        pool = CONF.cacheaware.balloon_pool_mib
        floors = {'first': ram - FLOOR_GAP_MIB, 'second': MIN_FLOOR_MIB}
        first = self.boot_reporting(self.balloon_flavor(floors['first']))
        self.wait_for_sizes({'first': (first, floors['first'])}, floors)

        second = self.boot_reporting(self.balloon_flavor(floors['second']))
        self.wait_for_sizes({'first': (first, floors['first']),
                             'second': (second, ram - pool + FLOOR_GAP_MIB)},
                            floors)

        self.admin_servers_client.delete_server(first['id'])
        self.wait_for_sizes({'second': (second, ram - pool)}, floors)
