"""Transport feasibility for the exact All-share search: a tiny max-flow.

Given each VM's support (the domains it uses), find vCPU counts that put
at least one vCPU in every chosen domain and respect the free capacity.
"""


def _transport(demand, allowed, free):
    """Distribute ``demand[i]`` units of each VM over ``allowed[i]`` domains.

    Augmenting paths on the bipartite graph VM -> domain (capacity
    ``free[d]``). Returns ``(shipped, flows)`` where ``flows[i]`` maps
    domain -> units; the demand is met when ``shipped == sum(demand)``.
    """
    flows = [dict() for _ in demand]
    left = list(free)
    shipped = 0

    def augment(vm, seen):
        # Direct room first, then reroute another VM's unit (DFS).
        for d in allowed[vm]:
            if left[d] > 0:
                left[d] -= 1
                flows[vm][d] = flows[vm].get(d, 0) + 1
                return True
        for d in allowed[vm]:
            if d in seen:
                continue
            seen.add(d)
            for other, flow in enumerate(flows):
                if other != vm and flow.get(d, 0) > 0 and augment_from(
                        other, d, seen):
                    flows[vm][d] = flows[vm].get(d, 0) + 1
                    return True
        return False

    def augment_from(vm, giving_up, seen):
        # Move one unit of ``vm`` off domain ``giving_up`` to elsewhere.
        flows[vm][giving_up] -= 1
        if augment(vm, seen):
            return True
        flows[vm][giving_up] += 1
        return False

    for vm, units in enumerate(demand):
        # Bulk-fill direct room first; augment one unit at a time only for
        # what is left (large VMs would otherwise cost one search per vCPU).
        for d in allowed[vm]:
            take = min(units, left[d])
            if take:
                left[d] -= take
                flows[vm][d] = flows[vm].get(d, 0) + take
                units -= take
                shipped += take
        for _ in range(units):
            if not augment(vm, set()):
                break
            shipped += 1
    return shipped, flows


def _hall(demand, allowed, free):
    """Hall's condition: every group of VMs fits in the domains it may use.

    Necessary and sufficient for the transport to succeed; checking it
    first is much cheaper than a failing max-flow on large VMs.
    """
    n = len(demand)
    for mask in range(1, 1 << n):
        need, reach = 0, set()
        for i in range(n):
            if mask >> i & 1:
                need += demand[i]
                reach.update(allowed[i])
        if need > sum(free[d] for d in reach):
            return False
    return True


def realise(inst, supports, fixed):
    """Counts for VMs with given supports (each domain >= 1 vCPU).

    ``supports`` maps VM -> support; VMs in ``fixed`` take their current
    counts. Returns ``(ok, placements_by_vm)``.
    """
    left = list(inst.free)
    result = {}
    for vm in fixed:
        result[vm] = inst.current[vm]
        for d, n in enumerate(inst.current[vm]):
            left[d] -= n
    free_vms = [vm for vm in supports if vm not in fixed]
    for vm in free_vms:
        for d in supports[vm]:
            left[d] -= 1
    if min(left, default=0) < 0:
        return False, {}
    demand = [inst.sizes[vm] - len(supports[vm]) for vm in free_vms]
    if min(demand, default=0) < 0:
        return False, {}
    allowed = [sorted(supports[vm]) for vm in free_vms]
    if len(free_vms) <= 10 and not _hall(demand, allowed, left):
        return False, {}
    shipped, flows = _transport(demand, allowed, left)
    if shipped != sum(demand):
        return False, {}
    for vm, flow in zip(free_vms, flows):
        counts = [0] * inst.n_domains
        for d in supports[vm]:
            counts[d] = 1 + flow.get(d, 0)
        result[vm] = tuple(counts)
    return True, result
