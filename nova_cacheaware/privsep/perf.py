"""``perf_event_open(2)`` counters, opened and held by the privsep daemon.

A perf file descriptor cannot cross the privsep channel (a socket of
msgpack messages), so the daemon keeps the counters and answers reads. The
agent opens one counter *group* per vCPU thread (:func:`open_group`: a
handle back), reads all its groups in one round trip
(:func:`read_groups`: one ``read`` per group, ``PERF_FORMAT_GROUP``) and
closes them (:func:`close_groups`). The daemon builds every
``perf_event_attr`` itself from an event type and a config number: it
counts (no sampling, no memory map, no tracepoint) and holds at most
:data:`MAX_GROUPS` groups.

:mod:`nova_cacheaware.privsep.tracepoint` keeps tracepoint counters the
same way, in a registry of its own (:class:`CounterGroups` with another
kind of event).
"""

import ctypes
import errno
import itertools
import os
import platform
import resource
import secrets
import struct
import threading

from nova_cacheaware import exception
from nova_cacheaware import privsep

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_HW_CACHE = 3
PERF_FLAG_FD_CLOEXEC = 1 << 3
PERF_FORMAT_GROUP = 1 << 3
PERF_ATTR_SIZE_VER5 = 112
# Bit positions in perf_event_attr's flags word.
_FLAG_EXCLUDE_HV = 1 << 6

_SYSCALL = {'x86_64': 298, 'aarch64': 241, 'ppc64le': 319, 's390x': 331}

#: Errors meaning "this host cannot count that event at all".
NO_PMU = (errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP)
_NOT_PERMITTED = (errno.EACCES, errno.EPERM)

#: The event types the daemon opens (counting only).
COUNTING_TYPES = frozenset([PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE,
                            PERF_TYPE_HW_CACHE])
#: Groups the daemon holds at most (one per vCPU thread).
MAX_GROUPS = 4096
#: Events in one group at most.
MAX_EVENTS = 8
_MAX_NAME = 64


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


def make_attr(event_type, config, read_format=0):
    """An attr counting ``(event_type, config)`` in user and kernel mode."""
    attr = PerfEventAttr()
    attr.type = event_type
    attr.size = ctypes.sizeof(PerfEventAttr)
    attr.config = config
    attr.read_format = read_format
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
        if err in NO_PMU:
            raise PerfUnsupported(err, os.strerror(err))
        raise OSError(err, os.strerror(err))
    return fd


def read_count(fd):
    """The 64-bit count of a counter opened with ``read_format`` 0."""
    data = os.read(fd, 8)
    if len(data) != 8:
        raise OSError(errno.EIO, 'short read from perf fd')
    return struct.unpack('=Q', data)[0]


_GROUP_FORMATS = {n: struct.Struct('=%dQ' % (n + 1))
                  for n in range(1, MAX_EVENTS + 1)}


def read_group(fd, n):
    """The ``n`` counts of a group leader opened with PERF_FORMAT_GROUP."""
    layout = _GROUP_FORMATS[n]
    data = os.read(fd, layout.size)
    if len(data) != layout.size:
        raise OSError(errno.EIO, 'short read from perf group fd')
    values = layout.unpack(data)
    if values[0] != n:
        raise OSError(errno.EIO, 'perf group of %d events, %d expected'
                      % (values[0], n))
    return values[1:]


class ThreadNotFound(exception.CacheAwareError):
    """The thread to count does not exist (it ended)."""

    msg_fmt = 'thread %(tid)s does not exist (it ended, or is no thread)'


class CountingNotPermitted(exception.CacheAwareError):
    """The kernel refused to count the thread: the daemon lacks privileges."""

    msg_fmt = ('perf_event_open on thread %(tid)s: %(reason)s: the privsep '
               'daemon needs CAP_PERFMON (Linux 5.8: and CAP_SYS_PTRACE; '
               'before: CAP_SYS_ADMIN and CAP_SYS_PTRACE) in '
               '[nova_cacheaware_privileged] capabilities')


class OpenFailed(exception.CacheAwareError):
    """The kernel refused to open a counter for another reason."""

    msg_fmt = 'perf_event_open on thread %(tid)s: %(reason)s'


class NothingToCount(exception.CacheAwareError):
    """The host counts none of the events asked for (no PMU)."""

    msg_fmt = '%(reasons)s'


class TooManyGroups(exception.CacheAwareError):
    """The daemon already holds :data:`MAX_GROUPS` groups."""

    msg_fmt = ('the privsep daemon already holds %(limit)d counter groups, '
               'the most it keeps: close some before opening more')


class _Group:
    __slots__ = ('tid', 'names', 'fds')

    def __init__(self, tid, names, fds):
        self.tid = tid
        self.names = names      # event names, in the group's read order
        self.fds = fds          # the leader first


