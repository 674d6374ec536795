"""Table tests: named machines' sysfs trees -> exact nodes and domains."""

import testtools

from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import report
from nova_cacheaware.topology import sysfs
from tests.fixtures import machines
from tests.fixtures import sysfs_tree

F = cpulist.format_cpulist


def _pair(first, n, sibling_offset=None):
    """'a-b,c-d': n CPUs from ``first`` and their SMT siblings."""
    offset = sibling_offset or (32 if n == 4 else 64)
    return '%d-%d,%d-%d' % (first, first + n - 1, first + offset,
                            first + offset + n - 1)


# name -> (auto level, fallback, {domain id: (cpus, numa nodes, KiB)},
#          [(node, cpus, MiB)], physical cores)
EXPECTED = {
    'q6600': (2, False, {
        'L2-0': ('0-1', [0], 4096),
        'L2-1': ('2-3', [0], 4096)},
        [(0, '0-3', 4096)], 4),
    'xeon-silver-4210': (3, False, {
        'L3-0': ('0-19', [0], 14080)},
        [(0, '0-19', 98304)], 10),
    'xeon-x5690-x2': (3, False, {
        'L3-0': ('0,2,4,6,8,10,12,14,16,18,20,22', [0], 12288),
        'L3-1': ('1,3,5,7,9,11,13,15,17,19,21,23', [1], 12288)},
        [(0, '0,2,4,6,8,10,12,14,16,18,20,22', 49152),
         (1, '1,3,5,7,9,11,13,15,17,19,21,23', 49152)], 12),
    'opteron-6367-x2': (2, False, {
        'L2-%d' % m: ('%d-%d' % (2 * m, 2 * m + 1), [m // 4], 2048)
        for m in range(16)},
        [(d, '%d-%d' % (8 * d, 8 * d + 7), 16384) for d in range(4)], 32),
    'threadripper-2990wx': (3, False, {
        'L3-%d' % x: (_pair(4 * x, 4), [x // 2], 8192)
        for x in range(8)},
        [(0, '0-7,32-39', 32768), (1, '8-15,40-47', 0),
         (2, '16-23,48-55', 32768), (3, '24-31,56-63', 0)], 32),
    'epyc-7713': (3, False, {
        'L3-%d' % x: (_pair(8 * x, 8), [0], 32768)
        for x in range(8)},
        [(0, '0-127', 262144)], 64),
    'epyc-7713-offline': (3, False, dict(
        [('L3-0', ('0-7', [0], 32768))]
        + [('L3-%d' % x, (_pair(8 * x, 8), [0], 32768))
           for x in range(1, 7)]
        + [('L3-7', ('56-63,120-126', [0], 32768))]),
        [(0, '0-63,72-126', 262144)], 64),
    'core-i9-12900k': (2, False, dict(
        [('L2-%d' % k, ('%d-%d' % (2 * k, 2 * k + 1), [0], 1280))
         for k in range(8)]
        + [('L2-8', ('16-19', [0], 2048)), ('L2-9', ('20-23', [0], 2048))]),
        [(0, '0-23', 32768)], 16),
    'arm-nocache': (None, True, {'pkg-0': ('0-3', [0], None)},
                    [(0, '0-3', 0)], 4),
    'kvm-2s-nocache': (None, True, {
        'pkg-0': ('0-1', [0], None),
        'pkg-1': ('2-3', [1], None)},
        [(0, '0-1', 2048), (1, '2-3', 2048)], 4),
}


class NamedMachineTest(testtools.TestCase):
    """Every named machine gives exactly the documented topology."""

    def _report(self, name, level='auto'):
        root = sysfs_tree.cached_tree(name, machines.ALL[name])
        return report.to_report(sysfs.read_topology(root), level)

    def test_every_machine_is_covered(self):
        self.assertEqual(set(machines.ALL), set(EXPECTED))

    def test_auto_domains_nodes_and_cores(self):
        for name, (level, fallback, domains, nodes, cores) in \
                EXPECTED.items():
            doc = self._report(name)
            self.assertEqual(level, doc['cache_level'], name)
            self.assertEqual(fallback, doc['fallback'], name)
            self.assertEqual(
                domains,
                {d['id']: (F(d['cpus']), d['numa_nodes'], d['size_kib'])
                 for d in doc['cache_domains']}, name)
            for d in doc['cache_domains']:
                self.assertEqual(None if fallback else level, d['level'])
            self.assertEqual(
                nodes, [(n['id'], F(n['cpus']), n['memory_mib'])
                        for n in doc['numa_nodes']], name)
            self.assertEqual(cores, len(doc['smt_siblings']), name)

    def test_explicit_levels(self):
        doc = self._report('xeon-silver-4210', 2)
        # L2 is per core: one domain per core, keyed by the cache id
        # (= core_id, with Cascade Lake's gaps), siblings cpu + 10.
        self.assertEqual(
            {'L2-%d' % core: '%d,%d' % (i, i + 10) for i, core in
             enumerate([0, 1, 2, 3, 4, 8, 9, 10, 11, 12])},
            {d['id']: F(d['cpus']) for d in doc['cache_domains']})
        doc = self._report('core-i9-12900k', 3)
        self.assertEqual({'L3-0': '0-23'},
                         {d['id']: F(d['cpus'])
                          for d in doc['cache_domains']})
        doc = self._report('opteron-6367-x2', 3)
        self.assertEqual(
            {'L3-%d' % d: '%d-%d' % (8 * d, 8 * d + 7) for d in range(4)},
            {d['id']: F(d['cpus']) for d in doc['cache_domains']})
        doc = self._report('q6600', 1)
        self.assertEqual(['0', '1', '2', '3'],
                         [F(d['cpus']) for d in doc['cache_domains']])

    def test_smt_siblings(self):
        doc = self._report('xeon-x5690-x2')
        self.assertIn([0, 12], doc['smt_siblings'])
        self.assertIn([11, 23], doc['smt_siblings'])
        doc = self._report('epyc-7713-offline')
        # Offline siblings 64-71 and 127 leave single-thread cores.
        self.assertIn([0], doc['smt_siblings'])
        self.assertIn([63], doc['smt_siblings'])
        self.assertIn([8, 72], doc['smt_siblings'])
        doc = self._report('core-i9-12900k')
        self.assertIn([0, 1], doc['smt_siblings'])
        self.assertIn([16], doc['smt_siblings'])

    def test_offline_cpus_are_left_out(self):
        doc = self._report('epyc-7713-offline')
        self.assertEqual(119, len(doc['online_cpus']))
        self.assertNotIn(127, doc['online_cpus'])
        every = [c for d in doc['cache_domains'] for c in d['cpus']]
        self.assertEqual(sorted(every), doc['online_cpus'])

    def test_report_round_trips(self):
        for name in EXPECTED:
            root = sysfs_tree.cached_tree(name, machines.ALL[name])
            topology = sysfs.read_topology(root)
            again = report.from_report(report.to_report(topology))
            self.assertEqual(topology.cpus, again.cpus, name)
            self.assertEqual(topology.caches, again.caches, name)
            self.assertEqual(topology.numa_nodes, again.numa_nodes, name)
