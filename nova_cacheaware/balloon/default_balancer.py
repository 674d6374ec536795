"""Our default hit-ratio memory balancer: working-set estimates, bang-bang.

Why not study 002's rule: it moves beta of *every* VM's memory every round
(caches are dropped and refilled all the time) and shares the pool by hit
ratio, which says how well a VM does now, not how much it would gain.

The uniform page-cache model (doc/source/evaluation/balloon.rst) says more
(the evaluation also runs skewed, scanning and moving reads through a real
LRU cache, where it is only an approximation): with uniform reads over a
working set of W MiB and a cache of C MiB the hit ratio is min(1, C/W), so
a VM that reports hit ratio r < 1 with c MiB cached has W ~= c / r.  The
log-throughput a VM gets from memory is convex in C up to W and flat after
it, so the allocation that maximises the geometric mean of
throughput is "bang-bang": satisfy whole working sets, smallest first, give
the remainder to the next one, leave the rest at their floor (the oracle of
the simulator computes exactly that from the true W).  This policy does the
same with estimates, and finds the slack of satisfied VMs by probing:

1. A VM is *satisfied* when its hit ratio >= threshold.  Otherwise its need
   is ``used + W_est * (1 + margin) + pad`` (clamped to [min, max]); a VM
   that cached nothing has an unknown (infinite) W and the lowest priority,
   and so has a *hopeless* one, whose estimated hit ratio would stay below
   ``hopeless_ratio`` even at ``max_mib`` (a cyclic scan, or a ratio that
   is only the guest helper's non-file reads, looks like that; see
   doc/source/evaluation/balloon.rst for why).
2. Unsatisfied VMs are served smallest W_est first; the VM that was served
   last round keeps its place unless another's W_est is smaller by more
   than ``hysteresis`` (no flip-flop between similar VMs).  A VM whose guest
   still has free memory is warming its cache and is not given more.
3. The memory comes from (a) unassigned host memory, (b) memory satisfied
   VMs' guests leave free, (c) probing satisfied VMs on a fresh report: a
   fraction ``probe_step * 2**k`` (at most ``probe_max``) of what they have
   above their floor, k growing while they stay satisfied, never below the
   need learnt when a probe went too far (``hold_mib``, kept for
   ``hold_rounds``), and (d) unsatisfied VMs whose W_est is larger, down to
   their minimum.  Only what the served VMs need is taken; a VM with an
   unknown working set (a guest stuck at 0 % looks like that) is served
   from (a) and (b) only.
4. Memory is whole MiB throughout:
   ``sum(new) + unallocated == sum(old) + free`` exactly.
"""

import collections
import dataclasses
import math

from nova_cacheaware.balloon import study_balancer
from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

INF = math.inf


@dataclasses.dataclass(frozen=True)
class DefaultParams:
    """Knobs of the default policy (defaults are the evaluated ones)."""

    threshold: float = 0.99
    margin: float = 0.03
    pad_mib: int = 16
    probe_step: float = 0.1
    probe_max: float = 0.5
    hold_rounds: int = 24
    hysteresis: float = 0.25
    hopeless_ratio: float = 0.5


@dataclasses.dataclass(frozen=True)
class VmView:
    """One VM: the guest's last report plus the policy's own state."""

    id: str
    memory_mib: int
    hit_ratio: float
    cache_mib: float
    free_mib: float
    used_mib: float
    min_mib: int
    max_mib: int
    #: True when the report arrived after the previous round.
    fresh: bool = True
    probe: int = 0
    hold_mib: int = 0
    hold_left: int = 0
    favoured: bool = False


@dataclasses.dataclass(frozen=True)
class VmDefaultDecision:
    """New memory and the state to pass back next round."""

    memory_mib: int
    probe: int
    hold_mib: int
    hold_left: int
    favoured: bool


@dataclasses.dataclass(frozen=True)
class DefaultPlan:
    """Per-VM decisions and the MiB left unassigned."""

    vms: dict
    unallocated_mib: int


def estimate_working_set(vm):
    """W_est in MiB from the uniform-LRU model (INF when unknown)."""
    cache = max(0.0, min(vm.cache_mib, vm.memory_mib - vm.used_mib))
    if vm.hit_ratio <= 0 or cache <= 0:
        return INF
    return cache / vm.hit_ratio


