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

from nova_cacheaware.cachedomain import trials
from nova_cacheaware.privsep import perf
from nova_cacheaware.privsep import thread_groups

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


class PerfCounterSource(thread_groups.ThreadGroups, CounterSource):
    """Counters of each thread, one group per thread in the privsep daemon.

    ``events`` maps names to ``(type, config)``; the default is
    :data:`HARDWARE_EVENTS`. ``groups`` opens, reads and closes the groups:
    the daemon's entrypoints (:mod:`nova_cacheaware.privsep.perf`), or a
    :class:`~nova_cacheaware.privsep.perf.CounterGroups` in this process.
    The first "unsupported" or "not permitted" answer, or a daemon that
    does not start, switches the source off for good (logged once): a
    host without a PMU never gains one.
    """

    log = LOG

    def __init__(self, events=None, groups=perf):
        super().__init__(groups)
        self.events = dict(events or HARDWARE_EVENTS)

    def sample(self, threads):
        """Counts per key; ``{}`` once the host is known to lack the PMU.

        An event the host cannot count (a PMU without a generic LLC-miss
        event, say) is dropped for good with one warning, and the others
        go on: the classifier then uses what is left (CPI, MPKI or both).
        A thread that ended is skipped.
        """
        return super().sample(threads)

    def _dropped(self, dropped):
        for name in dropped:
            del self.events[name]
        LOG.warning('%s not counted on this host (%s); the classifier '
                    'goes on with %s', ', '.join(sorted(dropped)),
                    '; '.join(sorted(dropped.values())),
                    ', '.join(sorted(self.events)))

    def _switched_off(self, reason):
        LOG.warning('hardware counters are not available on this host '
                    '(%s); classifying by declared workloads only', reason)


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
