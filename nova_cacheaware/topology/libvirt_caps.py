"""Read a :class:`HostTopology` from libvirt host capabilities.

The second source, for when sysfs is not readable (a confined agent, a remote
URI). ``parse_capabilities`` is pure; ``read_topology`` is the thin adapter
that asks the hypervisor port (:mod:`nova_cacheaware.virt.caps`) for the
capabilities XML.
"""

import xml.etree.ElementTree as ET

from nova_cacheaware import exception
from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import model

_KIND = {'both': 'unified', 'data': 'data', 'code': 'instruction'}
_TO_KIB = {'b': 1 / 1024, 'bytes': 1 / 1024, 'kib': 1, 'k': 1, 'kb': 1,
           'mib': 1024, 'm': 1024, 'mb': 1024, 'gib': 1024 ** 2,
           'g': 1024 ** 2, 'gb': 1024 ** 2}


def parse_capabilities(xml_text, source='libvirt'):
    """Build a HostTopology from a ``<capabilities>`` document."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as e:
        raise exception.TopologyError(source=source,
                                      reason='bad capabilities XML: %s' % e)
    host = root.find('host')
    if host is None:
        raise exception.TopologyError(source=source,
                                      reason='capabilities have no <host>')
    try:
        cpus, nodes = _cells(host)
        online = {c.id for c in cpus}
        caches = tuple(_bank(bank, online)
                       for bank in host.findall('cache/bank'))
    except (KeyError, ValueError) as e:
        raise exception.TopologyError(
            source=source, reason='malformed capabilities (%s: %s)'
                                  % (type(e).__name__, e)) from None
    topology = model.HostTopology(cpus=cpus, numa_nodes=nodes,
                                  caches=caches, source=source)
    problems = topology.validate()
    if problems:
        raise exception.TopologyError(source=source, reason=problems[0])
    return topology


def _cells(host):
    cpus = []
    nodes = []
    for cell in host.findall('topology/cells/cell'):
        cell_cpus = []
        for cpu in cell.findall('cpus/cpu'):
            if 'socket_id' not in cpu.attrib:
                continue  # libvirt lists offline CPUs without topology
            cpu_id = int(cpu.attrib['id'])
            cell_cpus.append(cpu_id)
            cpus.append(model.CPU(
                id=cpu_id, package=int(cpu.attrib['socket_id']),
                die=int(cpu.attrib.get('die_id', 0)),
                core=int(cpu.attrib['core_id']),
                siblings=cpulist.parse_cpulist(
                    cpu.attrib.get('siblings', str(cpu_id)))))
        memory = cell.find('memory')
        memory_kib = 0
        if memory is not None:
            memory_kib = int(memory.text) * _TO_KIB[
                memory.attrib.get('unit', 'KiB').lower()]
        nodes.append(model.NumaNode(id=int(cell.attrib['id']),
                                    cpus=tuple(sorted(cell_cpus)),
                                    memory_mib=int(memory_kib // 1024)))
    online = {c.id for c in cpus}
    cpus = [model.CPU(id=c.id, package=c.package, core=c.core, die=c.die,
                      siblings=tuple(s for s in c.siblings if s in online))
            for c in cpus]
    return (tuple(sorted(cpus, key=lambda c: c.id)),
            tuple(sorted(nodes, key=lambda n: n.id)))


def _bank(bank, online):
    unit = bank.attrib.get('unit', 'B').lower()
    size_kib = int(int(bank.attrib['size']) * _TO_KIB[unit])
    return model.Cache(
        level=int(bank.attrib['level']),
        kind=_KIND[bank.attrib.get('type', 'both')],
        cpus=tuple(c for c in cpulist.parse_cpulist(bank.attrib['cpus'])
                   if c in online),
        size_kib=size_kib,
        hw_id=int(bank.attrib['id']) if 'id' in bank.attrib else None)


def read_topology(uri):
    """Open ``uri`` read-only and parse its host capabilities."""
    from nova_cacheaware.virt import caps  # only the adapter needs libvirt
    return parse_capabilities(caps.capabilities_xml(uri),
                              source='libvirt:%s' % uri)