def _reachable(vm, w_est, params):
    """W_est, or INF when the VM is hopeless even at ``max_mib``.

    Hopeless: the estimate says its hit ratio would stay below
    ``hopeless_ratio`` with all the memory it may have.  Such a VM would
    only take memory from others for a small gain (with a scan, or a
    ratio made of the helper's non-file reads, none at all), so it is
    treated like one with an unknown working set: idle memory only.
    """
    if w_est == INF:
        return INF
    room = max(0.0, vm.max_mib - vm.used_mib - params.pad_mib)
    if room < params.hopeless_ratio * w_est * (1 + params.margin):
        return INF
    return w_est


def _need(vm, w_est, params):
    if w_est == INF:
        return vm.max_mib
    need = math.ceil(vm.used_mib + w_est * (1 + params.margin)
                     + params.pad_mib)
    return max(vm.min_mib, min(vm.max_mib, need))


def _priority_order(unsat, w_est, params):
    def key(vm):
        w = w_est[vm.id]
        if vm.favoured and w != INF:
            w = w / (1 + params.hysteresis)
        return (w, vm.id)
    return sorted(unsat, key=key)


def default_plan(params, vms, free_mib=0):
    """One round of the default policy (see the module docstring).

    ``vms`` is a sequence of :class:`VmView`, ``free_mib`` unassigned host
    memory.  Returns a :class:`DefaultPlan`; inputs are not modified.
    """
    memory = {vm.id: vm.memory_mib for vm in vms}
    hold = {}
    for vm in vms:
        left = max(0, vm.hold_left - 1)
        hold[vm.id] = (vm.hold_mib if left else 0, left)
    sat = [vm for vm in vms if vm.hit_ratio >= params.threshold]
    unsat = [vm for vm in vms if vm.hit_ratio < params.threshold]
    w_est, deficit = _demand(unsat, hold, params)
    # A VM whose working set is unknown (no hits, or nothing cached: also
    # what a guest stuck at 0 % looks like) gets idle memory only; it never
    # makes the policy probe others for it.
    wanted_known = sum(d for k, d in deficit.items() if w_est[k] != INF)
    probe = {vm.id: 0 for vm in vms}
    pool = free_mib + _supply(sat, hold, memory, probe, free_mib,
                              (sum(deficit.values()), wanted_known), params)
    favoured = _serve(_priority_order(unsat, w_est, params), deficit, w_est,
                      memory, pool, params)
    decisions = {}
    for vm in vms:
        hold_mib, hold_left = hold[vm.id]
        decisions[vm.id] = VmDefaultDecision(
            memory_mib=memory[vm.id], probe=probe[vm.id],
            hold_mib=hold_mib, hold_left=hold_left,
            favoured=vm.id in favoured)
    total = sum(vm.memory_mib for vm in vms) + free_mib
    return DefaultPlan(vms=decisions,
                       unallocated_mib=total - sum(memory.values()))


def _demand(unsat, hold, params):
    """``(working-set estimates, deficits)`` of the unsatisfied VMs.

    Sets ``hold`` for each: what a probe learnt, not probed below for a
    while.
    """
    w_est = {vm.id: _reachable(vm, estimate_working_set(vm), params)
             for vm in unsat}
    deficit = {}
    for vm in unsat:
        need = _need(vm, w_est[vm.id], params)
        hold[vm.id] = (min(need, vm.max_mib), params.hold_rounds)
        warming = vm.free_mib > params.pad_mib
        deficit[vm.id] = 0 if warming else max(0, need - vm.memory_mib)
    return w_est, deficit


def _supply(sat, hold, memory, probe, free_pool, wanted, params):
    """MiB taken from the satisfied VMs, cheapest first; updates ``memory``.

    Unassigned memory first, then what the guests leave free, then probes
    (``probe`` gets their new counts). ``wanted``: ``(all deficits, the
    deficits of VMs with a known working set)``.
    """
    wanted_all, wanted_known = wanted
    offers = []
    for vm in sat:
        floor = max(vm.min_mib, hold[vm.id][0],
                    math.ceil(vm.used_mib) + params.pad_mib)
        above = max(0, vm.memory_mib - floor)
        idle = min(above, max(0, int(vm.free_mib) - params.pad_mib))
        offers.append((0, vm, idle))
        if vm.fresh:
            frac = min(params.probe_max, params.probe_step * 2 ** vm.probe)
            offers.append((1, vm, int((above - idle) * frac)))
    offers.sort(key=lambda o: (o[0], o[1].id))
    taken = 0
    for kind, vm, amount in offers:
        limit = wanted_all if kind == 0 else wanted_known
        if free_pool + taken >= limit:
            continue
        take = min(amount, limit - free_pool - taken)
        if take > 0:
            memory[vm.id] -= take
            taken += take
            if kind == 1:
                probe[vm.id] = vm.probe + 1
    for vm in sat:
        # Probes grow only while demand lasts; without demand they restart.
        if probe[vm.id] == 0 and wanted_known > 0:
            probe[vm.id] = vm.probe
    return taken


