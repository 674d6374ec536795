"""An independent yardstick: cache occupancy and memory bandwidth.

The cache simulator (:mod:`.contention`) and the
planner's ``throughput`` estimate (:mod:`nova_cacheaware.policy.
allshare_throughput`) share one model: study 000's split (3.2x) and Dirty
(+12 % per co-runner) costs and a scheduler that serves pinned vCPUs
first. This module shares none of it, so that the planner can be judged
by a model it was not built on:

* **CPU time**: the max-min fair share of an ideal fair scheduler within
  each vCPU's affinity (:mod:`.fairshare`); a floating
  vCPU's time goes to each domain in proportion to the CPU time that the
  vCPUs confined there leave free.
* **Cache occupancy**: each VM has a working set ``W`` and a power-law
  miss-ratio curve (miss ratio ``m_W * (s / W) ** -alpha`` in a share
  ``s < W``; Hartstein et al., "Cache miss behavior: is it sqrt(2)?", CF
  2006: ``alpha`` 0.3-0.7). Co-runners share a domain's cache in
  proportion to their access rates, none holding more than its working set
  (the frequency-of-access model of Chandra, Guo, Kim, Solihin,
  "Predicting inter-thread cache contention on a chip multi-processor
  architecture", HPCA 2005). A VM's rate in a domain is its CPU time there
  times its access intensity; a VM running in several domains needs its
  working set in each.
* **Split VMs**: a VM whose vCPUs run in several domains at once finds a
  share ``write_shared * (1 - sum p_d ** 2)`` of its accesses in another
  domain's cache (``p_d``: its CPU time in domain ``d``), each costing the
  cross-domain transfer instead of a hit.
* **Memory bandwidth**: each domain's link and the host's memory have a
  capacity; when the misses demand more, every miss in the domain (host)
  takes longer until the demand fits (a saturation cap, solved as a fixed
  point).

A vCPU's time per unit of work is ``(1 - stall) + stall * (misses /
misses at W) * latency factor + cross-domain term``, ``stall`` the share
of its time waiting for memory when its whole working set is cached and
memory is idle. Performance = work done / the work of every vCPU on a CPU
of its own with its whole working set cached (1.0). Every parameter and
its source: :data:`SOURCES` and doc/source/evaluation/planner.rst.
"""

import dataclasses
import math

from nova_cacheaware_evaluation.sim import fairshare

#: Where each parameter of :class:`Params` comes from.
SOURCES = {
    'cache_mib_per_cpu': 'AMD Zen 3 CCX: 32 MiB L3 per 8 cores (this '
                         'machine, EPYC family 25: one 32 MiB L3, sysfs)',
    'miss_ns': 'this machine\'s contention probe: C chase at 64 MiB alone, '
               'median 174 ns per line (benchmarks/results/'
               'contention_probe.json)',
    'hit_ns': 'AnandTech, Zen 3/Zen 4 reviews (core-to-core latency): '
              '15-19 ns inside one L3; the probe\'s fastest 4 MiB chase '
              'samples 16-37 ns',
    'cross_ns': 'AnandTech, Zen 4 review (core-to-core latency): up to '
                '79.5 ns between cores of different CCDs',
    'domain_bw_per_cpu': 'AMD Zen 3 CCD link 32 B/cycle at 1.6 GHz FCLK = '
                         '51.2 GB/s per 8 cores, over one core\'s stream '
                         'bandwidth measured by the probe (64 B per '
                         '2.27 ns = 28.2 GB/s): 0.227 cores per CPU',
    'host_bw_per_cpu': 'EPYC 7003: 8 channels DDR4-3200 = 204.8 GB/s per '
                       '64 cores, over 28.2 GB/s: 0.113 cores per CPU',
    'miss_floor': 'assumption: 5 % of accesses miss with the whole '
                  'working set cached (compulsory misses)',
}


@dataclasses.dataclass(frozen=True)
class Params:
    """Host parameters of the yardstick (see :data:`SOURCES`)."""

    cache_mib_per_cpu: float = 4.0
    miss_ns: float = 174.0
    hit_ns: float = 20.0
    cross_ns: float = 80.0
    domain_bw_per_cpu: float = 0.227
    host_bw_per_cpu: float = 0.113
    miss_floor: float = 0.05

    @property
    def kappa(self):
        """A cross-domain transfer's extra cost, in misses."""
        return (self.cross_ns - self.hit_ns) / self.miss_ns


