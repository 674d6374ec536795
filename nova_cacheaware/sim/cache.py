"""``simulate cache``: cache-domain scheduling under study 000's model.

Policies (how vCPUs are placed on a host, and for a cluster, which host):

``credit``
    Every vCPU floats over all CPUs of the host (Xen credit / Linux CFS).
``nova``
    Nova without cache awareness: the scheduler spreads VMs over hosts by
    free vCPUs; each vCPU is pinned to one free CPU, lowest id first (Nova's
    dedicated CPU policy on a host without SMT, which knows NUMA cells but
    not caches).
``cacheaware``
    Ours: memory-bound flavors claim a cache domain in Placement
    (``CUSTOM_CACHE_DOMAIN_VCPU`` + one ``CUSTOM_CACHE_DOMAIN_MEMBOUND``
    slot: Clean), the weigher prefers hosts with Empty domains; on the host
    the agent runs :func:`nova_cacheaware.policy.cachedomain.plan`: claimed
    VMs stay pinned to their domain (unmovable), other memory-bound VMs are
    placed by the planner, everything else floats.
``optimum`` (single host, small)
    Exhaustive search over every static assignment of each memory-bound VM
    to one domain or "float", scored by the contention model itself (the
    geometric mean of the VMs' performance: total throughput alone would
    starve some VMs to speed up others): the best any static pinning can
    do here, the yardstick for the others.
``partial`` (single host)
    Study 000's worst case (fig. 3.8): vCPU ``i`` of the ``k``-th VM on the
    CPUs of domain ``(k + i) mod n``, so every VM is split and shares each
    cache with another VM.
"""

import itertools
import math

from nova_cacheaware import exception
from nova_cacheaware.policy import cachedomain
from nova_cacheaware.policy import limits
from nova_cacheaware.sim import contention

HOST_POLICIES = ('credit', 'nova', 'cacheaware', 'optimum', 'partial')
CLUSTER_POLICIES = ('credit', 'nova', 'cacheaware')
WORKLOADS = ('memory', 'cpu', 'io')


# --------------------------------------------------------------------------
# One host: where each vCPU may run.

def floating(domains, vms):
    """Every vCPU on every CPU."""
    everything = tuple(sorted(c for cpus in domains for c in cpus))
    return {vm.id: [everything] * vm.vcpus for vm in vms}


def nova_pinning(domains, vms, taken=()):
    """Lowest free CPU per vCPU, VMs in order; floats when CPUs run out."""
    free = sorted(set(c for cpus in domains for c in cpus) - set(taken))
    allowed = floating(domains, vms)
    for vm in vms:
        if len(free) >= vm.vcpus:
            allowed[vm.id] = [(c,) for c in free[:vm.vcpus]]
            free = free[vm.vcpus:]
    return allowed


def partial_share(domains, vms):
    """Study 000's Partial share: each VM's vCPUs dealt over the domains."""
    allowed = {}
    slot = 0
    for vm in vms:
        pins = []
        for i in range(vm.vcpus):
            d = (slot + i) % len(domains)
            pins.append(tuple(domains[d]))
        slot += 1
        allowed[vm.id] = pins
    return allowed


def planner_pinning(domains, vms, fixed=None, current=None,
                    max_vcpus_per_cpu=1.0, objective='contract'):
    """Our agent: the planner over the host's VMs.

    ``fixed``: {vm id: domain index} for VMs holding a Placement domain
    claim (pinned there, unmovable). ``current``: {vm id: allowed} from the
    previous plan, so the planner sees where VMs are now.
    ``max_vcpus_per_cpu``: the agent's option of that name (on an
    oversubscribed host, the host's CPU allocation ratio).
    ``objective``: the planner's ``objective`` input.
    """
    fixed = fixed or {}
    current = current or {}
    plan_domains = [{'id': 'd%d' % n, 'cpus': list(cpus)}
                    for n, cpus in enumerate(domains)]
    plan_vms = []
    for vm in vms:
        doc = {'id': vm.id, 'vcpus': vm.vcpus, 'workload': vm.workload}
        if vm.id in fixed:
            cpus = list(domains[fixed[vm.id]])
            doc['current'] = {str(i): cpus for i in range(vm.vcpus)}
            doc['movable'] = False
        elif vm.id in current:
            doc['current'] = {str(i): list(c)
                              for i, c in enumerate(current[vm.id])}
        plan_vms.append(doc)
    result = cachedomain.plan(cachedomain.input_from_dict(
        {'domains': plan_domains, 'vms': plan_vms,
         'max_vcpus_per_cpu': max_vcpus_per_cpu, 'objective': objective}))
    return {vm.id: [tuple(result.vms[vm.id].pinning[i])
                    for i in range(vm.vcpus)] for vm in vms}


