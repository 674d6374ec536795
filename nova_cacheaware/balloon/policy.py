"""One round of the agent's memory balancer: policy plus safety guard.

Pure (no I/O, no CONF, no clock): the agent's ``balloon`` capability
(:mod:`.agent`) reads the domains and the guests' reports, builds the
round's :class:`~.model.VmInput` values (their sizes bounded first by
:func:`bounded_memory` and :func:`bounded_used`: the host's numbers win
over a guest's claims), calls :func:`decide_round` and applies the
:class:`~.model.RoundResult`. Everything that makes ballooning safe for a
VM is decided here, where it can be tested exhaustively. A round, in
steps:

1. **Refuse** duplicate VM ids
   (:class:`~nova_cacheaware.exception.InvalidInput`).
2. **Bounds** (:func:`low_bound`): a VM's memory stays in ``[low,
   flavor]``. ``flavor`` is its flavor RAM (the domain's ``<memory>``);
   ``low`` is the larger of its floor (``cacheaware:memory_min_mb`` or
   the configured floor) and what the guest uses plus ``margin_mib``,
   capped at ``flavor``. "What the guest uses" is the host's balloon
   statistics ``available - usable`` (MemTotal minus MemAvailable: memory
   the guest cannot give up without swapping or OOM-killing); without
   those statistics ``low`` is the VM's current memory: never shrunk.
3. **Players**: only VMs with an accepted, fresh guest report
   (:data:`~.model.OK` and its stats) take part in the policy. The memory
   held back beyond ``pool_mib`` (``sum(flavor - memory) - pool_mib``, at
   least 0) is handed to the policy as free memory to give back.
4. **Policy targets**: the chosen policy (:data:`~.model.POLICIES`:
   ``default`` is :mod:`.default_balancer`, ``study_a`` and ``study_b``
   are study 002's modes in :mod:`.study_balancer`) gives each player a
   target within ``[min(low, memory), max(flavor, memory)]`` and its
   state for the next round; an unknown policy is refused.
5. **When it reports next** (study 002's adaptive interval, only with
   ``report_interval_s`` gamma > 0): each player gets ``next_report_s``
   from :func:`next_report_s`: gamma below the threshold, 1.5 gamma over
   it, 0.5 gamma once over it three rounds in a row, within the
   operator's ``[min_report_s, max_report_s]``. With gamma 0 (the default)
   every VM reports every round.
6. **Targets of the others**: a silent guest (its agent does not answer)
   is restored towards its flavor RAM (we cannot see it, so we must not
   starve it; the most it wins is the memory Nova accounted to it
   anyway); a rejected or pending report keeps the VM where it is. Every
   target is then clamped to ``[low, flavor]``.
7. **Filling the pool** (:func:`reclaim_idle`): Nova boots every instance
   at its flavor RAM and no instance ever gets more, so no policy finds
   room to move memory into until something was held back. While the
   instances together are held back less than ``pool_mib``, a satisfied
   player (hit ratio at or over ``threshold``) whose target is its
   current size gives the memory its guest leaves free (MemFree beyond
   the default policy's ``pad_mib``), down to ``low``, until the pool is
   full.
8. **Guard** (:func:`guard`, rate and pool): growth is served first, each
   VM at most ``max_step_mib`` and the host at most ``budget_mib`` (what
   is left of the period's allowance) in all; shrinking then only as far
   as it pays for that growth or keeps ``sum(flavor - memory) <=
   pool_mib`` (or no more than before the round when that was larger).
9. **Outcome**: per VM its new memory, target, lower bound, policy state
   and ``next_report_s`` (:class:`~.model.VmOutcome`), with the memory
   held back after the round and the MiB moved.

Orderings and tie-breaks:

* growth (step 8): VMs below their lower bound first, then the largest
  request (target minus memory), then the smaller id;
* shrinking (step 8): the largest request first, then the smaller id;
* filling the pool (step 7): the largest idle offer first, then the
  smaller id; the last one served may give less than it offers;
* within a policy (step 4): the orders documented in
  :mod:`.default_balancer` and :mod:`.study_balancer`.
"""

import math

from nova_cacheaware.balloon import default_balancer
from nova_cacheaware.balloon import model
from nova_cacheaware.balloon import study_balancer
from nova_cacheaware import exception


def bounded_memory(flavor_mib, floor_mib, actual_mib, target_mib=None):
    """The size a round may assume for a VM, from a claim a guest controls.

    The balloon's ``actual`` is written by the guest's driver: a guest can
    claim 0 MiB (and look starved, so that others pay for its growth) or
    10x its flavor (and have the agent ask libvirt for impossible sizes
    every round). The host's own numbers win:

    * the last balloon target this agent set (``target_mib``), when there
      is one: a guest cannot move it by claiming another size;
    * otherwise (first sight: Nova booted the VM at its flavor RAM, or an
      earlier agent run ballooned it) the claim when it lies in
      ``[min(floor, flavor), flavor]``, else the flavor RAM.
    """
    if target_mib is not None:
        return max(0, min(flavor_mib, int(target_mib)))
    if (actual_mib is None or not math.isfinite(actual_mib)
            or not min(floor_mib, flavor_mib) <= actual_mib <= flavor_mib):
        return flavor_mib
    return int(actual_mib)


