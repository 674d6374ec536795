"""The default balloon policy's input walker before the declared schema."""
# flake8: noqa

import collections
import dataclasses

from nova_cacheaware.policy import balloon
from nova_cacheaware.policy.balloon_default import DefaultParams
from nova_cacheaware.policy.balloon_default import VmView


_STATE_DEFAULTS = {'fresh': True, 'probe': 0, 'hold_mib': 0, 'hold_left': 0,
                   'favoured': False}


def _params_from_dict(doc):
    balloon.object_field(doc, 'params')
    fields = {f.name: f for f in dataclasses.fields(DefaultParams)}
    values = {}
    for key in doc:
        if key not in fields:
            continue
        if key == 'threshold':
            values[key] = balloon.ratio_field(doc, key, 'params')
        elif fields[key].type == 'int' or fields[key].type is int:
            values[key] = balloon.int_field(doc, key, 'params')
        else:
            values[key] = balloon.number_field(doc, key, 'params')
    return DefaultParams(**values)


def _vm_from_dict(doc, where):
    base = balloon.vm_from_dict(dict(doc, streak=0), where)
    where = 'VM %r' % base.id
    state = {}
    for key, default in _STATE_DEFAULTS.items():
        if key not in doc:
            state[key] = default
        elif isinstance(default, bool):
            if not isinstance(doc[key], bool):
                balloon.bad_input(where, '"%s" must be true or false' % key)
            state[key] = doc[key]
        else:
            state[key] = balloon.int_field(doc, key, where)
    used = balloon.number_field(doc, 'used_mib', where)
    cache = balloon.number_field(doc, 'cache_mib', where)
    free = balloon.number_field(doc, 'free_mib', where)
    if used + cache + free > base.memory_mib:
        balloon.bad_input(where, 'used + cache + free exceed memory_mib')
    return VmView(id=base.id, memory_mib=base.memory_mib,
                  hit_ratio=base.hit_ratio, cache_mib=cache, free_mib=free,
                  used_mib=used, min_mib=base.min_mib, max_mib=base.max_mib,
                  **state)


def request_from_dict(doc):
    """Validate a ``balloon-plan --policy default`` input document.

    Like the study's input, with per-VM ``cache_mib``, ``free_mib`` and
    ``used_mib`` (the guest's report) instead of ``streak``, the optional
    state fields of :class:`VmView` and optional :class:`DefaultParams`.
    Returns ``(params, vms, free_mib)``.
    """
    balloon.object_field(doc, 'input')
    params = _params_from_dict(doc.get('params', {}))
    free_mib = balloon.int_field(doc, 'free_mib', 'input', default=0)
    raw_vms = doc.get('vms')
    if not isinstance(raw_vms, list):
        balloon.bad_input('input', '"vms" must be a list')
    vms = [_vm_from_dict(balloon.object_field(v, 'vms[%d]' % i),
                         'vms[%d]' % i) for i, v in enumerate(raw_vms)]
    dup = sorted(i for i, n in collections.Counter(
        v.id for v in vms).items() if n > 1)
    if dup:
        balloon.bad_input('input', 'duplicate VM id(s): %s' % ', '.join(dup))
    return params, vms, free_mib


