"""Full-NUMA flavor derivation over the named machines and edge cases."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.numa_balance import flavor as numa_flavor
from nova_cacheaware.topology import sysfs
from tests.fixtures import machines
from tests.fixtures import sysfs_tree

HN = numa_flavor.HostNode

# name -> (ram MiB, memoryless mode, expected extra specs, number of notes)
EXPECTED = {
    'q6600': (8192, 'drop', {
        'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-3',
        'hw:numa_mem.0': '8192'}, 0),
    'xeon-silver-4210': (4096, 'drop', {
        'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-19',
        'hw:numa_mem.0': '4096'}, 0),
    'xeon-x5690-x2': (8192, 'drop', {
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-11',
        'hw:numa_mem.0': '4096', 'hw:numa_cpus.1': '12-23',
        'hw:numa_mem.1': '4096'}, 0),
    'opteron-6367-x2': (8192, 'drop', dict(
        [('hw:numa_nodes', '4')]
        + [('hw:numa_cpus.%d' % i, '%d-%d' % (8 * i, 8 * i + 7))
           for i in range(4)]
        + [('hw:numa_mem.%d' % i, '2048') for i in range(4)]), 0),
    'threadripper-2990wx': (8192, 'drop', {
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-15',
        'hw:numa_mem.0': '4096', 'hw:numa_cpus.1': '16-31',
        'hw:numa_mem.1': '4096'}, 3),
    'epyc-7713-offline': (16384, 'drop', {
        'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-118',
        'hw:numa_mem.0': '16384'}, 0),
    'kvm-2s-nocache': (1000, 'drop', {
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1',
        'hw:numa_mem.0': '500', 'hw:numa_cpus.1': '2-3',
        'hw:numa_mem.1': '500'}, 0),
}


def _nodes(name, usable=None):
    root = sysfs_tree.cached_tree(name, machines.ALL[name])
    return numa_flavor.host_nodes_from_topology(sysfs.read_topology(root),
                                                usable)


class NamedMachinesTest(testtools.TestCase):

    def test_table(self):
        for name, (ram, mode, specs, notes) in EXPECTED.items():
            flavor = numa_flavor.derive(_nodes(name), ram, mode)
            specs = dict(specs, **{'cacheaware:numa': 'full'})
            self.assertEqual(specs, flavor.extra_specs(), name)
            self.assertEqual(notes, len(flavor.notes), name)

    def test_threadripper_drop_explains(self):
        flavor = numa_flavor.derive(_nodes('threadripper-2990wx'), 8192)
        self.assertEqual(32, flavor.vcpus)
        self.assertEqual([(0,), (2,)], [n.host_nodes for n in flavor.nodes])
        self.assertIn('host node 1 is memoryless: Nova cannot fit a guest '
                      'node there, so its 16 CPUs are left out',
                      flavor.notes[0])
        self.assertEqual('guest nodes 0..1 mirror host nodes [0, 2] in that '
                         'order', flavor.notes[2])

    def test_threadripper_merge(self):
        flavor = numa_flavor.derive(_nodes('threadripper-2990wx'), 8192,
                                    'merge')
        self.assertEqual(64, flavor.vcpus)
        self.assertEqual({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-31',
                          'hw:numa_mem.0': '4096', 'hw:numa_cpus.1': '32-63',
                          'hw:numa_mem.1': '4096', 'cacheaware:numa': 'full'},
                         flavor.extra_specs())
        self.assertEqual([(0, 1), (2, 3)],
                         [n.host_nodes for n in flavor.nodes])

    def test_usable_cpus(self):
        usable = [c for c in range(24) if c not in (0, 1)]  # host reserves 2
        flavor = numa_flavor.derive(_nodes('xeon-x5690-x2', usable), 2048)
        self.assertEqual('0-10', flavor.extra_specs()['hw:numa_cpus.0'])
        self.assertEqual('11-21', flavor.extra_specs()['hw:numa_cpus.1'])

    def test_nothing_to_mirror(self):
        # No node directory: one node with unknown (0) memory.
        e = self.assertRaises(numa_flavor.NUMAFlavorError,
                              numa_flavor.derive, _nodes('arm-nocache'), 512)
        self.assertIn('no host NUMA node has both usable CPUs and memory',
                      str(e))


class EdgeCasesTest(testtools.TestCase):

    def test_uneven_memory_split_is_exact(self):
        flavor = numa_flavor.derive([HN(0, (0, 1, 2), 3072),
                                     HN(1, (3,), 1024)], 1001)
        self.assertEqual([751, 250], [n.memory_mib for n in flavor.nodes])
        self.assertEqual([(0, 1, 2), (3,)], [n.vcpus for n in flavor.nodes])

    def test_cpuless_node_is_dropped_with_note(self):
        flavor = numa_flavor.derive([HN(0, (0, 1), 1024), HN(1, (), 4096)],
                                    512)
        self.assertEqual(1, len(flavor.nodes))
        self.assertIn('host node 1 has memory but no usable CPUs',
                      flavor.notes[0])

    def test_ram_too_small(self):
        self.assertRaises(numa_flavor.NUMAFlavorError, numa_flavor.derive,
                          [HN(0, (0,), 10), HN(1, (1,), 10)], 1)

    def test_unknown_mode(self):
        self.assertRaises(numa_flavor.NUMAFlavorError, numa_flavor.derive,
                          [HN(0, (0,), 10)], 10, 'squash')

    def test_to_dict(self):
        flavor = numa_flavor.derive([HN(0, (0,), 10)], 64)
        self.assertEqual({'vcpus': 1, 'ram_mib': 64, 'notes': [],
                          'nodes': [{'guest_node': 0, 'vcpus': [0],
                                     'memory_mib': 64, 'host_nodes': [0]}],
                          'extra_specs': {'hw:numa_nodes': '1',
                                          'hw:numa_cpus.0': '0',
                                          'hw:numa_mem.0': '64',
                                          'cacheaware:numa': 'full'}},
                         flavor.to_dict())


@st.composite
def host_nodes(draw):
    count = draw(st.integers(1, 8))
    nodes = []
    cpu = 0
    for i in range(count):
        n = draw(st.integers(0, 6))
        mem = draw(st.sampled_from([0, 512, 1024, 3000, 65536]))
        nodes.append(HN(i, tuple(range(cpu, cpu + n)), mem,
                        package=draw(st.integers(0, 1))))
        cpu += n
    return nodes


class PropertiesTest(testtools.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(host_nodes(), st.integers(1, 1 << 20),
           st.sampled_from(numa_flavor.MEMORYLESS_MODES))
    def test_shape_satisfies_novas_rules(self, nodes, ram, mode):
        try:
            flavor = numa_flavor.derive(nodes, ram, mode)
        except numa_flavor.NUMAFlavorError:
            self.assertTrue(
                not any(n.cpus and n.memory_mib for n in nodes)
                or ram < sum(1 for n in nodes if n.cpus and n.memory_mib))
            return
        # Nova: vCPUs 0..n-1 each in exactly one node, memory adds up.
        every = [v for n in flavor.nodes for v in n.vcpus]
        self.assertEqual(list(range(flavor.vcpus)), sorted(every))
        self.assertEqual(ram, sum(n.memory_mib for n in flavor.nodes))
        for n in flavor.nodes:
            self.assertTrue(n.vcpus)
            self.assertGreaterEqual(n.memory_mib, 1)
        by_id = {n.id: n for n in nodes}
        mirrored = [i for g in flavor.nodes for i in g.host_nodes]
        self.assertEqual(len(mirrored), len(set(mirrored)))
        for g in flavor.nodes:
            self.assertEqual(len(g.vcpus),
                             sum(len(by_id[i].cpus) for i in g.host_nodes))
            if mode == 'drop':
                self.assertEqual(1, len(g.host_nodes))
