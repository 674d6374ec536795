"""The access pattern's walker before the declared schema."""
# flake8: noqa

import math

from nova_cacheaware import exception
from nova_cacheaware.sim.access import AccessSpec
from nova_cacheaware.sim.access import DEFAULTS
from nova_cacheaware.sim.access import PATTERNS

def _bad(where, what):
    raise exception.InvalidInput(reason='%s: %s' % (where, what))


def _number(doc, key, where, lo, hi, kind=float):
    value = doc[key]
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value)):
        _bad(where, '"%s" must be a number, not %r' % (key, value))
    if kind is int and value != int(value):
        _bad(where, '"%s" must be an integer (%r)' % (key, value))
    if not lo <= value <= hi:
        _bad(where, '"%s" must be in %s..%s (%r)' % (key, lo, hi, value))
    return kind(value)


def access_from_dict(doc, where='access'):
    """Validate one pattern object (missing keys take ``DEFAULTS``)."""
    if not isinstance(doc, dict):
        _bad(where, 'must be a JSON object')
    unknown = set(doc) - set(DEFAULTS)
    if unknown:
        _bad(where, 'unknown key(s): %s' % ', '.join(sorted(unknown)))
    merged = dict(DEFAULTS, **doc)
    if merged['pattern'] not in PATTERNS:
        _bad(where, 'unknown "pattern" %r (one of %s)'
             % (merged['pattern'], ', '.join(PATTERNS)))
    return AccessSpec(
        pattern=merged['pattern'],
        exponent=_number(merged, 'exponent', where, 0, 5),
        hot_files=_number(merged, 'hot_files', where, 0, 1),
        hot_share=_number(merged, 'hot_share', where, 0, 1),
        hot_reads=_number(merged, 'hot_reads', where, 1, 10 ** 9, int),
        scan_share=_number(merged, 'scan_share', where, 0, 1),
        drift_reads=_number(merged, 'drift_reads', where, 1, 10 ** 9, int))