def bounded_used(used_mib, memory_mib):
    """Guest-reported use bounded to ``[0, memory_mib]``; None: unknown.

    A guest cannot use more than it has; claiming more would pin its lower
    bound at its flavor RAM and make it grow, paid by the others.
    """
    if used_mib is None or not math.isfinite(used_mib):
        return None
    return max(0.0, min(float(memory_mib), float(used_mib)))


def low_bound(vm, margin_mib):
    """The least memory ``vm`` may have: floor, use plus margin, <= flavor.

    Unknown use (no balloon statistics) means "never shrink": the bound is
    the VM's current memory.
    """
    if vm.used_mib is None:
        low = max(vm.floor_mib, vm.memory_mib)
    else:
        low = max(vm.floor_mib, math.ceil(vm.used_mib) + margin_mib)
    return min(vm.flavor_mib, low)


def next_report_s(params, hit_ratio, streak):
    """Study 002's reporting interval of a VM, in the operator's bounds.

    ``streak`` counts the rounds in a row the VM's hit ratio was at or over
    ``threshold``, this one included. None when ``report_interval_s`` is 0.
    """
    if params.report_interval_s <= 0:
        return None
    if not 0 < params.min_report_s <= params.max_report_s:
        raise exception.InvalidInput(
            reason='need 0 < min_report_s <= max_report_s')
    gamma = study_balancer.BalloonParams(
        threshold=params.threshold, alpha=params.alpha, beta=params.beta,
        mode='A', interval_s=params.report_interval_s)
    raw = study_balancer.next_interval(hit_ratio, streak, gamma)
    return min(params.max_report_s, max(params.min_report_s, raw))


def _report_times(params, players, states):
    """``{id: next_report_s}``; the streak goes into ``states``."""
    out = {}
    for vm in players:
        ratio = _hit_ratio(vm.stats)
        streak = (int(vm.state.get('report_streak', 0)) + 1
                  if ratio >= params.threshold else 0)
        state = states.setdefault(vm.id, dict(vm.state))
        state['report_streak'] = streak
        out[vm.id] = next_report_s(params, ratio, streak)
    return out


def _hit_ratio(stats):
    # A guest that read nothing missed nothing: it needs no more cache.
    return 1.0 if stats.hit_ratio is None else stats.hit_ratio


def _policy_targets(params, vms, lows, free_mib):
    """``({id: target}, {id: state})`` from the chosen policy."""
    if not vms:
        return {}, {}
    if params.policy == 'default':
        dparams = default_balancer.DefaultParams(threshold=params.threshold)
        views = []
        for vm in vms:
            s = vm.stats
            views.append(default_balancer.VmView(
                id=vm.id, memory_mib=vm.memory_mib,
                hit_ratio=_hit_ratio(s), cache_mib=s.cache_mib,
                free_mib=s.free_mib, used_mib=s.used_mib,
                min_mib=min(lows[vm.id], vm.memory_mib),
                max_mib=max(vm.flavor_mib, vm.memory_mib),
                fresh=True, probe=int(vm.state.get('probe', 0)),
                hold_mib=int(vm.state.get('hold_mib', 0)),
                hold_left=int(vm.state.get('hold_left', 0)),
                favoured=bool(vm.state.get('favoured', False))))
        plan = default_balancer.default_plan(dparams, views, free_mib)
        return ({k: d.memory_mib for k, d in plan.vms.items()},
                {k: {'probe': d.probe, 'hold_mib': d.hold_mib,
                     'hold_left': d.hold_left, 'favoured': d.favoured}
                 for k, d in plan.vms.items()})
    if params.policy in ('study_a', 'study_b'):
        sparams = study_balancer.BalloonParams(
            threshold=params.threshold, alpha=params.alpha,
            beta=params.beta, mode=params.policy[-1].upper(),
            interval_s=params.interval_s)
        plan = study_balancer.study_plan(sparams, [
            study_balancer.VmMemory(
                id=vm.id, memory_mib=vm.memory_mib,
                hit_ratio=_hit_ratio(vm.stats),
                streak=int(vm.state.get('streak', 0)),
                min_mib=min(lows[vm.id], vm.memory_mib),
                max_mib=max(vm.flavor_mib, vm.memory_mib))
            for vm in vms], free_mib)
        return ({k: d.memory_mib for k, d in plan.vms.items()},
                {k: {'streak': d.streak} for k, d in plan.vms.items()})
    raise exception.InvalidInput(
        reason='unknown balloon policy %r (known: %s)'
        % (params.policy, ', '.join(model.POLICIES)))


