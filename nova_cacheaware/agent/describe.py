"""The host-view document (version 1.0) of the agent's latest pass.

The shape is :mod:`nova_cacheaware.contracts.host_view`'s, which
:func:`nova_cacheaware.status.host_map.render_svg` draws.

What ``describe_host`` and ``describe_server`` answer over RPC
(:mod:`nova_cacheaware.agent.rpc`) and what ``openstack cacheaware host
show`` and ``host map`` print or draw: the host's NUMA nodes and cache
domains with their CPUs (cpulist strings), each domain's state, and each
server's class, isolation, domain, pins, spin storm, pCPU estimate,
sizing and balloon state. Built from what the pass already holds (the
plan, the decisions, the capabilities' reports): no libvirt call.
"""

import datetime

from nova_cacheaware.agent import capability
from nova_cacheaware.contracts import cache_state
from nova_cacheaware.topology import cpulist

VERSION = '1.0'
PER_DOMAIN, PER_HOST = 'per-domain', 'per-host'
#: The plan's domain states as the document writes them.
STATES = {cache_state.EMPTY: 'Empty', cache_state.CLEAN: 'Clean',
          cache_state.DIRTY: 'Dirty'}
#: The document's classes: what matters to a cache domain is whether a
#: server is memory-bound; cpu- and io-bound ones both leave it Clean.
CLASSES = {'memory': 'memory-bound', 'cpu': 'cpu-bound', 'io': 'cpu-bound'}
#: ``cacheaware:cache_clean`` as the document's ``isolation``.
ISOLATION = {'required': 'required', 'preferred': 'preferred', 'off': 'none'}
#: The vcpu_sizing entry's keys a server's ``sizing`` keeps.
SIZING_KEYS = ('mode', 'vcpus', 'recommended_vcpus', 'online', 'target',
               'action', 'reason')
#: The balloon entry's keys a server's ``balloon`` keeps.
BALLOON_KEYS = ('status', 'memory_mib', 'was_mib', 'target_mib', 'low_mib',
                'flavor_mib', 'hit_ratio')


def level_name(level):
    """``L3`` for cache level 3; ``package`` for a domain without one."""
    return 'package' if level is None else 'L%d' % level


def build_host_view(host, model, domain_set, one, reports, healthy=True,
                    generation=None, now=None):
    """The host-view document of pass ``one`` (a ``service.Pass``).

    ``reports``: the newest report of each capability that had one
    (``{name: report}``; balloon rounds are rarer than passes);
    ``model``: :data:`PER_DOMAIN` or :data:`PER_HOST`.
    """
    now = (now or datetime.datetime.now(datetime.timezone.utc)).astimezone(
        datetime.timezone.utc)
    decisions = sorted(one.decisions, key=lambda d: d.uuid)
    servers = [server_entry(d, one.snapshot.requests.get(d.uuid),
                            d.uuid in one.snapshot.spec_errors, reports)
               for d in decisions]
    storming = {s['uuid'] for s in servers if s['spin_storm']}
    domains = [_domain_entry(d, one.plan_output, decisions, storming)
               for d in domain_set.domains]
    return {'version': VERSION, 'host': host, 'model': model,
            'generated_at': now.strftime('%Y-%m-%dT%H:%M:%SZ'),
            # 0: the agent sends no generation (no 2.0 state on the bus).
            'agent': {'healthy': bool(healthy),
                      'generation': generation or 0},
            'numa_nodes': _numa_nodes(domain_set),
            'domains': domains, 'servers': servers}


def _numa_nodes(domain_set):
    nodes = {}
    for domain in domain_set.domains:
        node = nodes.setdefault(_node_of(domain), ([], []))
        node[0].extend(domain.cpus)
        node[1].append(domain.id)
    return [{'id': n, 'cpus': cpulist.format_cpulist(cpus),
             'domains': names}
            for n, (cpus, names) in sorted(nodes.items())]


def _node_of(domain):
    # A host whose firmware reports no NUMA node is one node, 0 (as the
    # kernel numbers it).
    return domain.numa_nodes[0] if domain.numa_nodes else 0


def _domain_entry(domain, plan, decisions, storming):
    planned = plan.domains.get(domain.id)
    state = STATES.get(planned.state if planned is not None
                       else cache_state.EMPTY, 'Empty')
    # A server spread over several domains is listed in each of them.
    members = [d.uuid for d in decisions if domain.id in d.domains]
    return {'id': domain.id, 'level': level_name(domain.level),
            'numa_node': _node_of(domain),
            'cpus': cpulist.format_cpulist(domain.cpus), 'state': state,
            'spin_storm': any(u in storming for u in members),
            'servers': members}


def server_entry(decision, request, spec_error, reports):
    """One ``servers`` entry of a decision, its request and the reports.

    ``request``: the flavor's parsed ``cacheaware:`` request (None: its
    keys are invalid); ``spec_error``: the specs could not be read.
    """
    pins = decision.desired or decision.current
    cpus = sorted({c for cs in pins.values() for c in cs})
    sizing = ((capability.report_of(reports, 'vcpu_sizing') or {}).get(
        'vms') or {}).get(
        decision.uuid)
    balloon = ((capability.report_of(reports, 'balloon') or {}).get(
        'vms') or {}).get(
        decision.uuid)
    storm = (sizing or {}).get('storm') or {}
    estimate = (sizing or {}).get('available_pcpus')
    return {'uuid': decision.uuid,
            'class': CLASSES.get(decision.workload, 'unknown'),
            'isolation': (None if spec_error or request is None
                          else ISOLATION.get(request.cache_clean)),
            'domain': (decision.domains[0] if len(decision.domains) == 1
                       else None),
            'pins': cpulist.format_cpulist(cpus) if cpus else None,
            'vcpus': len(pins),
            'spin_storm': bool(storm.get('storm')),
            'pcpu_estimate': None if estimate is None else float(estimate),
            'sizing': _subset(sizing, SIZING_KEYS),
            'balloon': _subset(balloon, BALLOON_KEYS)}


def _subset(entry, keys):
    if not entry:
        return None
    return {k: entry[k] for k in keys if k in entry}


def server_view(view, uuid):
    """``describe_server``'s answer: the server's entry plus ``host``.

    None when the host view has no such server.
    """
    for server in view['servers']:
        if server['uuid'] == uuid:
            return dict(server, host=view['host'])
    return None
