"""What the guest helper would report, not the true hit ratio.

The real helper (``cacheaware-guest-stats``, validated by
:mod:`nova_cacheaware.policy.guest_report`) estimates the hit ratio as
``1 - fetched / read`` with ``read`` the processes' ``rchar`` and
``fetched`` their ``read_bytes`` over a sample of ``sample_s`` seconds at
the end of each reporting interval.  Its known errors, and how they enter
here (doc/source/evaluation/balloon.rst gives the measured values):

``nonfile_mib_s``
    ``rchar`` also counts reads of pipes, sockets, terminals and ``/proc``
    (other processes, and the helper's own ``cat`` of ``/proc/<pid>/io``):
    MiB/s added to ``read`` that never miss, so the ratio is over-estimated,
    most for VMs that read little;
``readahead``
    ``read_bytes`` counts what was fetched, readahead included: every
    missed MiB adds ``1 + readahead`` MiB to ``fetched`` (the ratio is
    under-estimated and clamped at 0);
``blind_vms``
    VMs whose reads never reach ``read_bytes`` (files on a ``brd`` or
    ``zram`` device, which Linux 6.1 reads through ``rw_page`` without a
    bio, or a network file system that does not account them): every
    miss looks like a hit, the ratio is the read share that is non-file
    or hits, i.e. 1.0;
``cache_extra_mib``
    ``Cached`` also holds tmpfs and shared memory: MiB added to the
    reported cache size.

A guest that read nothing (no file reads and no non-file reads) reports
1.0, as the simulator always did (the agent treats "no ratio" as
satisfied).
"""

import dataclasses
import math

from nova_cacheaware import exception

DEFAULTS = {'nonfile_mib_s': 0.0, 'readahead': 0.0, 'blind_vms': [],
            'sample_s': None, 'cache_extra_mib': 0.0}


@dataclasses.dataclass(frozen=True)
class EstimatorModel:
    """The helper's error; all zero/None is the exact ratio."""

    nonfile_mib_s: float = 0.0
    readahead: float = 0.0
    blind_vms: tuple = ()
    #: Seconds at the end of each interval the sample covers (None: all).
    sample_s: object = None
    cache_extra_mib: float = 0.0

    def ratio(self, vm, read_mib, miss_mib, seconds):
        """The reported hit ratio of VM ``vm`` for one sample."""
        read = read_mib + self.nonfile_mib_s * seconds
        if read <= 0:
            return 1.0
        fetched = 0.0 if vm in self.blind_vms else \
            miss_mib * (1.0 + self.readahead)
        return 1.0 - min(fetched, read) / read

    def cache(self, cached_mib):
        """The reported page-cache size (Cached + Buffers) in MiB."""
        return cached_mib + self.cache_extra_mib


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
