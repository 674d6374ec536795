"""All-share planning over cache domains, and cache states (study 000).

The contract is ``nova-cacheaware plan`` (doc/source/user/plan.rst):

* every vCPU of a movable memory-bound VM is pinned to exactly the whole CPU
  list of one domain; unmovable VMs and VMs that are not memory-bound keep
  their current pinning (all CPUs when none is given);
* capacity per domain: memory-bound vCPUs pinned into it (movable ones, plus
  vCPUs of unmovable ones whose current CPUs lie inside it) <=
  ``floor(|cpus| * max_vcpus_per_cpu)``;
* minimise, in this order: (1) the excess domains spanned by movable
  memory-bound VMs, (2) the sum over domains of ``max(0, memory-bound VMs in
  it - 1)``, (3) the movable memory-bound VMs that move; ties broken by
  crowding (memory-bound vCPUs beyond one per CPU);
* memory-bound VMs that cannot fit stay where they are and are ``unplaced``
  (as few as possible: the smallest VMs are placed first).

A memory-bound VM is *in* a domain when the CPUs of one of its vCPUs
intersect the domain (where it may run, it fills the cache). A domain is
Empty with no memory-bound VM in it, Clean with one, Dirty with more.

The classifier that decides which VMs are memory-bound lives in
:mod:`nova_cacheaware.policy.memclass`.
"""

import dataclasses
import functools
import math
import typing as ty

from nova_cacheaware import exception
from nova_cacheaware.policy import allshare_heuristic
from nova_cacheaware.policy import allshare_search
from nova_cacheaware.policy import allshare_throughput
from nova_cacheaware.policy import limits

WORKLOADS = ('memory', 'cpu', 'io', 'unknown')
EMPTY, CLEAN, DIRTY = 'empty', 'clean', 'dirty'
OBJECTIVES = ('contract', 'throughput')
SHARE_ALL, SHARE_PARTIAL = 'all', 'partial'

# Hosts up to this size are solved exactly (the contract's "small hosts").
EXACT_MAX_DOMAINS = 4
EXACT_MAX_VMS = 4
# Up to this many movable memory-bound VMs, the heuristic's plan is refined
# by a branch and bound stopped after this many search nodes (a few tens of
# ms): better plans on medium hosts, bounded time everywhere.
REFINE_MAX_VMS = 8
REFINE_BUDGET = 4000
# A refined plan is re-searched from itself at most this many times.
REFINE_MAX_ROUNDS = 8


def cache_state(memory_vms):
    """Empty (0), Clean (1) or Dirty (2+) for a count of memory-bound VMs."""
    if memory_vms <= 0:
        return EMPTY
    return CLEAN if memory_vms == 1 else DIRTY


@dataclasses.dataclass(frozen=True)
class Domain:
    """A cache domain: an id and its CPUs (sorted, unique)."""

    id: str
    cpus: ty.Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class VM:
    """A VM as the planner sees it.

    ``current`` maps vCPU index -> CPUs it may run on now; a missing vCPU
    (or ``current`` None) means all CPUs of the host.
    """

    id: str
    vcpus: int
    workload: str
    current: ty.Optional[ty.Dict[int, ty.Tuple[int, ...]]] = None
    movable: bool = True

    @property
    def memory_bound(self):
        """True for VMs declared or classified memory-bound."""
        return self.workload == 'memory'


@dataclasses.dataclass(frozen=True)
class PlanInput:
    """The input of :func:`plan` (the ``plan --input`` document)."""

    domains: ty.Tuple[Domain, ...]
    vms: ty.Tuple[VM, ...]
    max_vcpus_per_cpu: float = 1.0
    objective: str = 'contract'

    def capacity(self, domain):
        """Memory-bound vCPUs ``domain`` may hold."""
        return math.floor(len(domain.cpus) * self.max_vcpus_per_cpu)

    @functools.cached_property
    def all_cpus(self):
        """Every CPU of every domain, sorted."""
        return tuple(sorted(c for d in self.domains for c in d.cpus))

    @functools.cached_property
    def domains_memo(self):
        """Scratch memo: CPU tuple -> domain indexes (see _domains_of)."""
        return {}

    @functools.cached_property
    def domain_index(self):
        """CPU id -> index of its domain."""
        return {c: i for i, d in enumerate(self.domains) for c in d.cpus}

    def pinning_now(self, vm):
        """``vm``'s current pinning with every vCPU filled in."""
        everything = self.all_cpus
        current = vm.current or {}
        return {i: tuple(current.get(i, everything))
                for i in range(vm.vcpus)}


