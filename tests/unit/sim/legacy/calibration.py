"""The probe matrix walker of calibration before the declared schema."""
# flake8: noqa

import math

from nova_cacheaware import exception
from nova_cacheaware.policy import contention_probe as cp
from nova_cacheaware.sim.calibration import FORMAT_VERSION


def _bad(reason):
    return exception.InvalidInput(reason='calibration: ' + reason)


def _number(value, where):
    if not (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0):
        raise _bad('%s must be a positive number' % where)
    return float(value)


def _cells(doc):
    if not isinstance(doc, dict):
        raise _bad('must be the JSON object of nova-cacheaware probe '
                   '--format json')
    if doc.get('format_version') != FORMAT_VERSION:
        raise _bad('format_version must be %d (nova-cacheaware probe '
                   '--format json), not %r'
                   % (FORMAT_VERSION, doc.get('format_version')))
    cells = doc.get('matrix')
    if not isinstance(cells, list) or not cells:
        raise _bad('"matrix" must be a non-empty list')
    out = []
    for n, c in enumerate(cells):
        if not isinstance(c, dict):
            raise _bad('matrix[%d] must be an object' % n)
        if c.get('kernel') not in cp.KERNELS:
            raise _bad('matrix[%d].kernel must be one of %s'
                       % (n, ', '.join(cp.KERNELS)))
        if c.get('placement') not in cp.CO_RUNS:
            raise _bad('matrix[%d].placement must be one of %s'
                       % (n, ', '.join(cp.CO_RUNS)))
        out.append(cp.Cell(
            kernel=c['kernel'], placement=c['placement'],
            **{k: _number(c.get(k), 'matrix[%d].%s' % (n, k))
               for k in ('factor', 'slowdown', 'low', 'high')}))
    return out
