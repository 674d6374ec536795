"""A class-only pinning for large hosts: a pattern ILP (a heuristic).

The class-only optimum (:func:`.yardstick.class_optimum`) is the pinning
- each memory-bound VM on one whole domain or floating, within the
domains' capacity - with the highest mean log score of the occupancy
yardstick (:mod:`.occupancy`) over draws of the VMs' hidden parameters.
It is found exhaustively on small hosts only. The yardstick couples every
domain: the host's fair-share level, the floating vCPUs' spread over the
domains' free CPU time, the host's memory bandwidth, every floating VM's
misses in every domain; and its bandwidth fixed point is three rounds of
alternation, not a closed form. No exact linearisation of it exists here.

What this module does instead:

* **A separable surrogate.** Freeze the host-wide quantities at those of
  a reference pinning (per draw: the fair level ``L``, the floating
  spread ``p_d = free_d / F``, the host's latency factor, each floating
  VM's time per unit of work). Then a domain's share of the log score
  depends only on its **pattern** (memory-bound VMs per vCPU size): its
  pinned VMs' log performance (CPU share ``min(1, cpus / n, L)``, cache
  by frequency of access with the floating VMs' share in it, its link's
  saturation) plus, to first order, what it costs the floating VMs
  (their misses in it over their time per unit of work). A floating
  memory-bound VM of each size gets its own value the same way.
  Each pattern's value is the mean over draws (sampling the yardstick's
  own draws).
* **An ILP over patterns** (scipy's ``milp``, HiGHS), like
  :mod:`.clean_bound`: how many domains of each CPU count hold each
  pattern, one per domain, within capacity and the VMs there are; the
  rest float. Its optimum is exact **for the surrogate**.
* **Iteration.** The ILP's pinning becomes the next reference; it stops
  when a pinning repeats. Every pinning it visits is a candidate
  (:func:`candidates`).
* **The yardstick itself, decomposed.** :func:`environment` computes the
  yardstick's score of a pinning by domain, with its own steps (its sum
  equals :func:`.occupancy.evaluate`'s to rounding; the unit tests check
  it) and about twice as fast on large hosts; :func:`value` is the
  class-only objective by it, and :func:`improve` hill-climbs the best
  candidate on that exact objective (moves of one VM, swaps of two VMs
  or of two domains' contents) within an evaluation budget.

So the result is a **heuristic**: a feasible class-only pinning, hence a
lower bound on the class-only optimum's expected score (up to sampling),
never an upper bound. A planner measured against it is measured against
the best pinning found, and a ratio below 1 proves a gap only in that
direction. How close it comes to the exhaustive optimum on small hosts is
in doc/source/evaluation/planner.rst ("Class-only optimum on large hosts
(ILP)").
"""

import dataclasses
import itertools
import math

import numpy
from scipy import optimize

from nova_cacheaware_evaluation.sim import occupancy


def host_level(pinned, cpus, floating):
    """The fair share level ``L`` of the host's floating vCPUs.

    ``pinned``: memory-bound vCPUs pinned in each domain (each runnable
    all the time); ``cpus``: each domain's CPUs; ``floating``: each
    floating vCPU's demand. A pinned vCPU gets ``min(1, cpus / n, L)``,
    a floating one ``min(demand, L)``: max-min fairness over the domains
    and the host (:mod:`.fairshare`). 1.0 when every demand fits.
    """
    total = sum(cpus)

    def used(level):
        return (sum(min(n, c, n * level) for n, c in zip(pinned, cpus))
                + sum(min(b, level) for b in floating))
    if used(1.0) <= total:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if used(mid) > total:
            hi = mid
        else:
            lo = mid
    return lo


