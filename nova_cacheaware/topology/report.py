"""The ``topology`` JSON document: HostTopology <-> plain dict.

The keys ``online_cpus``, ``numa_nodes``, ``cache_level``, ``fallback``,
``cache_domains`` and ``smt_siblings`` are a public contract (other tools read
them). ``cpus``, ``caches``, ``packages`` and ``source`` are added so that the
document round-trips to the same :class:`HostTopology`.
"""

from nova_cacheaware import exception
from nova_cacheaware.topology import domains as domains_mod
from nova_cacheaware.topology import model


def to_report(topology, level=domains_mod.AUTO):
    """Describe ``topology`` and its cache domains at ``level`` as a dict."""
    domain_set = domains_mod.cache_domains(topology, level)
    return {
        'source': topology.source,
        'online_cpus': list(topology.online_cpus()),
        'numa_nodes': [{'id': n.id, 'cpus': list(n.cpus),
                        'memory_mib': n.memory_mib}
                       for n in topology.numa_nodes],
        'cache_level': domain_set.level,
        'fallback': domain_set.fallback,
        'cache_domains': [{'id': d.id, 'level': d.level, 'cpus': list(d.cpus),
                           'size_kib': d.size_kib,
                           'numa_nodes': list(d.numa_nodes)}
                          for d in domain_set.domains],
        'smt_siblings': [list(g) for g in topology.smt_siblings()],
        'packages': [{'id': p, 'cpus': list(cpus)}
                     for p, cpus in topology.packages().items()],
        'cpus': [{'id': c.id, 'package': c.package, 'die': c.die,
                  'core': c.core, 'siblings': list(c.sibling_group())}
                 for c in topology.cpus],
        'caches': [{'level': c.level, 'type': c.kind, 'cpus': list(c.cpus),
                    'size_kib': c.size_kib, 'id': c.hw_id}
                   for c in topology.caches],
    }


def from_report(doc):
    """Rebuild a :class:`HostTopology` from :func:`to_report`'s output.

    Raises :class:`InvalidInput` naming the first missing or malformed key.
    """
    try:
        cpus = tuple(model.CPU(id=int(c['id']), package=int(c['package']),
                               die=int(c.get('die', 0)), core=int(c['core']),
                               siblings=tuple(int(s) for s in c['siblings']))
                     for c in doc['cpus'])
        nodes = tuple(model.NumaNode(id=int(n['id']),
                                     cpus=tuple(int(x) for x in n['cpus']),
                                     memory_mib=int(n['memory_mib']))
                      for n in doc['numa_nodes'])
        caches = tuple(model.Cache(level=int(c['level']), kind=c['type'],
                                   cpus=tuple(int(x) for x in c['cpus']),
                                   size_kib=c.get('size_kib'),
                                   hw_id=c.get('id'))
                       for c in doc.get('caches', ()))
    except (KeyError, TypeError, ValueError) as e:
        raise exception.InvalidInput(
            reason='not a topology document (%s: %s)'
                   % (type(e).__name__, e)) from None
    topology = model.HostTopology(cpus=cpus, numa_nodes=nodes, caches=caches,
                                  source=str(doc.get('source', 'report')))
    problems = topology.validate()
    if problems:
        raise exception.InvalidInput(
            reason='inconsistent topology document: %s' % problems[0])
    return topology
