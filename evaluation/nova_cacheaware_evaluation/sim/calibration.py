"""Contention parameters from a measurement: the probe's JSON.

Where the cache simulator's same-domain co-run slowdown comes from: a
memory-bound vCPU's CPI is multiplied by ``1 + dirty_all * n`` while ``n``
other memory-bound VMs run in its (All-share) domain
(:mod:`.contention`). By default ``dirty_all`` is 0.12,
read off study 000's fig. 3.13 (Honbashi et al., Q6600 under Xen 3.3: Clean
vs Dirty "10-odd %" under All share).

``nova-cacheaware probe`` measures the same thing on a real host: one
memory-bound kernel alone, then with a second copy on another CPU of its
cache domain (one other memory-bound program: ``n = 1``). So::

    dirty_all = same-domain slowdown - 1      (floored at 0)

where the slowdown is, by default, the geometric mean of the probe's
same-domain cells over every kernel and working set it ran (a VM is
neither a pure chase nor a pure stream, nor of one size), or one cell
chosen as ``KERNEL:FACTOR``.

What the probe cannot give, and stays from study 000: ``split_mem`` (3.2,
fig. 3.4/3.8: a VM split over two domains), ``dirty_partial`` (1.0, fig.
3.13), ``cpi_mem``/``cpi_cpu``/``split_cpu`` and ``io_busy``. A
different-domain slowdown measured by the probe (shared memory bandwidth)
has no parameter in the model; it is reported, not used.
"""

import dataclasses
import math

from nova_cacheaware.contracts import schema
from nova_cacheaware import exception
from nova_cacheaware_evaluation.probe import analysis as cp

FORMAT_VERSION = 1
STUDY_000 = ('study 000 (Honbashi, Yamada, Yoshida, Kono: L2-cache-aware VM '
             'scheduling, Core 2 Quad Q6600, Xen 3.3)')
#: Where each default parameter of :class:`contention.Model` comes from.
DEFAULT_SOURCES = {
    'cpi_mem': STUDY_000 + ', fig. 3.4: All-share CPI about 0.5',
    'cpi_cpu': 'normalisation (1.0), not a measurement',
    'split_mem': STUDY_000 + ', fig. 3.4/3.8: Partial-share CPI about 3.2',
    'split_cpu': STUDY_000 + ', fig. 3.10: CPU- and I/O-bound under 5 %',
    'dirty_all': STUDY_000 + ', fig. 3.13: Clean vs Dirty 10-odd % under '
                             'All share (read as 0.12)',
    'dirty_partial': STUDY_000 + ', fig. 3.13: Clean vs Dirty 2x under '
                                 'Partial share',
    'io_busy': 'assumption (30 % of slices runnable), not a measurement',
}


def _bad(reason):
    return exception.InvalidInput(reason='calibration: ' + reason)


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Model parameters measured by a probe, and where each came from."""

    fields: dict
    sources: dict
    unused: tuple  # different-domain cells: measured, not modelled

    def apply(self, model):
        """``model`` with the measured fields replaced."""
        return dataclasses.replace(model, **self.fields)

    def to_dict(self, model):
        """Every parameter of ``model``: value and source (JSON-ready)."""
        return {
            'parameters': {
                name: {'value': getattr(model, name),
                       'source': self.sources.get(name,
                                                  DEFAULT_SOURCES[name])}
                for name in DEFAULT_SOURCES},
            'not_modelled': list(self.unused)}


def is_positive(value):
    """A finite number (not a bool) > 0 that a float can hold.

    An int beyond a float's range made the old walker crash in
    ``math.isfinite``; it is refused instead.
    """
    try:
        return schema.is_number(value) and math.isfinite(value) and value > 0
    except OverflowError:
        return False


def _one_of(choices):
    return schema.Check(lambda value: value in choices,
                        '%%(where)s.%%(key)s must be one of %s'
                        % ', '.join(choices))


_POSITIVE = schema.Check(is_positive,
                         '%(where)s.%(key)s must be a positive number',
                         convert=float)
#: One cell of the probe's matrix; an absent key is checked as null.
CELL = schema.Obj({
    'kernel': (_one_of(cp.KERNELS), schema.AS_NULL),
    'placement': (_one_of(cp.CO_RUNS), schema.AS_NULL),
    'factor': (_POSITIVE, schema.AS_NULL),
    'slowdown': (_POSITIVE, schema.AS_NULL),
    'low': (_POSITIVE, schema.AS_NULL),
    'high': (_POSITIVE, schema.AS_NULL),
}, message='%(where)s must be an object', make=cp.Cell)
#: ``format_version`` compares equal to :data:`FORMAT_VERSION`.
VERSION = schema.Check(
    lambda value: value == FORMAT_VERSION,
    'format_version must be %d (nova-cacheaware probe --format json), '
    'not %%(value)r' % FORMAT_VERSION)
PROBE = schema.Check(schema.is_object, 'must be the JSON object of '
                     'nova-cacheaware probe --format json')
MATRIX = schema.Check(lambda value: isinstance(value, list) and value,
                      '"matrix" must be a non-empty list')


def _cells(doc):
    """The probe document's matrix as :class:`cp.Cell` objects."""
    with schema.reraise(_bad):
        PROBE.check(doc, '', '')
        VERSION.check(doc.get('format_version'), 'format_version', '')
        cells = MATRIX.check(doc.get('matrix'), 'matrix', '')
        return [CELL.check(c, 'matrix', 'matrix[%d]' % n)
                for n, c in enumerate(cells)]


