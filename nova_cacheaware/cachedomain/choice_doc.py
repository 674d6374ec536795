"""The replay document of the agent's in-host domain choice.

What the agent writes as ``agent.domain_choice`` in ``--dump-state`` and
``nova-cacheaware domain-choice`` reads back: the inputs of
:func:`nova_cacheaware.cachedomain.assignment.assign_domains`, validated and
bounded. Pure.
"""

from nova_cacheaware.cachedomain import assignment as domain_assignment
from nova_cacheaware.contracts import schema
from nova_cacheaware import exception


#: Bound on what a replay document may hold (the agent writes far less).
_MAX_ITEMS = 1 << 16


def bad(reason):
    """The error of an invalid replay document."""
    return exception.InvalidInput(reason=reason)


def _count_field(minimum):
    """An int in ``minimum .. 2**20``, named "``key`` of ``where``"."""
    return schema.Check(
        lambda v: (isinstance(v, int) and not isinstance(v, bool)
                   and minimum <= v <= 1 << 20),
        '%%(key)s of %%(where)s must be an integer in %d..%d, not '
        '%%(value)r' % (minimum, 1 << 20))


def _is_name(value):
    return isinstance(value, str) and 0 < len(value) <= 255


# The replay document, declared (whole-line messages: this command's own).
_NAME = schema.Check(_is_name,
                     '%(key)s must be a non-empty string, not %(value)r')
_OPTIONAL_NAME = schema.Check(lambda v: v is None or _is_name(v),
                              _NAME.message)
_VCPUS, _UNITS = _count_field(1), _count_field(0)
_UUID_SCHEMA = {'uuid': (_NAME, schema.AS_NULL)}
#: An instance beyond its uuid; ``where`` is the uuid.
INSTANCE_SCHEMA = {
    'memory_bound': (schema.Check(
        schema.is_bool, '%(key)s of %(where)s must be true or false'),
        False),
    'vcpus': (_VCPUS, schema.AS_NULL),
    'current': (_OPTIONAL_NAME, None),
    'previous': (_OPTIONAL_NAME, None),
    'clean_required': (schema.Check(
        schema.is_bool, '%(key)s of %(where)s must be true or false'),
        False),
    'holds_slot': (schema.Check(
        schema.is_bool, '%(key)s of %(where)s must be true or false'),
        False),
    # A database id (Nova's claim order): no small bound, unlike counts.
    'order': (schema.Check(
        lambda v: v is None or (isinstance(v, int)
                                and not isinstance(v, bool)
                                and 0 <= v < 1 << 63),
        'order of %(where)s must be a non-negative integer, not '
        '%(value)r'), None),
}
_PAIR = schema.Check(lambda v: schema.is_list(v) and len(v) == 2,
                     'base of %(where)s must be [vCPUs, memory-bound VMs]')


def choice_from_dict(doc):
    """``(capacity, [HostHeld], base)`` from a replay document; validated.

    ``{"capacity": {domain: vCPUs}, "base": {domain: [vCPUs, memory-bound
    VMs]}, "instances": [{"uuid", "vcpus", "memory_bound", "current",
    "previous", "order", "clean_required", "holds_slot"}]}`` (the last
    three optional) -
    what the agent writes as ``agent.domain_choice`` in ``--dump-state``.
    """
    if not isinstance(doc, dict):
        raise bad('the input must be a JSON object')
    capacity = doc.get('capacity')
    instances = doc.get('instances', [])
    if not isinstance(capacity, dict) or not isinstance(instances, list):
        raise bad('"capacity" must be an object and "instances" a list')
    if len(capacity) > _MAX_ITEMS or len(instances) > _MAX_ITEMS:
        raise bad('at most %d domains and instances' % _MAX_ITEMS)
    raw_base = doc.get('base', {})
    with schema.reraise(bad):
        capacity = {_NAME.check(d, 'a domain id', ''):
                    _UNITS.check(v, 'capacity', d)
                    for d, v in capacity.items()}
        held = _held_from_list(instances)
        if not isinstance(raw_base, dict) or len(raw_base) > _MAX_ITEMS:
            raise bad('"base" must be an object of [vCPUs, memory-bound '
                      'VMs]')
        base = {}
        for domain, pair in raw_base.items():
            _PAIR.check(pair, 'base', domain)
            counts = (_UNITS.check(pair[0], 'base vCPUs', domain),
                      _UNITS.check(pair[1], 'base memory-bound VMs', domain))
            base[_NAME.check(domain, 'a domain id', '')] = counts
    return capacity, held, base


def _held_from_list(instances):
    held, seen = [], set()
    for raw in instances:
        if not isinstance(raw, dict):
            raise bad('each instance must be an object')
        uuid = schema.fields(raw, _UUID_SCHEMA, '')['uuid']
        if uuid in seen:
            raise bad('instance %s is listed twice' % uuid)
        seen.add(uuid)
        held.append(domain_assignment.HostHeld(uuid=uuid, **schema.fields(
            raw, INSTANCE_SCHEMA, uuid)))
    return held


def choice_to_dict(capacity, instances, base=None):
    """The replay document of :func:`choice_from_dict`."""
    return {'capacity': dict(sorted(capacity.items())),
            'base': {d: list(v) for d, v in sorted((base or {}).items())},
            'instances': [{'uuid': i.uuid, 'vcpus': i.vcpus,
                           'memory_bound': i.memory_bound,
                           'current': i.current, 'previous': i.previous,
                           'order': i.order,
                           'clean_required': i.clean_required,
                           'holds_slot': i.holds_slot}
                          for i in sorted(instances, key=lambda i: i.uuid)]}
