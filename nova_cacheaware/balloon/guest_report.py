"""Validate what a guest says about its page cache.

Guests are untrusted.  ``deploy/guest-tools/cacheaware-guest-stats`` prints
one JSON line (see doc/source/user/balloon-plan.rst, "Guest helper"); the
host agent passes it here with the previous accepted report of the same
VM.  Anything that is not a plain non-negative integer where a counter is
expected, a ratio outside 0..1, a cumulative counter that goes backwards,
or a rate no real machine reaches is rejected with
:class:`InvalidGuestReport`; the agent then logs the reason and leaves the
VM's memory where it is.

The estimator (documented with its error in the user guide): over the
helper's sampling interval, ``read_kib`` is what processes read through
read-like system calls (sum of ``rchar`` deltas in ``/proc/<pid>/io``) and
``fetched_kib`` what those processes made the kernel fetch from storage (sum
of ``read_bytes`` deltas).  The hit ratio is ``1 - fetched / read``.
"""

import dataclasses
import math

from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

REPORT_VERSION = 1
_COUNTERS = ('uptime_s', 'interval_s', 'read_kib', 'fetched_kib',
             'pgpgin_kib', 'mem_total_kib', 'mem_free_kib', 'cached_kib',
             'buffers_kib', 'committed_as_kib')
_CUMULATIVE = ('pgpgin_kib',)


class InvalidGuestReport(exception.CacheAwareError):
    """A guest report failed validation; the VM keeps its memory."""

    msg_fmt = 'rejected guest report: %(reason)s'


@dataclasses.dataclass(frozen=True)
class ReportLimits:
    """What no honest guest can exceed (generous on purpose)."""

    #: Fastest plausible read rate through the page cache, KiB/s (64 GiB/s).
    max_read_kib_s: int = 64 * 1024 * 1024
    #: Fastest plausible storage read rate, KiB/s (16 GiB/s).
    max_fetch_kib_s: int = 16 * 1024 * 1024
    #: Longest sampling interval the helper is ever asked for, seconds.
    max_interval_s: int = 600
    #: Slack over the VM's assigned memory for MemTotal (rounding, KiB).
    mem_slack_kib: int = 64 * 1024


@dataclasses.dataclass(frozen=True)
class GuestStats:
    """An accepted report, in the units the balancer uses."""

    uptime_s: int
    pgpgin_kib: int
    #: Page-cache hit ratio over the interval; None when nothing was read.
    hit_ratio: object
    read_mib_s: float
    memory_mib: float
    cache_mib: float
    free_mib: float
    used_mib: float
    committed_as_mib: float


#: The report's counters: all required, all non-negative ints.
REPORT_SCHEMA = {key: (schema.COUNT, schema.REQUIRED) for key in _COUNTERS}
#: Optional: a helper with exact kernel counters (eBPF cachestat) may
#: report the ratio itself; it is still only a claim and must be a ratio.
_RATIO_SCHEMA = {'hit_ratio': (schema.RATIO, None)}


def _reject(reason):
    raise InvalidGuestReport(reason=reason)


def _shape(doc):
    """The counters and the claimed hit ratio, or InvalidGuestReport."""
    if not isinstance(doc, dict):
        _reject('not a JSON object')
    if doc.get('v') != REPORT_VERSION:
        _reject('unknown report version %r' % (doc.get('v'),))
    try:
        return (schema.fields(doc, REPORT_SCHEMA, ''),
                schema.fields(doc, _RATIO_SCHEMA, '')['hit_ratio'])
    except schema.SchemaError as e:
        _reject(e.what)


def validate_report(doc, assigned_mib, previous=None,
                    limits=ReportLimits()):
    """Check one guest report and turn it into :class:`GuestStats`.

    ``doc`` is the parsed JSON line, ``assigned_mib`` the memory the host
    gave the VM (its balloon ``actual``), ``previous`` the last
    :class:`GuestStats` accepted for the VM (or None).  Raises
    :class:`InvalidGuestReport` with the reason on any inconsistency.
    """
    c, claimed = _shape(doc)
    interval = c['interval_s']
    if not 0 < interval <= limits.max_interval_s:
        _reject('interval_s %d outside 1..%d'
                % (interval, limits.max_interval_s))
    if c['read_kib'] > limits.max_read_kib_s * interval:
        _reject('read_kib %d in %d s is faster than any machine'
                % (c['read_kib'], interval))
    if c['fetched_kib'] > limits.max_fetch_kib_s * interval:
        _reject('fetched_kib %d in %d s is faster than any storage'
                % (c['fetched_kib'], interval))
    if c['mem_total_kib'] > assigned_mib * 1024 + limits.mem_slack_kib:
        _reject('mem_total_kib %d exceeds the %d MiB assigned'
                % (c['mem_total_kib'], assigned_mib))
    parts = c['mem_free_kib'] + c['cached_kib'] + c['buffers_kib']
    if parts > c['mem_total_kib']:
        _reject('free + cached + buffers (%d KiB) exceed mem_total_kib %d'
                % (parts, c['mem_total_kib']))
    if previous is not None:
        elapsed = c['uptime_s'] - previous.uptime_s
        if elapsed <= 0:
            _reject('uptime went from %d to %d s'
                    % (previous.uptime_s, c['uptime_s']))
        for key in _CUMULATIVE:
            delta = c[key] - getattr(previous, key)
            if delta < 0:
                _reject('%s went backwards by %d' % (key, -delta))
            if delta > limits.max_fetch_kib_s * elapsed:
                _reject('%s jumped by %d KiB in %d s'
                        % (key, delta, elapsed))
    hit_ratio = None
    if claimed is not None:
        hit_ratio = float(claimed)
    elif c['read_kib'] > 0:
        # Readahead can fetch more than was read in the same interval; the
        # ratio is clamped at 0 rather than rejected for that.
        hit_ratio = 1.0 - min(c['fetched_kib'], c['read_kib']) / c['read_kib']
        if not (math.isfinite(hit_ratio) and 0.0 <= hit_ratio <= 1.0):
            _reject('hit ratio %r outside 0..1' % hit_ratio)
    return GuestStats(
        uptime_s=c['uptime_s'], pgpgin_kib=c['pgpgin_kib'],
        hit_ratio=hit_ratio,
        read_mib_s=c['read_kib'] / 1024.0 / interval,
        memory_mib=c['mem_total_kib'] / 1024.0,
        cache_mib=(c['cached_kib'] + c['buffers_kib']) / 1024.0,
        free_mib=c['mem_free_kib'] / 1024.0,
        used_mib=(c['mem_total_kib'] - parts) / 1024.0,
        committed_as_mib=c['committed_as_kib'] / 1024.0)
