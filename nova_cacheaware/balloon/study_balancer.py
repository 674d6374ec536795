"""Study 002's hit-ratio memory balancer, modes A and B, exactly.

One round, run by the host every delta seconds over all VMs (numbered as in
the ``balloon-plan`` contract, doc/source/user/balloon-plan.rst):

1. donors (hit ratio >= threshold) give
   ``memory * alpha * (1 + 0.1 * streak)``;
2. every VM gives ``beta`` of what it has after step 1; no VM gives more than
   ``memory - min_mib``;
3. the pool (all gifts + free memory) goes to the receivers (hit ratio <
   threshold) in proportion to the hit ratio (mode A) or the miss ratio
   (mode B), equally where every weight is 0; with no receivers it goes back
   to every VM in proportion to its memory before step 1.  A VM never goes
   above ``max_mib``: what a capped VM cannot take goes to the others by the
   same weights, then to the remaining VMs by memory; the rest is unallocated;
4. memory is rounded down to whole MiB and the remainders are unallocated, so
   ``sum(new) + unallocated == sum(old) + free`` exactly;
5. streak and reporting interval move as in the study.

The arithmetic is done with :class:`fractions.Fraction` (every float is an
exact rational), so rounding and conservation never depend on float error.
"""

import collections
import dataclasses
import fractions
import math

from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

MODES = ('A', 'B')
#: Step 1's growth of alpha per round already spent over the threshold.
STREAK_STEP = fractions.Fraction(1, 10)
#: Reporting interval multipliers (study 002, section 5).
SLOW_INTERVAL = 1.5
FAST_INTERVAL = 0.5
FAST_STREAK = 3

_F = fractions.Fraction


@dataclasses.dataclass(frozen=True)
class BalloonParams:
    """The study's knobs: th, alpha, beta, mode and the interval gamma."""

    threshold: float
    alpha: float
    beta: float
    mode: str
    interval_s: float


@dataclasses.dataclass(frozen=True)
class VmMemory:
    """One VM as the balancer sees it in a round."""

    id: str
    memory_mib: int
    hit_ratio: float
    streak: int
    min_mib: int
    max_mib: int


@dataclasses.dataclass(frozen=True)
class VmDecision:
    """What the round decided for one VM."""

    memory_mib: int
    streak: int
    interval_s: float


@dataclasses.dataclass(frozen=True)
class BalloonPlan:
    """The result of a round: per-VM decisions and the unallocated MiB."""

    vms: dict
    unallocated_mib: int


# ---------------------------------------------------------------- validation

_R = schema.REQUIRED
#: The ``params`` object of a ``balloon-plan`` input.
PARAMS_SCHEMA = {
    'mode': (schema.OneOf(MODES, '"A" or "B"'), _R),
    'threshold': (schema.RATIO, _R),
    'alpha': (schema.AMOUNT, _R),
    'beta': (schema.AMOUNT, _R),
    'interval_s': (schema.AMOUNT, _R),
}
#: One VM of a ``balloon-plan`` input (after its ``id``).
VM_SCHEMA = {
    'memory_mib': (schema.COUNT, _R),
    'hit_ratio': (schema.RATIO, _R),
    'streak': (schema.COUNT, _R),
    'min_mib': (schema.COUNT, _R),
    'max_mib': (schema.COUNT, _R),
}
_ID_SCHEMA = {'id': (schema.Text(), _R)}


def bad_input(where, what):
    """Raise :class:`InvalidInput` naming ``where`` and ``what``."""
    raise exception.InvalidInput(reason='%s: %s' % (where, what))


def _checked(check, *args):
    """Run a schema check; its :class:`SchemaError` as InvalidInput."""
    try:
        return check(*args)
    except schema.SchemaError as e:
        raise exception.InvalidInput(reason=str(e)) from None


def number_field(doc, key, where):
    """``doc[key]``: a finite, non-negative number (not a bool)."""
    return _checked(schema.fields, doc, {key: (schema.AMOUNT, _R)},
                    where)[key]


def ratio_field(doc, key, where):
    """``doc[key]``: a number in 0..1."""
    return _checked(schema.fields, doc, {key: (schema.RATIO, _R)},
                    where)[key]


def int_field(doc, key, where, default=None):
    """``doc[key]``: a non-negative int (``default`` when absent)."""
    return _checked(schema.fields, doc, {
        key: (schema.COUNT, _R if default is None else default)}, where)[key]


def object_field(value, where):
    """``value`` itself, which must be a JSON object."""
    return _checked(schema.obj, value, where)


def params_from_dict(doc, where='params'):
    """Validate and build :class:`BalloonParams` from its JSON object."""
    object_field(doc, where)
    # An absent mode is refused as an unknown one, not as a missing key.
    values = _checked(schema.fields, dict(doc, mode=doc.get('mode')),
                      PARAMS_SCHEMA, where)
    return BalloonParams(**values)