def _serve(order, deficit, w_est, memory, pool, params):
    """Serve the smallest working sets first; returns the favoured ids.

    From ``pool`` first, then taking from VMs with larger working sets;
    updates ``memory``.
    """
    favoured = set()
    for i, vm in enumerate(order):
        want = deficit[vm.id]
        give = min(want, pool)
        pool -= give
        short = want - give
        for donor in reversed(order[i + 1:]):
            if short <= 0:
                break
            if w_est[donor.id] <= w_est[vm.id] * (1 + params.hysteresis):
                continue
            take = min(short, memory[donor.id] - donor.min_mib)
            if take > 0:
                memory[donor.id] -= take
                short -= take
                give += take
        memory[vm.id] += give
        if give > 0 or (want == 0 and w_est[vm.id] != INF):
            favoured.add(vm.id)
    return favoured


# ------------------------------------------------------------------ JSON

#: The optional :class:`DefaultParams` (absent: the evaluated defaults).
PARAMS_SCHEMA = {
    'threshold': schema.RATIO, 'margin': schema.AMOUNT,
    'pad_mib': schema.COUNT, 'probe_step': schema.AMOUNT,
    'probe_max': schema.AMOUNT, 'hold_rounds': schema.COUNT,
    'hysteresis': schema.AMOUNT, 'hopeless_ratio': schema.AMOUNT,
}
#: A VM beyond the study's fields (``streak`` is not read): the policy's
#: state (absent: a VM seen for the first time) and the guest's report.
VM_SCHEMA = {
    'fresh': (schema.BOOL, True),
    'probe': (schema.COUNT, 0),
    'hold_mib': (schema.COUNT, 0),
    'hold_left': (schema.COUNT, 0),
    'favoured': (schema.BOOL, False),
    'used_mib': (schema.AMOUNT, schema.REQUIRED),
    'cache_mib': (schema.AMOUNT, schema.REQUIRED),
    'free_mib': (schema.AMOUNT, schema.REQUIRED),
}


def _invalid(message):
    return exception.InvalidInput(reason=message)


def _params_from_dict(doc):
    study_balancer.object_field(doc, 'params')
    # Checked in the document's order: its first bad key is named.
    with schema.reraise(_invalid):
        return DefaultParams(**schema.fields(
            doc, {k: (PARAMS_SCHEMA[k], schema.REQUIRED)
                  for k in doc if k in PARAMS_SCHEMA}, 'params'))


def _vm_from_dict(doc, where):
    base = study_balancer.vm_from_dict(dict(doc, streak=0), where)
    with schema.reraise(_invalid):
        values = schema.fields(doc, VM_SCHEMA, 'VM %r' % base.id)
    if (values['used_mib'] + values['cache_mib'] + values['free_mib']
            > base.memory_mib):
        study_balancer.bad_input('VM %r' % base.id,
                                 'used + cache + free exceed memory_mib')
    return VmView(id=base.id, memory_mib=base.memory_mib,
                  hit_ratio=base.hit_ratio, min_mib=base.min_mib,
                  max_mib=base.max_mib, **values)


def request_from_dict(doc):
    """Validate a ``balloon-plan --policy default`` input document.

    Like the study's input, with per-VM ``cache_mib``, ``free_mib`` and
    ``used_mib`` (the guest's report) instead of ``streak``, the optional
    state fields of :class:`VmView` and optional :class:`DefaultParams`.
    Returns ``(params, vms, free_mib)``.
    """
    study_balancer.object_field(doc, 'input')
    params = _params_from_dict(doc.get('params', {}))
    free_mib = study_balancer.int_field(doc, 'free_mib', 'input', default=0)
    raw_vms = doc.get('vms')
    if not isinstance(raw_vms, list):
        study_balancer.bad_input('input', '"vms" must be a list')
    vms = [_vm_from_dict(study_balancer.object_field(v, 'vms[%d]' % i),
                         'vms[%d]' % i) for i, v in enumerate(raw_vms)]
    dup = sorted(i for i, n in collections.Counter(
        v.id for v in vms).items() if n > 1)
    if dup:
        study_balancer.bad_input('input',
                                 'duplicate VM id(s): %s' % ', '.join(dup))
    return params, vms, free_mib


def plan_to_dict(plan):
    """The output document: decisions (with state) and unallocated MiB."""
    return {'vms': {vm_id: dataclasses.asdict(d)
                    for vm_id, d in plan.vms.items()},
            'unallocated_mib': plan.unallocated_mib}
