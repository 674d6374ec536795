"""The ``plan`` input walker before the declared schema (verbatim)."""
# flake8: noqa

import math

from nova_cacheaware.contracts import limits
from nova_cacheaware import exception
from nova_cacheaware.policy.cachedomain_model import Domain
from nova_cacheaware.policy.cachedomain_model import OBJECTIVES
from nova_cacheaware.policy.cachedomain_model import PlanInput
from nova_cacheaware.policy.cachedomain_model import VM
from nova_cacheaware.policy.cachedomain_model import WORKLOADS


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


