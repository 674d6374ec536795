"""All-share by estimated throughput on oversubscribed small hosts.

The contract's objective (fewest unplaced, then excess, then dirt) never
weighs CPU time-sharing: on an oversubscribed host, memory-bound VMs pinned
into a domain get their CPUs first and push the floating VMs onto the other
CPUs, so where (and whether) they are pinned decides who gets CPU time.
This module chooses, for each movable memory-bound VM, one whole domain or
(for a VM that floats now) floating, by the geometric mean of every VM's
estimated performance, over every choice (small hosts only).

The estimate (:func:`estimate`) models a scheduler that puts each runnable
vCPU on the least-loaded CPU it may use, pinned vCPUs first, and runs the
vCPUs of a CPU in turn; a vCPU's CPU share is one over its queue length.
Memory-bound VMs lose to cache contention as study 000 measured: a VM
running in two domains at once runs ``SPLIT_MEM`` times slower, and each
other memory-bound VM running in the same cache costs ``DIRTY_ALL``
(``DIRTY_PARTIAL`` when split). An I/O-bound vCPU is runnable
``IO_BUSY`` of the time. No I/O, no clock: pure.
"""

import itertools
import math

# Study 000 (doc/source/evaluation/cache-scheduling.rst).
SPLIT_MEM = 3.2
SPLIT_CPU = 0.03
DIRTY_ALL = 0.12
DIRTY_PARTIAL = 1.0
IO_BUSY = 0.3
#: Most choices enumerated ((domains + 1) ** VMs); above, not used.
MAX_CHOICES = 512
FLOAT = -1


def choices_count(n_domains, options):
    """How many plans :func:`best_choice` would enumerate."""
    return math.prod(len(o) for o in options) if options else 1


def _fill(base, k):
    """Queue lengths after ``k`` floating vCPUs join the shortest."""
    queues = list(base)
    for _ in range(k):
        i = queues.index(min(queues))
        queues[i] += 1
    return queues


def _shares(cpus, loads, k):
    """Per domain pinned share, floating share, floating spread."""
    base, owner = [], []
    for d, (c, load) in enumerate(zip(cpus, loads)):
        q, r = divmod(load, c)
        base.extend(q + (i < r) for i in range(c))
        owner.extend([d] * c)
    queues = _fill(base, k)
    pinned = [0.0] * len(cpus)
    spread = [0.0] * len(cpus)
    floating = 0.0
    for b, n, d in zip(base, queues, owner):
        if b:
            pinned[d] += b / n
        if n > b:
            floating += (n - b) / n
            spread[d] += n - b
    pinned = [p / load if load else 1.0 for p, load in zip(pinned, loads)]
    if not k:
        return pinned, 1.0, [1.0 / len(cpus)] * len(cpus)
    return pinned, floating / k, [s / k for s in spread]


def _mixed_shares(cpus, loads, work):
    """:func:`_shares` for a fractional floating load (interpolated)."""
    low = int(math.floor(work))
    t = work - low
    a = _shares(cpus, loads, low)
    if t < 1e-9:
        return a
    b = _shares(cpus, loads, low + 1)
    return ([(1 - t) * x + t * y for x, y in zip(a[0], b[0])],
            (1 - t) * a[1] + t * b[1],
            [(1 - t) * x + t * y for x, y in zip(a[2], b[2])])


def estimate(cpus, memory, others):
    """Mean log performance of every VM (higher is better).

    ``cpus``: CPUs per domain. ``memory``: ``(vcpus, domain)`` per
    memory-bound VM, domain ``FLOAT`` when it floats over every CPU.
    ``others``: ``(vcpus, busy)`` per other VM (all floating; ``busy``
    the share of time a vCPU is runnable).
    """
    loads = [0] * len(cpus)
    work = sum(v * busy for v, busy in others)
    for v, d in memory:
        if d == FLOAT:
            work += v
        else:
            loads[d] += v
    pinned, share, spread = _mixed_shares(cpus, loads, work)
    # Expected memory-bound VMs running in each domain at a time.
    running = [0.0] * len(cpus)
    for v, d in memory:
        if d == FLOAT:
            for e, f in enumerate(spread):
                running[e] += min(1.0, v * share) * f
        else:
            running[d] += min(1.0, v * pinned[d])
    total = 0.0
    for v, d in memory:
        if d != FLOAT:
            rival = running[d] - min(1.0, v * pinned[d])
            total += math.log(pinned[d] / (1 + DIRTY_ALL * rival))
            continue
        alone = sum(f ** v for f in spread)
        mine = min(1.0, v * share)
        rival = sum(f * (running[e] - mine * f)
                    for e, f in enumerate(spread))
        total += math.log(share * (
            alone / (1 + DIRTY_ALL * rival)
            + (1 - alone) / (SPLIT_MEM * (1 + DIRTY_PARTIAL * rival))))
    for v, busy in others:
        alone = sum(f ** v for f in spread)
        total += math.log(share * (alone + (1 - alone) / (1 + SPLIT_CPU)))
    return total / max(1, len(memory) + len(others))