def patterns(counts, capacity):
    """Every content of one domain: memory-bound VMs per size.

    ``counts``: ``{vCPUs: memory-bound VMs}``; a pattern is a tuple of
    counts in ``sorted(counts)`` order, at most ``capacity`` vCPUs and at
    most the VMs there are, the empty one included.
    """
    sizes = sorted(counts)
    ranges = [range(min(counts[k], int(capacity // k)) + 1) for k in sizes]
    return [p for p in itertools.product(*ranges)
            if sum(n * k for n, k in zip(p, sizes)) <= capacity]


@dataclasses.dataclass
class Env:
    """Host-wide quantities of one draw under a reference pinning.

    ``floating``: ``(vCPUs, Workload, CPU time per vCPU, time per unit of
    work)`` of each floating VM; ``host``: the host memory's latency
    factor; ``spread_sq``: the sum of the floating spread's squares.
    """

    level: float
    free_total: float
    n_domains: int
    host: float
    floating: list
    spread_sq: float = 0.0

    def share(self, free):
        """A floating VM's share of its time in a domain with ``free``."""
        if self.free_total <= 1e-12:
            return 1.0 / self.n_domains
        return free / self.free_total


@dataclasses.dataclass
class State:
    """One domain under an :class:`Env` (see :func:`domain`)."""

    logs: float
    floats: list
    water: object
    link: float
    share: float
    alloc: float
    factors: list


def _occupy(cpus, pinned, env, params):
    """CPU and cache of one domain: what the bandwidth does not change.

    Returns ``(CPU time of a pinned vCPU, the floating VMs' share of time
    here, occupants' workloads (pinned first), their CPU time here, their
    miss factors, cache per unit of access rate of the occupants below
    their working set (None: none), indices of the floating VMs here)``.
    """
    n = sum(k for k, _w in pinned)
    alloc = min(1.0, cpus / n, env.level) if n else 0.0
    p = env.share(max(0.0, cpus - n * alloc))
    occ = [w for _k, w in pinned]
    times = [k * alloc for k, _w in pinned]
    here = []
    for i, (k, w, x, _u) in enumerate(env.floating):
        if k * x * p > 0:
            here.append(i)
            occ.append(w)
            times.append(k * x * p)
    rates = [t * max(w.stall, 0.01) for t, w in zip(times, occ)]
    cache = params.cache_mib_per_cpu * cpus
    shares = occupancy.foa_shares(cache, rates,
                                  [w.working_set_mib for w in occ])
    factors = [occupancy.miss_factor(w, s, params)
               for w, s in zip(occ, shares)]
    full = [s >= w.working_set_mib for s, w in zip(shares, occ)]
    open_rate = sum(r for r, f in zip(rates, full) if not f)
    water = ((cache - sum(s for s, f in zip(shares, full) if f))
             / open_rate if open_rate > 0 else None)
    return alloc, p, occ, times, factors, water, here


def domain(cpus, pinned, env, params):
    """One domain of ``cpus`` CPUs holding ``pinned`` under ``env``.

    ``pinned``: ``(vCPUs, Workload)`` per pinned VM. The :class:`State`
    has the pinned VMs' summed log performance, per floating VM present
    ``(index, its term in the VM's time per unit of work, CPU time here,
    miss factor)``, the cache per unit of access rate of the occupants
    below their working set (None: none), the link's latency factor, the
    floating VMs' share of time here, a pinned vCPU's CPU time and the
    pinned VMs' miss factors. The link is solved with every floating
    VM's time per unit of work fixed at the reference's (one domain among
    many hardly changes it).
    """
    alloc, p, occ, times, factors, water, here = _occupy(cpus, pinned, env,
                                                         params)
    n_pin = len(pinned)
    terms = []
    for j, w in enumerate(occ):
        a = times[j] * factors[j] * w.bandwidth
        if a <= 0:
            continue
        if j < n_pin:
            terms.append((a, 1 - w.stall, w.stall * factors[j] * env.host))
        else:
            terms.append((a, env.floating[here[j - n_pin]][3], 0.0))
    link = occupancy.solve_scale(terms, params.domain_bw_per_cpu * cpus)
    logs = sum(math.log(alloc) - math.log(
        (1 - w.stall) + w.stall * f * link * env.host)
        for w, f in zip(occ[:n_pin], factors[:n_pin]))
    floats = [(i, w.stall * p * f * link * env.host, t, f)
              for i, w, t, f in zip(here, occ[n_pin:], times[n_pin:],
                                    factors[n_pin:])]
    return State(logs, floats, water, link, p, alloc, factors[:n_pin])


def _cross(k, w, spread_sq, params):
    """A floating VM's cross-domain term in its time per unit of work."""
    if k < 2:
        return 0.0
    return (w.stall * params.kappa * w.write_shared * (1 - spread_sq)
            / params.miss_floor)


def environment(domains, vms, work, pinned_at, params, rounds=3,
                with_states=True):
    """:class:`Env` of one draw under ``pinned_at`` ({vm id: domain}).

    The yardstick (:func:`.occupancy.evaluate`) decomposed by domain, with
    its own steps: max-min fair CPU time (:func:`host_level`), the
    floating time spread over the domains' free CPU time, cache by
    frequency of access, then ``rounds`` alternations of the links and
    the host's memory in its order. Returns ``(env, summed log
    performance of every VM, [State per domain] or None without
    ``with_states``)``; the sum is the yardstick's (checked by the unit
    tests).
    """
    cpus = [len(d) for d in domains]
    members = [[] for _ in domains]
    floating = []
    for vm in vms:
        if vm.id in pinned_at:
            members[pinned_at[vm.id]].append((vm.vcpus, work[vm.id]))
        else:
            floating.append(vm)
    level = host_level([sum(k for k, _ in m) for m in members], cpus,
                       [work[vm.id].busy for vm in floating
                        for _ in range(vm.vcpus)])
    frees = []
    for c, m in zip(cpus, members):
        n = sum(k for k, _ in m)
        frees.append(max(0.0, c - n * min(1.0, c / n, level)) if n else c)
    env = Env(level, sum(frees), len(domains), 1.0,
              [(vm.vcpus, work[vm.id], min(work[vm.id].busy, level), 1.0)
               for vm in floating])
    env.spread_sq = sum(env.share(f) ** 2 for f in frees)
    # Per VM: (vCPUs, workload, {domain: (time, miss factor)}, cross).
    records = []
    parts = [{} for _ in env.floating]
    for d, (c, m) in enumerate(zip(cpus, members)):
        alloc, _p, _occ, times, factors, _wl, here = _occupy(c, m, env,
                                                             params)
        for j, (k, w) in enumerate(m):
            records.append((k, w, {d: (times[j], factors[j])}, 0.0))
        for j, i in enumerate(here):
            parts[i][d] = (times[len(m) + j], factors[len(m) + j])
    for (k, w, _x, _u), part in zip(env.floating, parts):
        total = sum(t for t, _f in part.values())
        spread = sum((t / total) ** 2 for t, _f in part.values())
        records.append((k, w, part, w.write_shared * (1 - spread)
                        if k > 1 and total else 0.0))
    link = [1.0] * len(domains)
    host = 1.0
    for _ in range(rounds):
        for d, c in enumerate(cpus):
            lam = [x * host for x in link]
            lam[d] = host
            terms = []
            for _k, w, part, cross in records:
                if d not in part:
                    continue
                total = sum(t for t, _f in part.values())
                a = part[d][0] * part[d][1] * w.bandwidth
                if not total or not a:
                    continue
                fixed = sum(t * f * lam[e] for e, (t, f) in part.items()
                            if e != d) / total
                terms.append((a, (1 - w.stall) + w.stall * fixed
                              + w.stall * params.kappa * cross
                              / params.miss_floor,
                              w.stall * part[d][0] * part[d][1] * lam[d]
                              / total))
            link[d] = occupancy.solve_scale(
                terms, params.domain_bw_per_cpu * c)
        terms = []
        for _k, w, part, cross in records:
            total = sum(t for t, _f in part.values())
            a = sum(t * f * w.bandwidth for t, f in part.values())
            if not total or not a:
                continue
            terms.append((a, (1 - w.stall) + w.stall * params.kappa * cross
                          / params.miss_floor,
                          w.stall * sum(t * f * link[e] for e, (t, f)
                                        in part.items()) / total))
        host = occupancy.solve_scale(terms, params.host_bw_per_cpu * sum(cpus))
    env.host = host
    logs = 0.0
    units = []
    for k, w, part, cross in records:
        total = sum(t for t, _f in part.values())
        unit = ((1 - w.stall) + w.stall * sum(
            t * f * link[e] * host for e, (t, f) in part.items()) / total
            + w.stall * params.kappa * cross / params.miss_floor)
        units.append(unit)
        logs += math.log(total / unit / (w.busy * k))
    n_pinned = len(records) - len(env.floating)
    env.floating = [(k, w, x, u) for (k, w, x, _u), u
                    in zip(env.floating, units[n_pinned:])]
    if not with_states:
        return env, logs, None
    states = [domain(c, m, env, params) for c, m in zip(cpus, members)]
    return env, logs, states


def value(domains, vms, works, pinned_at, params):
    """Mean over ``works`` of the yardstick's log score of ``pinned_at``.

    The objective of :func:`.yardstick.class_optimum` (the log of the
    geometric mean of every VM's performance), by :func:`environment`.
    """
    return sum(environment(domains, vms, work, pinned_at, params,
                           with_states=False)[1]
               for work in works) / len(works) / len(vms)


def improve(domains, vms, works, pinned_at, capacity, params, budget=200):
    """Hill-climb ``pinned_at`` by moving or swapping memory-bound VMs.

    A move takes one memory-bound VM of some size from a domain (or from
    floating) to another domain within ``capacity(cpus)`` memory-bound
    vCPUs, or to floating; a swap exchanges two VMs of different sizes
    or places, or the contents of two domains of different CPU counts.
    Domains of the same CPU count and content are alike, so
    one move per kind of VM and target is tried. Moves are
    scored by :func:`value` on ``works``; the first that improves is
    taken. Stops at a local optimum or after ``budget`` evaluations.
    Returns ``(pinning, its value, evaluations)``.
    """
    memory = [vm for vm in vms if vm.workload == 'memory']
    best = dict(pinned_at)
    best_value = value(domains, vms, works, best, params)
    spent = 1
    improved = True
    while improved and spent < budget:
        improved = False
        for move in _moves(domains, memory, best, capacity):
            trial = dict(best)
            for vm_id, target in move:
                if target is None:
                    trial.pop(vm_id, None)
                else:
                    trial[vm_id] = target
            got = value(domains, vms, works, trial, params)
            spent += 1
            if got > best_value + 1e-12:
                best, best_value, improved = trial, got, True
                break
            if spent >= budget:
                break
    return best, best_value, spent


def _moves(domains, memory, pinned_at, capacity):
    """Moves as lists of ``(vm id, target domain or None)``: one per kind.

    Single moves first, then swaps of two VMs, then of two domains'
    contents.
    """
    content = [0] * len(domains)
    sizes = [[] for _ in domains]
    for vm in memory:
        if vm.id in pinned_at:
            content[pinned_at[vm.id]] += vm.vcpus
            sizes[pinned_at[vm.id]].append(vm.vcpus)
    kind = [(len(cpus), tuple(sorted(s))) for cpus, s in zip(domains, sizes)]
    # Two of each kind: a move between two alike domains changes both.
    alike = {}
    for d, k in enumerate(kind):
        alike.setdefault(k, [])
        if len(alike[k]) < 2:
            alike[k].append(d)
    targets = sorted(d for ds in alike.values() for d in ds) + [None]
    reps, seen = [], set()
    for vm in memory:
        source = pinned_at.get(vm.id)
        key = (vm.vcpus, None if source is None else kind[source],
               source if source in targets else -1)
        if key not in seen:
            seen.add(key)
            reps.append((vm, source))

    def fits(d, extra):
        return d is None or (content[d] + extra
                             <= capacity(len(domains[d])))
    for vm, source in reps:
        for d in targets:
            if d != source and fits(d, vm.vcpus):
                yield [(vm.id, d)]
    for n, (a, sa) in enumerate(reps):
        for b, sb in reps[n + 1:]:
            if sa == sb or (a.vcpus == b.vcpus and (
                    sa is None or sb is None or kind[sa] == kind[sb])):
                continue
            if fits(sa, b.vcpus - a.vcpus) and fits(sb, a.vcpus - b.vcpus):
                yield [(a.id, sb), (b.id, sa)]
    domain_reps = [d for d in targets if d is not None]
    for n, a in enumerate(domain_reps):
        for b in domain_reps[n + 1:]:
            if (len(domains[a]) == len(domains[b]) or content[a] > capacity(
                    len(domains[b])) or content[b] > capacity(
                    len(domains[a]))):
                continue
            yield ([(vm.id, b) for vm in memory if pinned_at.get(vm.id) == a]
                   + [(vm.id, a) for vm in memory
                      if pinned_at.get(vm.id) == b])


def _floating_value(k, w, env, states, params):
    """Log performance of a memory-bound VM if it floats under ``env``."""
    x = min(w.busy, env.level)
    unit = (1 - w.stall) + _cross(k, w, env.spread_sq, params)
    for st in states:
        t = k * x * st.share
        if t <= 0:
            continue
        # Its share at the domain's water level: what a newcomer with a
        # small rate gets by frequency of access.
        share = (w.working_set_mib if st.water is None
                 else min(w.working_set_mib,
                          t * max(w.stall, 0.01) * st.water))
        unit += (w.stall * st.share * occupancy.miss_factor(w, share, params)
                 * st.link * env.host)
    return math.log(x / w.busy) - math.log(unit)


def pattern_values(domains, vms, works, pinned_at, capacity, params):
    """Surrogate values under the reference pinning ``pinned_at``.

    Returns ``(sizes, {cpus: {pattern: value}}, {size: value of one
    floating memory-bound VM})``, each the mean over the draws ``works``.
    A pattern's value is its pinned VMs' log performance plus, to first
    order, its effect on the floating VMs' log performance; its pinned
    VMs' parameters are those of the draw's memory-bound VMs of each size,
    taken in turn.
    """
    memory = [vm for vm in vms if vm.workload == 'memory']
    counts = {}
    for vm in memory:
        counts[vm.vcpus] = counts.get(vm.vcpus, 0) + 1
    sizes = sorted(counts)
    by_size = {k: [vm for vm in memory if vm.vcpus == k] for k in sizes}
    groups = sorted({len(d) for d in domains})
    pats = {c: patterns(counts, capacity(c)) for c in groups}
    values = {c: {p: 0.0 for p in pats[c]} for c in groups}
    floats = {k: 0.0 for k in sizes}
    for j, work in enumerate(works):
        env, _total, states = environment(domains, vms, work, pinned_at,
                                          params)
        for k in sizes:
            floats[k] += sum(_floating_value(k, work[vm.id], env, states,
                                             params)
                             for vm in by_size[k]) / len(by_size[k])
        for c in groups:
            for p in pats[c]:
                pinned = []
                for k, n in zip(sizes, p):
                    ring = by_size[k]
                    pinned += [(k, work[ring[(j + i) % len(ring)].id])
                               for i in range(n)]
                st = domain(c, pinned, env, params)
                got = st.logs
                for i, term, _t, _f in st.floats:
                    kv, w, _x, u = env.floating[i]
                    got -= term / u
                    if kv > 1:
                        got += (w.stall * params.kappa * w.write_shared
                                * st.share ** 2 / params.miss_floor / u)
                values[c][p] += got
    n = len(works)
    return (sizes, {c: {p: v / n for p, v in vals.items()}
                    for c, vals in values.items()},
            {k: v / n for k, v in floats.items()})


def solve(domains, sizes, counts, values, floats, time_limit=120.0):
    """The surrogate's optimum: ``{cpus: [pattern per domain]}``.

    ``counts``: memory-bound VMs per size; ``values``/``floats`` as
    :func:`pattern_values` returns them. Maximises the sum of the domains'
    pattern values plus the floating VMs' values, one pattern per domain,
    each VM in at most one domain (HiGHS, at most ``time_limit`` s).
    """
    groups = {}
    for d in domains:
        groups[len(d)] = groups.get(len(d), 0) + 1
    cols = [(c, p) for c in sorted(groups) for p in sorted(values[c])]
    cost = numpy.array([-(values[c][p] - sum(
        n * floats[k] for n, k in zip(p, sizes))) for c, p in cols])
    rows, low, high = [], [], []
    for c in sorted(groups):
        rows.append([1.0 if cc == c else 0.0 for cc, _p in cols])
        low.append(groups[c])
        high.append(groups[c])
    for t, k in enumerate(sizes):
        rows.append([float(p[t]) for _c, p in cols])
        low.append(0)
        high.append(counts[k])
    res = optimize.milp(
        cost, integrality=numpy.ones(len(cols)),
        bounds=optimize.Bounds(0, [groups[c] for c, _p in cols]),
        constraints=optimize.LinearConstraint(numpy.array(rows), low, high),
        options={'time_limit': time_limit})
    if res.x is None:
        raise ValueError('pattern ILP: %s' % res.message)
    out = {c: [] for c in groups}
    for (c, p), n in zip(cols, res.x):
        out[c] += [p] * int(round(n))
    return out


def pinning(domains, vms, layout, sizes):
    """``{vm id: domain}`` realising ``layout`` (as :func:`solve` gives).

    Memory-bound VMs of each size go in ``vms`` order to the domains in
    order (which VM of a size goes where does not change the expected
    score: their draws are alike); the rest float.
    """
    left = {k: [vm.id for vm in vms
                if vm.workload == 'memory' and vm.vcpus == k]
            for k in sizes}
    taken = {c: 0 for c in layout}
    out = {}
    for d, cpus in enumerate(domains):
        p = layout[len(cpus)][taken[len(cpus)]]
        taken[len(cpus)] += 1
        for k, n in zip(sizes, p):
            for _ in range(n):
                out[left[k].pop(0)] = d
    return out


def allowed(domains, vms, pinned_at):
    """The yardstick's ``allowed`` for ``pinned_at`` (others float)."""
    everything = tuple(sorted(c for cpus in domains for c in cpus))
    return {vm.id: [tuple(domains[pinned_at[vm.id]])
                    if vm.id in pinned_at else everything] * vm.vcpus
            for vm in vms}


def candidates(domains, vms, works, capacity, params, start=None,
               rounds=6, time_limit=120.0):
    """Every pinning the iterated pattern ILP visits, in order.

    ``capacity(cpus)``: memory-bound vCPUs a domain of ``cpus`` CPUs may
    hold; ``start``: the first reference pinning ({vm id: domain}; default
    every VM floating). Stops when a pinning repeats or after ``rounds``.
    """
    counts = {}
    for vm in vms:
        if vm.workload == 'memory':
            counts[vm.vcpus] = counts.get(vm.vcpus, 0) + 1
    if not counts:
        return [{}]
    ref = dict(start or {})
    seen = []
    for _ in range(rounds):
        sizes, values, floats = pattern_values(domains, vms, works, ref,
                                               capacity, params)
        layout = solve(domains, sizes, counts, values, floats, time_limit)
        ref = pinning(domains, vms, layout, sizes)
        if ref in seen:
            break
        seen.append(ref)
    return seen