def vm_from_dict(doc, where):
    """Validate and build one :class:`VmMemory` from its JSON object."""
    object_field(doc, where)
    vm_id = _checked(schema.fields, dict(doc, id=doc.get('id')), _ID_SCHEMA,
                     where)['id']
    where = 'VM %r' % vm_id
    vm = VmMemory(id=vm_id, **_checked(schema.fields, doc, VM_SCHEMA, where))
    if vm.min_mib > vm.max_mib:
        bad_input(where, 'min_mib %d > max_mib %d' % (vm.min_mib, vm.max_mib))
    if not vm.min_mib <= vm.memory_mib <= vm.max_mib:
        bad_input(where, 'memory_mib %d outside [min_mib %d, max_mib %d]'
                  % (vm.memory_mib, vm.min_mib, vm.max_mib))
    return vm


def request_from_dict(doc):
    """Validate a ``balloon-plan`` input document.

    Returns ``(params, vms, free_mib)``; raises :class:`InvalidInput` with
    one line naming the first problem.  Keys the contract does not name are
    ignored.
    """
    object_field(doc, 'input')
    if 'params' not in doc:
        bad_input('input', 'missing "params"')
    params = params_from_dict(doc['params'])
    free_mib = int_field(doc, 'free_mib', 'input', default=0)
    raw_vms = doc.get('vms')
    if not isinstance(raw_vms, list):
        bad_input('input', '"vms" must be a list')
    vms = [vm_from_dict(v, 'vms[%d]' % i) for i, v in enumerate(raw_vms)]
    dup = sorted(i for i, n in collections.Counter(
        v.id for v in vms).items() if n > 1)
    if dup:
        bad_input('input', 'duplicate VM id(s): %s' % ', '.join(dup))
    return params, vms, free_mib


def plan_to_dict(plan):
    """The ``balloon-plan`` output document for ``plan``."""
    return {'vms': {vm_id: dataclasses.asdict(d)
                    for vm_id, d in plan.vms.items()},
            'unallocated_mib': plan.unallocated_mib}


# ----------------------------------------------------------------- algorithm

def share_capped(pool, weights, room):
    """Share ``pool`` by ``weights`` without exceeding anyone's ``room``.

    Water-filling: the pool is shared among the candidates that have room,
    by their weights; a candidate whose share would reach its room takes
    the room and drops out, and what is left is shared again among the
    others (equally among zero-weight candidates once every candidate with
    a weight is full).  All numbers are Fractions.  Returns ``(shares,
    leftover)``: leftover > 0 only when every candidate is full.

    O(n log n): with ``level = pool / total weight``, a candidate is full
    exactly when ``room / weight <= level``, and dropping a full candidate
    never lowers the level; so the full ones are a prefix of the
    candidates sorted by ``room / weight``, found in one scan.
    """
    shares = {k: _F(0) for k in weights}
    open_ = [k for k in weights if room[k] > 0]
    weighted = [k for k in open_ if weights[k] > 0]
    pool = _fill(pool, weighted, weights.__getitem__, room, shares)
    if pool > 0:
        unweighted = [k for k in open_ if weights[k] == 0]
        pool = _fill(pool, unweighted, lambda k: 1, room, shares)
    return shares, pool


def _fill(pool, keys, weight, room, shares):
    """Water-fill ``pool`` over ``keys`` (all weights > 0) into ``shares``.

    Returns what is left: 0 unless every one of ``keys`` is full.
    """
    if pool <= 0 or not keys:
        return pool
    order = sorted(keys, key=lambda k: room[k] / weight(k))
    total = sum(weight(k) for k in keys)
    for n, k in enumerate(order):
        # Full when room / weight <= pool / total (the current level).
        if room[k] * total > pool * weight(k):
            for rest in order[n:]:
                shares[rest] = pool * weight(rest) / total
            return _F(0)
        shares[k] = room[k]
        pool -= room[k]
        total -= weight(k)
        if pool <= 0:
            return pool
    return pool


def _gift(vm, params):
    memory = _F(vm.memory_mib)
    donated = _F(0)
    if vm.hit_ratio >= params.threshold:
        donated = memory * _F(params.alpha) * (1 + STREAK_STEP * vm.streak)
    after_step1 = max(_F(0), memory - donated)
    donated += after_step1 * _F(params.beta)
    return min(donated, memory - vm.min_mib) if donated > 0 else _F(0)


def next_interval(hit_ratio, new_streak, params):
    """Step 5's reporting interval for a VM (study 002, section 5)."""
    if hit_ratio >= params.threshold:
        factor = FAST_INTERVAL if new_streak >= FAST_STREAK else SLOW_INTERVAL
        return factor * params.interval_s
    return float(params.interval_s)


def study_plan(params, vms, free_mib=0):
    """One round of study 002's algorithm (see the module docstring).

    ``params`` is a :class:`BalloonParams`, ``vms`` a sequence of
    :class:`VmMemory` (validated: ratios in 0..1, min <= memory <= max), and
    ``free_mib`` unassigned host memory that joins the pool.  Returns a
    :class:`BalloonPlan`; the inputs are not modified.
    """
    base = {}
    pool = _F(free_mib)
    for vm in vms:
        gift = _gift(vm, params)
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
        decisions[vm.id] = VmDecision(
            memory_mib=memory, streak=streak,
            interval_s=next_interval(vm.hit_ratio, streak, params))
    total = sum(vm.memory_mib for vm in vms) + free_mib
    return BalloonPlan(vms=decisions, unallocated_mib=total - allocated)
