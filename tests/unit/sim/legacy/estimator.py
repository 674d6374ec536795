"""The helper-error model's walker before the declared schema."""
# flake8: noqa

import math

from nova_cacheaware import exception
from nova_cacheaware.sim.estimator import DEFAULTS
from nova_cacheaware.sim.estimator import EstimatorModel

def _bad(what):
    raise exception.InvalidInput(reason='scenario: "estimator": %s' % what)


def _nonneg(doc, key):
    value = doc[key]
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < 0):
        _bad('"%s" must be a non-negative number, not %r' % (key, value))
    return float(value)


def estimator_from_dict(doc, vms):
    """Validate the scenario's ``estimator`` object (None: exact ratios)."""
    if doc is None:
        return EstimatorModel()
    if not isinstance(doc, dict):
        _bad('must be a JSON object')
    unknown = set(doc) - set(DEFAULTS)
    if unknown:
        _bad('unknown key(s): %s' % ', '.join(sorted(unknown)))
    merged = dict(DEFAULTS, **doc)
    blind = merged['blind_vms']
    if (not isinstance(blind, list)
            or any(isinstance(v, bool) or not isinstance(v, int)
                   or not 0 <= v < vms for v in blind)):
        _bad('"blind_vms" must be a list of VM numbers 0..%d' % (vms - 1))
    sample = merged['sample_s']
    if sample is not None:
        sample = _nonneg(merged, 'sample_s')
        if sample <= 0:
            _bad('"sample_s" must be positive')
    return EstimatorModel(nonfile_mib_s=_nonneg(merged, 'nonfile_mib_s'),
                          readahead=_nonneg(merged, 'readahead'),
                          blind_vms=tuple(sorted(set(blind))),
                          sample_s=sample,
                          cache_extra_mib=_nonneg(merged, 'cache_extra_mib'))
