"""``simulate cache``: cache-domain scheduling under study 000's model.

A scenario is one host (the policies below) or a cloud fed by an arrival
trace (``"cloud"``: the operator configurations of
:mod:`nova_cacheaware.sim.cloud`, run by :mod:`nova_cacheaware.sim.cloud_run`).

Host policies (how the vCPUs of a fixed set of VMs are placed):

``credit``
    Every vCPU floats over all CPUs of the host (Xen credit / Linux CFS).
``nova``
    Nova without cache awareness: the scheduler spreads VMs over hosts by
    free vCPUs; each vCPU is pinned to one free CPU, lowest id first (Nova's
    dedicated CPU policy on a host without SMT, which knows NUMA cells but
    not caches).
``agent``
    The agent's planner (:func:`nova_cacheaware.policy.cachedomain.plan`)
    told every VM's true class: memory-bound VMs placed by the planner,
    everything else floats. (The cluster policy ``cacheaware`` - claim a
    domain when free, else schedule like Nova - is retired: no flavor an
    operator can write does that.)
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

from nova_cacheaware.contracts import limits
from nova_cacheaware import exception
from nova_cacheaware.policy import cachedomain
from nova_cacheaware.sim import classifier_trace
from nova_cacheaware.sim import cloud
from nova_cacheaware.sim import cloud_run
from nova_cacheaware.sim import contention

HOST_POLICIES = ('credit', 'nova', 'agent', 'optimum', 'partial')
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
        elif policy == 'agent':
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
         "cloud": {"hosts", "arrivals", "mean_interarrival",
                   "mean_lifetime", "mix": {workload: weight},
                   "sizes": {"1": w, "2": w, ...}, "sample_every",
                   "warmup", "slices", "declared", "sigma",
                   "time_unit_s", "schedule": {...}},
         "configs": [..]}                              # a cloud
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
        raise _bad('"cluster" and its "cacheaware" policy are retired: '
                   'give "cloud" and "configs" (see '
                   'doc/source/evaluation/cache-scheduling.rst)')
    if 'cloud' in doc:
        result['cloud'] = _cloud(doc['cloud'])
        result['configs'] = _names(doc.get('configs', list(cloud.CONFIGS)),
                                   'configs', tuple(cloud.CONFIGS))
        return result
    result['vms'] = _vms(doc.get('vms'))
    result['policies'] = _names(doc.get('policies', list(HOST_POLICIES)),
                                'policies', HOST_POLICIES)
    return result


def _names(value, what, known):
    if (not isinstance(value, list) or not value
            or any(p not in known for p in value)):
        raise _bad('"%s" must be a non-empty list of %s'
                   % (what, ', '.join(known)))
    return value


def _positive(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def _int(value, name, low):
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise _bad('"%s" must be an integer >= %d' % (name, low))
    return value


def _vms(docs):
    if not isinstance(docs, list) or not docs:
        raise _bad('"vms" must be a non-empty list (or give "cloud")')
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


def _cloud(doc):
    if not isinstance(doc, dict):
        raise _bad('"cloud" must be an object')
    out = {'hosts': _int(doc.get('hosts', 100), 'hosts', 1),
           'arrivals': _int(doc.get('arrivals', 1000), 'arrivals', 1),
           'sample_every': _int(doc.get('sample_every', 100),
                                'sample_every', 1),
           'warmup': _int(doc.get('warmup', 0), 'warmup', 0),
           'slices': _int(doc.get('slices', 40), 'cloud slices', 1)}
    for key, default in (('mean_interarrival', 1.0),
                         ('mean_lifetime', 400.0), ('time_unit_s', 60.0)):
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
    return _classifier(doc, out)


def _classifier(doc, out):
    for key, default in (('declared', 1.0), ('sigma', 0.1)):
        value = doc.get(key, default)
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not math.isfinite(value) or value < 0
                or (key == 'declared' and value > 1)):
            raise _bad('"%s" must be a number %s' % (
                key, 'in 0..1' if key == 'declared' else '>= 0'))
        out[key] = float(value)
    schedule = doc.get('schedule', {})
    if not isinstance(schedule, dict):
        raise _bad('"schedule" must be an object')
    try:
        classifier_trace.Schedule(**schedule)
    except (TypeError, ValueError) as e:
        raise _bad('"schedule": %s' % e) from None
    out['schedule'] = schedule
    return out


def run(scenario):
    """Run a checked scenario (see :func:`load_scenario`)."""
    if 'cloud' in scenario:
        return cloud_run.run(scenario)
    return run_host(scenario)