class CounterGroups:
    """The counter groups of one process, by handle; thread-safe.

    The daemon keeps one (:data:`_REGISTRY`); a test or a benchmark may
    keep its own, in-process, with the syscalls replaced.
    """

    def __init__(self, opener=perf_event_open, reader=read_group,
                 max_groups=MAX_GROUPS):
        self._open = opener
        self._read = reader
        self.max_groups = max_groups
        self._groups = {}
        self._lock = threading.Lock()
        # Handles are not reused, not even by a restarted daemon: a handle
        # the agent kept from the last daemon is unknown, never another
        # thread's group.
        self._next = itertools.count(secrets.randbits(40) << 20)

    def __len__(self):
        return len(self._groups)

    def open_group(self, tid, events):
        """Count ``events`` (``{name: (type, config)}``) of thread ``tid``.

        Returns ``(handle, {name: reason})``: the second item names the
        events the host cannot count, which the group goes without.
        Raises :class:`ThreadNotFound`, :class:`CountingNotPermitted`,
        :class:`NothingToCount`, :class:`TooManyGroups`, :class:`OpenFailed`
        (EMFILE, EINVAL, ...) or ``InvalidInput``.
        """
        tid, events = self._checked(tid, events)
        with self._lock:
            if len(self._groups) >= self.max_groups:
                raise TooManyGroups(limit=self.max_groups)
            names, fds, unsupported = [], [], {}
            try:
                for name, spec in events:
                    leader = fds[0] if fds else -1
                    try:
                        fds.append(self._open_event(spec, tid, leader))
                    except PerfUnsupported as e:
                        unsupported[name] = e.strerror or str(e)
                        continue
                    names.append(name)
            except OSError as e:
                _close_fds(fds)
                if e.errno == errno.ESRCH:
                    raise ThreadNotFound(tid=tid)
                if e.errno in _NOT_PERMITTED:
                    raise CountingNotPermitted(tid=tid, reason=e.strerror)
                raise OpenFailed(tid=tid, reason=e.strerror or str(e))
            if not fds:
                raise NothingToCount(reasons='; '.join(
                    '%s: %s' % i for i in sorted(unsupported.items())))
            handle = next(self._next)
            self._groups[handle] = _Group(tid, tuple(names), fds)
        return handle, unsupported

    def _checked(self, tid, events):
        """``(tid, [(name, spec)])`` checked; raises ``InvalidInput``."""
        return _checked(tid, events)

    def _open_event(self, spec, tid, group_fd):
        """Open one event of a group; :class:`PerfUnsupported` drops it."""
        etype, config = spec
        attr = make_attr(etype, config,
                         PERF_FORMAT_GROUP if group_fd < 0 else 0)
        return self._open(attr, tid, group_fd=group_fd)

    def read_groups(self, handles):
        """One read per group: ``{'counts', 'ended', 'unknown'}``.

        ``counts``: ``{handle: {event: cumulative count}}`` (a thread that
        has exited keeps its last counts); ``ended``: the handles whose
        group could not be read (closed now); ``unknown``: handles this
        process does not hold (closed, or opened by a daemon that has
        since restarted).
        """
        handles = _checked_handles(handles)
        counts, ended, unknown = {}, [], []
        with self._lock:
            for handle in handles:
                group = self._groups.get(handle)
                if group is None:
                    unknown.append(handle)
                    continue
                try:
                    values = self._read(group.fds[0], len(group.names))
                except OSError:
                    _close_fds(self._groups.pop(handle).fds)
                    ended.append(handle)
                    continue
                counts[handle] = dict(zip(group.names, values))
        return {'counts': counts, 'ended': ended, 'unknown': unknown}

    def close_groups(self, handles):
        """Close the groups of ``handles``; returns how many were open."""
        handles = _checked_handles(handles)
        closed = 0
        with self._lock:
            for handle in handles:
                group = self._groups.pop(handle, None)
                if group is not None:
                    _close_fds(group.fds)
                    closed += 1
        return closed

    def close_all(self):
        """Close every group."""
        with self._lock:
            for group in self._groups.values():
                _close_fds(group.fds)
            self._groups.clear()


def _checked(tid, events):
    if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
        raise exception.InvalidInput(reason='thread id %r is not a '
                                     'positive integer' % (tid,))
    if not isinstance(events, dict) or not 0 < len(events) <= MAX_EVENTS:
        raise exception.InvalidInput(reason='events must be a mapping of '
                                     '1 to %d events' % MAX_EVENTS)
    out = []
    for name, spec in events.items():
        if not isinstance(name, str) or not 0 < len(name) <= _MAX_NAME:
            raise exception.InvalidInput(reason='event name %r' % (name,))
        try:
            etype, config = spec
        except (TypeError, ValueError):
            raise exception.InvalidInput(reason='event %s is not (type, '
                                         'config)' % name)
        if etype not in COUNTING_TYPES or not isinstance(config, int) \
                or isinstance(config, bool) or not 0 <= config < 2 ** 64:
            raise exception.InvalidInput(reason='event %s: (%r, %r) is not '
                                         'a counting event' % (name, etype,
                                                               config))
        out.append((name, (etype, config)))
    return tid, out


def _checked_handles(handles):
    if not isinstance(handles, (list, tuple)) or len(handles) > MAX_GROUPS:
        raise exception.InvalidInput(reason='handles must be a list of at '
                                     'most %d' % MAX_GROUPS)
    for h in handles:
        if isinstance(h, bool) or not isinstance(h, int):
            raise exception.InvalidInput(reason='handle %r' % (h,))
    return handles


def _close_fds(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _raise_nofile_limit(wanted=MAX_GROUPS * MAX_EVENTS + 64):
    """Raise the soft RLIMIT_NOFILE toward ``wanted`` (never lowers it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


#: The daemon's groups.
_REGISTRY = CounterGroups()
_limit_raised = False


@privsep.perfmon_pctxt.entrypoint
def open_group(tid, events):
    """:meth:`CounterGroups.open_group` in the privsep daemon."""
    global _limit_raised
    if not _limit_raised:
        _raise_nofile_limit()
        _limit_raised = True
    return _REGISTRY.open_group(tid, events)


@privsep.perfmon_pctxt.entrypoint
def read_groups(handles):
    """:meth:`CounterGroups.read_groups` in the privsep daemon."""
    return _REGISTRY.read_groups(handles)


@privsep.perfmon_pctxt.entrypoint
def close_groups(handles):
    """:meth:`CounterGroups.close_groups` in the privsep daemon."""
    return _REGISTRY.close_groups(handles)
