"""``numa_flavor.mirror_mismatch``: does a guest shape mirror a host?"""

import testtools

from nova_cacheaware.numa_balance import flavor as numa_flavor

HN = numa_flavor.HostNode
TWO_BY_FOUR = [HN(0, (0, 1, 2, 3), 4096), HN(1, (4, 5, 6, 7), 4096)]
TR_LIKE = [HN(0, (0, 1), 4096), HN(1, (2, 3), 0), HN(2, (4, 5), 4096),
           HN(3, (6, 7), 0)]


class MirrorMismatchTest(testtools.TestCase):

    def test_exact_mirror(self):
        self.assertIsNone(numa_flavor.mirror_mismatch(
            [(4, 1024), (4, 1024)], TWO_BY_FOUR))

    def test_derived_shape_always_mirrors_its_host(self):
        for nodes in (TWO_BY_FOUR, TR_LIKE):
            for mode in numa_flavor.MEMORYLESS_MODES:
                shape = numa_flavor.derive(nodes, 2048, mode)
                self.assertIsNone(numa_flavor.mirror_mismatch(
                    [(len(n.vcpus), n.memory_mib) for n in shape.nodes],
                    nodes), mode)

    def test_wrong_counts(self):
        self.assertEqual(
            'host nodes give [4, 4] vCPUs per guest node, the request has '
            '[2, 2]',
            numa_flavor.mirror_mismatch([(2, 512), (2, 512)], TWO_BY_FOUR))
        self.assertIn('the request has [8]', numa_flavor.mirror_mismatch(
            [(8, 512)], TWO_BY_FOUR))

    def test_memoryless_host_both_modes_named(self):
        reason = numa_flavor.mirror_mismatch([(3, 64), (3, 64)], TR_LIKE)
        self.assertIn('[2, 2] vCPUs per guest node (memoryless drop)',
                      reason)
        self.assertIn('[4, 4] vCPUs per guest node (memoryless merge)',
                      reason)

    def test_memory_must_fit(self):
        self.assertEqual(
            'guest node 1 needs 5000 MiB, host node(s) [1] have 4096 MiB',
            numa_flavor.mirror_mismatch([(4, 1024), (4, 5000)],
                                        TWO_BY_FOUR))

    def test_no_guest_topology(self):
        self.assertIn('no guest NUMA topology',
                      numa_flavor.mirror_mismatch([], TWO_BY_FOUR))

    def test_host_without_memory(self):
        reason = numa_flavor.mirror_mismatch([(2, 64)], [HN(0, (0, 1), 0)])
        self.assertIn('no host NUMA node has both', reason)