@dataclasses.dataclass(frozen=True)
class Workload:
    """What the yardstick knows of a VM (the planner knows its class).

    ``stall``: share of time waiting for memory with the whole working
    set cached; ``bandwidth``: memory bandwidth per vCPU then, in cores'
    worth of streaming (1.0 = one core streaming); ``busy``: share of
    time a vCPU is runnable.
    """

    working_set_mib: float
    alpha: float = 0.5
    stall: float = 0.0
    write_shared: float = 0.0
    bandwidth: float = 0.0
    busy: float = 1.0


def miss_factor(work, share, params):
    """Misses in a cache share ``share`` over misses with ``W`` cached."""
    if share >= work.working_set_mib:
        return 1.0
    ratio = max(share, 1e-9) / work.working_set_mib
    return min(1.0 / params.miss_floor, ratio ** -work.alpha)


def foa_shares(capacity, rates, sets):
    """Cache shares in proportion to access rates, capped at working sets.

    ``rates``/``sets``: access rate and working set per occupant. The
    surplus of a capped occupant goes to the others (water-filling).
    """
    shares = [0.0] * len(rates)
    open_ = [i for i, r in enumerate(rates) if r > 0]
    left = capacity
    while open_:
        total = sum(rates[i] for i in open_)
        capped = [i for i in open_ if left * rates[i] / total >= sets[i]]
        if not capped:
            for i in open_:
                shares[i] = left * rates[i] / total
            break
        for i in capped:
            shares[i] = sets[i]
            left -= sets[i]
        open_ = [i for i in open_ if i not in capped]
    return shares


def _domain_time(domains, vcpus, alloc):
    """CPU time per domain of each vCPU: ``[{domain: time}]``.

    A vCPU confined to one domain runs there; one that may run in several
    spreads its time over them in proportion to the CPU time the confined
    vCPUs leave free there (a balancer fills idle CPUs), evenly when
    none is free.
    """
    cpu_domain = {c: d for d, cpus in enumerate(domains) for c in cpus}
    homes = [sorted({cpu_domain[c] for c in aff}) for aff, _ in vcpus]
    confined = [0.0] * len(domains)
    for home, x in zip(homes, alloc):
        if len(home) == 1:
            confined[home[0]] += x
    free = [max(0.0, len(cpus) - u) for cpus, u in zip(domains, confined)]
    out = []
    for (aff, _), home, x in zip(vcpus, homes, alloc):
        weight = [free[d] * len(aff & set(domains[d])) / len(domains[d])
                  for d in home]
        total = sum(weight)
        if not total:
            weight, total = [1.0] * len(home), float(len(home))
        out.append({d: x * w / total for d, w in zip(home, weight)})
    return out


def _occupancy(domains, vms, work, time, params):
    """Per VM: time per domain, miss factor per domain, cross share."""
    n_dom = len(domains)
    per_vm = {}
    for vm in vms:
        per_vm[vm.id] = [0.0] * n_dom
    for (vm_id, _), t in time:
        for d, x in t.items():
            per_vm[vm_id][d] += x
    factors = {vm.id: [1.0] * n_dom for vm in vms}
    for d, cpus in enumerate(domains):
        here = [vm for vm in vms if per_vm[vm.id][d] > 0]
        rates = [per_vm[vm.id][d] * max(work[vm.id].stall, 0.01)
                 for vm in here]
        shares = foa_shares(params.cache_mib_per_cpu * len(cpus), rates,
                            [work[vm.id].working_set_mib for vm in here])
        for vm, s in zip(here, shares):
            factors[vm.id][d] = miss_factor(work[vm.id], s, params)
    cross = {}
    for vm in vms:
        total = sum(per_vm[vm.id])
        p = [x / total for x in per_vm[vm.id]] if total else [0.0] * n_dom
        cross[vm.id] = (work[vm.id].write_shared
                        * (1 - sum(x * x for x in p)) if vm.vcpus > 1
                        else 0.0)
    return per_vm, factors, cross


