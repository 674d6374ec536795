"""Read a :class:`HostTopology` from Linux sysfs.

``root`` stands in for ``/sys`` so that tests (and operators debugging another
host) can point it at a copied tree: ``ROOT/devices/system/cpu/cpuN/...`` and
``ROOT/devices/system/node/nodeN/...``. Every error names the file.
"""

import os
import re

from nova_cacheaware import exception
from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import model

_CPU_DIR = re.compile(r'^cpu(\d+)$')
_NODE_DIR = re.compile(r'^node(\d+)$')
_INDEX_DIR = re.compile(r'^index(\d+)$')
_SIZE = re.compile(r'^(\d+)\s*([KMG]?)$')
_MEMTOTAL = re.compile(r'^Node\s+\d+\s+MemTotal:\s+(\d+)\s+kB$', re.M)


def read_topology(root='/sys'):
    """Read the online CPUs, NUMA nodes and caches under ``root``."""
    cpu_root = os.path.join(root, 'devices', 'system', 'cpu')
    if not os.path.isdir(cpu_root):
        raise exception.TopologyError(
            source=cpu_root, reason='not found (is the sysfs root right?)')
    online = _online_cpus(cpu_root)
    cpus = tuple(_read_cpu(cpu_root, cpu_id, online) for cpu_id in online)
    caches = _read_caches(cpu_root, online)
    nodes = _read_nodes(os.path.join(root, 'devices', 'system', 'node'),
                        online)
    topology = model.HostTopology(cpus=cpus, numa_nodes=nodes, caches=caches,
                                  source='sysfs:%s' % root)
    problems = topology.validate()
    if problems:
        raise exception.TopologyError(source=cpu_root, reason=problems[0])
    return topology


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        raise exception.TopologyError(
            source=path, reason=e.strerror or str(e)) from None


def _read_int(path):
    text = _read(path)
    try:
        return int(text)
    except ValueError:
        raise exception.TopologyError(
            source=path, reason='expected an integer, found %r' % text[:40]
        ) from None


def _read_cpulist(path):
    text = _read(path)
    try:
        return cpulist.parse_cpulist(text)
    except exception.InvalidInput:
        raise exception.TopologyError(
            source=path, reason='expected a CPU list, found %r' % text[:40]
        ) from None


def _numbered_dirs(path, pattern):
    try:
        names = os.listdir(path)
    except OSError:
        return []
    found = []
    for name in names:
        match = pattern.match(name)
        if match and os.path.isdir(os.path.join(path, name)):
            found.append(int(match.group(1)))
    return sorted(found)


def _online_cpus(cpu_root):
    online_file = os.path.join(cpu_root, 'online')
    if os.path.exists(online_file):
        cpus = _read_cpulist(online_file)
    else:
        # Older or trimmed trees: a CPU without an 'online' file (cpu0 on
        # x86) cannot be taken offline, so it is online.
        cpus = tuple(
            n for n in _numbered_dirs(cpu_root, _CPU_DIR)
            if not os.path.exists(os.path.join(cpu_root, 'cpu%d' % n,
                                               'online'))
            or _read_int(os.path.join(cpu_root, 'cpu%d' % n, 'online')) == 1)
    if not cpus:
        raise exception.TopologyError(source=cpu_root,
                                      reason='no online CPU found')
    return cpus


def _read_cpu(cpu_root, cpu_id, online):
    topo = os.path.join(cpu_root, 'cpu%d' % cpu_id, 'topology')
    die_file = os.path.join(topo, 'die_id')
    siblings_file = os.path.join(topo, 'thread_siblings_list')
    if not os.path.exists(siblings_file):
        siblings_file = os.path.join(topo, 'core_cpus_list')
    siblings = (cpu_id,)
    if os.path.exists(siblings_file):
        siblings = _read_cpulist(siblings_file)
    return model.CPU(
        id=cpu_id,
        package=_read_int(os.path.join(topo, 'physical_package_id')),
        core=_read_int(os.path.join(topo, 'core_id')),
        die=_read_int(die_file) if os.path.exists(die_file) else 0,
        siblings=tuple(s for s in siblings if s in online))


def _read_caches(cpu_root, online):
    online_set = set(online)
    seen = {}
    for cpu_id in online:
        cache_dir = os.path.join(cpu_root, 'cpu%d' % cpu_id, 'cache')
        for index in _numbered_dirs(cache_dir, _INDEX_DIR):
            cache = _read_cache(os.path.join(cache_dir, 'index%d' % index),
                                online_set)
            key = (cache.level, cache.kind, cache.cpus)
            seen.setdefault(key, cache)
    return tuple(sorted(seen.values(),
                        key=lambda c: (c.level, c.kind, c.cpus)))


def _read_cache(path, online_set):
    kind = _read(os.path.join(path, 'type')).lower()
    if kind not in model.CACHE_KINDS:
        raise exception.TopologyError(
            source=os.path.join(path, 'type'),
            reason='unknown cache type %r' % kind)
    cpus = _read_cpulist(os.path.join(path, 'shared_cpu_list'))
    size_file = os.path.join(path, 'size')
    id_file = os.path.join(path, 'id')
    return model.Cache(
        level=_read_int(os.path.join(path, 'level')),
        kind=kind,
        cpus=tuple(c for c in cpus if c in online_set),
        size_kib=_read_size(size_file) if os.path.exists(size_file) else None,
        hw_id=_read_int(id_file) if os.path.exists(id_file) else None)


def _read_size(path):
    text = _read(path)
    match = _SIZE.match(text)
    if not match:
        raise exception.TopologyError(
            source=path, reason='expected a size like 512K, found %r'
                                % text[:40])
    factor = {'': 1 / 1024, 'K': 1, 'M': 1024, 'G': 1024 * 1024}
    return int(int(match.group(1)) * factor[match.group(2)])


def _read_nodes(node_root, online):
    ids = _numbered_dirs(node_root, _NODE_DIR)
    if not ids:
        # Kernel without NUMA support: one node, memory unknown (0).
        return (model.NumaNode(id=0, cpus=tuple(online), memory_mib=0),)
    online_set = set(online)
    nodes = []
    for node_id in ids:
        path = os.path.join(node_root, 'node%d' % node_id)
        cpus = _read_cpulist(os.path.join(path, 'cpulist'))
        meminfo_path = os.path.join(path, 'meminfo')
        match = _MEMTOTAL.search(_read(meminfo_path))
        if not match:
            raise exception.TopologyError(source=meminfo_path,
                                          reason='no MemTotal line')
        nodes.append(model.NumaNode(
            id=node_id, cpus=tuple(c for c in cpus if c in online_set),
            memory_mib=int(match.group(1)) // 1024))
    return tuple(nodes)
