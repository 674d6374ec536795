"""The contention probe's pure logic: what to run, and what it measured.

``nova-cacheaware probe`` (:mod:`.runner` does the
processes, timing and affinity) runs a memory-bound kernel on one CPU of a
cache domain, three ways:

``alone``
    nothing else of ours runs;
``same``
    a second copy runs on another CPU of the same cache domain (two
    memory-bound VMs in one domain: study 000's *Dirty*);
``different``
    the second copy runs on a CPU of another cache domain (what cache-aware
    placement does instead); only where the host has two or more domains.

Every placement is repeated; one run gives several timed samples of
nanoseconds per cache line touched. This module turns those samples into a
slowdown matrix and a verdict, with no I/O:

1. :func:`working_sets`: the working-set sizes, as factors of the domain's
   cache size, rounded down to whole pages.
2. :func:`choose_cpus`: which CPUs to use (numbered steps in its docstring).
3. :func:`summarise`: median, lowest, highest and relative spread of a
   sample; :func:`select_samples` drops the samples during which the kernel
   ran less than a given share of the wall time (other processes ran on its
   CPU and evicted its cache).
4. :func:`slowdown_matrix`: per kernel, working set and co-run placement,
   ``median(co-run) / median(alone)`` and its noise band
   ``[min(co-run) / max(alone), max(co-run) / min(alone)]``: the band is as
   wide as everything the repetitions disagreed on.
5. :func:`verdict`: cache-aware placement pays off when, for some kernel and
   working set, the same-domain co-run is slower than the different-domain
   co-run beyond the noise (the bands do not overlap) and by at least
   ``min_gain`` (5 % by default: study 000 called differences under 5 %
   negligible for CPU- and I/O-bound VMs).
"""

import dataclasses
import typing as ty

from nova_cacheaware import exception

ALONE = 'alone'
SAME = 'same'
DIFFERENT = 'different'
PLACEMENTS = (ALONE, SAME, DIFFERENT)
CO_RUNS = (SAME, DIFFERENT)
KERNELS = ('chase', 'stream')
#: Working sets are whole pages (and so whole 64-byte cache lines).
PAGE = 4096
#: The default working sets: half the cache (two copies together just fill
#: it) and twice the cache (misses alone too).
DEFAULT_FACTORS = (0.5, 2.0)
DEFAULT_MIN_GAIN = 0.05

PAYS_OFF = 'pays-off'
NO_BENEFIT = 'no-benefit'
SINGLE_DOMAIN = 'single-domain'


# --------------------------------------------------------------------------
# 1. Working sets

