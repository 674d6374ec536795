"""Flavor extra specs that give a guest the same NUMA shape as a host.

Study 003 gives every VM a complete copy of the host's NUMA topology: the same
nodes, the same CPUs per node, memory in the same proportions, so that the
guest kernel schedules NUMA-aware. Nova expresses a guest shape with
``hw:numa_nodes``, ``hw:numa_cpus.N`` and ``hw:numa_mem.N``, under rules that
this module respects:

* every guest vCPU 0..vcpus-1 is in exactly one guest node, and the node
  memories add up to the flavor's RAM exactly;
* a guest node needs CPUs and memory, and Nova fits guest node *i* into a
  host node with at least as many CPUs and enough memory.

What Nova cannot express is mapped to the closest valid shape, and each
choice is reported in ``notes``:

* **memoryless host nodes** (Threadripper 2990WX dies 1 and 3): no guest node
  can fit there. ``memoryless='drop'`` (default) leaves their CPUs out, so the
  guest mirrors only the nodes with memory; ``'merge'`` adds their CPUs to the
  nearest node with memory in the same package, which gives every CPU to the
  guest but only fits hosts whose CPU allocation ratio allows a guest node
  larger than the host node.
* **CPU-less host nodes** (CXL or HBM memory): dropped; their memory is not
  mirrored.
* **uneven nodes**: kept uneven; vCPUs follow the host node's CPU count and
  memory is split in proportion to the host node's memory.
"""

import dataclasses
import typing as ty

from nova_cacheaware.contracts import extra_specs
from nova_cacheaware.topology import cpulist

MEMORYLESS_MODES = ('drop', 'merge')


class NUMAFlavorError(ValueError):
    """The host has no shape Nova can mirror (no node with CPUs and memory)."""


@dataclasses.dataclass(frozen=True)
class HostNode:
    """A host NUMA node as seen for mirroring: its usable CPUs and memory."""

    id: int
    cpus: ty.Tuple[int, ...]
    memory_mib: int
    package: int = 0


@dataclasses.dataclass(frozen=True)
class GuestNode:
    """One guest node of the derived shape and the host node(s) it mirrors."""

    id: int
    vcpus: ty.Tuple[int, ...]
    memory_mib: int
    host_nodes: ty.Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class NUMAFlavor:
    """The derived shape, its Nova extra specs and what had to change."""

    vcpus: int
    ram_mib: int
    nodes: ty.Tuple[GuestNode, ...]
    notes: ty.Tuple[str, ...]

    def extra_specs(self):
        """The flavor extra specs (``hw:numa_*`` and ``cacheaware:numa``)."""
        specs = {'hw:numa_nodes': str(len(self.nodes)),
                 extra_specs.NUMA: 'full'}
        for node in self.nodes:
            specs['hw:numa_cpus.%d' % node.id] = cpulist.format_cpulist(
                node.vcpus)
            specs['hw:numa_mem.%d' % node.id] = str(node.memory_mib)
        return specs

    def to_dict(self):
        """A JSON-ready description (CLI output)."""
        return {'vcpus': self.vcpus, 'ram_mib': self.ram_mib,
                'extra_specs': self.extra_specs(),
                'nodes': [{'guest_node': n.id, 'vcpus': list(n.vcpus),
                           'memory_mib': n.memory_mib,
                           'host_nodes': list(n.host_nodes)}
                          for n in self.nodes],
                'notes': list(self.notes)}


def derive(host_nodes, ram_mib, memoryless='drop'):
    """Derive the full-NUMA flavor shape for ``host_nodes``.

    :param host_nodes: iterable of :class:`HostNode` (usable CPUs only).
    :param ram_mib: the flavor's RAM, split across guest nodes in proportion
        to the mirrored host nodes' memory.
    :param memoryless: ``'drop'`` or ``'merge'`` (see the module docstring).
    :raises NUMAFlavorError: no node with both CPUs and memory, RAM too
        small to give every guest node 1 MiB, or an unknown mode.
    """
    if memoryless not in MEMORYLESS_MODES:
        raise NUMAFlavorError('memoryless must be one of %s, not %r'
                              % (', '.join(MEMORYLESS_MODES), memoryless))
    nodes = sorted(host_nodes, key=lambda n: n.id)
    notes = []
    groups = {}  # memory-bearing node id -> [node ids it mirrors]
    for node in nodes:
        if node.cpus and node.memory_mib > 0:
            groups[node.id] = [node.id]
    if not groups:
        raise NUMAFlavorError('no host NUMA node has both usable CPUs and '
                              'memory; nothing to mirror')
    notes.extend(_group_partial_nodes(nodes, groups, memoryless))
    by_id = {n.id: n for n in nodes}
    order = sorted(groups)
    if ram_mib < len(order):
        raise NUMAFlavorError('%d MiB of RAM cannot give each of the %d '
                              'guest nodes at least 1 MiB'
                              % (ram_mib, len(order)))
    memories = _split(ram_mib, [by_id[i].memory_mib for i in order])
    # A tiny flavor can round a node's share to 0; Nova needs >= 1 MiB.
    for i, share in enumerate(memories):
        if share == 0:
            memories[memories.index(max(memories))] -= 1
            memories[i] = 1
    guest = []
    next_vcpu = 0
    for index, host_id in enumerate(order):
        count = sum(len(by_id[i].cpus) for i in groups[host_id])
        vcpus = tuple(range(next_vcpu, next_vcpu + count))
        next_vcpu += count
        guest.append(GuestNode(id=index, vcpus=vcpus,
                               memory_mib=memories[index],
                               host_nodes=tuple(sorted(groups[host_id]))))
    if [n.host_nodes[0] for n in guest] != list(range(len(guest))):
        notes.append('guest nodes 0..%d mirror host nodes %s in that order'
                     % (len(guest) - 1, [n.host_nodes[0] for n in guest]))
    return NUMAFlavor(vcpus=next_vcpu, ram_mib=ram_mib, nodes=tuple(guest),
                      notes=tuple(notes))


