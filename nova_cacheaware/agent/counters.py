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
import json
import logging
import os
import platform
import struct
import threading

from nova_cacheaware.cachedomain import trials

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
    """``sample({key: tid}) -> {key: {event: count}}`` (cumulative).

    ``per_thread``: the source counts vCPU threads, so the agent reads
    their thread ids (a QEMU monitor command) and calls :meth:`sample`;
    a source that does not (a replayed trace) says False and answers
    :meth:`sample_instances` instead.
    """

    per_thread = True

    @abc.abstractmethod
    def sample(self, threads):
        """Read the counters of every thread; missing threads are skipped."""

    def sample_instances(self, instances):
        """``{"<uuid>/<vcpu>": {event: count}}`` for sources not per thread.

        ``instances``: the agent's :class:`~.hypervisor.Instance` list.
        """
        raise NotImplementedError('%s counts threads: call sample()'
                                  % type(self).__name__)

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
        """Counts per key; ``{}`` once the host is known to lack the PMU.

        An event the host cannot count (a PMU without a generic LLC-miss
        event, say) is dropped for good with one warning, and the others
        go on: the classifier then uses what is left (CPI, MPKI or both).
        """
        if self.unsupported:
            return {}
        out = {}
        live = set()
        dropped = {}
        for key, tid in threads.items():
            counts = {}
            for name, (etype, config) in list(self.events.items()):
                live.add((tid, name))
                try:
                    fd = self._fds.get((tid, name))
                    if fd is None:
                        fd = self._open(make_attr(etype, config), tid)
                        self._fds[(tid, name)] = fd
                    counts[name] = self._read(fd)
                except PerfUnsupported as e:
                    del self.events[name]
                    dropped[name] = str(e)
                except OSError as e:
                    # ESRCH: the thread ended; EACCES: perf_event_paranoid.
                    LOG.debug('no %s for thread %s: %s', name, tid, e)
            if counts:
                out[key] = counts
        if dropped and not self.events:
            self.unsupported = '; '.join('%s: %s' % i
                                         for i in sorted(dropped.items()))
            LOG.warning('hardware counters are not available on this host '
                        '(%s); classifying by declared workloads only',
                        self.unsupported)
            self.close()
            return {}
        if dropped:
            LOG.warning('%s not counted on this host (%s); the classifier '
                        'goes on with %s', ', '.join(sorted(dropped)),
                        '; '.join(sorted(dropped.values())),
                        ', '.join(sorted(self.events)))
            out = {k: {n: c for n, c in v.items() if n in self.events}
                   for k, v in out.items()}
        self._close_stale({(t, n) for t, n in live if n in self.events})
        return out

    def _close_stale(self, live):
        for key in [k for k in self._fds if k not in live]:
            os.close(self._fds.pop(key))

    def close(self):
        """Close every open counter."""
        close_all(self._fds)


class TraceCounterSource(CounterSource):
    """Replays a recorded counter trace, one recorded pass per sample.

    ``trace`` is the JSON document ``{"passes": [{"<vm>/<vcpu>": DELTAS}]}``
    where ``DELTAS`` is ``{event: count}`` over that pass, or, for a trace
    recorded in both share modes, ``{"all": {...}, "partial": {...}}`` of
    which ``mode_of(key)`` picks one. ``names`` maps the trace's ``<vm>``
    to the instance uuids of the replay. ``events``, when given, keeps only
    those events (a host that counts fewer). Counts come back cumulative,
    as from :class:`PerfCounterSource`; after the last pass, nothing.
    """

    def __init__(self, trace, names=None, mode_of=None, events=None,
                 loop=False):
        passes = trace.get('passes') if isinstance(trace, dict) else None
        if not isinstance(passes, list):
            raise ValueError('a counter trace is {"passes": [...]}')
        self.passes = passes
        self.names = dict(names or {})
        self.mode_of = mode_of
        self.events = None if events is None else frozenset(events)
        #: After the last pass, start again at the first (a steady
        #: workload); the counts keep growing.
        self.loop = loop
        self.totals = {}
        self.done = 0

    def sample(self, threads):
        """The cumulative counts after the next recorded pass."""
        if self.loop and self.passes and self.done >= len(self.passes):
            self.done = 0
        if self.done >= len(self.passes):
            return {}
        recorded = self.passes[self.done]
        self.done += 1
        out = {}
        for name, deltas in sorted(recorded.items()):
            vm, _, vcpu = name.rpartition('/')
            key = '%s/%s' % (self.names.get(vm, vm), vcpu)
            if key not in threads:
                continue
            if 'all' in deltas or 'partial' in deltas:
                deltas = deltas[self.mode_of(key)]
            total = self.totals.setdefault(key, {})
            for event, count in deltas.items():
                if self.events is not None and event not in self.events:
                    continue
                total[event] = total.get(event, 0) + int(count)
            out[key] = dict(total)
        return out