def working_sets(cache_bytes, factors=DEFAULT_FACTORS):
    """``((factor, bytes), ...)``: each factor of ``cache_bytes``, in pages.

    Sizes are rounded down to a whole :data:`PAGE`, and are at least one
    page. Raises :class:`InvalidInput` for a cache size or a factor that is
    not positive, or for two factors that give the same size.
    """
    if not isinstance(cache_bytes, int) or cache_bytes <= 0:
        raise exception.InvalidInput(
            reason='cache size must be a positive number of bytes, not %r'
                   % (cache_bytes,))
    sets = []
    for factor in factors:
        if not factor > 0:
            raise exception.InvalidInput(
                reason='working-set factors must be > 0, not %r' % factor)
        size = max(PAGE, int(cache_bytes * factor) // PAGE * PAGE)
        if any(size == s for _, s in sets):
            raise exception.InvalidInput(
                reason='working-set factors %s give the same size (%d bytes)'
                       % (', '.join(map(str, factors)), size))
        sets.append((float(factor), size))
    return tuple(sets)


# --------------------------------------------------------------------------
# 2. CPUs

@dataclasses.dataclass(frozen=True)
class ProbeCpus:
    """The CPUs of a probe: the measured one and its two co-runner spots.

    ``same`` is None when the domain has one CPU; ``different`` when the
    host has one domain. ``same_is_smt_sibling``: the only other CPU of the
    domain shares the measured CPU's core (its L1/L2 too).
    """

    domain: str
    alone: int
    same: ty.Optional[int]
    same_is_smt_sibling: bool
    different_domain: ty.Optional[str]
    different: ty.Optional[int]

    def co_cpu(self, placement):
        """The co-runner's CPU for ``placement`` (None for alone)."""
        return {ALONE: None, SAME: self.same,
                DIFFERENT: self.different}[placement]

    def placements(self):
        """The placements this host can measure, in :data:`PLACEMENTS`."""
        return tuple(p for p in PLACEMENTS
                     if p == ALONE or self.co_cpu(p) is not None)


def choose_cpus(domains, core_of, domain_id=None):
    """Pick the probe's CPUs.

    ``domains``: a sequence of objects with ``id``, ``cpus`` and
    ``numa_nodes`` (:class:`nova_cacheaware.topology.domains.CacheDomain`);
    ``core_of``: {cpu: its physical core's sibling group}.

    1. The measured domain is ``domain_id``, or else the first domain with
       CPUs of two physical cores, or else the first with two CPUs, or else
       the first.
    2. ``alone`` is its lowest CPU.
    3. ``same`` is the lowest CPU of the domain on another physical core;
       failing that, an SMT sibling (flagged).
    4. ``different`` is the lowest CPU of the first other domain on the same
       NUMA nodes (so that only the cache differs, not the memory); failing
       that, of the first other domain.

    Raises :class:`InvalidInput` for an unknown ``domain_id`` or a host where
    nothing can co-run (one CPU).
    """
    domains = list(domains)
    if domain_id is not None:
        chosen = [d for d in domains if d.id == domain_id]
        if not chosen:
            raise exception.InvalidInput(
                reason='no cache domain %r (domains: %s)'
                       % (domain_id, ', '.join(d.id for d in domains)))
        home = chosen[0]
    else:
        def cores(d):
            return len({core_of.get(c, (c,)) for c in d.cpus})
        home = next((d for d in domains if cores(d) >= 2),
                    next((d for d in domains if len(d.cpus) >= 2),
                         domains[0]))
    alone = min(home.cpus)
    own_core = core_of.get(alone, (alone,))
    others = [c for c in sorted(home.cpus) if c != alone]
    other_cores = [c for c in others if c not in own_core]
    same = (other_cores or others or [None])[0]
    rest = [d for d in domains if d.id != home.id]
    near = [d for d in rest if tuple(d.numa_nodes) == tuple(home.numa_nodes)]
    far = (near or rest or [None])[0]
    if same is None and far is None:
        raise exception.InvalidInput(
            reason='the probe needs a second CPU to co-run on; this host '
                   'has one')
    return ProbeCpus(domain=home.id, alone=alone, same=same,
                     same_is_smt_sibling=bool(same is not None
                                              and not other_cores),
                     different_domain=far.id if far else None,
                     different=min(far.cpus) if far else None)


# --------------------------------------------------------------------------
# 3. Summaries

@dataclasses.dataclass(frozen=True)
class Summary:
    """A sample's median, extremes and relative spread (range / median)."""

    n: int
    median: float
    low: float
    high: float

    @property
    def spread(self):
        """``(high - low) / median``: 0 for identical samples."""
        return (self.high - self.low) / self.median


def summarise(values):
    """The :class:`Summary` of positive numbers (ValueError when empty)."""
    values = sorted(values)
    if not values:
        raise ValueError('no samples')
    if values[0] <= 0:
        raise ValueError('samples must be positive, got %r' % values[0])
    mid = len(values) // 2
    median = (values[mid] if len(values) % 2
              else (values[mid - 1] + values[mid]) / 2.0)
    return Summary(n=len(values), median=float(median),
                   low=float(values[0]), high=float(values[-1]))


def select_samples(samples, min_cpu_share=0.0):
    """Keep the samples whose kernel ran at least ``min_cpu_share``.

    ``samples``: ``{key: [(ns per line, cpu share), ...]}``. Returns
    ``({key: [ns, ...]}, {key: samples dropped})``; a key whose every sample
    is dropped maps to an empty list. On a busy host, a sample during which
    other processes ran on the kernel's CPU has had its cache evicted by
    them: alone or co-run, it measures them.
    """
    kept, dropped = {}, {}
    for key, values in samples.items():
        kept[key] = [ns for ns, share in values if share >= min_cpu_share]
        dropped[key] = len(values) - len(kept[key])
    return kept, dropped


# --------------------------------------------------------------------------
# 4. Slowdown matrix

@dataclasses.dataclass(frozen=True)
class Cell:
    """One co-run's slowdown against alone, with its noise band.

    ``slowdown`` is ``median(co) / median(alone)``; the band ``[low, high]``
    is ``[min(co) / max(alone), max(co) / min(alone)]``.
    """

    kernel: str
    factor: float
    placement: str
    slowdown: float
    low: float
    high: float

    def faster_beyond_noise(self):
        """True when even the band's top is under 1 (co-run faster)."""
        return self.high < 1.0

    def slower_beyond_noise(self):
        """True when even the band's bottom is over 1."""
        return self.low > 1.0


@dataclasses.dataclass(frozen=True)
class Matrix:
    """The probe's result: alone summaries and the co-run cells."""

    alone: ty.Dict[ty.Tuple[str, float], Summary]
    cells: ty.Tuple[Cell, ...]

    def cell(self, kernel, factor, placement):
        """The cell for ``(kernel, factor, placement)`` or None."""
        for c in self.cells:
            if (c.kernel, c.factor, c.placement) == (kernel, factor,
                                                     placement):
                return c
        return None


def slowdown_matrix(samples):
    """Build the :class:`Matrix` from ``{(kernel, factor, placement): [ns]}``.

    Every ``(kernel, factor)`` needs its ``alone`` samples; co-run cells come
    out in :data:`PLACEMENTS` order within ``(kernel, factor)`` in the
    order first seen; a co-run without samples has no cell. Raises
    ValueError when a ``(kernel, factor)`` has no alone sample.
    """
    keys = []
    for kernel, factor, _ in samples:
        if (kernel, factor) not in keys:
            keys.append((kernel, factor))
    alone, cells = {}, []
    for kernel, factor in keys:
        if not samples.get((kernel, factor, ALONE)):
            raise ValueError('no alone samples for %s at %gx'
                             % (kernel, factor))
        base = summarise(samples[(kernel, factor, ALONE)])
        alone[(kernel, factor)] = base
        for placement in CO_RUNS:
            values = samples.get((kernel, factor, placement))
            if not values:
                continue
            co = summarise(values)
            cells.append(Cell(kernel=kernel, factor=factor,
                              placement=placement,
                              slowdown=co.median / base.median,
                              low=co.low / base.high,
                              high=co.high / base.low))
    return Matrix(alone=alone, cells=tuple(cells))


# --------------------------------------------------------------------------
# 5. Verdict

@dataclasses.dataclass(frozen=True)
class Verdict:
    """Whether cache-aware placement pays off on the probed host.

    ``code``: :data:`PAYS_OFF`, :data:`NO_BENEFIT` or :data:`SINGLE_DOMAIN`
    (All-share vs Partial-share cannot be measured; ``dirty`` then says
    whether a second copy in the domain costs beyond the noise).
    ``evidence``: the ``(kernel, factor)`` pairs that decided it.
    """

    code: str
    reason: str
    evidence: ty.Tuple[ty.Tuple[str, float], ...]
    dirty: bool


def verdict(matrix, min_gain=DEFAULT_MIN_GAIN):
    """Decide from a :class:`Matrix` (see the module docstring, step 5)."""
    pairs = list(matrix.alone)
    dirty = tuple(p for p in pairs
                  if _beyond(matrix.cell(p[0], p[1], SAME), min_gain))
    worst = max((matrix.cell(k, f, SAME) for k, f in pairs
                 if matrix.cell(k, f, SAME)),
                key=lambda c: c.slowdown, default=None)
    if not any(c.placement == DIFFERENT for c in matrix.cells):
        if worst is None:
            reason = 'one cache domain and no second CPU in it'
        else:
            reason = ('one cache domain: All-share vs Partial-share cannot '
                      'be measured here; a second copy in the domain (Dirty) '
                      '%s (worst: %s at %gx, %.2fx, noise band %.2f-%.2f)'
                      % ('costs more than the noise and %d %%' % round(
                          100 * min_gain) if dirty else
                         'stays within the noise or under %d %%'
                         % round(100 * min_gain),
                         worst.kernel, worst.factor, worst.slowdown,
                         worst.low, worst.high))
        return Verdict(code=SINGLE_DOMAIN, reason=reason, evidence=dirty,
                       dirty=bool(dirty))
    gains = []
    for kernel, factor in pairs:
        same = matrix.cell(kernel, factor, SAME)
        diff = matrix.cell(kernel, factor, DIFFERENT)
        if same is None or diff is None:
            continue
        if (same.low > diff.high
                and same.slowdown - diff.slowdown >= min_gain):
            gains.append(((kernel, factor), same, diff))
    if gains:
        (kernel, factor), same, diff = max(
            gains, key=lambda g: g[1].slowdown - g[2].slowdown)
        return Verdict(
            code=PAYS_OFF,
            reason=('a second copy in the same cache domain slows %s at %gx '
                    'by %.2fx against %.2fx in another domain, beyond the '
                    'noise' % (kernel, factor, same.slowdown,
                               diff.slowdown)),
            evidence=tuple(g[0] for g in gains), dirty=bool(dirty))
    return Verdict(
        code=NO_BENEFIT,
        reason=('no kernel or working set is slower in the same cache domain '
                'than in another by more than the noise and %d %%'
                % round(100 * min_gain)),
        evidence=(), dirty=bool(dirty))


def _beyond(cell, min_gain):
    return (cell is not None and cell.slower_beyond_noise()
            and cell.slowdown - 1.0 >= min_gain)
