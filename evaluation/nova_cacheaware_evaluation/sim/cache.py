"""``simulate cache``: cache-domain scheduling under study 000's model.

A scenario is one host (the policies below) or a cloud fed by an arrival
trace (``"cloud"``: the operator configurations of
:mod:`.cloud`, run by :mod:`.cloud_run`).

Host policies (how the vCPUs of a fixed set of VMs are placed):

``credit``
    Every vCPU floats over all CPUs of the host (Xen credit / Linux CFS).
``nova``
    Nova without cache awareness: the scheduler spreads VMs over hosts by
    free vCPUs; each vCPU is pinned to one free CPU, lowest id first (Nova's
    dedicated CPU policy on a host without SMT, which knows NUMA cells but
    not caches).
``agent``
    The agent's planner (:func:`nova_cacheaware.cachedomain.planner.plan`)
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

from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import cache_scenario
from nova_cacheaware_evaluation.sim import cloud_run
from nova_cacheaware_evaluation.sim import contention

HOST_POLICIES = cache_scenario.HOST_POLICIES
WORKLOADS = cache_scenario.WORKLOADS
NAMED_HOSTS = cache_scenario.NAMED_HOSTS


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
    result = cachedomain.plan(cachedomain_model.input_from_dict(
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


def run(scenario):
    """Run a checked scenario.

    See :func:`~.cache_scenario.load_scenario`.
    """
    if 'cloud' in scenario:
        return cloud_run.run(scenario)
    return run_host(scenario)