def vm_names(trace):
    """The ``<vm>`` names of a trace's ``<vm>/<vcpu>`` keys, sorted."""
    return sorted({key.rpartition('/')[0] for recorded in trace['passes']
                   for key in recorded})


class TraceDirCounterSource(CounterSource):
    """Per-instance counter traces from a directory, for hosts without a PMU.

    ``directory/<instance uuid>.json`` is a trace in
    :class:`TraceCounterSource`'s format of one VM (its keys
    ``<any name>/<vcpu>``): that instance's vCPUs get its recorded passes,
    one per agent pass, from the first again after the last (a steady
    workload). Passes recorded in both share modes give the deltas of the
    mode the instance's live pins are in now (:func:`~nova_cacheaware.
    cachedomain.trials.share_mode` over ``domains``). An instance without
    a file gets no counts; a file is read again when its modification
    time changes (a new trace starts from its first pass), and one that
    does not parse is logged once and ignored.

    Only the hardware counts are replayed: every step after them (deltas,
    CPI and MPKI, the sampler, its windows and votes, the plan) is the
    agent's own. No vCPU thread ids are read (``per_thread`` False), so no
    QEMU monitor command taints the guests.
    """

    per_thread = False

    def __init__(self, directory, domains):
        self.directory = directory
        self.domains = tuple(domains)
        self._replays = {}   # uuid -> (mtime, TraceCounterSource or None)
        self._modes = {}     # "<uuid>/<vcpu>" -> share mode of this pass

    def sample(self, threads):
        """Nothing: this source replays per instance (sample_instances)."""
        return {}

    def sample_instances(self, instances):
        """The cumulative counts after each instance's next recorded pass."""
        out = {}
        present = set()
        for instance in instances:
            present.add(instance.uuid)
            replay = self._replay(instance.uuid)
            if replay is None:
                continue
            mode = trials.share_mode(instance.live, self.domains)
            keys = {'%s/%d' % (instance.uuid, vcpu): None
                    for vcpu in sorted(instance.live)}
            self._modes.update(dict.fromkeys(keys, mode))
            out.update(replay.sample(keys))
        for gone in set(self._replays) - present:
            del self._replays[gone]
        return out

    def _replay(self, uuid):
        path = os.path.join(self.directory, '%s.json' % uuid)
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            self._replays.pop(uuid, None)
            return None
        known = self._replays.get(uuid)
        if known is not None and known[0] == mtime:
            return known[1]
        replay = None
        try:
            with open(path) as f:
                trace = json.load(f)
            replay = TraceCounterSource(trace, mode_of=self._modes.get,
                                        loop=True)
            names = vm_names(trace)
            if len(names) != 1:
                raise ValueError('it holds the vCPUs of %d VMs (%s), not '
                                 'of one' % (len(names), ', '.join(names)))
            replay.names = {names[0]: uuid}
            LOG.info('replaying counter trace %s for instance %s (%d '
                     'passes)', path, uuid, len(replay.passes))
        except (OSError, ValueError, TypeError, AttributeError) as e:
            # ValueError covers bad JSON; the others a document of the
            # wrong shape.
            LOG.warning('counter trace %s is ignored: %s', path, e)
            replay = None
        self._replays[uuid] = (mtime, replay)
        return replay


def close_all(fds):
    """Close every file descriptor in the dict ``fds`` and empty it."""
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()


def derived(before, after):
    """What the classifier uses, between two cumulative samples.

    ``cpi`` (with cycles) and ``llc_mpki`` (LLC misses per kilo-instruction,
    with LLC misses), plus the raw ``instructions`` and ``llc_misses``
    deltas that windows of several samples add up
    (:class:`~nova_cacheaware.agent.sampling.ShareSampler`). Nothing without
    an instruction count that moved.
    """
    d = {k: after[k] - before.get(k, 0) for k in after if k in before}
    out = {}
    if d.get('instructions', 0) > 0:
        out['instructions'] = d['instructions']
        if 'cycles' in d:
            out['cpi'] = d['cycles'] / d['instructions']
        if 'llc_misses' in d:
            out['llc_misses'] = d['llc_misses']
            out['llc_mpki'] = 1000.0 * d['llc_misses'] / d['instructions']
    return out
