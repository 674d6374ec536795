"""Immutable host topology value types and their pure queries.

A :class:`HostTopology` describes the *online* CPUs of one host: which
physical core, die and package each CPU belongs to, its SMT siblings, the NUMA
nodes (memoryless and CPU-less nodes included) and every cache instance. The
readers in :mod:`.sysfs` and :mod:`.libvirt_caps` build it; nothing in here
does I/O.
"""

import dataclasses
import typing as ty

CACHE_KINDS = ('unified', 'data', 'instruction')


@dataclasses.dataclass(frozen=True)
class CPU:
    """One online logical CPU."""

    id: int
    package: int
    core: int
    die: int = 0
    siblings: ty.Tuple[int, ...] = ()  # online SMT siblings, itself included

    def sibling_group(self):
        """The online logical CPUs of this CPU's physical core, sorted."""
        return tuple(sorted(set(self.siblings) | {self.id}))


@dataclasses.dataclass(frozen=True)
class Cache:
    """One cache instance: a level, a kind and the online CPUs sharing it."""

    level: int
    kind: str
    cpus: ty.Tuple[int, ...]
    size_kib: ty.Optional[int] = None
    hw_id: ty.Optional[int] = None  # the kernel's cache id (libvirt bank id)

    @property
    def holds_data(self):
        """True for the caches that domains are built from (not L1i)."""
        return self.kind in ('unified', 'data')


@dataclasses.dataclass(frozen=True)
class NumaNode:
    """A NUMA node; ``cpus`` may be empty (memory-only) and memory zero."""

    id: int
    cpus: ty.Tuple[int, ...]
    memory_mib: int


@dataclasses.dataclass(frozen=True)
class HostTopology:
    """The online CPUs of a host with their cores, nodes and caches.

    Invariants (checked by :meth:`validate`): CPU ids are unique, every cache
    and node lists only online CPUs, and a CPU is in at most one node.
    """

    cpus: ty.Tuple[CPU, ...]
    numa_nodes: ty.Tuple[NumaNode, ...] = ()
    caches: ty.Tuple[Cache, ...] = ()
    source: str = 'unknown'

    def validate(self):
        """Return a list of human-readable invariant violations (empty: ok)."""
        problems = []
        ids = [c.id for c in self.cpus]
        if len(ids) != len(set(ids)):
            problems.append('duplicate CPU ids')
        online = set(ids)
        for cache in self.caches:
            if cache.kind not in CACHE_KINDS:
                problems.append('L%d cache has unknown kind %r'
                                % (cache.level, cache.kind))
            if not set(cache.cpus) <= online:
                problems.append('L%d cache lists offline CPUs %s' % (
                    cache.level, sorted(set(cache.cpus) - online)))
        seen = set()
        for node in self.numa_nodes:
            if set(node.cpus) & seen:
                problems.append('CPUs %s are in two NUMA nodes'
                                % sorted(set(node.cpus) & seen))
            seen |= set(node.cpus)
            if not set(node.cpus) <= online:
                problems.append('NUMA node %d lists offline CPUs' % node.id)
        return problems

    def online_cpus(self):
        """Sorted ids of the online CPUs."""
        return tuple(sorted(c.id for c in self.cpus))

    def cpu(self, cpu_id):
        """The :class:`CPU` with this id (KeyError if it is not online)."""
        for c in self.cpus:
            if c.id == cpu_id:
                return c
        raise KeyError(cpu_id)

    def smt_siblings(self):
        """Distinct SMT sibling groups (one per physical core), sorted."""
        return tuple(sorted({c.sibling_group() for c in self.cpus}))

    def core_of(self):
        """Map each CPU id to its physical core's sibling group."""
        return {c.id: c.sibling_group() for c in self.cpus}

    def packages(self):
        """Map package id -> sorted CPU ids."""
        return _group(self.cpus, lambda c: c.package)

    def dies(self):
        """Map (package, die) -> sorted CPU ids."""
        return _group(self.cpus, lambda c: (c.package, c.die))

    def data_caches(self, level=None):
        """Unified and data caches, optionally of one level only.

        Where a level has both a unified and a data instance over the same
        CPUs, only the unified one is returned.
        """
        by_key = {}
        for cache in self.caches:
            if not cache.holds_data or not cache.cpus:
                continue
            if level is not None and cache.level != level:
                continue
            key = (cache.level, cache.cpus)
            if key not in by_key or cache.kind == 'unified':
                by_key[key] = cache
        return tuple(sorted(by_key.values(),
                            key=lambda c: (c.level, c.cpus)))

    def cache_levels(self):
        """Sorted levels that have at least one unified or data cache."""
        return tuple(sorted({c.level for c in self.data_caches()}))

    def node_of(self, cpu_id):
        """Id of the NUMA node holding ``cpu_id``, or None if none does."""
        for node in self.numa_nodes:
            if cpu_id in node.cpus:
                return node.id
        return None


def _group(cpus, key):
    groups = {}
    for c in cpus:
        groups.setdefault(key(c), []).append(c.id)
    return {k: tuple(sorted(v)) for k, v in sorted(groups.items())}
