"""Named region snapshots for the rebalance tests (issue 33's situations).

Hosts are built from the named layouts of :mod:`.topologies` (one vCPU
per CPU of a domain; the host's pCPUs are all its CPUs).
"""

from nova_cacheaware.contracts import rebalance_snapshot as rs
from tests.unit.cachedomain import topologies


def host(name, layout, servers=(), pcpus=None, nodes=None):
    """A host of ``layout`` (``topologies``) holding ``servers``."""
    domains = tuple(rs.Domain(d['id'], len(d['cpus']),
                              None if nodes is None else nodes[i])
                    for i, d in enumerate(layout))
    if pcpus is None:
        pcpus = sum(len(d['cpus']) for d in layout)
    return rs.Host(name, pcpus, domains, tuple(servers))


def mem(uuid, vcpus, domain=None, **kw):
    """A memory-bound server of a cache-aware flavor."""
    return rs.Server(uuid, vcpus, 'memory', domain=domain, **kw)


def cpu(uuid, vcpus, domain=None, **kw):
    """A cpu-bound server of a cache-aware flavor."""
    return rs.Server(uuid, vcpus, 'cpu', domain=domain, **kw)


def q6600(name, *servers, pcpus=None):
    """Study 000's Q6600: two L2 domains of 2 vCPUs, one NUMA node."""
    return host(name, topologies.Q6600, servers, pcpus, nodes=(0, 0))


def zen(name, *servers):
    """An EPYC with four 8-vCPU CCX domains on two NUMA nodes."""
    return host(name, topologies.EPYC_CCX8, servers, nodes=(0, 0, 1, 1))


def ecore(name, *servers):
    """A hybrid host: four 2-vCPU P-core L2s, two 4-vCPU E-core clusters."""
    return host(name, topologies.HYBRID_ECORE, servers,
                nodes=(0,) * 6)


def snapshot(*hosts, groups=(), pending=(), priority='required'):
    """A :class:`~.rebalance_snapshot.Snapshot`."""
    return rs.Snapshot(tuple(hosts), tuple(sorted(groups)), tuple(pending),
                       priority)


#: An ``auto`` server classified memory-bound after boot on a host with
#: no Empty domain left (Dirty), another host with an Empty domain.
DIRTY = snapshot(
    q6600('a', mem('m1', 1, 'L2-0'), mem('m2', 1, 'L2-0'),
          cpu('c1', 2, 'L2-1')),
    q6600('b', cpu('c2', 2, 'L2-0')))

#: Two claims raced for the last room of host a: 'w' waits on Nova's CPUs.
RACE = snapshot(
    q6600('a', cpu('c1', 2, 'L2-0'), cpu('c2', 2, 'L2-1'),
          cpu('w', 2), pcpus=8),
    q6600('b', mem('m1', 2, 'L2-0')))

#: Memory-bound servers spread over every CCX of z1 while z2's Empty
#: domains are half full: an 8-vCPU ``required`` request was refused.
FRAGMENTED = snapshot(
    zen('z1', *(mem('m%d' % n, 4, 'L3-%d' % n) for n in range(4))),
    zen('z2', mem('n0', 8, 'L3-0'), mem('n1', 8, 'L3-1'),
        cpu('c2', 4, 'L3-2'), cpu('c3', 4, 'L3-3')),
    pending=(8,))

#: A storming server on a crowded host (6 vCPUs on 4 pCPUs: 'x' is not
#: cache-aware and floats on Nova's CPUs).
STORM = snapshot(
    q6600('a', cpu('s', 2, 'L2-0', storm=True, pcpu_estimate=1.2),
          cpu('c1', 2, 'L2-1'), rs.Server('x', 2, 'cpu', cache_aware=False)),
    q6600('b'))

#: Every memory-bound server Clean and All-share, nothing waiting.
SETTLED = snapshot(
    zen('z1', mem('m0', 8, 'L3-0'), mem('m1', 4, 'L3-1'),
        cpu('c1', 4, 'L3-1'), cpu('c2', 8, 'L3-2')),
    ecore('e1', mem('m2', 4, 'L2-4'), cpu('c3', 2, 'L2-0')))

#: Two memory-bound servers share an E-core cluster of a full hybrid
#: host; the other hybrid host has only its P-core L2s (2 vCPUs) free.
ECORE = snapshot(
    ecore('e1', mem('m1', 2, 'L2-4'), mem('m2', 2, 'L2-4'),
          cpu('c1', 4, 'L2-5'),
          *(cpu('p%d' % n, 2, 'L2-%d' % n) for n in range(4))),
    ecore('e2', cpu('c2', 4, 'L2-4'), cpu('c3', 4, 'L2-5')))

#: A 4-vCPU server waits on Nova's CPUs of a full hybrid host; the other
#: hybrid host has only its P-core L2s (2 vCPUs) free: no place holds it.
ECORE_WIDE = snapshot(
    ecore('e1', cpu('w', 4), cpu('c0', 4, 'L2-4'), cpu('c1', 4, 'L2-5'),
          *(cpu('p%d' % n, 2, 'L2-%d' % n) for n in range(4))),
    ecore('e2', cpu('c2', 4, 'L2-4'), cpu('c3', 4, 'L2-5')))


def two_dirty_q6600s_and_an_empty_zen():
    """Two Dirty Q6600s and an Empty Zen host: two helpful moves."""
    return snapshot(
        q6600('a', mem('a1', 1, 'L2-0'), mem('a2', 1, 'L2-0'),
              cpu('ac', 2, 'L2-1')),
        q6600('b', mem('b1', 1, 'L2-1'), mem('b2', 1, 'L2-1'),
              cpu('bc', 2, 'L2-0')),
        zen('z'))


def zen_defragmentation():
    """Freeing z2's CCX for a pending 8-vCPU request takes two moves."""
    return snapshot(
        zen('z1', *(mem('m%d' % n, 4, 'L3-%d' % n) for n in range(4))),
        zen('z2', *(mem('n%d' % n, 8, 'L3-%d' % n) for n in range(1, 4)),
            cpu('c0', 4, 'L3-0'), cpu('c1', 4, 'L3-0')),
        pending=(8,))
