"""Hardware counters per vCPU thread through ``perf_event_open(2)``.

Counts cycles, instructions and last-level-cache misses of each vCPU thread
(``pid`` = the thread id, ``cpu`` = -1: the thread wherever it runs). The
file descriptors stay open between samples, so a sample is a few ``read``
calls; counts are cumulative and the caller takes differences.

Hosts without a hardware PMU (most nested/KVM guests, this project's CI)
answer ENOENT, ENODEV or EOPNOTSUPP: :class:`PerfCounterSource` logs that
once, switches itself off and returns nothing, and the agent goes on with
declared workloads.
"""

import abc
import ctypes
import errno
import logging
import os
import platform
import struct
import threading

LOG = logging.getLogger(__name__)

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_COUNT_HW_CACHE_MISSES = 3      # last-level cache misses (generic)
PERF_COUNT_SW_CPU_CLOCK = 0
PERF_COUNT_SW_TASK_CLOCK = 1
PERF_FLAG_FD_CLOEXEC = 1 << 3
PERF_ATTR_SIZE_VER5 = 112
# Bit positions in perf_event_attr's flags word.
_FLAG_EXCLUDE_HV = 1 << 6

_SYSCALL = {'x86_64': 298, 'aarch64': 241, 'ppc64le': 319, 's390x': 331}

#: The events the agent uses: name -> (type, config).
HARDWARE_EVENTS = {
    'cycles': (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
    'instructions': (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS),
    'llc_misses': (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES),
}

# Errors meaning "this host cannot count that event at all".
_NO_PMU = (errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP)


class PerfEventAttr(ctypes.Structure):
    """``struct perf_event_attr`` up to ``PERF_ATTR_SIZE_VER5`` (112 bytes)."""

    _fields_ = [
        ('type', ctypes.c_uint32),
        ('size', ctypes.c_uint32),
        ('config', ctypes.c_uint64),
        ('sample_period', ctypes.c_uint64),
        ('sample_type', ctypes.c_uint64),
        ('read_format', ctypes.c_uint64),
        ('flags', ctypes.c_uint64),
        ('wakeup_events', ctypes.c_uint32),
        ('bp_type', ctypes.c_uint32),
        ('config1', ctypes.c_uint64),
        ('config2', ctypes.c_uint64),
        ('branch_sample_type', ctypes.c_uint64),
        ('sample_regs_user', ctypes.c_uint64),
        ('sample_stack_user', ctypes.c_uint32),
        ('clockid', ctypes.c_int32),
        ('sample_regs_intr', ctypes.c_uint64),
        ('aux_watermark', ctypes.c_uint32),
        ('sample_max_stack', ctypes.c_uint16),
        ('reserved_2', ctypes.c_uint16),
    ]


def make_attr(event_type, config):
    """An attr counting ``(event_type, config)`` in user and kernel mode."""
    attr = PerfEventAttr()
    attr.type = event_type
    attr.size = ctypes.sizeof(PerfEventAttr)
    attr.config = config
    attr.flags = _FLAG_EXCLUDE_HV  # enabled at once; hypervisor excluded
    return attr


class PerfUnsupported(OSError):
    """The host cannot count this event (no PMU, unknown event)."""


def _syscall_number():
    number = _SYSCALL.get(platform.machine())
    if number is None:
        raise PerfUnsupported(errno.ENOSYS, 'perf_event_open: unknown '
                              'syscall number on %s' % platform.machine())
    return number


_libc = None


def perf_event_open(attr, tid, cpu=-1, group_fd=-1,
                    flags=PERF_FLAG_FD_CLOEXEC):
    """The raw syscall; returns an fd or raises OSError/PerfUnsupported."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    fd = _libc.syscall(_syscall_number(), ctypes.byref(attr), tid, cpu,
                       group_fd, ctypes.c_ulong(flags))
    if fd < 0:
        err = ctypes.get_errno()
        if err in _NO_PMU:
            raise PerfUnsupported(err, os.strerror(err))
        raise OSError(err, os.strerror(err))
    return fd


def read_count(fd):
    """The 64-bit count of a counter opened with ``read_format`` 0."""
    data = os.read(fd, 8)
    if len(data) != 8:
        raise OSError(errno.EIO, 'short read from perf fd')
    return struct.unpack('=Q', data)[0]


class CounterSource(abc.ABC):
    """``sample({key: tid}) -> {key: {event: count}}`` (cumulative)."""

    @abc.abstractmethod
    def sample(self, threads):
        """Read the counters of every thread; missing threads are skipped."""

    def available(self):
        """False when this source can never count anything here."""
        return True

    def close(self):
        """Release resources (default: none)."""


class NoCounterSource(CounterSource):
    """Counters switched off."""

    def available(self):
        """Never."""
        return False

    def sample(self, threads):
        """Always ``{}``."""
        return {}


class PerfCounterSource(CounterSource):
    """Counters of each thread through ``perf_event_open``.

    ``events`` maps names to ``(type, config)``; the default is
    :data:`HARDWARE_EVENTS`. The first "unsupported" answer switches the
    source off for good (logged once): a host without a PMU never gains one.
    """

    def __init__(self, events=None, opener=perf_event_open,
                 reader=read_count):
        self.events = dict(events or HARDWARE_EVENTS)
        self._open = opener
        self._read = reader
        self._fds = {}          # (tid, event) -> fd
        self.unsupported = None  # the reason, once known
        self._probed = False

    def available(self):
        """Probe once on the calling thread: can the host count at all?

        Lets the agent skip reading vCPU thread ids (a QEMU monitor
        command) on hosts without a PMU.
        """
        if self.unsupported is None and not self._probed:
            self._probed = True
            self.sample({'probe': threading.get_native_id()})
            self.close()
        return not self.unsupported

    def sample(self, threads):
        """Counts per key; ``{}`` once the host is known to lack the PMU."""
        if self.unsupported:
            return {}
        out = {}
        live = set()
        for key, tid in threads.items():
            counts = {}
            for name, (etype, config) in self.events.items():
                live.add((tid, name))
                try:
                    fd = self._fds.get((tid, name))
                    if fd is None:
                        fd = self._open(make_attr(etype, config), tid)
                        self._fds[(tid, name)] = fd
                    counts[name] = self._read(fd)
                except PerfUnsupported as e:
                    self.unsupported = str(e)
                    LOG.warning('hardware counters are not available on '
                                'this host (%s: %s); classifying by declared '
                                'workloads only', name, e)
                    self.close()
                    return {}
                except OSError as e:
                    # ESRCH: the thread ended; EACCES: perf_event_paranoid.
                    LOG.debug('no %s for thread %s: %s', name, tid, e)
            if counts:
                out[key] = counts
        self._close_stale(live)
        return out

    def _close_stale(self, live):
        for key in [k for k in self._fds if k not in live]:
            os.close(self._fds.pop(key))

    def close(self):
        """Close every open counter."""
        close_all(self._fds)


def close_all(fds):
    """Close every file descriptor in the dict ``fds`` and empty it."""
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()


def derived(before, after):
    """CPI and LLC misses per kilo-instruction between two samples."""
    d = {k: after[k] - before.get(k, 0) for k in after if k in before}
    out = {}
    if d.get('instructions'):
        if 'cycles' in d:
            out['cpi'] = d['cycles'] / d['instructions']
        if 'llc_misses' in d:
            out['llc_mpki'] = 1000.0 * d['llc_misses'] / d['instructions']
    return out
