"""The ``plan`` contract's types and their JSON form (study 000).

The typed input and output of the All-share planner
(:func:`nova_cacheaware.cachedomain.planner.plan`) and the one place the
``nova-cacheaware plan`` documents (doc/source/user/plan.rst) are read
and written. The agent builds :class:`PlanInput` directly and keeps the
:class:`Plan` typed; JSON is only for the CLI, ``--dump-state`` and the
tests.

A memory-bound VM is *in* a domain when the CPUs of one of its vCPUs
intersect the domain (where it may run, it fills the cache). A domain is
Empty with no memory-bound VM in it, Clean with one, Dirty with more
(:mod:`nova_cacheaware.contracts.cache_state`).
"""

import dataclasses
import functools
import math
import typing as ty

from nova_cacheaware.contracts import cpu_sets
from nova_cacheaware.contracts import limits
from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

WORKLOADS = ('memory', 'cpu', 'io', 'unknown')
OBJECTIVES = ('contract', 'throughput')
SHARE_ALL, SHARE_PARTIAL = 'all', 'partial'


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


# The plan input, declared (schema.Check messages are whole lines: the
# ones this contract always gave, some pinned by the CLI tests).
_OBJECT = schema.Check(schema.is_object, '%(where)s must be an object')
_UNKNOWN = '%(where)s: unknown key %(key)r'
_CPUS = schema.All(
    schema.Check(lambda v: (schema.is_list(v) and v) or (
        isinstance(v, str) and bool(v)),
        '%(where)s must be a non-empty list of CPU ids'),
    schema.Check(lambda v: not isinstance(v, str)
                 or cpu_sets.cpu_ranges(v) is not None,
                 '%%(where)s must be a CPU list such as "0-15,32-47" of '
                 'distinct CPU ids 0..%d' % (limits.MAX_CPUS - 1)),
    schema.Check(lambda v: isinstance(v, str)
                 or all(limits.is_cpu_id(c) for c in v),
                 '%%(where)s must hold CPU ids (integers 0..%d)'
                 % (limits.MAX_CPUS - 1)),
    schema.Check(lambda v: isinstance(v, str) or len(set(v)) == len(v),
                 '%(where)s lists a CPU twice'),
    convert=lambda v: (cpu_sets.cpu_ranges(v) if isinstance(v, str)
                       else tuple(sorted(v))))
INPUT_SCHEMA = {
    'objective': (schema.Check(
        lambda v: v in OBJECTIVES,
        '"objective" must be one of %s' % ', '.join(OBJECTIVES)),
        'contract'),
    'agent': (schema.Check(schema.is_object, '"agent" must be an object'),
              {}),
    'domains': (schema.Check(schema.is_list, '"domains" must be a list'),
                schema.AS_NULL),
    'vms': (schema.Check(schema.is_list, '"vms" must be a list'),
            schema.AS_NULL),
    'max_vcpus_per_cpu': (schema.Check(
        lambda v: schema.is_number(v) and v > 0,
        '"max_vcpus_per_cpu" must be a number > 0', float), 1.0),
}
# "agent": context the agent's --dump-state adds (names, classes,
# counters); it does not change the plan, so a dump replays as is.
# "previous": the input an incremental replan started from, read by
# previous_from_dict (the plan command); it does not change this input.
INPUT_KEYS = ('domains', 'vms', 'max_vcpus_per_cpu', 'agent', 'objective',
              'previous')