def _group_partial_nodes(nodes, groups, memoryless):
    """Notes on nodes without memory or CPUs; ``merge`` joins the latter.

    A memoryless node's CPUs join the group (in ``groups``) of its nearest
    node with memory when ``memoryless`` is ``merge``.
    """
    notes = []
    for node in nodes:
        if not node.cpus and node.memory_mib > 0:
            notes.append('host node %d has memory but no usable CPUs: Nova '
                         'cannot give a guest node without vCPUs, so its '
                         '%d MiB are not mirrored'
                         % (node.id, node.memory_mib))
        elif node.cpus and node.memory_mib <= 0:
            if memoryless == 'drop':
                notes.append('host node %d is memoryless: Nova cannot fit a '
                             'guest node there, so its %d CPUs are left out '
                             '(use memoryless=merge to add them to a node '
                             'with memory)' % (node.id, len(node.cpus)))
            else:
                target = _nearest_with_memory(node, nodes, groups)
                groups[target].append(node.id)
                notes.append('host node %d is memoryless: its %d CPUs join '
                             'guest node of host node %d; that guest node is '
                             'larger than its host node and fits only with a '
                             'CPU allocation ratio above 1'
                             % (node.id, len(node.cpus), target))
    return notes


def _nearest_with_memory(node, nodes, groups):
    """The memory-bearing node in the same package with the closest id."""
    candidates = [n for n in nodes if n.id in groups
                  and n.package == node.package] or \
                 [n for n in nodes if n.id in groups]
    return min(candidates, key=lambda n: (abs(n.id - node.id), n.id)).id


def _split(total, weights):
    """Split ``total`` into ints proportional to ``weights`` (largest rest)."""
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    rests = sorted(range(len(weights)),
                   key=lambda i: (-(total * weights[i] % whole), i))
    for i in rests[:total - sum(shares)]:
        shares[i] += 1
    return shares


def host_nodes_from_topology(topology, usable_cpus=None):
    """HostNodes from a HostTopology, keeping only ``usable_cpus`` if given.

    Pure: the topology is a value (read by an adapter or from a JSON report).
    """
    usable = set(usable_cpus) if usable_cpus is not None else None
    result = []
    for node in topology.numa_nodes:
        cpus = tuple(c for c in node.cpus if usable is None or c in usable)
        packages = {topology.cpu(c).package for c in node.cpus}
        result.append(HostNode(id=node.id, cpus=cpus,
                               memory_mib=node.memory_mib,
                               package=min(packages) if packages else 0))
    return tuple(result)


def mirror_mismatch(guest_cells, host_nodes):
    """Why a guest NUMA shape does not mirror a host, or None if it does.

    ``guest_cells``: ``[(vcpu count, memory MiB), ...]`` in guest node
    order; ``host_nodes``: :class:`HostNode` values. The guest mirrors the
    host when it has the shape :func:`derive` gives for that host in either
    memoryless mode (same number of nodes, the same CPU count per node) and
    each guest node's memory fits the host node(s) it mirrors.
    """
    if not guest_cells:
        return 'the request has no guest NUMA topology (hw:numa_nodes)'
    wanted = [count for count, _mem in guest_cells]
    modes_by_counts = {}
    for mode in MEMORYLESS_MODES:
        try:
            # Only the shape matters here: any RAM >= the node count will do.
            shape = derive(host_nodes, max(1, len(host_nodes)), mode)
        except NUMAFlavorError as e:
            return str(e)
        counts = [len(n.vcpus) for n in shape.nodes]
        if counts != wanted:
            modes_by_counts.setdefault(tuple(counts), []).append(mode)
            continue
        memory = {n.id: n.memory_mib for n in host_nodes}
        for node, (_count, mem) in zip(shape.nodes, guest_cells):
            room = sum(memory[i] for i in node.host_nodes)
            if mem > room:
                return ('guest node %d needs %d MiB, host node(s) %s have '
                        '%d MiB' % (node.id, mem, list(node.host_nodes),
                                    room))
        return None
    if len(modes_by_counts) == 1:
        counts = list(next(iter(modes_by_counts)))
        return ('host nodes give %s vCPUs per guest node, the request has %s'
                % (counts, wanted))
    return '; '.join('host nodes give %s vCPUs per guest node (memoryless '
                     '%s), the request has %s' % (list(c), '/'.join(m),
                                                  wanted)
                     for c, m in modes_by_counts.items())
