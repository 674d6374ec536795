"""Host views and Nova facts for the Watcher plugin's tests.

:func:`q6600` writes the host-view document (1.0) an agent answers for a
Q6600 (two L2 domains of two CPUs, one NUMA node), checked by
:func:`nova_cacheaware.contracts.host_view.from_document` as the strategy
checks every answer; :data:`UUIDS` names servers by short names so that
tables read as the rebalance tests do.
"""

import uuid

from nova_cacheaware.contracts import host_view

#: Short names of servers as uuids; their order is the names' order.
UUIDS = {name: str(uuid.UUID(int=i + 1))
         for i, name in enumerate(('c1', 'c2', 'c3', 'c4', 'm1', 'm2', 'm3',
                                   'm4', 'm5', 'm6', 'k1', 'k2'))}
NAMES = {u: n for n, u in UUIDS.items()}
CLASSES = {'m': 'memory-bound', 'c': 'cpu-bound', 'k': 'cpu-bound'}
#: Flavor extra specs: an ``auto`` All-share flavor, a cpu-bound one.
AUTO = {'cacheaware:cache_share': 'all'}
CPU = {'cacheaware:cache_share': 'all', 'cacheaware:workload': 'cpu'}


def q6600(name, placed, healthy=True):
    """The checked view of host ``name``; ``placed``: ``{server: L2 id}``.

    A server's class is its name's first letter (``m``: memory-bound,
    ``c`` and ``k``: cpu-bound); ``m``/``c``/``k`` servers have 1/2/1
    vCPUs.
    """
    domains = []
    for domain, cpus in (('L2-0', '0-1'), ('L2-1', '2-3')):
        members = sorted(s for s, d in placed.items() if d == domain)
        memory = sum(s.startswith('m') for s in members)
        domains.append({
            'id': domain, 'level': 'L2', 'numa_node': 0, 'cpus': cpus,
            'state': ('Empty', 'Clean', 'Dirty')[min(memory, 2)],
            'servers': [UUIDS[s] for s in members]})
    return host_view.from_document({
        'version': '1.0', 'host': name, 'model': 'per-host',
        'generated_at': '2026-11-29T00:00:00Z',
        'agent': {'healthy': healthy, 'generation': 1},
        'numa_nodes': [{'id': 0, 'cpus': '0-3',
                        'domains': ['L2-0', 'L2-1']}],
        'domains': domains,
        'servers': [{'uuid': UUIDS[s], 'class': CLASSES[s[0]],
                     'domain': d, 'vcpus': vcpus(s)}
                    for s, d in sorted(placed.items())]})


def vcpus(name):
    """1 for a memory-bound or ``k`` test server, 2 for a ``c`` one."""
    return 2 if name.startswith('c') else 1


def specs(name):
    """The flavor extra specs of a test server."""
    return dict(AUTO if name.startswith('m') else CPU)