@dataclasses.dataclass(frozen=True)
class VMPlan:
    """The plan for one VM."""

    pinning: ty.Dict[int, ty.Tuple[int, ...]]
    domains: ty.Tuple[str, ...]
    share: str
    moved: bool


@dataclasses.dataclass(frozen=True)
class DomainPlan:
    """The state a domain will be in."""

    state: str
    memory_vms: ty.Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Plan:
    """The output of :func:`plan` (the ``plan`` JSON document)."""

    vms: ty.Dict[str, VMPlan]
    domains: ty.Dict[str, DomainPlan]
    unplaced: ty.Tuple[str, ...]


# --------------------------------------------------------------------------
# JSON

def _bad(reason):
    return exception.InvalidInput(reason=reason)


def _cpu_list(value, where):
    if not isinstance(value, list) or not value:
        raise _bad('%s must be a non-empty list of CPU ids' % where)
    if not all(limits.is_cpu_id(c) for c in value):
        raise _bad('%s must hold CPU ids (integers 0..%d)'
                   % (where, limits.MAX_CPUS - 1))
    if len(set(value)) != len(value):
        raise _bad('%s lists a CPU twice' % where)
    return tuple(sorted(value))


def _check_keys(doc, allowed, where):
    unknown = sorted(set(doc) - set(allowed))
    if unknown:
        raise _bad('%s: unknown key %r' % (where, unknown[0]))


def input_from_dict(doc):
    """Build a :class:`PlanInput` from the JSON input; checks everything.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` naming the first
    problem: wrong types, duplicate ids, overlapping domains, a CPU in no
    domain, a vCPU index out of range, a bad ``max_vcpus_per_cpu``.
    """
    if not isinstance(doc, dict):
        raise _bad('the input must be a JSON object')
    # "agent": context the agent's --dump-state adds (names, classes,
    # counters); it does not change the plan, so a dump replays as is.
    # "previous": the input an incremental replan started from, read by
    # previous_from_dict (the plan command); it does not change this input.
    _check_keys(doc, ('domains', 'vms', 'max_vcpus_per_cpu', 'agent',
                      'objective', 'previous'), 'input')
    objective = doc.get('objective', 'contract')
    if objective not in OBJECTIVES:
        raise _bad('"objective" must be one of %s' % ', '.join(OBJECTIVES))
    if not isinstance(doc.get('agent', {}), dict):
        raise _bad('"agent" must be an object')
    for key in ('domains', 'vms'):
        if not isinstance(doc.get(key), list):
            raise _bad('"%s" must be a list' % key)
    ratio = doc.get('max_vcpus_per_cpu', 1.0)
    if (not isinstance(ratio, (int, float)) or isinstance(ratio, bool)
            or not math.isfinite(ratio) or ratio <= 0):
        raise _bad('"max_vcpus_per_cpu" must be a number > 0')
    domains, owner = [], {}
    for n, d in enumerate(doc['domains']):
        where = 'domains[%d]' % n
        if not isinstance(d, dict):
            raise _bad('%s must be an object' % where)
        _check_keys(d, ('id', 'cpus'), where)
        if not isinstance(d.get('id'), str) or not d['id']:
            raise _bad('%s: "id" must be a non-empty string' % where)
        if any(x.id == d['id'] for x in domains):
            raise _bad('duplicate domain id %r' % d['id'])
        cpus = _cpu_list(d.get('cpus'), '%s "cpus"' % where)
        for c in cpus:
            if c in owner:
                raise _bad('CPU %d is in domains %r and %r'
                           % (c, owner[c], d['id']))
            owner[c] = d['id']
        domains.append(Domain(id=d['id'], cpus=cpus))
    if not domains:
        raise _bad('"domains" must not be empty')
    vms = []
    for n, v in enumerate(doc['vms']):
        vms.append(_vm_from_dict(v, 'vms[%d]' % n, owner))
        if sum(1 for x in vms if x.id == vms[-1].id) > 1:
            raise _bad('duplicate VM id %r' % vms[-1].id)
    return PlanInput(domains=tuple(domains), vms=tuple(vms),
                     max_vcpus_per_cpu=float(ratio), objective=objective)