def parse_cell(text):
    """``'chase:0.5'`` -> ``('chase', 0.5)``; raises InvalidInput."""
    kernel, _, factor = (text or '').partition(':')
    try:
        value = float(factor)
    except ValueError:
        value = None
    if kernel not in cp.KERNELS or value is None or not value > 0:
        raise _bad('cell must be KERNEL:FACTOR (e.g. chase:0.5), not %r'
                   % text)
    return kernel, value


def from_probe(doc, name='probe', cell=None):
    """The :class:`Calibration` of a probe document.

    ``cell``: an optional ``(kernel, factor)``. Raises InvalidInput naming
    what is wrong.
    """
    cells = _cells(doc)
    same = [c for c in cells if c.placement == cp.SAME]
    if cell is not None:
        same = [c for c in same if (c.kernel, c.factor) == cell]
        if not same:
            raise _bad('%s has no same-domain cell %s:%g' % (
                name, cell[0], cell[1]))
    if not same:
        raise _bad('%s has no same-domain co-run (its host had no second '
                   'CPU in the domain)' % name)
    slowdown = math.exp(sum(math.log(c.slowdown) for c in same) / len(same))
    value = round(max(0.0, slowdown - 1.0), 4)
    used = ', '.join('%s %gx %.3f' % (c.kernel, c.factor, c.slowdown)
                     for c in same)
    source = ('measured: %s (%s, load %s): same-domain slowdown %.3f '
              '(geometric mean of %s) - 1' % (
                  name, doc.get('date', 'undated'),
                  _load(doc), slowdown, used))
    unused = tuple('%s %gx different-domain slowdown %.3f' % (
        c.kernel, c.factor, c.slowdown)
        for c in cells if c.placement == cp.DIFFERENT)
    return Calibration(fields={'dirty_all': value},
                       sources={'dirty_all': source}, unused=unused)


def _load(doc):
    load = doc.get('loadavg_before')
    if (isinstance(load, list) and load
            and isinstance(load[0], (int, float))):
        return '%.2f' % load[0]
    return 'unknown'


def noise_sigma(doc):
    """Per-sample CPI noise measured by a probe: log-normal sigmas.

    The standard deviation of ``log(ns per line)`` over the ``alone``
    samples of each (kernel, working set) cell of ``doc`` (one probe's
    JSON, ``runs`` holding the samples). Returns ``{'median': ..., 'max':
    ..., 'cells': n}`` over the cells. Raises InvalidInput when the
    document holds no alone samples.
    """
    cells = {}
    for s in doc.get('runs', []) if isinstance(doc, dict) else ():
        if not isinstance(s, dict) or s.get('placement') != cp.ALONE:
            continue
        values = [v for v in s.get('ns_per_line', ())
                  if isinstance(v, (int, float)) and v > 0]
        cells.setdefault((s.get('kernel'), s.get('factor')),
                         []).extend(values)
    sigmas = sorted(_log_sd(v) for v in cells.values() if len(v) > 1)
    if not sigmas:
        raise _bad('the probe document holds no alone samples ("runs")')
    return {'median': round(sigmas[len(sigmas) // 2], 4),
            'max': round(sigmas[-1], 4), 'cells': len(sigmas)}


def _log_sd(values):
    logs = [math.log(v) for v in values]
    mean = sum(logs) / len(logs)
    return math.sqrt(sum((x - mean) ** 2 for x in logs) / len(logs))
