"""The quadratic ``balloon-plan`` round as it was, kept as a test reference.

:func:`study_plan` here is :func:`nova_cacheaware.policy.balloon.study_plan`
with its original water-filling (one pass over every open candidate per
candidate that fills up: O(n^2)). The property test checks the
O(n log n) version gives identical plans; ``benchmarks/balloon_plan_bench.py``
times both. :func:`request_from_dict` is the original input check, whose
duplicate-id search was quadratic too.
"""

import fractions
import math

from nova_cacheaware.policy import balloon

_F = fractions.Fraction


def share_capped(pool, weights, room):
    """Share ``pool`` by ``weights`` without exceeding anyone's ``room``.

    Water-filling: each pass shares what is left among the candidates that
    still have room, by their weights (equally when those weights are all
    zero); a candidate whose share exceeds its room takes the room and drops
    out, and the excess is shared again.  All numbers are Fractions.
    Returns ``(shares, leftover)``: leftover > 0 only when every candidate is
    full.
    """
    shares = {k: _F(0) for k in weights}
    open_ = {k for k in weights if room[k] > 0}
    while pool > 0 and open_:
        total = sum(weights[k] for k in open_)
        if total > 0:
            part = {k: pool * weights[k] / total for k in open_}
        else:
            part = {k: pool / len(open_) for k in open_}
        full = {k for k in open_ if part[k] >= room[k] - shares[k]}
        if not full:
            for k in open_:
                shares[k] += part[k]
            return shares, _F(0)
        # Fill the capped ones only, then share the rest again: the
        # uncapped ones' shares grow because the capped ones left.
        for k in full:
            pool -= room[k] - shares[k]
            shares[k] = room[k]
        open_ -= full
    return shares, pool


def request_from_dict(doc):
    """The original validation: a ``list.count`` per VM id (O(n^2)).

    Returns ``(params, vms, free_mib)``; raises :class:`InvalidInput` with
    one line naming the first problem.  Keys the contract does not name are
    ignored.
    """
    balloon.object_field(doc, 'input')
    if 'params' not in doc:
        balloon.bad_input('input', 'missing "params"')
    params = balloon.params_from_dict(doc['params'])
    free_mib = balloon.int_field(doc, 'free_mib', 'input', default=0)
    raw_vms = doc.get('vms')
    if not isinstance(raw_vms, list):
        balloon.bad_input('input', '"vms" must be a list')
    vms = [balloon.vm_from_dict(v, 'vms[%d]' % i)
           for i, v in enumerate(raw_vms)]
    ids = [v.id for v in vms]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        balloon.bad_input('input', 'duplicate VM id(s): %s' % ', '.join(dup))
    return params, vms, free_mib


def study_plan(params, vms, free_mib=0):
    """The original round (same steps as ``balloon.study_plan``)."""
    base = {}
    pool = _F(free_mib)
    for vm in vms:
        gift = balloon._gift(vm, params)
        base[vm.id] = vm.memory_mib - gift
        pool += gift
    room = {vm.id: vm.max_mib - base[vm.id] for vm in vms}
    by_memory = {vm.id: _F(vm.memory_mib) for vm in vms}
    receivers = [vm for vm in vms if vm.hit_ratio < params.threshold]
    if receivers:
        if params.mode == 'A':
            weights = {vm.id: _F(vm.hit_ratio) for vm in receivers}
        else:
            weights = {vm.id: 1 - _F(vm.hit_ratio) for vm in receivers}
        shares, pool = share_capped(pool, weights, room)
        others = {vm.id: by_memory[vm.id] for vm in vms
                  if vm.hit_ratio >= params.threshold}
        rest, pool = share_capped(pool, others, room)
        shares.update(rest)
    else:
        shares, pool = share_capped(pool, by_memory, room)
    decisions = {}
    allocated = 0
    for vm in vms:
        memory = math.floor(base[vm.id] + shares[vm.id])
        allocated += memory
        over = vm.hit_ratio >= params.threshold
        streak = vm.streak + 1 if over else 0
        decisions[vm.id] = balloon.VmDecision(
            memory_mib=memory, streak=streak,
            interval_s=balloon.next_interval(vm.hit_ratio, streak, params))
    total = sum(vm.memory_mib for vm in vms) + free_mib
    return balloon.BalloonPlan(vms=decisions,
                               unallocated_mib=total - allocated)