def _vm_from_dict(v, where, owner):
    if not isinstance(v, dict):
        raise _bad('%s must be an object' % where)
    _check_keys(v, ('id', 'vcpus', 'workload', 'current', 'movable'), where)
    if not isinstance(v.get('id'), str) or not v['id']:
        raise _bad('%s: "id" must be a non-empty string' % where)
    where = 'VM %r' % v['id']
    vcpus = v.get('vcpus')
    if not limits.is_vcpu_count(vcpus):
        raise _bad('%s: "vcpus" must be an integer 1..%d'
                   % (where, limits.MAX_VCPUS))
    if v.get('workload') not in WORKLOADS:
        raise _bad('%s: "workload" must be one of %s'
                   % (where, ', '.join(WORKLOADS)))
    movable = v.get('movable', True)
    if not isinstance(movable, bool):
        raise _bad('%s: "movable" must be true or false' % where)
    current = None
    if 'current' in v:
        raw = v['current']
        if not isinstance(raw, dict):
            raise _bad('%s: "current" must be an object' % where)
        current = {}
        for key, cpus in raw.items():
            if not (key.isascii() and key.isdigit()
                    and key == str(int(key))):
                raise _bad('%s: "current" key %r is not a vCPU index'
                           % (where, key))
            index = int(key)
            if index >= vcpus:
                raise _bad('%s: vCPU %d out of range (vcpus %d)'
                           % (where, index, vcpus))
            pins = _cpu_list(cpus, '%s vCPU %d' % (where, index))
            stray = [c for c in pins if c not in owner]
            if stray:
                raise _bad('%s vCPU %d: CPU %d is in no domain'
                           % (where, index, stray[0]))
            current[index] = pins
    return VM(id=v['id'], vcpus=vcpus, workload=v['workload'],
              current=current, movable=movable)


def input_to_dict(plan_input):
    """The JSON form of a :class:`PlanInput` (inverse of the parser)."""
    vms = []
    for vm in plan_input.vms:
        doc = {'id': vm.id, 'vcpus': vm.vcpus, 'workload': vm.workload,
               'movable': vm.movable}
        if vm.current is not None:
            doc['current'] = {str(i): list(c)
                              for i, c in sorted(vm.current.items())}
        vms.append(doc)
    doc = {'domains': [{'id': d.id, 'cpus': list(d.cpus)}
                       for d in plan_input.domains],
           'max_vcpus_per_cpu': plan_input.max_vcpus_per_cpu,
           'vms': vms}
    if plan_input.objective != 'contract':
        doc['objective'] = plan_input.objective
    return doc


def plan_to_dict(result):
    """The JSON form of a :class:`Plan` (the contract's output)."""
    return {
        'vms': {vid: {'pinning': {str(i): list(c)
                                  for i, c in sorted(p.pinning.items())},
                      'domains': list(p.domains), 'share': p.share,
                      'moved': p.moved}
                for vid, p in result.vms.items()},
        'domains': {did: {'state': p.state,
                          'memory_vms': list(p.memory_vms)}
                    for did, p in result.domains.items()},
        'unplaced': list(result.unplaced),
    }


def plan_from_dict(doc):
    """Rebuild a :class:`Plan` from :func:`plan_to_dict` output."""
    return Plan(
        vms={vid: VMPlan(pinning={int(i): tuple(c)
                                  for i, c in p['pinning'].items()},
                         domains=tuple(p['domains']), share=p['share'],
                         moved=p['moved'])
             for vid, p in doc['vms'].items()},
        domains={did: DomainPlan(state=p['state'],
                                 memory_vms=tuple(p['memory_vms']))
                 for did, p in doc['domains'].items()},
        unplaced=tuple(doc['unplaced']))


# --------------------------------------------------------------------------
# Planning

