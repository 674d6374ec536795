"""The domain-choice replay walker before the declared schema (verbatim)."""
# flake8: noqa

from nova_cacheaware import exception
from nova_cacheaware.policy.domain_choice_doc import _MAX_ITEMS
from nova_cacheaware.policy.domain_assignment import HostHeld


def _bad(reason):
    return exception.InvalidInput(reason=reason)


def _count(value, what, minimum=0):
    if (not isinstance(value, int) or isinstance(value, bool)
            or not minimum <= value <= 1 << 20):
        raise _bad('%s must be an integer in %d..%d, not %r'
                   % (what, minimum, 1 << 20, value))
    return value


def _name(value, what, optional=False):
    if value is None and optional:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 255:
        raise _bad('%s must be a non-empty string, not %r' % (what, value))
    return value


def choice_from_dict(doc):
    """``(capacity, [HostHeld], base)`` from a replay document; validated.

    ``{"capacity": {domain: vCPUs}, "base": {domain: [vCPUs, memory-bound
    VMs]}, "instances": [{"uuid", "vcpus", "memory_bound", "current",
    "previous"}]}`` - what the agent writes as ``agent.domain_choice`` in
    ``--dump-state``.
    """
    if not isinstance(doc, dict):
        raise _bad('the input must be a JSON object')
    capacity = doc.get('capacity')
    instances = doc.get('instances', [])
    if not isinstance(capacity, dict) or not isinstance(instances, list):
        raise _bad('"capacity" must be an object and "instances" a list')
    if len(capacity) > _MAX_ITEMS or len(instances) > _MAX_ITEMS:
        raise _bad('at most %d domains and instances' % _MAX_ITEMS)
    capacity = {_name(d, 'a domain id'): _count(v, 'capacity of %s' % d)
                for d, v in capacity.items()}
    held, seen = [], set()
    for raw in instances:
        if not isinstance(raw, dict):
            raise _bad('each instance must be an object')
        uuid = _name(raw.get('uuid'), 'uuid')
        if uuid in seen:
            raise _bad('instance %s is listed twice' % uuid)
        seen.add(uuid)
        memory = raw.get('memory_bound', False)
        if not isinstance(memory, bool):
            raise _bad('memory_bound of %s must be true or false' % uuid)
        held.append(HostHeld(
            uuid=uuid, vcpus=_count(raw.get('vcpus'), 'vcpus of %s' % uuid,
                                    1),
            memory_bound=memory,
            current=_name(raw.get('current'), 'current', optional=True),
            previous=_name(raw.get('previous'), 'previous', optional=True)))
    base = {}
    raw_base = doc.get('base', {})
    if not isinstance(raw_base, dict) or len(raw_base) > _MAX_ITEMS:
        raise _bad('"base" must be an object of [vCPUs, memory-bound VMs]')
    for domain, pair in raw_base.items():
        if not isinstance(pair, list) or len(pair) != 2:
            raise _bad('base of %s must be [vCPUs, memory-bound VMs]'
                       % domain)
        base[_name(domain, 'a domain id')] = (
            _count(pair[0], 'base vCPUs of %s' % domain),
            _count(pair[1], 'base memory-bound VMs of %s' % domain))
    return capacity, held, base