def optimum_pinning(domains, vms, slices, seed, model):
    """Best static assignment by exhaustive search (small hosts only)."""
    mem = [vm for vm in vms if vm.workload == 'memory']
    if (len(domains) + 1) ** len(mem) > 4096:
        raise exception.InvalidInput(
            reason='optimum: too many memory-bound VMs for exhaustive '
                   'search (%d domains, %d VMs)' % (len(domains), len(mem)))
    base = floating(domains, vms)
    best, best_allowed = None, base
    for combo in itertools.product(range(len(domains) + 1), repeat=len(mem)):
        allowed = dict(base)
        for vm, choice in zip(mem, combo):
            if choice < len(domains):
                allowed[vm.id] = [tuple(domains[choice])] * vm.vcpus
        stats = contention.simulate_host(domains, vms, allowed, slices,
                                         contention.new_rng(seed), model)
        score = contention.geometric_mean(
            [s.performance for s in stats.values()])
        if best is None or score > best + 1e-9:
            best, best_allowed = score, allowed
    return best_allowed


def _total_work(stats):
    return sum(s.work for s in stats.values())


def run_host(scenario):
    """The single-host experiment of a scenario; JSON-ready result."""
    domains = scenario['domains']
    vms = scenario['vms']
    model = scenario['model']
    slices, seed = scenario['slices'], scenario['seed']
    results = {}
    for policy in scenario['policies']:
        if policy == 'credit':
            allowed = floating(domains, vms)
        elif policy == 'nova':
            allowed = nova_pinning(domains, vms)
        elif policy == 'partial':
            allowed = partial_share(domains, vms)
        elif policy == 'cacheaware':
            allowed = planner_pinning(domains, vms)
        else:
            allowed = optimum_pinning(domains, vms, max(200, slices // 10),
                                      seed, model)
        stats = contention.simulate_host(domains, vms, allowed, slices,
                                         contention.new_rng(seed), model)
        results[policy] = _host_summary(vms, stats)
    baseline = results.get('credit')
    if baseline:
        # Same work in every VM: run time goes as 1 / performance.
        for summary in results.values():
            summary['time_vs_credit'] = round(
                baseline['geomean'] / summary['geomean'], 4)
    return {'kind': 'host', 'policies': results}


def _host_summary(vms, stats):
    per_vm = {vm.id: {'workload': vm.workload,
                      'performance': round(stats[vm.id].performance, 4),
                      'all_share': round(
                          stats[vm.id].all_share_slices
                          / max(1, stats[vm.id].running_slices), 4)}
              for vm in vms}
    mem = [stats[vm.id].performance for vm in vms if vm.workload == 'memory']
    return {'vms': per_vm,
            'throughput': round(_total_work(stats), 4),
            'memory_geomean': round(contention.geometric_mean(mem), 4),
            'geomean': round(contention.geometric_mean(
                [s.performance for s in stats.values()]), 4)}


# --------------------------------------------------------------------------
# A cluster fed by an arrival trace.

def make_trace(cluster, rng):
    """Arrivals ``(time, vm, lifetime)`` from the scenario's mix (seeded)."""
    sizes = cluster['sizes']
    mix = cluster['mix']
    trace, now = [], 0.0
    for n in range(cluster['arrivals']):
        now += rng.expovariate(1.0 / cluster['mean_interarrival'])
        workload = _weighted(rng, mix)
        vcpus = _weighted(rng, sizes)
        trace.append((now, contention.SimVM('vm%05d' % n, int(vcpus),
                                            workload),
                      rng.expovariate(1.0 / cluster['mean_lifetime'])))
    return trace


def _weighted(rng, weights):
    total = sum(weights.values())
    pick = rng.random() * total
    for key in sorted(weights):
        pick -= weights[key]
        if pick <= 0:
            return key
    return sorted(weights)[-1]


class _Host:
    def __init__(self, domains):
        self.domains = domains
        self.cpus = sum(len(c) for c in domains)
        self.vms = []
        self.allowed = {}
        self.claims = {}  # vm id -> domain index (cacheaware)

    def used(self):
        return sum(vm.vcpus for vm in self.vms)

    def claimed(self, d):
        return [v for v, dom in self.claims.items() if dom == d]

    def claim_room(self, d):
        used = sum(vm.vcpus for vm in self.vms
                   if self.claims.get(vm.id) == d)
        return len(self.domains[d]) - used

    def empty_domains(self):
        return sum(1 for d in range(len(self.domains))
                   if not self.claimed(d))


def _pick_host(hosts, vm, policy):
    fits = [h for h in hosts if h.cpus - h.used() >= vm.vcpus]
    if not fits:
        return None, None
    if policy == 'cacheaware' and vm.workload == 'memory':
        # Placement: a domain with room and a free MEMBOUND slot (Clean).
        claimable = []
        for h in fits:
            for d in range(len(h.domains)):
                if not h.claimed(d) and h.claim_room(d) >= vm.vcpus:
                    claimable.append((h, d))
                    break
        if claimable:
            # Weigher: Empty domains, then spread by free vCPUs.
            h, d = max(claimable, key=lambda hd: (
                hd[0].empty_domains(), hd[0].cpus - hd[0].used(),
                -hosts.index(hd[0])))
            return h, d
    host = max(fits, key=lambda h: (h.cpus - h.used(), -hosts.index(h)))
    return host, None


def _replace(host, policy):
    if policy == 'credit':
        host.allowed = floating(host.domains, host.vms)
    elif policy == 'nova':
        # Existing pins stay; the new VM takes the lowest free CPUs.
        taken = [p[0] for vm in host.vms if vm.id in host.allowed
                 for p in host.allowed[vm.id] if len(p) == 1]
        new = [vm for vm in host.vms if vm.id not in host.allowed]
        host.allowed = {vm.id: host.allowed[vm.id] for vm in host.vms
                        if vm.id in host.allowed}
        host.allowed.update(nova_pinning(host.domains, new, taken))
    else:
        host.allowed = planner_pinning(host.domains, host.vms,
                                       fixed=host.claims,
                                       current=host.allowed)


def run_cluster(scenario):
    """The cluster experiment: every policy on the same trace."""
    cluster = scenario['cluster']
    model = scenario['model']
    trace = make_trace(cluster, contention.new_rng(scenario['seed']))
    results = {}
    for policy in scenario['policies']:
        results[policy] = _run_cluster_policy(scenario, cluster, trace,
                                              policy, model)
    return {'kind': 'cluster', 'arrivals': len(trace), 'policies': results}


def _run_cluster_policy(scenario, cluster, trace, policy, model):
    hosts = [_Host(scenario['domains']) for _ in range(cluster['hosts'])]
    rng = contention.new_rng(scenario['seed'] + 1)
    departures = []  # (time, host index, vm id)
    rejected = 0
    perf = {w: [] for w in WORKLOADS}
    all_share, dirty_domains, samples = [], [], 0
    for n, (now, vm, life) in enumerate(trace):
        departures.sort()
        while departures and departures[0][0] <= now:
            _, hi, vm_id = departures.pop(0)
            host = hosts[hi]
            host.vms = [v for v in host.vms if v.id != vm_id]
            host.allowed.pop(vm_id, None)
            host.claims.pop(vm_id, None)
            if policy == 'cacheaware':
                _replace(host, policy)
        host, domain = _pick_host(hosts, vm, policy)
        if host is None:
            rejected += 1
        else:
            host.vms.append(vm)
            if domain is not None:
                host.claims[vm.id] = domain
            _replace(host, policy)
            departures.append((now + life, hosts.index(host), vm.id))
        if (n + 1) % cluster['sample_every'] or n < cluster['warmup']:
            continue
        samples += 1
        for host in hosts:
            if not host.vms:
                continue
            stats = contention.simulate_host(
                host.domains, host.vms, host.allowed, cluster['slices'],
                rng, model)
            for v in host.vms:
                perf[v.workload].append(stats[v.id].performance)
                if v.workload == 'memory':
                    all_share.append(stats[v.id].all_share_slices
                                     / max(1, stats[v.id].running_slices))
            dirty_domains.append(_dirty(host))
    return {
        'rejected': rejected,
        'samples': samples,
        'memory_geomean': round(contention.geometric_mean(perf['memory']), 4),
        'cpu_geomean': round(contention.geometric_mean(perf['cpu']), 4),
        'io_geomean': round(contention.geometric_mean(perf['io']), 4),
        'memory_p10': round(_quantile(perf['memory'], 0.1), 4),
        'memory_all_share': round(sum(all_share) / max(1, len(all_share)),
                                  4),
        'dirty_domain_fraction': round(
            sum(dirty_domains) / max(1, len(dirty_domains)), 4),
    }


def _dirty(host):
    """Fraction of the host's domains where 2+ memory VMs may run."""
    count = [set() for _ in host.domains]
    where = {c: d for d, cpus in enumerate(host.domains) for c in cpus}
    for vm in host.vms:
        if vm.workload != 'memory':
            continue
        for pins in host.allowed[vm.id]:
            for c in pins:
                count[where[c]].add(vm.id)
    return sum(1 for s in count if len(s) > 1) / len(host.domains)


def _quantile(values, q):
    if not values:
        return 1.0
    s = sorted(values)
    return s[min(len(s) - 1, int(math.floor(q * len(s))))]


# --------------------------------------------------------------------------
# Scenario files

NAMED_HOSTS = {
    'q6600': [[0, 1], [2, 3]],
    'epyc-4ccx': [list(range(i, i + 4)) for i in range(0, 16, 4)],
}


def _bad(reason):
    return exception.InvalidInput(reason='scenario: ' + reason)


def load_scenario(doc):
    """Check a scenario document and fill in defaults.

    Shape (JSON)::

        {"seed": int, "slices": int, "policies": [..],
         "host": "q6600" | [[cpu, ...], ...],
         "model": {Model field: number, ...},
         "vms": [{"id", "vcpus", "workload"}]          # one host, or
         "cluster": {"hosts", "arrivals", "mean_interarrival",
                     "mean_lifetime", "mix": {workload: weight},
                     "sizes": {"1": w, "2": w, ...}, "sample_every",
                     "warmup", "slices"}}
    """
    if not isinstance(doc, dict):
        raise _bad('must be a JSON object')
    host = doc.get('host', 'q6600')
    if isinstance(host, str):
        if host not in NAMED_HOSTS:
            raise _bad('unknown host %r (known: %s)'
                       % (host, ', '.join(sorted(NAMED_HOSTS))))
        host = NAMED_HOSTS[host]
    if (not isinstance(host, list) or not host
            or not all(isinstance(d, list) and d for d in host)):
        raise _bad('"host" must name a host or list CPU lists')
    flat = [c for d in host for c in d]
    if (not all(limits.is_cpu_id(c) for c in flat)
            or len(set(flat)) != len(flat)):
        raise _bad('"host" CPU ids must be distinct integers 0..%d'
                   % (limits.MAX_CPUS - 1))
    domains = [tuple(sorted(d)) for d in host]
    try:
        model = contention.Model(**doc.get('model', {}))
    except TypeError as e:
        raise _bad('"model": %s' % e) from None
    if not all(_positive(getattr(model, f.name))
               for f in model.__dataclass_fields__.values()):
        raise _bad('"model" values must be positive numbers')
    seed = _int(doc.get('seed', 0), 'seed', 0)
    slices = _int(doc.get('slices', 2000), 'slices', 1)
    result = {'domains': domains, 'model': model, 'seed': seed,
              'slices': slices}
    if 'cluster' in doc:
        result['cluster'] = _cluster(doc['cluster'])
        known = CLUSTER_POLICIES
    else:
        result['vms'] = _vms(doc.get('vms'))
        known = HOST_POLICIES
    policies = doc.get('policies', list(known))
    if (not isinstance(policies, list) or not policies
            or any(p not in known for p in policies)):
        raise _bad('"policies" must be a non-empty list of %s'
                   % ', '.join(known))
    result['policies'] = policies
    return result


def _positive(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def _int(value, name, low):
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise _bad('"%s" must be an integer >= %d' % (name, low))
    return value


def _vms(docs):
    if not isinstance(docs, list) or not docs:
        raise _bad('"vms" must be a non-empty list (or give "cluster")')
    vms = []
    for n, v in enumerate(docs):
        if not isinstance(v, dict):
            raise _bad('vms[%d] must be an object' % n)
        vm_id = v.get('id', 'vm%d' % n)
        if not isinstance(vm_id, str) or any(x.id == vm_id for x in vms):
            raise _bad('vms[%d]: "id" must be a unique string' % n)
        if v.get('workload') not in WORKLOADS:
            raise _bad('VM %r: "workload" must be one of %s'
                       % (vm_id, ', '.join(WORKLOADS)))
        if not limits.is_vcpu_count(v.get('vcpus')):
            raise _bad('VM %r: "vcpus" must be an integer 1..%d'
                       % (vm_id, limits.MAX_VCPUS))
        vms.append(contention.SimVM(vm_id, _int(v.get('vcpus'), 'vcpus', 1),
                                    v['workload']))
    return vms


def _cluster(doc):
    if not isinstance(doc, dict):
        raise _bad('"cluster" must be an object')
    out = {'hosts': _int(doc.get('hosts', 100), 'hosts', 1),
           'arrivals': _int(doc.get('arrivals', 1000), 'arrivals', 1),
           'sample_every': _int(doc.get('sample_every', 100),
                                'sample_every', 1),
           'warmup': _int(doc.get('warmup', 0), 'warmup', 0),
           'slices': _int(doc.get('slices', 40), 'cluster slices', 1)}
    for key, default in (('mean_interarrival', 1.0),
                         ('mean_lifetime', 400.0)):
        value = doc.get(key, default)
        if not _positive(value):
            raise _bad('"%s" must be a number > 0' % key)
        out[key] = float(value)
    mix = doc.get('mix', {'memory': 3, 'cpu': 5, 'io': 2})
    if (not isinstance(mix, dict) or not mix
            or any(k not in WORKLOADS or not _positive(w)
                   for k, w in mix.items())):
        raise _bad('"mix" must map memory/cpu/io to weights > 0')
    sizes = doc.get('sizes', {'1': 2, '2': 4, '4': 2})
    if (not isinstance(sizes, dict) or not sizes
            or any(not (k.isascii() and k.isdigit()) or int(k) < 1
                   or not _positive(w)
                   for k, w in sizes.items())):
        raise _bad('"sizes" must map vCPU counts to weights > 0')
    out['mix'] = mix
    out['sizes'] = sizes
    return out


def run(scenario):
    """Run a checked scenario (see :func:`load_scenario`)."""
    if 'cluster' in scenario:
        return run_cluster(scenario)
    return run_host(scenario)
