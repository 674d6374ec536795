"""Property tests on generated topologies (hypothesis).

Machines are generated as ground truth (packages, dies, cores, threads, cache
groupings, a random CPU numbering and offline CPUs); the expectations are
computed from that ground truth, not from the code under test.
"""

import random

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.topology import domains
from nova_cacheaware.topology import model
from nova_cacheaware.topology import sysfs
from tests.fixtures import sysfs_tree


@st.composite
def machines(draw, max_cores=6):
    """A random machine as a sysfs_tree.Machine."""
    packages = draw(st.integers(1, 2))
    dies = draw(st.integers(1, 2))
    cores = draw(st.integers(1, max_cores))
    threads = draw(st.integers(1, 2))
    l2_group = draw(st.sampled_from([1, 2, 4]))
    l3_mode = draw(st.sampled_from(['die', 'package', 'group', 'none']))
    has_caches = draw(st.integers(0, 9)) != 0  # 10 %: no cache info
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = random.Random(seed)
    total = packages * dies * cores * threads
    numbering = list(range(total))
    rng.shuffle(numbering)
    keys = [(p, d, c) for p in range(packages) for d in range(dies)
            for c in range(cores)]
    thread_list = []
    by_core = {}
    n = 0
    for t in range(threads):
        for key in keys:
            cpu = numbering[n]
            n += 1
            thread_list.append(sysfs_tree.Thread(cpu, key[0], key[1],
                                                 key[2]))
            by_core.setdefault(key, []).append(cpu)
    caches = []
    if has_caches:
        for i, key in enumerate(keys):
            cpus = tuple(sorted(by_core[key]))
            caches.append(sysfs_tree.CacheSpec(1, 'Data', 32, cpus, i))
            caches.append(sysfs_tree.CacheSpec(1, 'Instruction', 32, cpus,
                                               i))
        groups = _groups(keys, l2_group)
        for i, group in enumerate(groups):
            cpus = tuple(sorted(c for k in group for c in by_core[k]))
            caches.append(sysfs_tree.CacheSpec(2, 'Unified', 1024, cpus, i))
        if l3_mode != 'none':
            size = {'die': cores, 'package': cores * dies,
                    'group': max(l2_group, 2 * l2_group)}[l3_mode]
            for i, group in enumerate(_groups(keys, size,
                                              whole_package=l3_mode
                                              == 'package')):
                cpus = tuple(sorted(c for k in group for c in by_core[k]))
                caches.append(sysfs_tree.CacheSpec(3, 'Unified', 8192, cpus,
                                                   i))
    offline = set(rng.sample(range(total), rng.randint(0, total - 1)))
    offline.discard(0)  # cpu0 cannot be taken offline on x86
    online = sorted(set(range(total)) - offline)
    nodes = tuple((p, tuple(sorted(t.cpu for t in thread_list
                                   if t.package == p and t.cpu in online)),
                   1024 * (p + 1))
                  for p in range(packages))
    return sysfs_tree.Machine('generated', tuple(thread_list), tuple(caches),
                              nodes, offline=frozenset(offline))


def _groups(keys, size, whole_package=False):
    """Split cores into groups of ``size`` that never cross a die."""
    groups = []
    current = []
    for key in keys:
        boundary = key[0] if whole_package else key[:2]
        if current and (len(current) == size
                        or (current[-1][0] if whole_package
                            else current[-1][:2]) != boundary):
            groups.append(current)
            current = []
        current.append(key)
    if current:
        groups.append(current)
    return groups


def to_topology(machine):
    """Ground truth: the HostTopology the kernel would describe."""
    online = [t for t in machine.threads if t.cpu not in machine.offline]
    online_ids = {t.cpu for t in online}
    cpus = tuple(sorted(
        (model.CPU(id=t.cpu, package=t.package, die=t.die, core=t.core,
                   siblings=tuple(s for s in machine.siblings(t.cpu)
                                  if s in online_ids))
         for t in online), key=lambda c: c.id))
    caches = tuple(model.Cache(level=c.level, kind=c.kind.lower(),
                               cpus=tuple(x for x in c.cpus
                                          if x in online_ids),
                               size_kib=c.size_kib, hw_id=c.hw_id)
                   for c in machine.caches
                   if set(c.cpus) & online_ids)
    nodes = tuple(model.NumaNode(i, cpus, mem)
                  for i, cpus, mem in machine.nodes)
    return model.HostTopology(cpus=cpus, numa_nodes=nodes, caches=caches)


def expected_auto_level(machine):
    """Lowest level with an instance spanning two cores (online CPUs)."""
    core_of = {t.cpu: (t.package, t.die, t.core) for t in machine.threads
               if t.cpu not in machine.offline}
    levels = sorted({c.level for c in machine.caches
                     if c.kind != 'Instruction'
                     and set(c.cpus) & set(core_of)})
    for level in levels:
        for cache in machine.caches:
            if cache.level == level and cache.kind != 'Instruction':
                if len({core_of[c] for c in cache.cpus if c in core_of}) > 1:
                    return level
    return levels[-1] if levels else None


class TopologyPropertiesTest(testtools.TestCase):

    @settings(max_examples=150, deadline=None)
    @given(machines())
    def test_domains_partition_online_cpus_at_every_level(self, machine):
        topo = to_topology(machine)
        for level in ('auto',) + topo.cache_levels():
            result = domains.cache_domains(topo, level)
            every = [c for d in result.domains for c in d.cpus]
            self.assertEqual(sorted(every), list(topo.online_cpus()))
            self.assertEqual(len(every), len(set(every)))
            self.assertEqual(len(result.domains),
                             len({d.id for d in result.domains}))

    @settings(max_examples=150, deadline=None)
    @given(machines())
    def test_auto_is_lowest_level_shared_across_cores(self, machine):
        topo = to_topology(machine)
        result = domains.cache_domains(topo)
        self.assertEqual(expected_auto_level(machine), result.level)
        self.assertEqual(result.level is None, result.fallback)

    @settings(max_examples=150, deadline=None)
    @given(machines())
    def test_smt_siblings_never_split(self, machine):
        topo = to_topology(machine)
        for level in ('auto',) + topo.cache_levels():
            result = domains.cache_domains(topo, level)
            for group in topo.smt_siblings():
                self.assertEqual(
                    1, len({result.domain_of(c).id for c in group}))

    @settings(max_examples=15, deadline=None)
    @given(machines(max_cores=3))
    def test_sysfs_reader_reads_what_the_kernel_would_show(self, machine):
        root = self.useFixture(fixtures.TempDir()).path
        sysfs_tree.write_tree(root, machine)
        read = sysfs.read_topology(root)
        truth = to_topology(machine)
        self.assertEqual(truth.cpus, read.cpus)
        self.assertEqual(truth.numa_nodes, read.numa_nodes)
        self.assertEqual(
            sorted((c.level, c.kind, c.cpus) for c in truth.caches),
            sorted((c.level, c.kind, c.cpus) for c in read.caches))
