"""The ``numa_balance`` capability's values: a pass's input and output.

Typed values only, with small pure queries (:meth:`VM.total_mib`,
:meth:`VM.floor_nodes`); :mod:`.policy` decides over them, :mod:`.agent`
builds them from what :mod:`.shapes` reads. Nothing here is JSON; the
agent's host report serialises :class:`Division` at its edge.
"""

import dataclasses
import typing as ty


@dataclasses.dataclass(frozen=True)
class VirtioMem:
    """One virtio-mem device: ``requested`` of ``size`` MiB plugged."""

    requested_mib: int
    size_mib: int


@dataclasses.dataclass(frozen=True)
class VM:
    """A full-NUMA VM.

    ``nodes``: ``{guest node: (vCPU ids)}``; ``node_memory_mib``: boot
    memory of each guest node (a node with 0 is memoryless); ``use``:
    ``{guest node: busy CPUs}`` (CPU time per wall time over the last
    period); ``free_mib``: guest free memory (None: unknown, never a taker);
    ``virtio_mem``: ``{guest node: VirtioMem}``; ``balloon_mib`` /
    ``max_mib``: the balloon's current size and the most it may grow to
    (None: no balloon); ``min_mib``: memory floor of the whole VM.
    """

    id: str
    nodes: ty.Dict[int, ty.Tuple[int, ...]]
    node_memory_mib: ty.Dict[int, int] = dataclasses.field(
        default_factory=dict)
    use: ty.Dict[int, float] = dataclasses.field(default_factory=dict)
    free_mib: ty.Optional[int] = None
    virtio_mem: ty.Dict[int, VirtioMem] = dataclasses.field(
        default_factory=dict)
    balloon_mib: ty.Optional[int] = None
    max_mib: ty.Optional[int] = None
    min_mib: int = 0

    def total_mib(self):
        """Memory the VM has now: balloon (or boot) plus plugged virtio-mem."""
        base = (self.balloon_mib if self.balloon_mib is not None
                else sum(self.node_memory_mib.values()))
        return base + sum(d.requested_mib for d in self.virtio_mem.values())

    def floor_nodes(self, per_node=True):
        """Guest nodes on which the VM must keep one CPU.

        Every node with memory (``per_node``) and always the node of vCPU 0,
        which Linux cannot take offline.
        """
        out = {n for n, vcpus in self.nodes.items() if 0 in vcpus}
        if per_node:
            out |= {n for n, mib in self.node_memory_mib.items() if mib > 0}
        return out & set(self.nodes)


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """When CPUs and memory move.

    ``busy``: use per held CPU that asks for one more (study: busy CPU);
    ``low_free_mib``: free memory under which a VM takes memory (400);
    ``step_mib``: memory moved at once; ``max_cpu_moves``: CPUs moved per
    node and pass (the study moves one); ``per_node_floor``: keep one CPU
    on every guest node with memory (the study's floor); False keeps one
    only on the node of vCPU 0, for hosts with fewer CPUs per node than
    full-NUMA VMs (a guest node may then run with every vCPU offline; its
    memory stays usable, remotely).
    """

    busy: float = 0.9
    low_free_mib: int = 400
    step_mib: int = 400
    max_cpu_moves: int = 1
    per_node_floor: bool = True


@dataclasses.dataclass(frozen=True)
class MemoryMove:
    """``mib`` MiB from ``giver`` to ``taker``.

    Per ``node`` (virtio-mem), or whole VM (``node`` None: balloon).
    """

    giver: str
    taker: str
    mib: int
    node: ty.Optional[int] = None

    @property
    def kind(self):
        """``virtio-mem`` or ``balloon``."""
        return 'balloon' if self.node is None else 'virtio-mem'


@dataclasses.dataclass(frozen=True)
class Result:
    """One pass's division.

    ``cpus``: ``{host node: {vm: (CPUs)}}``, disjoint per node;
    ``online``: ``{vm: (online vCPUs)}``; ``pins``: ``{vm: {vcpu: (CPUs)}}``;
    ``cpu_moves``: ``[(node, giver, taker, cpu)]``; ``memory_moves``;
    ``virtio_mem``: ``{vm: {node: requested MiB}}`` and ``balloon``:
    ``{vm: MiB}`` after the moves (only what changed).
    """

    cpus: ty.Dict[int, ty.Dict[str, ty.Tuple[int, ...]]]
    online: ty.Dict[str, ty.Tuple[int, ...]]
    pins: ty.Dict[str, ty.Dict[int, ty.Tuple[int, ...]]]
    cpu_moves: ty.List[tuple]
    memory_moves: ty.List[MemoryMove]
    virtio_mem: ty.Dict[str, ty.Dict[int, int]]
    balloon: ty.Dict[str, int]


@dataclasses.dataclass(frozen=True)
class Division:
    """The full-NUMA hand-off's section of the agent's host report."""

    #: ``{instance uuid: {node (str): its CPUs there}}``.
    vms: ty.Mapping[str, ty.Mapping[str, ty.List[int]]]
