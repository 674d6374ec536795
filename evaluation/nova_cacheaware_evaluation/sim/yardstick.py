"""The occupancy yardstick's workloads, calibration and optimum.

:mod:`.occupancy` scores a pinning; this module draws
what it needs to know of each VM (the planner only knows the VM's class),
calibrates the memory-bound VMs' stall from a contention probe, and finds
the best static pinning by exhaustive search under the yardstick itself.

Calibration: in the yardstick, two copies of a memory-bound program whose
working set is the cache, sharing it (each gets half: equal rates), slow
down by ``1 + stall * (2 ** alpha - 1)``; the probe measures exactly that
co-run (one memory-bound program beside another in its cache domain). So
each probe run's same-domain slowdown gives a stall at ``alpha`` 0.5, and
memory-bound VMs draw their stall between the lowest and the highest.
"""

import dataclasses
import itertools
import math

from nova_cacheaware_evaluation.sim import calibration
from nova_cacheaware_evaluation.sim import occupancy

#: Stall range of memory-bound VMs without a probe: this machine's four
#: probe runs (same-domain slowdown 1.034-1.161, see
#: doc/source/evaluation/contention-probe.rst), by :func:`stall_range`.
DEFAULT_STALL = (0.082, 0.389)
#: Exhaustive search limit ((domains + 1) ** memory-bound VMs).
MAX_CHOICES = 4096


def stall_from_slowdown(slowdown, alpha=0.5):
    """Stall that makes the yardstick's pair co-run slow down by this."""
    return max(0.0, slowdown - 1.0) / (2 ** alpha - 1)


def stall_range(probe_docs):
    """(lowest, highest) stall over probe documents (one per run).

    Each document is one ``nova-cacheaware probe --format json`` result;
    its same-domain slowdown is the geometric mean of its cells
    (:func:`.calibration.from_probe`).
    """
    stalls = [stall_from_slowdown(
        1.0 + calibration.from_probe(doc).fields['dirty_all'])
        for doc in probe_docs]
    return round(min(stalls), 4), round(max(stalls), 4)


@dataclasses.dataclass(frozen=True)
class Mix:
    """How workloads are drawn (see doc/source/evaluation/planner.rst)."""

    stall: tuple = DEFAULT_STALL
    write_shared: tuple = (0.0, 0.1)
    stall_scale: float = 1.0


def draw(rng, vm, mix=Mix(), params=occupancy.Params()):
    """A :class:`~.occupancy.Workload` for ``vm``.

    Memory-bound: working set 0.5-2x its vCPUs' cache, ``alpha`` 0.3-0.7,
    stall from ``mix``, bandwidth between the probe's chase (0.013 of a
    streaming core per unit of stall) and its stream (1.0), uniform.
    CPU- and I/O-bound: 0.25-1 MiB per vCPU, stall under 5 %; I/O-bound
    vCPUs runnable 10-50 % of the time.
    """
    shared = rng.uniform(*mix.write_shared)
    if vm.workload == 'memory':
        stall = min(0.95, rng.uniform(*mix.stall) * mix.stall_scale)
        return occupancy.Workload(
            working_set_mib=rng.uniform(0.5, 2.0) * vm.vcpus
            * params.cache_mib_per_cpu,
            alpha=rng.uniform(0.3, 0.7), stall=stall, write_shared=shared,
            bandwidth=stall * rng.uniform(0.013, 1.0))
    stall = rng.uniform(0.0, 0.05)
    return occupancy.Workload(
        working_set_mib=rng.uniform(0.25, 1.0) * vm.vcpus, alpha=0.5,
        stall=stall, write_shared=shared, bandwidth=0.1 * stall,
        busy=rng.uniform(0.1, 0.5) if vm.workload == 'io' else 1.0)


def score(domains, vms, work, allowed, params=None):
    """``(geometric mean of performance, total work)`` of a pinning."""
    perf = occupancy.evaluate(domains, vms, work, allowed, params)
    return (occupancy.geometric_mean(list(perf.values())),
            sum(perf[vm.id] * vm.vcpus * work[vm.id].busy for vm in vms))


def assignments(domains, vms, capacity=None):
    """Every static pinning the optimum tries (small hosts only).

    Each memory-bound VM on one whole domain or floating, the others
    floating; with ``capacity`` (memory-bound vCPUs per domain, as the
    planner's ``max_vcpus_per_cpu`` sets it), only those within it.
    Raises ValueError above :data:`MAX_CHOICES`.
    """
    everything = tuple(sorted(c for cpus in domains for c in cpus))
    memory = [vm for vm in vms if vm.workload == 'memory']
    if (len(domains) + 1) ** len(memory) > MAX_CHOICES:
        raise ValueError('too many assignments for exhaustive search')
    base = {vm.id: [everything] * vm.vcpus for vm in vms}
    for combo in itertools.product(range(len(domains) + 1),
                                   repeat=len(memory)):
        used = [0] * (len(domains) + 1)
        for vm, d in zip(memory, combo):
            used[d] += vm.vcpus
        if capacity is not None and any(
                u > c for u, c in zip(used, capacity)):
            continue
        allowed = dict(base)
        for vm, d in zip(memory, combo):
            if d < len(domains):
                allowed[vm.id] = [tuple(domains[d])] * vm.vcpus
        yield allowed


def optimum(domains, vms, work, params=None):
    """Best static pinning under the yardstick: ``(allowed, score)``.

    Over :func:`assignments`, by the geometric mean of performance
    (``score`` as :func:`score` gives it). Clairvoyant: it sees every
    VM's hidden workload parameters.
    """
    best = None
    for allowed in assignments(domains, vms):
        got = score(domains, vms, work, allowed, params)
        if best is None or got[0] > best[1][0] + 1e-12:
            best = (allowed, got)
    return best


def class_optimum(domains, vms, draws, params=None, capacity=None):
    """Best pinning for a planner that knows only each VM's class.

    ``draws``: workload dicts drawn for the same VMs (same classes, other
    hidden parameters). Returns the assignment with the highest mean log
    geometric mean over them: what the best class-only choice does on
    average; the caller scores it on the host's own workloads.
    ``capacity``: as for :func:`assignments`.
    """
    best, best_value = None, None
    for allowed in assignments(domains, vms, capacity):
        value = sum(math.log(score(domains, vms, work, allowed, params)[0])
                    for work in draws)
        if best is None or value > best_value + 1e-12:
            best, best_value = allowed, value
    return best
