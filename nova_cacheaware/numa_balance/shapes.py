"""The shapes ``numa_balance`` works on, read from XML and configuration.

The guest's NUMA cells, virtio-mem devices and balloon from its live
domain XML (:func:`parse_guest`), the ``<requested>`` size of a virtio-mem
device (:func:`requested_xml`), and the host's NUMA nodes from
``[numa_balance] host_nodes`` or the host topology
(:func:`host_nodes_from_conf`), and CPU use per guest node
(:func:`node_use`). Pure but for the topology read.
"""

import dataclasses
import typing as ty
import xml.etree.ElementTree as ET

from nova_cacheaware import exception
from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import source as topology_source

_TO_KIB = {'b': 1.0 / 1024, 'bytes': 1.0 / 1024, 'k': 1, 'kib': 1,
           'kb': 1000.0 / 1024, 'm': 1024, 'mib': 1024, 'mb': 1000000.0 / 1024,
           'g': 1024 ** 2, 'gib': 1024 ** 2, 'gb': 1e9 / 1024,
           't': 1024 ** 3, 'tib': 1024 ** 3}


@dataclasses.dataclass(frozen=True)
class VirtioMemDevice:
    """A virtio-mem device as the live XML shows it (MiB)."""

    node: int
    size_mib: int
    requested_mib: int
    current_mib: int
    xml: str


@dataclasses.dataclass(frozen=True)
class GuestShape:
    """The guest's NUMA cells and memory devices, from the live XML."""

    nodes: ty.Dict[int, ty.Tuple[int, ...]]
    node_memory_mib: ty.Dict[int, int]
    virtio_mem: ty.Dict[int, VirtioMemDevice]
    balloon: bool
    current_mib: int
    max_mib: int


def _mib(element, default_unit='KiB'):
    if element is None or element.text is None:
        return 0
    unit = element.get('unit', default_unit).lower()
    if unit not in _TO_KIB:
        raise exception.InvalidInput(reason='unknown memory unit %r' % unit)
    return int(int(element.text) * _TO_KIB[unit] // 1024)


def parse_guest(xml):
    """A :class:`GuestShape` from a live domain XML.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` for XML that is
    not a domain or has malformed cells. A guest without ``<numa>`` cells is
    one node holding every vCPU.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise exception.InvalidInput(reason='bad domain XML: %s' % e)
    if root.tag != 'domain':
        raise exception.InvalidInput(reason='not a domain XML')
    nodes, memory = {}, {}
    try:
        for cell in root.findall('cpu/numa/cell'):
            node = int(cell.get('id'))
            nodes[node] = cpulist.parse_cpulist(cell.get('cpus', ''))
            memory[node] = int(int(cell.get('memory', '0')) * _TO_KIB[
                cell.get('unit', 'KiB').lower()] // 1024)
        if not nodes:
            vcpus = int(root.findtext('vcpu', '1'))
            nodes[0] = tuple(range(vcpus))
            memory[0] = _mib(root.find('memory'))
        devices = {}
        for dev in root.findall("devices/memory[@model='virtio-mem']"):
            target = dev.find('target')
            node = int(target.findtext('node', '0'))
            devices[node] = VirtioMemDevice(
                node=node, size_mib=_mib(target.find('size')),
                requested_mib=_mib(target.find('requested')),
                current_mib=_mib(target.find('current')),
                xml=ET.tostring(dev, encoding='unicode'))
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise exception.InvalidInput(
            reason='malformed guest NUMA cells or memory devices: %s' % e)
    balloon = root.find('devices/memballoon')
    return GuestShape(
        nodes=nodes, node_memory_mib=memory, virtio_mem=devices,
        balloon=balloon is not None and balloon.get('model') != 'none',
        current_mib=_mib(root.find('currentMemory')),
        max_mib=_mib(root.find('memory')))


def requested_xml(device_xml, mib):
    """``device_xml`` (a virtio-mem ``<memory>``) with ``<requested>`` set."""
    dev = ET.fromstring(device_xml)
    target = dev.find('target')
    requested = target.find('requested')
    if requested is None:
        requested = ET.SubElement(target, 'requested')
    requested.set('unit', 'KiB')
    requested.text = str(int(mib) * 1024)
    current = target.find('current')
    if current is not None:
        target.remove(current)     # read-only: libvirt reports it
    return ET.tostring(dev, encoding='unicode')


def node_use(nodes, times, before, now):
    """Busy CPUs per guest node: ``{node: CPUs}`` (0 the first time).

    ``nodes`` is ``{node: vcpus}``, ``times`` ``{vcpu: CPU time ns}`` now,
    ``before`` ``(time, times)`` of the last pass or None.
    """
    use = {n: 0.0 for n in nodes}
    if before is None or now <= before[0]:
        return use
    elapsed_ns = (now - before[0]) * 1e9
    for node, vcpus in nodes.items():
        delta = sum(max(0, times.get(v, 0) - before[1].get(v, 0))
                    for v in vcpus)
        use[node] = round(delta / elapsed_ns, 3)
    return use


def parse_host_nodes(text):
    """``{node: (cpus)}`` from ``'0:0-3;1:4-7'``; InvalidInput if bad."""
    out = {}
    for part in (p.strip() for p in text.split(';')):
        if not part:
            continue
        node, sep, cpus = part.partition(':')
        if not sep or not node.strip().isdigit():
            raise exception.InvalidInput(
                reason='[numa_balance] host_nodes: expected node:cpulist, '
                       'got %r' % part)
        out[int(node)] = tuple(cpulist.parse_cpulist(cpus))
    return out


def host_nodes_from_conf(conf):
    """``{node: (cpus)}`` from ``[numa_balance] host_nodes`` or the host."""
    if conf.numa_balance.host_nodes:
        return parse_host_nodes(conf.numa_balance.host_nodes)
    topology = topology_source.read_topology(conf)
    usable = (set(cpulist.parse_cpulist(conf.agent.cpu_shared_set))
              if conf.agent.cpu_shared_set else None)
    return {n.id: tuple(c for c in n.cpus if usable is None or c in usable)
            for n in topology.numa_nodes}