_ID_SCHEMA = {'id': (schema.Text(), schema.AS_NULL)}
DOMAIN_KEYS = ('id', 'cpus')
VM_SCHEMA = {
    'vcpus': (schema.Check(limits.is_vcpu_count,
                           '%%(where)s: "vcpus" must be an integer 1..%d'
                           % limits.MAX_VCPUS), schema.AS_NULL),
    'workload': (schema.Check(lambda v: v in WORKLOADS,
                              '%%(where)s: "workload" must be one of %s'
                              % ', '.join(WORKLOADS)), schema.AS_NULL),
    'movable': (schema.Check(schema.is_bool,
                             '%(where)s: "movable" must be true or false'),
                True),
    'current': (schema.Check(schema.is_object,
                             '%(where)s: "current" must be an object'), None),
}
_VCPU_KEY = schema.Check(
    lambda k: k.isascii() and k.isdigit() and k == str(int(k)),
    '%(where)s: "current" key %(value)r is not a vCPU index')


def input_from_dict(doc):
    """Build a :class:`PlanInput` from the JSON input; checks everything.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` naming the first
    problem: wrong types, duplicate ids, overlapping domains, a CPU in no
    domain, a vCPU index out of range, a bad ``max_vcpus_per_cpu``.
    """
    if not isinstance(doc, dict):
        raise _bad('the input must be a JSON object')
    with schema.reraise(_bad):
        schema.only_keys(doc, INPUT_KEYS, 'input', _UNKNOWN)
        top = schema.fields(doc, INPUT_SCHEMA, '')
        domains, owner = _domains_from_list(top['domains'])
        vms = []
        # Pins known to lie in domains: a floating VM's vCPUs repeat the
        # same set (the whole host), checked once.
        inside = set()
        for n, v in enumerate(top['vms']):
            vms.append(_vm_from_dict(v, 'vms[%d]' % n, owner, inside))
            if sum(1 for x in vms if x.id == vms[-1].id) > 1:
                raise _bad('duplicate VM id %r' % vms[-1].id)
    return PlanInput(domains=domains, vms=tuple(vms),
                     max_vcpus_per_cpu=top['max_vcpus_per_cpu'],
                     objective=top['objective'])


def _domains_from_list(raw):
    """``(domains, {cpu: domain id})``: ids unique, no CPU in two."""
    domains, owner = [], {}
    for n, d in enumerate(raw):
        where = 'domains[%d]' % n
        _OBJECT.check(d, None, where)
        schema.only_keys(d, DOMAIN_KEYS, where, _UNKNOWN)
        domain_id = schema.fields(d, _ID_SCHEMA, where)['id']
        if any(x.id == domain_id for x in domains):
            raise _bad('duplicate domain id %r' % domain_id)
        cpus = _CPUS.check(d.get('cpus'), 'cpus', '%s "cpus"' % where)
        for c in cpus:
            if c in owner:
                raise _bad('CPU %d is in domains %r and %r'
                           % (c, owner[c], domain_id))
            owner[c] = domain_id
        domains.append(Domain(id=domain_id, cpus=cpus))
    if not domains:
        raise _bad('"domains" must not be empty')
    return tuple(domains), owner


def _vm_from_dict(v, where, owner, inside):
    _OBJECT.check(v, None, where)
    schema.only_keys(v, ('id',) + tuple(VM_SCHEMA), where, _UNKNOWN)
    vm_id = schema.fields(v, _ID_SCHEMA, where)['id']
    where = 'VM %r' % vm_id
    values = schema.fields(v, VM_SCHEMA, where)
    vcpus, raw = values['vcpus'], values['current']
    current = None if raw is None else {}
    for key, cpus in (raw or {}).items():
        index = int(_VCPU_KEY.check(key, 'current', where))
        if index >= vcpus:
            raise _bad('%s: vCPU %d out of range (vcpus %d)'
                       % (where, index, vcpus))
        pins = _CPUS.check(cpus, None, '%s vCPU %d' % (where, index))
        if pins not in inside:
            stray = [c for c in pins if c not in owner]
            if stray:
                raise _bad('%s vCPU %d: CPU %d is in no domain'
                           % (where, index, stray[0]))
            inside.add(pins)
        current[index] = pins
    return VM(id=vm_id, vcpus=vcpus, workload=values['workload'],
              current=current, movable=values['movable'])


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
