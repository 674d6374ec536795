"""The offline optimum of a small cloud, by exhaustive search.

For a trace known in advance (arrivals, sizes, true workloads, lifetimes),
every *static* placement is tried: each VM goes to one (host, domain) -
pinned there, All share - or floats on one host, or is rejected (only when
no host has room for it, as Nova would; a VM is never turned away to make
room). Each placement is scored by the same sampling as the
configurations (:func:`.cloud_run.run_config`: same
sample times, slices and random numbers) on the memory-bound VMs'
performance per demand; the best is the optimum.

It is exact for static placements - what a clairvoyant scheduler could
do without moving a running VM. A configuration whose agent re-pins VMs
may in principle beat it; the trace-only bound of
:func:`.cloud_run.upper_bound` holds for both. The
search grows as ``(hosts x (domains + 1)) ** arrivals`` (less the
symmetric copies): small cases only.
"""

import random

from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import cloud
from nova_cacheaware_evaluation.sim import cloud_run
from nova_cacheaware_evaluation.sim import contention

#: Most placements the search tries.
MAX_PLACEMENTS = 50000
FLOAT = None


def options(hosts, domains):
    """Every ``(host, domain or FLOAT)`` a VM may get."""
    return [(h, d) for h in range(hosts)
            for d in list(range(len(domains))) + [FLOAT]]


def evaluate(scenario, trace, choice):
    """Figures of one static placement ``choice`` ({vm id: option}).

    Returns None when the placement overfills a host (a VM is placed on a
    host without room) or rejects a VM some host had room for.
    """
    spec, model = scenario['cloud'], scenario['model']
    hosts = [cloud.Host(i, scenario['domains'])
             for i in range(spec['hosts'])]
    everything = tuple(sorted(c for d in scenario['domains'] for c in d))
    rng = contention.new_rng(scenario['seed'] + 1)
    acc = cloud_run._Acc()
    departures = []
    for n, (now, vm, life, _declares) in enumerate(trace):
        departures.sort()
        while departures and departures[0][0] <= now:
            _t, hi, vm_id = departures.pop(0)
            del hosts[hi].guests[vm_id]
        room = [h for h in hosts if h.used() + vm.vcpus <= h.cpus]
        option = choice.get(vm.id)
        if option is None:
            if room:
                return None
            acc.rejected[vm.workload] = acc.rejected.get(vm.workload, 0) + 1
        else:
            host = hosts[option[0]]
            if host not in room:
                return None
            guest = cloud.Guest(vm, cloud.request('plain', vm.vcpus), now)
            cpus = (everything if option[1] is FLOAT
                    else scenario['domains'][option[1]])
            guest.allowed = [tuple(cpus)] * vm.vcpus
            host.guests[vm.id] = guest
            departures.append((now + life, host.index, vm.id))
        if (n + 1) % spec['sample_every'] or n < spec['warmup']:
            continue
        for h in hosts:
            if h.guests:
                cloud_run._sample(h, spec, model, rng, None, 0.0, acc, False)
        acc.demand += sum(1 for t, v, lf, _d in trace
                          if v.workload == 'memory' and t <= now < t + lf)
    return acc.result()


def placements(scenario, trace):
    """Every static placement worth trying, one per symmetry class.

    Hosts are identical and so are the domains of a host when they have
    the same size: a placement is tried only in its canonical labelling
    (hosts, and each host's domains, numbered in order of first use).
    A VM is rejected only when no host has room for it.
    """
    spec = scenario['cloud']
    sizes = {len(d) for d in scenario['domains']}
    symmetric = len(sizes) == 1
    cpus = sum(len(d) for d in scenario['domains'])
    ndom = len(scenario['domains'])
    ends = [t + life for t, _vm, life, _d in trace]

    def walk(n, used, choice):
        if n == len(trace):
            yield dict(choice)
            return
        now, vm = trace[n][0], trace[n][1]
        load = [0] * spec['hosts']
        for k in range(n):
            option = choice[trace[k][1].id]
            if option is not None and ends[k] > now:
                load[option[0]] += trace[k][1].vcpus
        fits = [h for h in range(spec['hosts'])
                if load[h] + vm.vcpus <= cpus]
        if not fits:
            choice[vm.id] = None
            yield from walk(n + 1, used, choice)
            return
        for h in fits:
            if symmetric and h > len(used):
                continue
            top = len(used[h]) if h < len(used) else 0
            doms = [d for d in range(ndom)
                    if not symmetric or d <= top] + [FLOAT]
            for d in doms:
                new = [set(u) for u in used] + (
                    [set()] if h == len(used) else [])
                if d is not FLOAT:
                    new[h].add(d)
                    new[h] = set(range(max(new[h]) + 1)) \
                        if symmetric else new[h]
                choice[vm.id] = (h, d)
                yield from walk(n + 1, new, choice)
        choice.pop(vm.id, None)

    return walk(0, [], {})


def search(scenario, trace):
    """``(best figures, best choice, placements tried)``; raises when big."""
    best, best_choice, tried = None, None, 0
    for choice in placements(scenario, trace):
        tried += 1
        if tried > MAX_PLACEMENTS:
            raise exception.InvalidInput(
                reason='optimum: more than %d placements to try'
                       % MAX_PLACEMENTS)
        figures = evaluate(scenario, trace, choice)
        if figures is None:
            continue
        key = (figures['memory_perf'], figures['cpu_geomean'])
        if best is None or key > (best['memory_perf'], best['cpu_geomean']):
            best, best_choice = figures, choice
    return best, best_choice, tried


def small_case(scenario):
    """Optimum, bound and every configuration on one small trace."""
    spec = scenario['cloud']
    trace = cloud_run.make_trace(spec, random.Random(scenario['seed']))
    changes = cloud_run.trajectories(trace, spec, scenario['model'],
                                     scenario['seed'] + 3)
    best, choice, tried = search(scenario, trace)
    bound = cloud_run.upper_bound(
        trace, spec, spec['hosts'] * len(scenario['domains']),
        scenario['model'].dirty_all)
    configs = {name: cloud_run.run_config(cloud.CONFIGS[name], scenario,
                                          trace, changes)
               for name in scenario['configs']}
    return {'trace': [{'vm': vm.id, 'vcpus': vm.vcpus,
                       'workload': vm.workload, 'arrival': round(t, 3),
                       'lifetime': round(life, 3)}
                      for t, vm, life, _d in trace],
            'optimum': best, 'optimum_choice': choice,
            'placements_tried': tried, 'upper_bound': bound,
            'configs': configs}
