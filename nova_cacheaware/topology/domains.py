"""Cache domains: the CPU groups that All-share placement keeps a VM inside.

Rules (see doc/source/admin/topology.rst):

* Cache domains at level N are the unified or data cache instances of level N,
  restricted to online CPUs. Every online CPU is in exactly one domain; a CPU
  that has no level-N cache (possible on hybrid parts for L3/L4) gets a domain
  made of the uncovered CPUs of its package, with ``level`` None.
* ``auto`` picks the lowest level at which at least one instance is shared by
  CPUs of two or more distinct physical cores: L2 on Core 2 Quad, Piledriver
  modules and Intel E-core clusters; L3 (the CCX) on Zen and most Xeons. If no
  level is shared between cores, the last level cache is used.
* With no cache information at all, domains are the physical packages and the
  result is marked ``fallback``.
"""

import dataclasses
import typing as ty

from nova_cacheaware import exception

AUTO = 'auto'


@dataclasses.dataclass(frozen=True)
class CacheDomain:
    """A set of CPUs that share one cache instance."""

    id: str
    level: ty.Optional[int]
    cpus: ty.Tuple[int, ...]
    size_kib: ty.Optional[int]
    numa_nodes: ty.Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class DomainSet:
    """The cache domains of a host at one level."""

    level: ty.Optional[int]
    fallback: bool
    domains: ty.Tuple[CacheDomain, ...]

    def domain_of(self, cpu_id):
        """The domain containing ``cpu_id`` (KeyError if none does)."""
        for domain in self.domains:
            if cpu_id in domain.cpus:
                return domain
        raise KeyError(cpu_id)


def shared_between_cores(topology, cache):
    """True if ``cache`` is shared by CPUs of two or more physical cores."""
    core_of = topology.core_of()
    return len({core_of[c] for c in cache.cpus if c in core_of}) >= 2


def auto_level(topology):
    """The level ``auto`` resolves to, or None when there are no caches."""
    levels = topology.cache_levels()
    if not levels:
        return None
    for level in levels:
        if any(shared_between_cores(topology, cache)
               for cache in topology.data_caches(level)):
            return level
    return levels[-1]


def parse_level(value):
    """Turn ``'auto'``/``'1'``..``'4'`` (or an int) into ``AUTO`` or an int."""
    if value in (None, AUTO):
        return AUTO
    level = None
    if isinstance(value, int) and not isinstance(value, bool):
        level = value
    elif isinstance(value, str) and value.strip().isdigit():
        level = int(value)
    if level not in (1, 2, 3, 4):
        raise exception.InvalidInput(
            reason="cache level must be auto, 1, 2, 3 or 4, not %r" % value)
    return level


def cache_domains(topology, level=AUTO):
    """Build the :class:`DomainSet` of ``topology`` at ``level``.

    ``level`` is ``'auto'`` or an int. Raises :class:`UnknownCacheLevel` when
    an explicit level has no cache on this host, and :class:`TopologyError`
    if a cache would split the SMT siblings of a core (inconsistent data).
    """
    level = parse_level(level)
    present = topology.cache_levels()
    if level == AUTO:
        level = auto_level(topology)
        if level is None:
            return DomainSet(level=None, fallback=True,
                             domains=_package_domains(topology,
                                                      topology.online_cpus()))
    elif level not in present:
        raise exception.UnknownCacheLevel(
            level=level, present=', '.join(map(str, present)) or 'none')

    caches = topology.data_caches(level)
    use_hw_ids = _hw_ids_usable(caches)
    domains = []
    covered = set()
    for index, cache in enumerate(sorted(caches, key=lambda c: c.cpus)):
        overlap = covered & set(cache.cpus)
        if overlap:
            raise exception.TopologyError(
                source=topology.source,
                reason='L%d caches overlap on CPUs %s'
                       % (level, sorted(overlap)))
        covered |= set(cache.cpus)
        ident = cache.hw_id if use_hw_ids else index
        domains.append(_domain(topology, 'L%d-%d' % (level, ident), level,
                               cache.cpus, cache.size_kib))
    uncovered = [c for c in topology.online_cpus() if c not in covered]
    domains.extend(_package_domains(topology, uncovered))
    _check_siblings_whole(topology, domains)
    return DomainSet(level=level, fallback=False, domains=tuple(domains))


def _hw_ids_usable(caches):
    ids = [c.hw_id for c in caches]
    return None not in ids and len(set(ids)) == len(ids)


def _package_domains(topology, cpus):
    wanted = set(cpus)
    domains = []
    for package, members in topology.packages().items():
        mine = tuple(c for c in members if c in wanted)
        if mine:
            domains.append(_domain(topology, 'pkg-%d' % package, None, mine,
                                   None))
    return tuple(domains)


def _domain(topology, ident, level, cpus, size_kib):
    nodes = sorted({topology.node_of(c) for c in cpus} - {None})
    return CacheDomain(id=ident, level=level, cpus=tuple(sorted(cpus)),
                       size_kib=size_kib, numa_nodes=tuple(nodes))


def _check_siblings_whole(topology, domains):
    where = {cpu: d.id for d in domains for cpu in d.cpus}
    for group in topology.smt_siblings():
        if len({where[c] for c in group}) > 1:
            raise exception.TopologyError(
                source=topology.source,
                reason='SMT siblings %s are split across cache domains; '
                       'the cache data is inconsistent' % list(group))