def guard(vms, targets, pool_mib, max_step_mib, budget_mib, lows=None):
    """Move each VM towards its target within the safety limits.

    ``vms`` are :class:`~.model.VmInput` (for ``memory_mib`` and
    ``flavor_mib``), ``targets`` ``{id: MiB}`` already inside each VM's
    bounds, ``lows`` their lower bounds (optional).  Growth is served
    first (VMs below their lower bound first, then the largest requests),
    each VM at most ``max_step_mib``, the host at most ``budget_mib`` in
    all; shrinking is then allowed only as far as it pays for that growth
    or keeps the memory held back within ``pool_mib``.  Returns
    ``{id: new MiB}``.
    """
    current = {vm.id: vm.memory_mib for vm in vms}
    held = sum(vm.flavor_mib - vm.memory_mib for vm in vms)
    budget = max(0, budget_mib)
    new = dict(current)
    lows = lows or {}

    def urgent(vm):
        return vm.memory_mib < lows.get(vm.id, 0)

    grows = sorted((vm for vm in vms if targets[vm.id] > vm.memory_mib),
                   key=lambda vm: (not urgent(vm),
                                   -(targets[vm.id] - vm.memory_mib), vm.id))
    grown = 0
    for vm in grows:
        step = min(targets[vm.id] - vm.memory_mib, max_step_mib, budget)
        if step > 0:
            new[vm.id] += step
            budget -= step
            grown += step
    allowance = grown + max(0, pool_mib - held)
    shrinks = sorted((vm for vm in vms if targets[vm.id] < vm.memory_mib),
                     key=lambda vm: (-(vm.memory_mib - targets[vm.id]),
                                     vm.id))
    for vm in shrinks:
        step = min(vm.memory_mib - targets[vm.id], max_step_mib, budget,
                   allowance)
        if step > 0:
            new[vm.id] -= step
            budget -= step
            allowance -= step
    return new


def reclaim_idle(params, vms, targets, lows):
    """Lower the targets of idle, satisfied VMs until the pool is full.

    ``targets`` (``{id: MiB}``, updated) are already within each VM's
    bounds. Only players (an accepted report) at or over ``threshold``
    whose target is their current size take part; each gives what its
    guest leaves free beyond ``pad_mib``, never below ``lows``, and all
    together no more than ``pool_mib`` minus what is held back already.
    Returns the MiB asked for.
    """
    room = params.pool_mib - sum(vm.flavor_mib - vm.memory_mib for vm in vms)
    pad = default_balancer.DefaultParams().pad_mib
    offers = []
    for vm in vms:
        if (vm.status != model.OK or vm.stats is None
                or _hit_ratio(vm.stats) < params.threshold
                or targets[vm.id] != vm.memory_mib):
            continue
        idle = max(0, int(vm.stats.free_mib) - pad)
        offers.append((min(idle, vm.memory_mib - lows[vm.id]), vm.id))
    asked = 0
    for idle, vm_id in sorted(offers, key=lambda o: (-o[0], o[1])):
        take = min(idle, room - asked)
        if take <= 0:
            break
        targets[vm_id] -= take
        asked += take
    return asked


def decide_round(params, vms, budget_mib):
    """One balancer round over the opted-in ``vms`` (``VmInput``).

    Returns a :class:`~.model.RoundResult`; nothing is modified.  See the
    module docstring for the steps.
    """
    ids = [vm.id for vm in vms]
    if len(set(ids)) != len(ids):
        raise exception.InvalidInput(reason='duplicate VM ids in a round')
    lows = {vm.id: low_bound(vm, params.margin_mib) for vm in vms}
    held = sum(vm.flavor_mib - vm.memory_mib for vm in vms)
    players = [vm for vm in vms
               if vm.status == model.OK and vm.stats is not None]
    free = max(0, held - params.pool_mib)
    wanted, states = _policy_targets(params, players, lows, free)
    report_in = (_report_times(params, players, states)
                 if params.report_interval_s > 0 else {})
    targets = {}
    for vm in vms:
        if vm.id in wanted:
            target = wanted[vm.id]
        elif vm.status == model.SILENT:
            target = vm.flavor_mib
        else:
            target = vm.memory_mib
        targets[vm.id] = max(lows[vm.id], min(vm.flavor_mib, target))
    reclaim_idle(params, vms, targets, lows)
    new = guard(vms, targets, params.pool_mib, params.max_step_mib,
                budget_mib, lows)
    outcomes = {}
    for vm in vms:
        outcomes[vm.id] = model.VmOutcome(
            memory_mib=new[vm.id], target_mib=targets[vm.id],
            low_mib=lows[vm.id],
            state=states.get(vm.id, dict(vm.state)),
            next_report_s=report_in.get(vm.id))
    return model.RoundResult(
        vms=outcomes,
        held_mib=sum(vm.flavor_mib - new[vm.id] for vm in vms),
        moved_mib=sum(abs(new[vm.id] - vm.memory_mib) for vm in vms))
