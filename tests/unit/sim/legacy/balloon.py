"""The balloon simulator's scenario walker before the declared schema."""
# flake8: noqa

import math

from nova_cacheaware import exception
from nova_cacheaware.sim.balloon import DEFAULTS
from nova_cacheaware.sim.balloon import MAX_TICKS
from nova_cacheaware.sim.balloon import Scenario
from tests.unit.sim.legacy import access as old_access
from tests.unit.sim.legacy import estimator as old_estimator

def _bad(what):
    raise exception.InvalidInput(reason='scenario: %s' % what)


def _num(doc, key, kind=float, minimum=0, strict=False):
    value = doc[key]
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value)):
        _bad('"%s" must be a number, not %r' % (key, value))
    if kind is int and value != int(value):
        _bad('"%s" must be an integer (%r)' % (key, value))
    if value < minimum or (strict and value == minimum):
        _bad('"%s" must be %s %s (%r)' % (key, '>' if strict else '>=',
                                          minimum, value))
    return kind(value)


def scenario_from_dict(doc):
    """Validate a scenario document, filling in the study's defaults."""
    merged = _with_defaults(doc)
    out = {key: _num(merged, key, *NUMBER_FIELDS[key])
           for key in NUMBER_FIELDS}
    if out['threshold'] > 1:
        _bad('"threshold" must be between 0 and 1')
    if out['disk_mib_s'] > out['cache_mib_s']:
        _bad('"disk_mib_s" must not exceed "cache_mib_s"')
    ws = merged['working_sets']
    if (not isinstance(ws, list) or not ws
            or any(isinstance(w, bool) or not isinstance(w, int)
                   or not 0 <= w <= out['files'] for w in ws)):
        _bad('"working_sets" must be a non-empty list of file counts '
             'between 0 and "files"')
    out['working_sets'] = list(ws)
    _memory_bounds(merged, out)
    if out['phase_s'] < out['tick_s']:
        _bad('"phase_s" must be at least "tick_s"')
    if out['duration_s'] / out['tick_s'] > MAX_TICKS:
        _bad('"duration_s" / "tick_s" must be at most %d ticks' % MAX_TICKS)
    out['access'] = _access(merged['access'], out['vms'])
    out['estimator'] = old_estimator.estimator_from_dict(
        merged['estimator'], out['vms'])
    return Scenario(**out)


#: The scenario's plain numbers: ``(kind, minimum, strict)`` per key, in
#: the order they are checked (the first bad one is reported).
NUMBER_FIELDS = {
    'seed': (int, 0, False), 'duration_s': (float, 0, True),
    'phase_s': (float, 0, True), 'host_memory_mib': (int, 1, False),
    'vms': (int, 1, False), 'process_mib': (int, 0, False),
    'files': (int, 1, False), 'file_mib': (int, 1, False),
    'disk_mib_s': (float, 0, True), 'cache_mib_s': (float, 0, True),
    'tick_s': (float, 0, True), 'threshold': (float, 0, False),
    'alpha': (float, 0, False), 'beta': (float, 0, False),
    'interval_s': (float, 0, True), 'period_s': (float, 0, True)}


def _with_defaults(doc):
    """The document over the study's defaults, ``params`` flattened in."""
    if not isinstance(doc, dict):
        _bad('must be a JSON object')
    unknown = set(doc) - set(DEFAULTS)
    if unknown:
        _bad('unknown key(s): %s' % ', '.join(sorted(unknown)))
    merged = dict(DEFAULTS)
    merged.update(doc)
    params = dict(DEFAULTS['params'])
    if not isinstance(merged['params'], dict):
        _bad('"params" must be an object')
    unknown = set(merged['params']) - set(params)
    if unknown:
        _bad('unknown params key(s): %s' % ', '.join(sorted(unknown)))
    params.update(merged['params'])
    merged.update(params)
    del merged['params']
    return merged


def _memory_bounds(merged, out):
    """Fill ``min_mib``, ``committed_as_mib`` and ``max_mib`` into ``out``."""
    for key, default in (
            ('min_mib', out['process_mib'] + 128),
            ('committed_as_mib', out['process_mib'])):
        out[key] = (default if merged[key] is None
                    else _num(merged, key, int))
    default_max = out['host_memory_mib'] - (out['vms'] - 1) * out['min_mib']
    out['max_mib'] = (default_max if merged['max_mib'] is None
                      else _num(merged, 'max_mib', int))
    if out['min_mib'] * out['vms'] > out['host_memory_mib']:
        _bad('vms * min_mib exceeds host_memory_mib')
    if not out['min_mib'] <= out['host_memory_mib'] // out['vms'] \
            <= out['max_mib']:
        _bad('the static split must lie in [min_mib, max_mib]')


def _access(doc, vms):
    if doc is None:
        return None
    if isinstance(doc, list):
        if len(doc) != vms:
            _bad('"access" must be one pattern or a list of %d' % vms)
        return tuple(old_access.access_from_dict(d, 'scenario: access[%d]'
                                                 % i)
                     for i, d in enumerate(doc))
    spec = old_access.access_from_dict(doc, 'scenario: access')
    return (spec,) * vms
