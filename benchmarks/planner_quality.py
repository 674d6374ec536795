"""Planner quality under the project's cache simulator (``sim/cache``).

Random oversubscribed small hosts: 2-4 cache domains of 2-4 CPUs, more
vCPUs than CPUs (memory-, CPU- and I/O-bound VMs of 1-4 vCPUs), few enough
memory-bound VMs for the simulator's exhaustive ``optimum`` (every static
assignment of each memory-bound VM to one domain or to floating, scored by
the contention model itself). Each host is simulated under the planner's
pinning and under the optimum's, same seed and slices; the quality of a
host is the ratio of the geometric mean of the VMs' performance (what the
optimum maximises; per-VM throughput over ideal) and, reported beside it,
the ratio of total work (raw throughput).

The planner is run as the agent runs it (``sim.cache.planner_pinning``),
with ``max_vcpus_per_cpu`` 1.0 (the agent's default) and with the host's
oversubscription ratio rounded up (what an operator sets on an
oversubscribed host: the CPU allocation ratio), with the contract's
objective and with ``throughput`` (which shares the simulator's
contention model: see doc/source/evaluation/planner.rst).
"""

import math
import random
import statistics

from nova_cacheaware.sim import cache
from nova_cacheaware.sim import contention

MAX_OPTIMUM_LEAVES = 256


def random_host(rng):
    """(domains, vms) of a random oversubscribed small host."""
    n_domains = rng.randint(2, 4)
    domains, cpu = [], 0
    for _ in range(n_domains):
        size = rng.randint(2, 4)
        domains.append(tuple(range(cpu, cpu + size)))
        cpu += size
    max_mem = int(math.log(MAX_OPTIMUM_LEAVES) / math.log(n_domains + 1))
    n_mem = rng.randint(1, max_mem)
    target = rng.uniform(1.2, 2.5) * cpu
    vms, total = [], 0
    for n in range(n_mem):
        vcpus = rng.choice([1, 2, 2, 4])
        vms.append(contention.SimVM('m%d' % n, vcpus, 'memory'))
        total += vcpus
    n = 0
    while total < target:
        vcpus = rng.choice([1, 2, 2, 4])
        vms.append(contention.SimVM('o%d' % n, vcpus,
                                    rng.choice(['cpu', 'cpu', 'io'])))
        total += vcpus
        n += 1
    return domains, vms


def _measure(domains, vms, allowed, slices, seed, model):
    stats = contention.simulate_host(domains, vms, allowed, slices,
                                     contention.new_rng(seed), model)
    return (contention.geometric_mean([s.performance
                                       for s in stats.values()]),
            sum(s.work for s in stats.values()))


def quality(count, seed, slices=1000, planners=None):
    """Per-planner mean and worst ratios to the optimum.

    Over ``count`` random hosts; ``planners`` maps a name to
    ``f(domains, vms, host ratio) -> allowed``.
    """
    model = contention.Model()
    rng = random.Random(seed)
    ratios = {name: {'geomean': [], 'work': []} for name in planners}
    hosts = []
    for n in range(count):
        domains, vms = random_host(rng)
        cpus = sum(len(d) for d in domains)
        over = math.ceil(sum(vm.vcpus for vm in vms) / cpus)
        best = cache.optimum_pinning(domains, vms, max(200, slices // 10),
                                     seed + n, model)
        opt = _measure(domains, vms, best, slices, seed + n, model)
        hosts.append({'domains': len(domains), 'cpus': cpus,
                      'vcpus': sum(vm.vcpus for vm in vms),
                      'memory_vms': sum(vm.workload == 'memory'
                                        for vm in vms)})
        for name, planner in planners.items():
            got = _measure(domains, vms, planner(domains, vms, over),
                           slices, seed + n, model)
            ratios[name]['geomean'].append(got[0] / opt[0])
            ratios[name]['work'].append(got[1] / opt[1])
    out = {}
    for name, r in ratios.items():
        out[name] = {
            key: {'mean': round(statistics.mean(v), 4),
                  'worst': round(min(v), 4),
                  'below_0_95': sum(1 for x in v if x < 0.95)}
            for key, v in r.items()}
    return {'hosts': count, 'seed': seed, 'slices': slices,
            'host_shapes': hosts, 'planners': out}


def planner_at(ratio_choice, objective='contract'):
    """The agent's planner with ``max_vcpus_per_cpu`` 1.0 or the host's.

    ``ratio_choice``: ``default`` (1.0), ``host`` (vCPUs / CPUs rounded
    up) or ``none`` (the host's vCPUs: no domain capacity limit).
    """
    def run(domains, vms, over):
        ratio = {'default': 1.0, 'host': float(over),
                 'none': float(sum(vm.vcpus for vm in vms))}[ratio_choice]
        return cache.planner_pinning(domains, vms, max_vcpus_per_cpu=ratio,
                                     objective=objective)
    return run