def best_choice(cpus, free, fixed, movable, others):
    """The best domain (or ``FLOAT``) per movable memory-bound VM.

    ``free``: capacity left per domain; ``fixed``: ``(vcpus, domain)`` of
    the unmovable memory-bound VMs; ``movable``: ``(vcpus, options,
    current)`` per movable one, ``options`` the domains (and ``FLOAT``)
    it may take, ``current`` its domain now (``FLOAT`` when floating).
    Capacity holds for every plan considered. Ties (within 1e-9) go to
    the fewest floating VMs (the estimate is optimistic for them: a
    balancer splits them more than it assumes), then the fewest moves,
    then the first plan in option order. Returns
    None when no plan respects capacity.
    """
    best, best_key = None, None
    for combo in itertools.product(*[o for _, o, _ in movable]):
        used = [0] * len(cpus)
        for (v, _, _), d in zip(movable, combo):
            if d != FLOAT:
                used[d] += v
        if any(u > f for u, f in zip(used, free)):
            continue
        memory = list(fixed) + [(v, d) for (v, _, _), d in
                                zip(movable, combo)]
        score = estimate(cpus, memory, others)
        rest = (combo.count(FLOAT),
                sum(d != cur for (_, _, cur), d in zip(movable, combo)))
        if (best_key is None or score > best_key[0] + 1e-9
                or (abs(score - best_key[0]) <= 1e-9
                    and rest < best_key[1])):
            best, best_key = list(combo), (score, rest)
    return best


def _where(plan_input, vm):
    """The one domain ``vm``'s vCPUs all lie in; FLOAT on every CPU; None.

    None for any other pinning (this objective does not model it).
    """
    everything = plan_input.all_cpus
    pinning = plan_input.pinning_now(vm)
    if all(cpus == everything for cpus in pinning.values()):
        return FLOAT
    index = plan_input.domain_index
    found = {index[c] for cpus in pinning.values() for c in cpus}
    return found.pop() if len(found) == 1 else None


def placements(plan_input, inst, movable):
    """Instance placements chosen by throughput, or None if not modelled.

    Not modelled (the caller plans by the contract): a VM that is not a
    movable memory-bound one pinned anywhere but on every CPU or inside
    one domain (a non-memory-bound VM anywhere but floating), more than
    ``MAX_CHOICES`` plans, or no plan within capacity.
    """
    cpus = [len(d.cpus) for d in plan_input.domains]
    fixed, others = [], []
    for vm in plan_input.vms:
        where = _where(plan_input, vm)
        if vm.memory_bound and not vm.movable and where is not None:
            fixed.append((vm.vcpus, where))
        elif not vm.memory_bound and where == FLOAT:
            others.append((vm.vcpus, IO_BUSY if vm.workload == 'io'
                           else 1.0))
        elif not vm.memory_bound or not vm.movable:
            return None
    wanted = []
    for vm in movable:
        now = _where(plan_input, vm)
        if now is None:
            return None
        options = [d for d in range(len(cpus)) if inst.free[d] >= vm.vcpus]
        if now == FLOAT:
            options.insert(0, FLOAT)
        elif now in options:
            options.remove(now)
            options.insert(0, now)
        wanted.append((vm.vcpus, options, now))
    if choices_count(len(cpus), [o for _, o, _ in wanted]) > MAX_CHOICES:
        return None
    combo = best_choice(cpus, inst.free, fixed, wanted, others)
    if combo is None:
        return None
    result = []
    for vm, d in zip(movable, combo):
        if d == FLOAT:
            result.append(None)
            continue
        counts = [0] * len(cpus)
        counts[d] = vm.vcpus
        result.append(tuple(counts))
    return result
