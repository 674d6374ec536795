"""This machine's real topology: sysfs, lscpu, and libvirt's two drivers."""

import os
import shutil
import subprocess

from nova_cacheaware import exception
from nova_cacheaware.topology import domains
from nova_cacheaware.topology import libvirt_caps
from nova_cacheaware.topology import sysfs
from tests.functional import base

LEVEL_COLUMNS = {'L1d': 1, 'L2': 2, 'L3': 3, 'L4': 4}


def lscpu_view():
    """Per-CPU (core, socket, node, {level: cache id}) from ``lscpu -p``.

    util-linux prints the cache columns either ``:``-joined or as columns of
    their own after an empty one, depending on its version: read the header.
    """
    out = subprocess.run(['lscpu', '-p=CPU,CORE,SOCKET,NODE,CACHE'],
                         check=True, capture_output=True, text=True).stdout
    header = [line for line in out.splitlines()
              if line.startswith('# CPU,')][0]
    names = header[2:].replace(':', ',').split(',')
    view = {}
    for line in out.splitlines():
        if line.startswith('#') or not line.strip():
            continue
        row = dict(zip(names, line.replace(':', ',').split(',')))
        levels = {LEVEL_COLUMNS[name]: row[name] for name in LEVEL_COLUMNS
                  if row.get(name)}
        view[int(row['CPU'])] = (row['Core'], row['Socket'], row['Node'],
                                 levels)
    return view


def partition(groups):
    return sorted(tuple(sorted(g)) for g in groups)


class RealSysfsTest(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.topology = sysfs.read_topology('/sys')

    def test_invariants(self):
        self.assertEqual([], self.topology.validate())
        result = domains.cache_domains(self.topology)
        every = sorted(c for d in result.domains for c in d.cpus)
        self.assertEqual(list(self.topology.online_cpus()), every)

    def test_agrees_with_lscpu(self):
        self.require(shutil.which('lscpu'), 'lscpu')
        view = lscpu_view()
        topo = self.topology
        self.assertEqual(sorted(view), list(topo.online_cpus()))
        for cpu in topo.online_cpus():
            core, socket, node, _ = view[cpu]
            self.assertEqual(int(socket), topo.cpu(cpu).package)
            if node:
                self.assertEqual(int(node), topo.node_of(cpu))
        self.assertEqual(len({v[0] for v in view.values()}),
                         len(topo.smt_siblings()))
        for level in topo.cache_levels():
            by_id = {}
            for cpu, (_, _, _, levels) in view.items():
                if level in levels:
                    by_id.setdefault(levels[level], []).append(cpu)
            if not by_id:
                continue
            ours = domains.cache_domains(topo, level)
            self.assertEqual(partition(by_id.values()),
                             partition(d.cpus for d in ours.domains
                                       if d.level == level), level)


class LibvirtTestDriverTest(base.FunctionalTestCase):

    def test_test_default(self):
        topo = libvirt_caps.read_topology('test:///default')
        self.assertEqual(tuple(range(16)), topo.online_cpus())
        self.assertEqual([(0, tuple(range(8)), 2048),
                          (1, tuple(range(8, 16)), 4096)],
                         [(n.id, n.cpus, n.memory_mib)
                          for n in topo.numa_nodes])
        result = domains.cache_domains(topo)
        self.assertTrue(result.fallback)
        self.assertEqual([('pkg-0', tuple(range(8)), (0,)),
                          ('pkg-1', tuple(range(8, 16)), (1,))],
                         [(d.id, d.cpus, d.numa_nodes)
                          for d in result.domains])

    def test_unreachable_uri_is_a_typed_error(self):
        uri = 'qemu+unix:///system?socket=/nonexistent/sock'
        e = self.assertRaises(exception.TopologyError,
                              libvirt_caps.read_topology, uri)
        self.assertTrue(str(e).startswith(uri + ': '))


class LibvirtQemuDriverTest(base.FunctionalTestCase):
    """sysfs and a real libvirtd's capabilities describe the same host."""

    def test_agrees_with_sysfs(self):
        self.require(os.path.exists('/run/libvirt/libvirt-sock-ro'),
                     'libvirtd (qemu:///system)')
        caps = libvirt_caps.read_topology('qemu:///system')
        real = sysfs.read_topology('/sys')
        self.assertEqual(real.online_cpus(), caps.online_cpus())
        self.assertEqual(real.smt_siblings(), caps.smt_siblings())
        self.assertEqual(real.packages(), caps.packages())
        self.assertEqual([(n.id, n.cpus) for n in real.numa_nodes],
                         [(n.id, n.cpus) for n in caps.numa_nodes])
        # libvirt 9 reports only some levels (L3 banks here): compare the
        # domains at every level both sources have.
        common = set(real.cache_levels()) & set(caps.cache_levels())
        self.assertTrue(common or not caps.cache_levels())
        for level in sorted(common):
            ours = domains.cache_domains(real, level)
            theirs = domains.cache_domains(caps, level)
            self.assertEqual(
                [(d.id, d.cpus, d.size_kib) for d in ours.domains],
                [(d.id, d.cpus, d.size_kib) for d in theirs.domains])


class ConsoleScriptTest(base.FunctionalTestCase):
    """The installed console script, as an operator runs it."""

    def _run(self, *args):
        exe = shutil.which('nova-cacheaware')
        self.require(exe, 'the nova-cacheaware console script')
        return subprocess.run([exe] + list(args), capture_output=True,
                              text=True)

    def test_prints_this_host(self):
        proc = self._run('topology')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('Cache domains:', proc.stdout)

    def test_error_is_one_line_without_traceback(self):
        proc = self._run('topology', '--sysfs-root', '/nonexistent')
        self.assertEqual(2, proc.returncode)
        self.assertEqual('', proc.stdout)
        self.assertEqual(
            ['nova-cacheaware topology: error: /nonexistent/devices/system/'
             'cpu: not found (is the sysfs root right?)'],
            proc.stderr.splitlines())
