"""Shared-cache contention model, calibrated from study 000 (Q6600, Xen).

Time advances in scheduler slices. In each slice every vCPU sits in the run
queue of one CPU it is allowed on (the least-loaded one, ties broken at
random: the balancing of Xen's credit scheduler or Linux CFS) and every CPU
runs one vCPU of its queue, chosen at random. What a running vCPU achieves
in the slice is ``1 / CPI``; its CPI depends only on what runs *at the same
time* in its cache domain:

* CPU- and I/O-bound vCPUs: ``cpi_cpu`` (1.0), times ``1 + split_cpu``
  (3 %) while their VM is split across domains -- study 000 measured < 5 %.
* memory-bound vCPUs: ``cpi_mem`` (0.5, study 000's All-share CPI) times
  ``split_mem`` (3.2) while the VM runs vCPUs in another domain at the same
  time (Partial share), times ``1 + dirty * n`` where ``n`` is the number of
  other memory-bound VMs running in the domain at the same time and
  ``dirty`` is ``dirty_all`` (0.12) when All-share, ``dirty_partial`` (1.0)
  when Partial-share.

Calibration (study 000, 2 VMs x 2 vCPUs on 4 CPUs): All share = 0.5;
Partial share with the other VM's vCPUs beside it (fig. 3.8) =
0.5 x 3.2 x 2 = 3.2; Clean vs Dirty costs 12 % under All share and 2x under
Partial share (fig. 3.13); Partial-Clean = 1.6, about the "300 %" of a
memory-bound VM next to other work. I/O-bound vCPUs are runnable in
``io_busy`` (30 %) of the slices, the others always.

Not calibrated: the 4-VM experiment (8 vCPUs on 4 CPUs); the model predicts
it (doc/source/evaluation/cache-scheduling.rst compares with the paper).
"""

import dataclasses
import math
import random
import typing as ty


@dataclasses.dataclass(frozen=True)
class Model:
    """Parameters of the contention model (defaults: study 000)."""

    cpi_mem: float = 0.5
    cpi_cpu: float = 1.0
    split_mem: float = 3.2
    split_cpu: float = 0.03
    dirty_all: float = 0.12
    dirty_partial: float = 1.0
    io_busy: float = 0.3

    def base_cpi(self, workload):
        """CPI of a vCPU of ``workload`` alone, All share, Clean."""
        return self.cpi_mem if workload == 'memory' else self.cpi_cpu


@dataclasses.dataclass(frozen=True)
class SimVM:
    """A VM in the simulator: id, vCPUs and its true workload class."""

    id: str
    vcpus: int
    workload: str  # memory | cpu | io


@dataclasses.dataclass
class VMStats:
    """What a VM achieved over the simulated slices."""

    work: float = 0.0          # sum of 1/CPI over its running vCPU slices
    ideal: float = 0.0         # what it would get alone, pinned, Clean
    all_share_slices: int = 0  # slices in which it ran All share
    running_slices: int = 0    # slices in which any of its vCPUs ran
    clean_slices: int = 0      # memory-bound, All share, no other
    #                            memory-bound VM running in its domain

    @property
    def performance(self):
        """Achieved work over ideal work (1.0 = alone on its own domain)."""
        return self.work / self.ideal if self.ideal else 1.0


def simulate_host(domains, vms, allowed, slices, rng, model=None):
    """Run ``slices`` slices of one host; returns {vm id: VMStats}.

    ``domains``: list of CPU tuples; ``vms``: list of :class:`SimVM`;
    ``allowed``: {vm id: [CPU tuple per vCPU]} (where each vCPU may run).
    """
    model = model or Model()
    domain_of = {c: d for d, cpus in enumerate(domains) for c in cpus}
    cpus = sorted(domain_of)
    result = {vm.id: VMStats() for vm in vms}
    vcpus = [(vm, i) for vm in vms for i in range(vm.vcpus)]
    for _ in range(slices):
        runnable = [(vm, i) for vm, i in vcpus
                    if vm.workload != 'io' or rng.random() < model.io_busy]
        for vm in vms:
            busy = sum(1 for v, _ in runnable if v is vm)
            result[vm.id].ideal += busy / model.base_cpi(vm.workload)
        # Pinned vCPUs first: a balancer moves floating vCPUs out of the
        # way of pinned ones (CFS/credit migrate to idle CPUs).
        rng.shuffle(runnable)
        runnable.sort(key=lambda vi: len(allowed[vi[0].id][vi[1]]))
        queue = {c: [] for c in cpus}
        for vm, i in runnable:
            options = allowed[vm.id][i]
            least = min(len(queue[c]) for c in options)
            choice = rng.choice([c for c in options
                                 if len(queue[c]) == least])
            queue[choice].append(vm)
        running = {c: rng.choice(q) for c, q in queue.items() if q}
        _account(running, domain_of, result, model)
    return result


def _account(running, domain_of, result, model):
    # Per VM: the domains it runs in; per domain: the memory VMs running.
    vm_domains, mem_in = {}, {}
    for c, vm in running.items():
        d = domain_of[c]
        vm_domains.setdefault(vm.id, set()).add(d)
        if vm.workload == 'memory':
            mem_in.setdefault(d, set()).add(vm.id)
    for c, vm in running.items():
        split = len(vm_domains[vm.id]) > 1
        if vm.workload == 'memory':
            others = len(mem_in[domain_of[c]]) - 1
            cpi = model.cpi_mem * (model.split_mem if split else 1.0)
            cpi *= 1 + (model.dirty_partial if split
                        else model.dirty_all) * others
        else:
            cpi = model.cpi_cpu * (1 + model.split_cpu if split else 1.0)
        result[vm.id].work += 1.0 / cpi
    for vm_id, doms in vm_domains.items():
        stats = result[vm_id]
        stats.running_slices += 1
        stats.all_share_slices += len(doms) == 1
        if len(doms) == 1:
            (d,) = doms
            stats.clean_slices += mem_in.get(d, ()) == {vm_id}


def new_rng(seed):
    """The simulator's random source (seeded: runs are reproducible)."""
    return random.Random(seed)


def geometric_mean(values: ty.Sequence[float]):
    """Geometric mean of positive values (1.0 for none)."""
    values = [v for v in values if v > 0]
    if not values:
        return 1.0
    return math.exp(sum(math.log(v) for v in values) / len(values))