def _unit_time(work, factors, per_vm, cross, lam, params):
    """Time per unit of work of a VM (1.0 = ideal), latency ``lam``."""
    total = sum(per_vm)
    if not total:
        return 1.0
    misses = sum(x * f * lam[d] for d, (x, f) in enumerate(
        zip(per_vm, factors))) / total
    return ((1 - work.stall) + work.stall * misses
            + work.stall * params.kappa * cross / params.miss_floor)


def _terms(vms, work, state, lam, scaled, doms, params):
    """Per VM ``(a, b, c)``: its demand in ``doms`` is ``a / (b + c s)``.

    ``s`` multiplies the latency factors of the domains ``scaled`` (a
    VM's time per unit of work is linear in them).
    """
    per_vm, factors, cross = state
    out = []
    for vm in vms:
        w, x, f = work[vm.id], per_vm[vm.id], factors[vm.id]
        total = sum(x)
        a = sum(x[e] * f[e] * w.bandwidth for e in doms)
        if not total or not a:
            continue
        fixed = sum(x[e] * f[e] * lam[e] for e in range(len(x))
                    if e not in scaled) / total
        moving = sum(x[e] * f[e] * lam[e] for e in scaled) / total
        out.append((a, (1 - w.stall) + w.stall * fixed
                    + w.stall * params.kappa * cross[vm.id]
                    / params.miss_floor, w.stall * moving))
    return out


def _bandwidth_factors(domains, vms, work, state, params, rounds=3):
    """Miss latency factor per domain: every demand within capacity.

    Each link's demand and the host's fit their capacities (alternating
    fixed point: the links with the host's factor fixed, then the host's
    with the links fixed).
    """
    every = tuple(range(len(domains)))
    link = [1.0] * len(domains)
    host = 1.0
    host_cap = params.host_bw_per_cpu * sum(len(c) for c in domains)
    for _ in range(rounds):
        for d, cpus in enumerate(domains):
            lam = [x * host for x in link]
            lam[d] = host
            link[d] = solve_scale(
                _terms(vms, work, state, lam, (d,), (d,), params),
                params.domain_bw_per_cpu * len(cpus))
        host = solve_scale(
            _terms(vms, work, state, link, every, every, params), host_cap)
    return [x * host for x in link]


def solve_scale(terms, cap, iterations=50):
    """Least ``s >= 1`` with ``sum(a / (b + c s)) <= cap`` (bisection)."""
    def demand(s):
        return sum(a / (b + c * s) for a, b, c in terms)
    if demand(1.0) <= cap:
        return 1.0
    lo, hi = 1.0, 2.0
    while demand(hi) > cap:
        lo, hi = hi, hi * 2
        if hi > 1e9:
            return hi
    for _ in range(iterations):
        mid = (lo + hi) / 2
        if demand(mid) > cap:
            lo = mid
        else:
            hi = mid
    return hi


def evaluate(domains, vms, work, allowed, params=None):
    """Performance per VM (1.0 = ideal) of one pinning.

    ``domains``: CPU tuples; ``vms``: objects with ``id`` and ``vcpus``
    (:class:`~.contention.SimVM`); ``work``: {vm id:
    :class:`Workload`}; ``allowed``: {vm id: [CPU tuple per vCPU]}.
    """
    params = params or Params()
    vcpus, owner = [], []
    for vm in vms:
        for i in range(vm.vcpus):
            vcpus.append((frozenset(allowed[vm.id][i]), work[vm.id].busy))
            owner.append((vm.id, i))
    alloc = [float(x) for x in fairshare.max_min_fair(vcpus)]
    time = list(zip(owner, _domain_time(domains, vcpus, alloc)))
    state = _occupancy(domains, vms, work, time, params)
    lam = _bandwidth_factors(domains, vms, work, state, params)
    per_vm, factors, cross = state
    out = {}
    for vm in vms:
        t = _unit_time(work[vm.id], factors[vm.id], per_vm[vm.id],
                       cross[vm.id], lam, params)
        ideal = work[vm.id].busy * vm.vcpus
        out[vm.id] = sum(per_vm[vm.id]) / t / ideal
    return out


def geometric_mean(values):
    """Geometric mean of positive values."""
    return math.exp(sum(math.log(v) for v in values) / len(values))