def _domains_of(plan_input, cpus):
    """Indexes of the domains ``cpus`` (a tuple) touch; memoised."""
    memo = plan_input.domains_memo
    found = memo.get(cpus)
    if found is None:
        where = plan_input.domain_index
        found = memo[cpus] = frozenset(where[c] for c in cpus)
    return found


def _domain_of_cpus(plan_input, cpus):
    """Index of the domain holding all of ``cpus``; -1 if none does."""
    found = _domains_of(plan_input, tuple(cpus))
    return next(iter(found)) if len(found) == 1 else -1


def _touched(plan_input, pinning):
    """Indexes of the domains any vCPU of ``pinning`` may run in."""
    result = frozenset()
    for cpus in set(pinning.values()):
        result |= _domains_of(plan_input, cpus)
    return result


def build_instance(plan_input):
    """The search instance of ``plan_input`` and its movable VM order.

    Returns ``(instance, movable)`` where ``movable`` lists the movable
    memory-bound :class:`VM` in instance order.
    """
    caps = [plan_input.capacity(d) for d in plan_input.domains]
    free = list(caps)
    fixed_touch = [0] * len(caps)
    movable = []
    for vm in plan_input.vms:
        if not vm.memory_bound:
            continue
        if vm.movable:
            movable.append(vm)
            continue
        pinning = plan_input.pinning_now(vm)
        for cpus in pinning.values():
            d = _domain_of_cpus(plan_input, cpus)
            if d >= 0:
                free[d] -= 1
        for d in _touched(plan_input, pinning):
            fixed_touch[d] += 1
    current, touch = [], []
    for vm in movable:
        pinning = plan_input.pinning_now(vm)
        counts = [0] * len(caps)
        whole = True
        for cpus in pinning.values():
            d = _domain_of_cpus(plan_input, cpus)
            if d < 0:
                whole = False
            else:
                counts[d] += 1
        current.append(tuple(counts) if whole else None)
        touch.append(_touched(plan_input, pinning))
    inst = allshare_search.Instance(
        free=tuple(max(0, f) for f in free), capacity=tuple(caps),
        fixed_touch=tuple(fixed_touch),
        sizes=tuple(vm.vcpus for vm in movable),
        current=tuple(current), current_touch=tuple(touch),
        cpus=tuple(len(d.cpus) for d in plan_input.domains))
    return inst, movable


def solve(inst, method='auto'):
    """Placements for ``inst``: ``exact``, ``heuristic`` or ``auto``.

    ``auto`` is exact on small hosts (<= 4 domains and <= 4 movable
    memory-bound VMs); up to ``REFINE_MAX_VMS`` movable memory-bound VMs,
    the heuristic refined by a budgeted branch and bound (``refined``);
    the heuristic alone above.

    Incremental: the current placements are kept unless the search finds
    a strictly better key (so replanning with nothing changed moves
    nothing). A budgeted search is iterated from its own answer until it
    is a fixed point, so that the next replan cannot find more.
    """
    if method == 'auto':
        if (inst.n_domains <= EXACT_MAX_DOMAINS
                and len(inst.sizes) <= EXACT_MAX_VMS):
            method = 'exact'
        elif len(inst.sizes) <= REFINE_MAX_VMS:
            method = 'refined'
        else:
            method = 'heuristic'
    if method not in ('exact', 'refined', 'heuristic'):
        raise ValueError('unknown method %r' % method)
    result = _keep_current(inst, _search(inst, method))
    if method != 'refined':
        return result
    for _ in range(REFINE_MAX_ROUNDS):
        again = dataclasses.replace(
            inst, current=tuple(p if p is not None else c
                                for p, c in zip(result, inst.current)),
            current_touch=tuple(
                allshare_search.support(p) if p is not None else t
                for p, t in zip(result, inst.current_touch)))
        better = _keep_current(again, _search(again, method))
        if better == result:
            break
        result = better
    return result


def _search(inst, method):
    if method == 'heuristic':
        return allshare_heuristic.heuristic(inst)
    return allshare_search.exact(
        inst, incumbent=allshare_heuristic.heuristic(inst),
        budget=REFINE_BUDGET if method == 'refined' else None)


