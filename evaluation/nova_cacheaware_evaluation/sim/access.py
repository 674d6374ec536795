"""File-access patterns for the LRU page-cache model (:mod:`.lru`).

A pattern turns a phase's working set (the first ``W`` files, as in study
002) into an endless stream of file numbers in ``0 .. files - 1``:

``uniform``
    every file of the working set equally likely (study 002's load);
``zipf``
    file ``k`` (0-based) with probability proportional to
    ``1 / (k + 1) ** exponent``: low-numbered files are hot, and they stay
    hot when the working set changes size;
``hotcold``
    ``hot_share`` of the reads go uniformly to a hot region of
    ``hot_files * W`` consecutive files (modulo W), the rest uniformly to
    the other files of the working set; the hot region jumps to a new
    random place every ``hot_reads`` reads (hot and cold phases of data);
``scan``
    the working set read in order, over and over (a batch job; the classic
    case where LRU keeps nothing useful unless the whole set fits);
``scan_mix``
    ``zipf`` reads, except that ``scan_share`` of the reads continue a
    sequential scan over *all* files (a backup or report job polluting
    the cache with data read once);
``moving``
    uniform reads over a window of W files that slides one file every
    ``drift_reads`` reads (new data arriving, old data going cold).
"""

import bisect
import dataclasses
import functools
import itertools

from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

PATTERNS = ('uniform', 'zipf', 'hotcold', 'scan', 'scan_mix', 'moving')
DEFAULTS = {'pattern': 'uniform', 'exponent': 0.9, 'hot_files': 0.2,
            'hot_share': 0.8, 'hot_reads': 20000, 'scan_share': 0.1,
            'drift_reads': 10}


@dataclasses.dataclass(frozen=True)
class AccessSpec:
    """A validated pattern; see the module docstring for the fields."""

    pattern: str = 'uniform'
    exponent: float = 0.9
    hot_files: float = 0.2
    hot_share: float = 0.8
    hot_reads: int = 20000
    scan_share: float = 0.1
    drift_reads: int = 10

    def label(self):
        """Short name for tables (``zipf-0.9``, ``scan_mix`` ...)."""
        if self.pattern == 'zipf':
            return 'zipf-%g' % self.exponent
        return self.pattern


def _ranged(lo, hi, kind=float):
    """A finite number in ``lo .. hi`` (whole for ``int``) as ``kind``."""
    return schema.sim_number(kind, lambda value: lo <= value <= hi,
                             'in %s..%s' % (lo, hi))


#: ``{key: (field, default)}``; absent keys take :data:`DEFAULTS`.
ACCESS_SCHEMA = {
    'pattern': (schema.Check(
        lambda value: value in PATTERNS,
        '%%(where)s: unknown "%%(key)s" %%(value)r (one of %s)'
        % ', '.join(PATTERNS)), DEFAULTS['pattern']),
    'exponent': (_ranged(0, 5), DEFAULTS['exponent']),
    'hot_files': (_ranged(0, 1), DEFAULTS['hot_files']),
    'hot_share': (_ranged(0, 1), DEFAULTS['hot_share']),
    'hot_reads': (_ranged(1, 10 ** 9, int), DEFAULTS['hot_reads']),
    'scan_share': (_ranged(0, 1), DEFAULTS['scan_share']),
    'drift_reads': (_ranged(1, 10 ** 9, int), DEFAULTS['drift_reads']),
}


def _invalid(message):
    return exception.InvalidInput(reason=message)


def access_from_dict(doc, where='access'):
    """Validate one pattern object (missing keys take ``DEFAULTS``)."""
    with schema.reraise(_invalid):
        schema.obj(doc, where)
        schema.only_keys(doc, ACCESS_SCHEMA, where,
                         '%(where)s: unknown key(s): %(keys)s')
        return AccessSpec(**schema.fields(doc, ACCESS_SCHEMA, where))


@functools.lru_cache(maxsize=64)
def zipf_cumulative(n, exponent):
    """Cumulative Zipf weights of files ``0 .. n - 1`` (a tuple)."""
    return tuple(itertools.accumulate(1.0 / (k + 1) ** exponent
                                      for k in range(n)))


class Stream:
    """The endless read stream of one VM (seeded by the caller's rng)."""

    def __init__(self, spec, files, rng):
        self.spec = spec
        self.files = files
        self.rng = rng
        self.ws = 0
        self.pos = 0            # scan position / window offset
        self.reads = 0          # reads since the hot region last moved
        self.hot_at = 0
        self._cum = ()

    def start(self, ws_files):
        """Begin a phase over the first ``ws_files`` files."""
        self.ws = ws_files
        self.reads = 0
        if ws_files <= 0:
            return
        if self.spec.pattern in ('zipf', 'scan_mix'):
            self._cum = zipf_cumulative(ws_files, self.spec.exponent)
        self.hot_at = self.rng.randrange(ws_files)
        if self.spec.pattern == 'scan':
            self.pos %= ws_files

    def draw(self, n):
        """The next ``n`` file numbers (empty when the working set is 0)."""
        if self.ws <= 0 or n <= 0:
            return []
        return getattr(self, '_draw_' + self.spec.pattern)(n)

    def _draw_uniform(self, n):
        return self.rng.choices(range(self.ws), k=n)

    def _draw_zipf(self, n):
        cum = self._cum
        total = cum[-1]
        rnd = self.rng.random
        top = self.ws - 1
        return [min(top, bisect.bisect(cum, rnd() * total))
                for _ in range(n)]

    def _draw_hotcold(self, n):
        w, s = self.ws, self.spec
        hot = min(w, max(1, int(round(s.hot_files * w))))
        cold = w - hot
        rnd, out = self.rng.random, []
        for _ in range(n):
            if self.reads >= s.hot_reads:
                self.reads = 0
                self.hot_at = self.rng.randrange(w)
            self.reads += 1
            if cold == 0 or rnd() < s.hot_share:
                k = int(rnd() * hot)
            else:
                k = hot + int(rnd() * cold)
            out.append((self.hot_at + k) % w)
        return out

    def _draw_scan(self, n):
        w = self.ws
        start = self.pos
        self.pos = (start + n) % w
        return [(start + k) % w for k in range(n)]

    def _draw_scan_mix(self, n):
        out = self._draw_zipf(n)
        rnd, share, files = self.rng.random, self.spec.scan_share, self.files
        for i in range(n):
            if rnd() < share:
                out[i] = self.pos
                self.pos = (self.pos + 1) % files
        return out

    def _draw_moving(self, n):
        w, files, drift = self.ws, self.files, self.spec.drift_reads
        rnd, out = self.rng.random, []
        for _ in range(n):
            self.reads += 1
            if self.reads >= drift:
                self.reads = 0
                self.pos = (self.pos + 1) % files
            out.append((self.pos + int(rnd() * w)) % files)
        return out
