"""``nova-cacheaware flavor numa-full`` without a cloud (print only)."""

import json

import fixtures

from nova_cacheaware.topology import report
from nova_cacheaware.topology import sysfs
from tests.fixtures import machines
from tests.fixtures import sysfs_tree
from tests.unit.cmd import base


class NumaFullCommandTest(base.CLITestCase):

    def _root(self, name):
        return sysfs_tree.cached_tree(name, machines.ALL[name])

    def test_properties_for_dual_x5690(self):
        code, out, err = self.cli(['flavor', 'numa-full', '--sysfs-root',
                                   self._root('xeon-x5690-x2'),
                                   '--ram-mb', '8192'])
        self.assertEqual((0, ''), (code, err))
        self.assertEqual(['# flavor: --vcpus 24 --ram 8192',
                          '--property cacheaware:numa=full',
                          '--property hw:numa_cpus.0=0-11',
                          '--property hw:numa_cpus.1=12-23',
                          '--property hw:numa_mem.0=4096',
                          '--property hw:numa_mem.1=4096',
                          '--property hw:numa_nodes=2'], out.splitlines())

    def test_topology_document_and_notes(self):
        root = self._root('threadripper-2990wx')
        doc = report.to_report(sysfs.read_topology(root))
        path = self.useFixture(fixtures.TempDir()).join('topo.json')
        with open(path, 'w') as f:
            json.dump(doc, f)
        code, out, err = self.cli(['flavor', 'numa-full', '--topology', path,
                                   '--ram-mb', '4096', '--format', 'json',
                                   '--memoryless', 'merge'])
        self.assertEqual(0, code)
        result = json.loads(out)
        self.assertEqual(64, result['vcpus'])
        self.assertEqual({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-31',
                          'hw:numa_cpus.1': '32-63', 'hw:numa_mem.0': '2048',
                          'hw:numa_mem.1': '2048', 'cacheaware:numa': 'full'},
                         result['extra_specs'])
        self.assertEqual(3, len(err.splitlines()))  # 2 merges + mapping
        self.assertTrue(err.startswith('note: host node 1 is memoryless'))

    def test_usable_cpus(self):
        code, out, _ = self.cli(['flavor', 'numa-full', '--sysfs-root',
                                 self._root('kvm-2s-nocache'), '--ram-mb',
                                 '1024', '--usable-cpus', '1-3'])
        self.assertEqual(0, code)
        self.assertIn('--property hw:numa_cpus.0=0', out.splitlines())
        self.assertIn('--property hw:numa_cpus.1=1-2', out.splitlines())

    def test_errors_are_one_line(self):
        root = self._root('q6600')
        self.assertOneLineError(['flavor', 'numa-full', '--sysfs-root', root],
                                'give --ram-mb')
        self.assertOneLineError(['flavor', 'numa-full', '--sysfs-root', root,
                                 '--ram-mb', '512', '--usable-cpus', '3-1'],
                                "'3-1' is not a CPU list")
        self.assertOneLineError(['flavor', 'numa-full', '--sysfs-root', root,
                                 '--ram-mb', '512', '--usable-cpus', '9'],
                                'no host NUMA node has both usable CPUs')
        self.assertOneLineError(['flavor', 'numa-full', '--topology', '-',
                                 '--ram-mb', '512'], 'not valid JSON',
                                stdin='{')
        self.assertOneLineError(['flavor', 'numa-full', '--topology', '-',
                                 '--ram-mb', '512'],
                                'not a topology document', stdin='{}')
        self.assertOneLineError(['flavor', 'numa-full', '--sysfs-root', root,
                                 '--topology', '-'],
                                'not allowed with argument')