def _keep_current(inst, placements):
    """``placements``, or the current ones when they are as good."""
    current = [c if p is not None else None
               for p, c in zip(placements, inst.current)]
    if (current == list(placements) or None in [
            c for p, c in zip(placements, current) if p is not None]
            or not allshare_search.is_feasible(inst, current)):
        return placements
    if (allshare_search.search_key(inst, current)
            <= allshare_search.search_key(inst, placements)):
        return current
    return placements


def plan(plan_input, method='auto'):
    """Plan All-share pinning for ``plan_input`` (a :class:`PlanInput`).

    Pure and deterministic: the same input gives the same :class:`Plan`.
    With ``objective`` ``throughput``, small hosts it models are planned
    by :mod:`~nova_cacheaware.policy.allshare_throughput`; the others (and
    every host with ``contract``) by :func:`solve`.
    """
    inst, movable = build_instance(plan_input)
    placements = None
    if plan_input.objective == 'throughput':
        placements = allshare_throughput.placements(plan_input, inst,
                                                    movable)
    if placements is None:
        placements = solve(inst, method)
    return assemble(plan_input, movable, placements)


def _spread(plan_input, vm, counts):
    """vCPU -> domain index: vCPUs already in a chosen domain stay there."""
    now = plan_input.pinning_now(vm)
    left = list(counts)
    where = {}
    for i in range(vm.vcpus):
        d = _domain_of_cpus(plan_input, now[i])
        if d >= 0 and left[d] > 0:
            where[i] = d
            left[d] -= 1
    rest = [d for d, n in enumerate(left) for _ in range(n)]
    for i in range(vm.vcpus):
        if i not in where:
            where[i] = rest.pop(0)
    return where


def assemble(plan_input, movable, placements):
    """Turn instance placements into the :class:`Plan` document."""
    placed = {vm.id: p for vm, p in zip(movable, placements)}
    domains = plan_input.domains
    vm_plans, unplaced = {}, []
    members = {d.id: [] for d in domains}
    for vm in plan_input.vms:
        counts = placed.get(vm.id)
        if counts is not None:
            where = _spread(plan_input, vm, counts)
            pinning = {i: domains[d].cpus for i, d in where.items()}
            moved = counts != _current_counts(plan_input, vm)
        else:
            if vm.id in placed:
                unplaced.append(vm.id)
            pinning = plan_input.pinning_now(vm)
            moved = False
        touched = _touched(plan_input, pinning)
        one = len(touched) == 1
        vm_plans[vm.id] = VMPlan(
            pinning=pinning,
            domains=tuple(domains[d].id for d in sorted(touched)),
            share=SHARE_ALL if one else SHARE_PARTIAL, moved=moved)
        if vm.memory_bound:
            for d in touched:
                members[domains[d].id].append(vm.id)
    return Plan(vms=vm_plans,
                domains={d.id: DomainPlan(state=cache_state(len(members[
                    d.id])), memory_vms=tuple(members[d.id]))
                    for d in domains},
                unplaced=tuple(unplaced))


def _current_counts(plan_input, vm):
    counts = [0] * len(plan_input.domains)
    for cpus in plan_input.pinning_now(vm).values():
        d = _domain_of_cpus(plan_input, cpus)
        if d < 0:
            return None
        counts[d] += 1
    return tuple(counts)


def score(plan_input, result):
    """Objective of a :class:`Plan`: ``(unplaced, excess, dirt, moves)``.

    Computed from the output document alone (independently of the search),
    for tests and benchmarks.
    """
    caps = sorted((plan_input.capacity(d) for d in plan_input.domains),
                  reverse=True)
    excess = moves = 0
    for vm in plan_input.vms:
        if not (vm.memory_bound and vm.movable) or vm.id in result.unplaced:
            continue
        p = result.vms[vm.id]
        total, need = 0, 0
        for cap in caps:
            if total >= vm.vcpus:
                break
            total += cap
            need += 1
        excess += len(p.domains) - max(1, need)
        moves += p.moved
    dirt = sum(max(0, len(d.memory_vms) - 1) for d in result.domains.values())
    return (len(result.unplaced), excess, dirt, moves)
