"""An analytic model of one guest's page cache under study 002's load.

The load: a benchmark reads whole 1 MiB files chosen uniformly at random
among the first ``W`` MiB of files (its working set), back to back; a hit
costs ``1 / cache_mib_s`` seconds per MiB, a miss ``1 / disk_mib_s``.  The
page cache is LRU and holds at most ``C = memory - process`` MiB.

Closed forms (m = miss ratio = 1 - h/W, h = MiB of the working set cached):

* steady state: h = min(C, W), hit ratio min(1, C/W);
* warm-up: every miss caches one more file of the working set, so
  ``dh = m dR`` for R MiB read, hence ``m(R) = m0 * exp(-R / W)`` (the
  coupon-collector curve) and the time to read R MiB is
  ``W * (ln(m0/m1) / cache + (m0 - m1) * (1/disk - 1/cache))``;
* once h reaches C, misses evict the least recently used working-set file
  and h stays at C.

Cached content is kept per *band* of the file index (the bands are cut at
every working-set size of the scenario), uniformly spread inside a band, so
that when the working set changes the part of the old one that lies inside
the new one is still cached; content outside the working set is older than
anything read since and is evicted first (LRU).  Shrinking the memory
evicts that stale content first, then working-set content in proportion.
"""

import bisect
import math

_EPS = 1e-12


class PageCache:
    """Page cache of one guest: bands of cached MiB plus read statistics."""

    def __init__(self, band_edges_mib, process_mib, memory_mib):
        # band_edges_mib: sorted cut points; band b spans edges[b]..[b+1].
        self.edges = list(band_edges_mib)
        self.size = [b - a for a, b in zip(self.edges, self.edges[1:])]
        self.cached = [0.0] * len(self.size)
        self.process_mib = process_mib
        self.memory_mib = memory_mib
        self.ws_mib = 0.0
        self._nband = 0

    # ---------------------------------------------------------- state
    @property
    def capacity(self):
        """MiB the cache may hold (memory minus process memory)."""
        return max(0.0, self.memory_mib - self.process_mib)

    def in_ws(self):
        """MiB of the current working set that are cached (h)."""
        return sum(self.cached[:self._nband])

    def total_cached(self):
        """All cached MiB, working set and stale."""
        return sum(self.cached)

    def free(self):
        """Guest memory used neither by processes nor by the cache."""
        return max(0.0, self.capacity - self.total_cached())

    def hit_ratio(self):
        """Instantaneous hit ratio h/W (1.0 with no working set)."""
        if self.ws_mib <= 0:
            return 1.0
        return min(1.0, self.in_ws() / self.ws_mib)

    def warm(self):
        """Fill the working set up to capacity at once (for the oracle)."""
        self.cached = [0.0] * len(self.cached)
        room = self.capacity
        for b in range(self._nband):
            self.cached[b] = min(self.size[b], room * self.size[b]
                                 / max(self.ws_mib, 1e-9))

    # ------------------------------------------------------ transitions
    def set_working_set(self, ws_mib):
        """Start a phase reading uniformly over the first ``ws_mib`` MiB."""
        if ws_mib > 0 and ws_mib not in self.edges:
            raise ValueError('working set %r is not a band edge' % ws_mib)
        self.ws_mib = float(ws_mib)
        self._nband = bisect.bisect_left(self.edges, ws_mib)

    def set_memory(self, memory_mib):
        """Balloon to ``memory_mib``; evict stale content first if needed."""
        self.memory_mib = memory_mib
        excess = self.total_cached() - self.capacity
        if excess <= _EPS:
            return
        stale = list(range(self._nband, len(self.size)))
        excess = self._evict(stale, excess)
        if excess > _EPS:
            self._evict(list(range(self._nband)), excess)

    def _evict(self, bands, amount):
        total = sum(self.cached[b] for b in bands)
        if total <= _EPS:
            return amount
        take = min(amount, total)
        for b in bands:
            self.cached[b] -= take * self.cached[b] / total
            self.cached[b] = max(0.0, self.cached[b])
        return amount - take

    def _fill(self, amount):
        # Misses land in band b in proportion to its uncached part; room
        # comes from free memory, then stale bands (older under LRU).
        bands = range(self._nband)
        holes = [self.size[b] - self.cached[b] for b in bands]
        total = sum(holes)
        if total <= _EPS or amount <= _EPS:
            return
        amount = min(amount, total)
        over = self.total_cached() + amount - self.capacity
        if over > _EPS:
            self._evict(list(range(self._nband, len(self.size))), over)
        for b, hole in zip(bands, holes):
            self.cached[b] += amount * hole / total

    def _churn(self, amount):
        # Steady state with a full cache: a miss evicts a working-set file
        # (the LRU one, in proportion to what each band holds) and caches
        # the missed one (in proportion to what each band lacks).
        bands = range(self._nband)
        h = sum(self.cached[b] for b in bands)
        holes = [self.size[b] - self.cached[b] for b in bands]
        hole_total = sum(holes)
        if h <= _EPS or hole_total <= _EPS:
            return
        amount = min(amount, h, hole_total)
        snapshot = [self.cached[b] for b in bands]
        for b, hole in zip(bands, holes):
            self.cached[b] += amount * (hole / hole_total
                                        - snapshot[b] / h)
            self.cached[b] = min(self.size[b], max(0.0, self.cached[b]))

    def run(self, seconds, disk_mib_s, cache_mib_s):
        """Read for ``seconds``; returns ``(read_mib, miss_mib)``."""
        w = self.ws_mib
        if w <= 0 or seconds <= 0:
            return 0.0, 0.0
        h0 = self.in_ws()
        cap = min(self.capacity, w)
        k = 1.0 / disk_mib_s - 1.0 / cache_mib_s
        m0 = max(0.0, 1.0 - h0 / w)
        if h0 >= cap - _EPS:
            # Full: steady state at the current ratio.
            x = 1.0 / ((1 - m0) / cache_mib_s + m0 / disk_mib_s)
            read = x * seconds
            self._churn(read * m0)
            return read, read * m0
        m_cap = 1.0 - cap / w
        t_fill = _time_to(m0, m_cap, w, cache_mib_s, k)
        if t_fill <= seconds:
            read = w * math.log(m0 / m_cap)
            miss = (m0 - m_cap) * w
            self._fill(miss)
            rest = seconds - t_fill
            x = 1.0 / ((1 - m_cap) / cache_mib_s + m_cap / disk_mib_s)
            self._churn(x * rest * m_cap)
            return read + x * rest, miss + x * rest * m_cap
        m1 = _solve_m(m0, max(m_cap, 0.0), w, cache_mib_s, k, seconds)
        miss = (m0 - m1) * w
        self._fill(miss)
        return w * math.log(m0 / m1), miss


def _time_to(m0, m1, w, cache_mib_s, k):
    """Seconds for the miss ratio to fall from m0 to m1.

    m1 == 0 means "the whole working set is cached", which the coupon
    collector never quite reaches: infinite time.
    """
    if m1 <= 0:
        return math.inf
    return w * (math.log(m0 / m1) / cache_mib_s + (m0 - m1) * k)


def _solve_m(m0, m_lo, w, cache_mib_s, k, seconds):
    """Miss ratio after ``seconds`` of warm-up from m0 (bisection in ln m)."""
    lo = math.log(max(m_lo, 1e-300))
    hi = math.log(m0)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _time_to(m0, math.exp(mid), w, cache_mib_s, k) > seconds:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10:
            break
    return math.exp(hi)
