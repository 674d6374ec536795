"""The repin step's counter sources: what the classifier samples.

Hardware counters per vCPU thread through ``perf_event_open(2)``
(:class:`PerfCounterSource`), or recorded traces replayed
(:class:`TraceCounterSource`, :class:`TraceDirCounterSource` for test
clouds without a PMU); :func:`~.agent.derived` turns two samples into
what :class:`~.sampling.ShareSampler` records.

:class:`PerfCounterSource` counts cycles, instructions and
last-level-cache misses of each vCPU thread (``pid`` = the thread id,
``cpu`` = -1: the thread wherever it runs). The agent runs unprivileged:
the counters are opened and held by the privsep daemon
(:mod:`nova_cacheaware.privsep.perf`, started on the first call), one
group per thread, and a sample is one round trip that reads them all;
counts are cumulative and the caller takes differences.

Hosts without a hardware PMU (most nested/KVM guests, this project's CI)
answer ENOENT, ENODEV or EOPNOTSUPP: :class:`PerfCounterSource` logs that
once, switches itself off and returns nothing, and the agent goes on with
declared workloads. So does a daemon that cannot start or is refused.
"""

import abc
import json
import logging
import os
import threading

from oslo_privsep import daemon as privsep_daemon

from nova_cacheaware.cachedomain import trials
from nova_cacheaware.privsep import perf

LOG = logging.getLogger(__name__)

PERF_TYPE_HARDWARE = perf.PERF_TYPE_HARDWARE
PERF_TYPE_SOFTWARE = perf.PERF_TYPE_SOFTWARE
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_COUNT_HW_CACHE_MISSES = 3      # last-level cache misses (generic)
PERF_COUNT_SW_CPU_CLOCK = 0
PERF_COUNT_SW_TASK_CLOCK = 1
PERF_COUNT_SW_CONTEXT_SWITCHES = 3

#: The events the agent uses: name -> (type, config).
HARDWARE_EVENTS = {
    'cycles': (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
    'instructions': (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS),
    'llc_misses': (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES),
}

# What a privileged call answers when the daemon is not there.
_DAEMON_DOWN = (privsep_daemon.FailedToDropPrivileges, OSError)


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

        ``instances``: the agent's :class:`~nova_cacheaware.agent.hypervisor.
        Instance` list.
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
    """Counters of each thread, one group per thread in the privsep daemon.

    ``events`` maps names to ``(type, config)``; the default is
    :data:`HARDWARE_EVENTS`. ``groups`` opens, reads and closes the groups:
    the daemon's entrypoints (:mod:`nova_cacheaware.privsep.perf`), or a
    :class:`~nova_cacheaware.privsep.perf.CounterGroups` in this process.
    The first "unsupported" or "not permitted" answer, or a daemon that
    does not start, switches the source off for good (logged once): a
    host without a PMU never gains one.
    """

    def __init__(self, events=None, groups=perf):
        self.events = dict(events or HARDWARE_EVENTS)
        self._groups = groups
        self._handles = {}       # tid -> handle
        self.unsupported = None  # the reason, once known
        self._probed = False

    def available(self):
        """Probe once on the calling thread: can the host count at all?

        Lets the agent skip reading vCPU thread ids (a QEMU monitor
        command) on hosts without a PMU. The probe starts the daemon.
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
        A thread that ended is skipped.
        """
        if self.unsupported:
            return {}
        tids = set(threads.values())
        self._close([t for t in self._handles if t not in tids])
        for tid in sorted(tids - set(self._handles)):
            self._open(tid)
            if self.unsupported:
                return {}
        if not self._handles:
            return {}
        try:
            answer = self._groups.read_groups(list(self._handles.values()))
        except _DAEMON_DOWN as e:
            # The groups went with the daemon; oslo.privsep starts a new
            # one on the next call, and the next pass opens them again.
            LOG.warning('counters not read this pass: %s', e)
            self._handles.clear()
            return {}
        counts = answer['counts']
        by_tid = {}
        for tid, handle in list(self._handles.items()):
            if handle in counts:
                by_tid[tid] = counts[handle]
            else:           # the thread ended, or the daemon restarted
                del self._handles[tid]
        return {key: {n: c for n, c in by_tid[tid].items()
                      if n in self.events}
                for key, tid in threads.items() if tid in by_tid}

    def _open(self, tid):
        try:
            handle, dropped = self._groups.open_group(tid, self.events)
        except (perf.NothingToCount, perf.CountingNotPermitted) as e:
            self._off(str(e))
            return
        except _DAEMON_DOWN as e:
            self._off('the privsep daemon did not start or stopped (%s): '
                      'see [nova_cacheaware_privileged]' % e)
            return
        except perf.TooManyGroups as e:
            LOG.warning('no counters for thread %s: %s', tid, e)
            return
        except (perf.ThreadNotFound, perf.OpenFailed) as e:
            LOG.debug('no counters for thread %s: %s', tid, e)
            return
        self._handles[tid] = handle
        if dropped:
            for name in dropped:
                del self.events[name]
            LOG.warning('%s not counted on this host (%s); the classifier '
                        'goes on with %s', ', '.join(sorted(dropped)),
                        '; '.join(sorted(dropped.values())),
                        ', '.join(sorted(self.events)))

    def _off(self, reason):
        self.unsupported = reason
        LOG.warning('hardware counters are not available on this host '
                    '(%s); classifying by declared workloads only', reason)
        self.close()

    def _close(self, tids):
        handles = [self._handles.pop(t) for t in tids]
        if not handles:
            return
        try:
            self._groups.close_groups(handles)
        except _DAEMON_DOWN as e:
            LOG.debug('counter groups not closed: %s', e)

    def close(self):
        """Close every open counter group (no daemon call when none is)."""
        self._close(list(self._handles))


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
