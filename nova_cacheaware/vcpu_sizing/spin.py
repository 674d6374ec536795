"""Spinning of vCPUs, as the ``vcpu_sizing`` capability measures it.

:class:`SpinMeter` turns what a pass sees into rates per instance: the
share of time each vCPU waited runnable (``vcpu.N.delay``), the KVM exit
counters libvirt reports in its ``vm`` statistics group (absent under TCG),
and all and pause-loop exits per vCPU thread through the ``kvm:kvm_exit``
tracepoint (:class:`KvmExitCounter`, off with a single log line where the
host has no tracefs or no kvm module).
"""

import logging
import threading

from oslo_privsep import daemon as privsep_daemon

from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.privsep import perf
from nova_cacheaware.privsep import tracepoint
from nova_cacheaware.vcpu_sizing import policy

LOG = logging.getLogger(__name__)

OFF, RECOMMEND, APPLY = 'off', 'recommend', 'apply'

KVM_EXIT = 'kvm:kvm_exit'
#: ``exit_reason`` of a pause-loop exit: VMX basic reason 40, SVM 0x77.
PAUSE_EXIT_REASON = {'vmx': 40, 'svm': 0x77}

# What a privileged call answers when the daemon is not there.
_DAEMON_DOWN = (privsep_daemon.FailedToDropPrivileges, OSError)


