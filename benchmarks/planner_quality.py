"""Random oversubscribed small hosts and the planner as the agent runs it.

Shared by ``benchmarks/planner_yardstick.py`` (which scores them under the
cache simulator and the independent occupancy yardstick):
:func:`random_host` draws 2-4 cache domains of 2-4 CPUs, more vCPUs than
CPUs (memory-, CPU- and I/O-bound VMs of 1-4 vCPUs), few enough
memory-bound VMs for an exhaustive optimum; :func:`planner_at` runs the
agent's planner (``sim.cache.planner_pinning``) with
``max_vcpus_per_cpu`` 1.0 (the agent's default), the host's
oversubscription ratio rounded up (what an operator sets on an
oversubscribed host: the CPU allocation ratio) or no capacity limit, and
the contract's objective or ``throughput``.
"""

import math

from nova_cacheaware_evaluation.sim import cache
from nova_cacheaware_evaluation.sim import contention

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
