"""``nova-cacheaware topology``: the JSON contract, the table and errors."""

import os

import fixtures

from tests.fixtures import machines
from tests.fixtures import sysfs_tree
from tests.unit.cmd import base


class TopologyCommandTest(base.CLITestCase):

    def setUp(self):
        super().setUp()
        self.root = sysfs_tree.cached_tree('q6600', machines.core2_quad_q6600)

    def test_json_contract(self):
        doc = self.cli_json(['topology', '--sysfs-root', self.root,
                             '--format', 'json'])
        self.assertEqual([0, 1, 2, 3], doc['online_cpus'])
        self.assertEqual([{'id': 0, 'cpus': [0, 1, 2, 3],
                           'memory_mib': 4096}], doc['numa_nodes'])
        self.assertEqual(2, doc['cache_level'])
        self.assertIs(False, doc['fallback'])
        self.assertEqual(
            [{'id': 'L2-0', 'level': 2, 'cpus': [0, 1], 'size_kib': 4096,
              'numa_nodes': [0]},
             {'id': 'L2-1', 'level': 2, 'cpus': [2, 3], 'size_kib': 4096,
              'numa_nodes': [0]}], doc['cache_domains'])
        self.assertEqual([[0], [1], [2], [3]], doc['smt_siblings'])

    def test_explicit_level(self):
        doc = self.cli_json(['topology', '--sysfs-root', self.root,
                             '--format', 'json', '--level', '1'])
        self.assertEqual(1, doc['cache_level'])
        self.assertEqual(['L1-0', 'L1-1', 'L1-2', 'L1-3'],
                         [d['id'] for d in doc['cache_domains']])

    def test_fallback_json(self):
        root = sysfs_tree.cached_tree('arm-nocache',
                                      machines.arm_board_no_cache)
        doc = self.cli_json(['topology', '--sysfs-root', root,
                             '--format', 'json'])
        self.assertIsNone(doc['cache_level'])
        self.assertIs(True, doc['fallback'])
        self.assertEqual([{'id': 'pkg-0', 'level': None, 'cpus': [0, 1, 2, 3],
                           'size_kib': None, 'numa_nodes': [0]}],
                         doc['cache_domains'])

    def test_table_is_the_default(self):
        code, out, err = self.cli(['topology', '--sysfs-root', self.root])
        self.assertEqual(0, code)
        self.assertIn('Cache domains: L2 (auto)', out)
        self.assertIn('L2-1       L2     4 MiB     2     2-3', out)
        self.assertIn('node 0   CPUs 0-3', out)

    def test_table_marks_memoryless_nodes_and_fallback(self):
        root = sysfs_tree.cached_tree('threadripper-2990wx',
                                      machines.threadripper_2990wx)
        code, out, _ = self.cli(['topology', '--sysfs-root', root])
        self.assertIn('node 1   CPUs 8-15,40-47', out)
        self.assertIn('(memoryless)', out)
        root = sysfs_tree.cached_tree('kvm-2s-nocache',
                                      machines.kvm_guest_two_sockets_no_cache)
        code, out, _ = self.cli(['topology', '--sysfs-root', root])
        self.assertIn('physical packages (no cache information)', out)

    def test_missing_root(self):
        missing = os.path.join(self.root, 'absent')
        self.assertOneLineError(['topology', '--sysfs-root', missing],
                                'absent/devices/system/cpu: not found')

    def test_unknown_level(self):
        self.assertOneLineError(['topology', '--sysfs-root', self.root,
                                 '--level', '3'],
                                'no level-3 cache on this host')
        self.assertOneLineError(['topology', '--level', 'L3'],
                                "argument --level: invalid choice: 'L3'")

    def test_unknown_option_and_format(self):
        self.assertOneLineError(['topology', '--bogus'],
                                'unrecognized arguments: --bogus')
        self.assertOneLineError(['topology', '--format', 'xml'],
                                "invalid choice: 'xml'")

    def test_malformed_file(self):
        root = self.useFixture(fixtures.TempDir()).path
        sysfs_tree.write_tree(root, machines.core2_quad_q6600())
        with open(os.path.join(root, 'devices/system/cpu/cpu1/cache/'
                                     'index2/shared_cpu_list'), 'w') as f:
            f.write('1-0\n')
        self.assertOneLineError(['topology', '--sysfs-root', root],
                                "index2/shared_cpu_list: expected a CPU list")

    def test_libvirt_uri_error(self):
        uri = 'qemu+unix:///system?socket=/nonexistent/libvirt-sock'
        self.assertOneLineError(['topology', '--libvirt-uri', uri],
                                "%s: Failed to connect socket" % uri)

    def test_no_subcommand(self):
        code, out, err = self.cli([])
        self.assertEqual(2, code)
        self.assertIn('the following arguments are required: COMMAND', err)