class KvmExitCounter:
    """All and pause-loop KVM exits per vCPU thread (``kvm:kvm_exit``).

    One group per thread, opened, held and read by the privsep daemon
    (``groups``: :mod:`nova_cacheaware.privsep.tracepoint`, or a
    :class:`~nova_cacheaware.privsep.tracepoint.TracepointGroups` in this
    process): every exit and, where the CPU vendor is known and the kernel
    takes the filter, the exits filtered on the pause exit reason. The
    first "cannot" (no tracefs, no kvm, no permission, no daemon) switches
    the counter off for good, logged once; :attr:`unsupported` says why. A
    refused filter drops the pause exits only, logged once.
    """

    def __init__(self, groups=tracepoint, cpuinfo='/proc/cpuinfo'):
        self._groups = groups
        self._cpuinfo = cpuinfo
        self._handles = {}          # tid -> handle
        self._events = None         # name -> (tracepoint, filter), once read
        self._probed = False
        self.unsupported = None

    @property
    def events(self):
        """``{name: (tracepoint, filter)}`` counted per thread."""
        if self._events is None:
            self._events = {'exits': (KVM_EXIT, None)}
            reason = PAUSE_EXIT_REASON.get(_virt_flag(self._cpuinfo))
            if reason is not None:
                self._events['pause_exits'] = (KVM_EXIT,
                                               ('exit_reason', reason))
        return self._events

    def available(self):
        """True while the tracepoint can be counted on this host.

        The first call counts this thread once (it starts the daemon), so
        that a host without the tracepoint reads no vCPU thread ids.
        """
        if self.unsupported is None and not self._probed:
            self._probed = True
            self.sample({'probe': threading.get_native_id()})
            self.close()
        return not self.unsupported

    def sample(self, threads):
        """``{key: {'exits': n[, 'pause_exits': n]}}``, cumulative.

        ``threads``: ``{key: thread id}``; a thread that ended is skipped
        and its group closed.
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
            # The groups went with the daemon; the next pass opens them
            # in a new one.
            LOG.warning('vcpu_sizing: KVM exits not read this pass: %s', e)
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
        except (tracepoint.NoTracepoint, perf.NothingToCount,
                perf.CountingNotPermitted) as e:
            self._off(str(e))
            return
        except _DAEMON_DOWN as e:
            self._off('the privsep daemon did not start or stopped (%s): '
                      'see [nova_cacheaware_privileged]' % e)
            return
        except perf.TooManyGroups as e:
            LOG.warning('vcpu_sizing: no KVM exit count for thread %s: %s',
                        tid, e)
            return
        except (perf.ThreadNotFound, perf.OpenFailed) as e:
            LOG.debug('no kvm_exit count for thread %s: %s', tid, e)
            return
        self._handles[tid] = handle
        if 'pause_exits' in dropped:
            del self.events['pause_exits']
            LOG.warning('vcpu_sizing: %s; counting all exits only',
                        dropped['pause_exits'])
        if 'exits' in dropped:
            self._off(dropped['exits'])

    def _off(self, why):
        self.unsupported = why
        LOG.warning('vcpu_sizing: KVM exits are not counted: %s; pCPU '
                    'estimates and vCPU run delay go on without them', why)
        self.close()

    def _close(self, tids):
        handles = [self._handles.pop(t) for t in tids]
        if not handles:
            return
        try:
            self._groups.close_groups(handles)
        except _DAEMON_DOWN as e:
            LOG.debug('kvm_exit groups not closed: %s', e)

    def close(self):
        """Close every group (no daemon call when none is open)."""
        self._close(list(self._handles))


def _virt_flag(path):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith('flags'):
                    flags = set(line.split(':', 1)[1].split())
                    for flag in ('vmx', 'svm'):
                        if flag in flags:
                            return flag
                    return None
    except OSError:
        return None
    return None


class SpinMeter:
    """Run delay, KVM statistics and exits per instance, as rates.

    ``view`` gives the ``vm`` statistics group (:meth:`LibvirtView.
    kvm_stats`), ``exit_counter`` the tracepoint counts (None: off),
    ``hypervisor`` the vCPU thread ids. The first measurement only sets the
    baseline.
    """

    def __init__(self, view, exit_counter, hypervisor):
        self.view = view
        self.exit_counter = exit_counter
        self.hypervisor = hypervisor
        self._last = None         # (time, {uuid: {vcpu: delay}}, kvm, exits)
        self._kvm_stats_off = False

    def measure(self, snapshot, domains, now):
        """``{uuid: {'run_delay'|'kvm_stats_per_s'|'kvm_exits_per_s'}}``."""
        delays = {u: {v: s.get('delay') for v, s in per.items()}
                  for u, per in snapshot.stats.items()}
        kvm = None
        if not self._kvm_stats_off:
            kvm = self.view.kvm_stats()
            # Off for good when libvirt has no such group, or when it has
            # domains but no counter for any (TCG, or no KVM stats).
            if kvm is None or (kvm and not any(kvm.values())):
                self._kvm_stats_off = True
                LOG.info('vcpu_sizing: libvirt reports no KVM exit counters '
                         'here (no "vm" statistics group, or not KVM)')
                kvm = None
        exits = self._sample_exits(snapshot)
        last = self._last
        self._last = (now, delays, kvm or {}, exits)
        out = {}
        if last is None:
            return out
        seconds = now - last[0]
        for uuid in domains:
            entry = {}
            d = {str(v): policy.delay_fraction(
                last[1].get(uuid, {}).get(v), value, seconds)
                for v, value in sorted(delays.get(uuid, {}).items())}
            d = {v: round(f, 6) for v, f in d.items() if f is not None}
            if d:
                entry['run_delay'] = d
            k = {name: policy.rate(last[2].get(uuid, {}).get(name), value,
                                   seconds)
                 for name, value in (kvm or {}).get(uuid, {}).items()}
            k = {n: round(r, 3) for n, r in sorted(k.items())
                 if r is not None}
            if k:
                entry['kvm_stats_per_s'] = k
            e = {}
            for key, counts in exits.items():
                owner, _, vcpu = key.rpartition('/')
                if owner != uuid:
                    continue
                before = last[3].get(key, {})
                rates = {n: policy.rate(before.get(n), c, seconds)
                         for n, c in counts.items()}
                rates = {n: round(r, 3) for n, r in rates.items()
                         if r is not None}
                if rates:
                    e[vcpu] = rates
            if e:
                entry['kvm_exits_per_s'] = e
            if entry:
                out[uuid] = entry
        return out

    def _sample_exits(self, snapshot):
        counter = self.exit_counter
        if counter is None or not counter.available():
            return {}
        return counter.sample(hv.vcpu_thread_ids(self.hypervisor,
                                                 snapshot.instances))
