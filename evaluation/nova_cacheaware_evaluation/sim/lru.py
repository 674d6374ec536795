"""A guest page cache that is really LRU over individual file reads.

Unlike the closed-form model (:mod:`.pagecache`), nothing here assumes a
hit-ratio formula: a :class:`~.access.Stream` yields file numbers, each
read of a whole file is a hit when the file is cached (it becomes the most
recently used) or a miss (it is fetched and cached, evicting the least
recently used file when the cache is full).  A hit costs ``file_mib /
cache_mib_s`` seconds, a miss ``file_mib / disk_mib_s``; reads run back to
back, so how many fit in a step depends on the hits and misses themselves.
A read that overruns a step is charged to the next one.

The cache holds ``floor((memory - process) / file_mib)`` files; ballooning
down evicts least recently used files first (stale content of an old
working set is the oldest, so it goes first, as in a real LRU).

:func:`hit_curve` measures the steady-state hit ratio of a pattern at
several cache sizes by replaying its stream (used by the clairvoyant
oracle, which needs the true curve of every phase, not a formula).
"""

import collections
import random

from nova_cacheaware_evaluation.sim import access


class LruCache:
    """One guest's page cache over a read stream; MiB in, MiB out."""

    BATCH = 2048

    def __init__(self, stream, process_mib, memory_mib, file_mib):
        self.stream = stream
        self.process_mib = process_mib
        self.memory_mib = memory_mib
        self.file_mib = file_mib
        self.files = collections.OrderedDict()
        self.ws_mib = 0.0
        self._buf = []
        self._at = 0
        self._debt = 0.0

    @property
    def capacity(self):
        """MiB the cache may hold (memory minus process memory)."""
        return max(0.0, self.memory_mib - self.process_mib)

    def _slots(self):
        return int(self.capacity // self.file_mib)

    def total_cached(self):
        """Cached MiB (working set and stale alike)."""
        return len(self.files) * self.file_mib

    def free(self):
        """Guest memory used neither by processes nor by the cache."""
        return max(0.0, self.capacity - self.total_cached())

    def set_working_set(self, ws_mib):
        """Start a phase over the first ``ws_mib`` MiB of files."""
        self.ws_mib = float(ws_mib)
        self.stream.start(int(ws_mib // self.file_mib))
        self._buf, self._at, self._debt = [], 0, 0.0

    def set_memory(self, memory_mib):
        """Balloon to ``memory_mib``; the least recently used files go."""
        self.memory_mib = memory_mib
        slots = self._slots()
        pop = self.files.popitem
        while len(self.files) > slots:
            pop(last=False)

    def _next(self, n):
        if self._at >= len(self._buf):
            self._buf, self._at = self.stream.draw(n), 0
        return self._buf, self._at

    def run(self, seconds, disk_mib_s, cache_mib_s):
        """Read for ``seconds``; returns ``(read_mib, miss_mib)``."""
        if self.ws_mib < self.file_mib or seconds <= 0:
            return 0.0, 0.0
        t_hit = self.file_mib / cache_mib_s
        t_miss = self.file_mib / disk_mib_s
        budget = seconds - self._debt
        spent, hits, misses = 0.0, 0, 0
        files, slots = self.files, self._slots()
        touch, pop = files.move_to_end, files.popitem
        while spent < budget:
            want = min(self.BATCH, int((budget - spent) / t_hit) + 1)
            buf, at = self._next(want)
            end = len(buf)
            while at < end and spent < budget:
                x = buf[at]
                at += 1
                if x in files:
                    touch(x)
                    hits += 1
                    spent += t_hit
                else:
                    misses += 1
                    spent += t_miss
                    if slots:
                        files[x] = None
                        if len(files) > slots:
                            pop(last=False)
            self._at = at
        self._debt = spent - budget
        return (hits + misses) * self.file_mib, misses * self.file_mib

    def replay(self, reads):
        """Read ``reads`` files untimed; returns the hits among them."""
        files, slots, hits = self.files, self._slots(), 0
        touch, pop = files.move_to_end, files.popitem
        while reads > 0:
            buf = self.stream.draw(min(self.BATCH, reads))
            if not buf:
                return hits
            reads -= len(buf)
            for x in buf:
                if x in files:
                    touch(x)
                    hits += 1
                elif slots:
                    files[x] = None
                    if len(files) > slots:
                        pop(last=False)
        return hits

    def warm(self):
        """Fill the cache to its steady state at once (for the oracle)."""
        self.files.clear()
        self.replay(self.warm_reads())
        self._buf, self._at, self._debt = [], 0, 0.0

    def warm_reads(self):
        """Untimed reads that bring a cold cache to its steady state."""
        ws = int(self.ws_mib // self.file_mib)
        if not ws:
            return 0
        spec = self.stream.spec
        extra = spec.hot_reads if spec.pattern == 'hotcold' else 0
        return 3 * max(self._slots(), ws) + extra


#: Cache sizes, as fractions of the working set, at which the oracle
#: measures the hit-ratio curve (linear in between, flat after the last).
CURVE_POINTS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0,
                1.25, 1.5)


def hit_curve(spec, ws_files, files, measure_reads=40000, seed=0):
    """Steady-state LRU hit ratio of ``spec`` at each of CURVE_POINTS.

    Returns ``[(cache_files, hit_ratio)]``.  Each point is a fresh cache of
    that many files warmed by :meth:`LruCache.warm_reads` and then measured
    over ``measure_reads`` reads of the same stream.
    """
    out = []
    for frac in CURVE_POINTS:
        slots = int(round(frac * ws_files))
        if slots <= 0:
            out.append((0, 0.0))
            continue
        stream = access.Stream(spec, files, random.Random(seed))
        cache = LruCache(stream, 0, slots, 1)
        cache.set_working_set(ws_files)
        cache.replay(cache.warm_reads())
        out.append((slots, cache.replay(measure_reads) / measure_reads))
    return out


def interpolate(curve, cache_files):
    """Hit ratio at ``cache_files`` on a :func:`hit_curve`, linearly."""
    if cache_files <= curve[0][0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if cache_files <= x1:
            if x1 == x0:
                return y1
            return y0 + (y1 - y0) * (cache_files - x0) / (x1 - x0)
    return curve[-1][1]
