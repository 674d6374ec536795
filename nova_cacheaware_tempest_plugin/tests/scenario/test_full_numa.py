"""Scenario tests: full-NUMA flavors and ``FullNUMAFilter``.

A flavor written as ``nova-cacheaware flavor numa-full`` writes it (the
same code derives the extra specs here) lands only on a host whose NUMA
shape it mirrors, and gets NoValidHost on a host Nova's own
``NUMATopologyFilter`` would accept but whose shape differs.

The hosts' shapes come from ``[cacheaware] numa_shapes`` (Nova's API does
not show a host's NUMA cells); without it the tests skip.
"""

from tempest import config
from tempest.lib import decorators

from nova_cacheaware.numa_balance import flavor as numa_flavor
from nova_cacheaware_tempest_plugin.tests.scenario import base

CONF = config.CONF
NO_VALID_HOST = 'No valid host was found'


def configured_shapes():
    """``{host: [CPUs of node 0, node 1, ...]}`` from the configuration."""
    return {host: [int(n) for n in shape.split('+')]
            for host, shape in CONF.cacheaware.numa_shapes.items()}


def numa_fits(guest, host):
    """Whether each guest node gets a host node with as many CPUs.

    What ``NUMATopologyFilter`` needs of an unpinned guest (its CPU
    overcommit aside).
    """
    if len(guest) > len(host):
        return False
    return all(g <= h for g, h in zip(sorted(guest, reverse=True),
                                      sorted(host, reverse=True)))


def pick_mirrored_host(shapes):
    """``(host, shape, decoys)`` for the full-NUMA tests, or None.

    ``host``: a host whose shape no other configured host has (the largest
    such shape); ``decoys``: the hosts ``NUMATopologyFilter`` alone would
    also give its full-NUMA flavor.
    """
    found = []
    for host, shape in shapes.items():
        others = [h for h in shapes if h != host]
        if any(shapes[h] == shape for h in others):
            continue
        decoys = sorted(h for h in others if numa_fits(shape, shapes[h]))
        if decoys:
            found.append((sum(shape), host, shape, decoys))
    if not found:
        return None
    _, host, shape, decoys = max(found)
    return host, shape, decoys


class FullNUMATest(base.CacheAwareScenarioTest):
    """Full-NUMA flavors land only where they mirror the host."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.cacheaware.numa_shapes:
            raise cls.skipException(
                '[cacheaware] numa_shapes is empty: the tests need the NUMA '
                'shape of every compute host FullNUMAFilter considers')

    def setUp(self):
        super().setUp()
        picked = pick_mirrored_host(configured_shapes())
        if picked is None:
            raise self.skipException(
                'no host in [cacheaware] numa_shapes has a shape of its own '
                'that another host could also hold: nothing tells '
                'FullNUMAFilter from NUMATopologyFilter')
        self.host, self.shape, self.decoys = picked

    def full_numa_specs(self):
        """The extra specs ``flavor numa-full`` writes for the host."""
        nodes, first = [], 0
        for node_id, cpus in enumerate(self.shape):
            nodes.append(numa_flavor.HostNode(
                id=node_id, cpus=tuple(range(first, first + cpus)),
                memory_mib=1024))
            first += cpus
        ram = CONF.cacheaware.flavor_ram_mb * len(self.shape)
        return numa_flavor.derive(nodes, ram).extra_specs(), ram

    def full_numa_flavor(self, full=True):
        """A flavor mirroring the host (``full``: with cacheaware:numa)."""
        specs, ram = self.full_numa_specs()
        if not full:
            del specs['cacheaware:numa']
        return self.create_flavor(specs, vcpus=sum(self.shape), ram=ram)

    @decorators.idempotent_id('5b0f4c2e-7d1a-4e55-9a3c-1f2b8d6e9a01')
    def test_lands_on_the_host_it_mirrors(self):
        """Scheduled freely, the flavor lands on the one mirrored host."""
        server = self.boot(self.full_numa_flavor())
        self.assertEqual(self.host, server['OS-EXT-SRV-ATTR:host'],
                         'a flavor mirroring %s (nodes %s) landed on %s; '
                         'NUMATopologyFilter alone would also allow %s'
                         % (self.host, self.shape,
                            server['OS-EXT-SRV-ATTR:host'], self.decoys))

    @decorators.idempotent_id('5b0f4c2e-7d1a-4e55-9a3c-1f2b8d6e9a02')
    def test_no_valid_host_where_the_shape_differs(self):
        """On a host of another shape the flavor gets NoValidHost.

        The same NUMA request without ``cacheaware:numa=full`` fits there.
        """
        decoy = self.decoys[0]
        refused = self.boot(self.full_numa_flavor(), host=decoy,
                            status='ERROR')
        self.assertIn(NO_VALID_HOST, refused['fault']['message'])
        fits = self.boot(self.full_numa_flavor(full=False), host=decoy)
        self.assertEqual(decoy, fits['OS-EXT-SRV-ATTR:host'])
