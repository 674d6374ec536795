"""The sysfs reader: file formats and one-line errors naming the file."""

import os

import fixtures
import testtools

from nova_cacheaware import exception
from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import sysfs
from tests.fixtures import machines
from tests.fixtures import sysfs_tree


class SysfsReaderTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        sysfs_tree.write_tree(self.root, machines.core2_quad_q6600())
        self.cpu_root = os.path.join(self.root, 'devices', 'system', 'cpu')

    def _put(self, rel, text):
        with open(os.path.join(self.root, rel), 'w') as f:
            f.write(text)

    def _error(self):
        return str(self.assertRaises(exception.TopologyError,
                                     sysfs.read_topology, self.root))

    def test_reads_q6600(self):
        topo = sysfs.read_topology(self.root)
        self.assertEqual((0, 1, 2, 3), topo.online_cpus())
        self.assertEqual('sysfs:%s' % self.root, topo.source)
        l2 = topo.data_caches(2)
        self.assertEqual([(0, 1), (2, 3)], [c.cpus for c in l2])
        self.assertEqual([4096, 4096], [c.size_kib for c in l2])
        self.assertEqual([None, None], [c.hw_id for c in l2])

    def test_missing_root(self):
        e = str(self.assertRaises(exception.TopologyError,
                                  sysfs.read_topology,
                                  os.path.join(self.root, 'nope')))
        self.assertIn('devices/system/cpu: not found', e)

    def test_malformed_core_id(self):
        rel = 'devices/system/cpu/cpu2/topology/core_id'
        self._put(rel, 'two\n')
        self.assertEqual("%s: expected an integer, found 'two'"
                         % os.path.join(self.root, rel), self._error())

    def test_missing_package_id(self):
        rel = 'devices/system/cpu/cpu1/topology/physical_package_id'
        os.unlink(os.path.join(self.root, rel))
        self.assertEqual('%s: No such file or directory'
                         % os.path.join(self.root, rel), self._error())

    def test_bad_cpulist(self):
        self._put('devices/system/cpu/online', '0-x')
        self.assertIn("expected a CPU list, found '0-x'", self._error())

    def test_bad_cache_size_and_type(self):
        rel = 'devices/system/cpu/cpu0/cache/index2/size'
        self._put(rel, 'big')
        self.assertIn('index2/size: expected a size like 512K',
                      self._error())
        self._put(rel, '4M')
        self._put('devices/system/cpu/cpu0/cache/index2/type', 'Victim')
        self.assertIn("unknown cache type 'victim'", self._error())

    def test_sizes(self):
        self._put('devices/system/cpu/cpu0/cache/index2/size', '4M')
        topo = sysfs.read_topology(self.root)
        self.assertEqual(4096, topo.data_caches(2)[0].size_kib)

    def test_meminfo_without_memtotal(self):
        self._put('devices/system/node/node0/meminfo', 'garbage\n')
        self.assertIn('node0/meminfo: no MemTotal line', self._error())

    def test_online_from_per_cpu_files(self):
        os.unlink(os.path.join(self.cpu_root, 'online'))
        self._put('devices/system/cpu/cpu3/online', '0')
        topo = sysfs.read_topology(self.root)
        self.assertEqual((0, 1, 2), topo.online_cpus())
        self.assertEqual((2,), topo.data_caches(2)[1].cpus)

    def test_core_cpus_list_when_no_thread_siblings_list(self):
        topo_dir = os.path.join(self.cpu_root, 'cpu1', 'topology')
        os.rename(os.path.join(topo_dir, 'thread_siblings_list'),
                  os.path.join(topo_dir, 'core_cpus_list'))
        self.assertEqual((1,), sysfs.read_topology(self.root).cpu(1).siblings)

    def test_no_online_cpu(self):
        self._put('devices/system/cpu/online', '')
        self.assertIn('no online CPU found', self._error())


class CpulistTest(testtools.TestCase):

    def test_round_trip(self):
        for text, cpus in [('0-3,8,10-11', (0, 1, 2, 3, 8, 10, 11)),
                           ('', ()), ('5', (5,)), ('0,2,4', (0, 2, 4))]:
            self.assertEqual(cpus, cpulist.parse_cpulist(text))
            self.assertEqual(text, cpulist.format_cpulist(cpus))

    def test_bad(self):
        for bad in ('a', '3-1', '-1', '1,,2', '1-2-3'):
            self.assertRaises(exception.InvalidInput, cpulist.parse_cpulist,
                              bad)
