"""Spinning of vCPUs, as the ``vcpu_sizing`` capability measures it.

:class:`SpinMeter` turns what a pass sees into rates per instance: the
share of time each vCPU waited runnable (``vcpu.N.delay``), the KVM exit
counters libvirt reports in its ``vm`` statistics group (absent under TCG),
and all and pause-loop exits per vCPU thread through the ``kvm:kvm_exit``
tracepoint (:class:`KvmExitCounter`, off with a single log line where the
host has no tracefs or no kvm module).
"""

import logging

from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.privsep import thread_groups
from nova_cacheaware.privsep import tracepoint
from nova_cacheaware.vcpu_sizing import policy

LOG = logging.getLogger(__name__)

OFF, RECOMMEND, APPLY = 'off', 'recommend', 'apply'

KVM_EXIT = 'kvm:kvm_exit'
#: ``exit_reason`` of a pause-loop exit: VMX basic reason 40, SVM 0x77.
PAUSE_EXIT_REASON = {'vmx': 40, 'svm': 0x77}


class KvmExitCounter(thread_groups.ThreadGroups):
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

    cannot = (tracepoint.NoTracepoint,) + thread_groups.ThreadGroups.cannot
    log = LOG
    what = 'KVM exit counts'

    def __init__(self, groups=tracepoint, cpuinfo='/proc/cpuinfo'):
        super().__init__(groups)
        self._cpuinfo = cpuinfo
        self._events = None         # name -> (tracepoint, filter), once read

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

    def sample(self, threads):
        """``{key: {'exits': n[, 'pause_exits': n]}}``, cumulative.

        ``threads``: ``{key: thread id}``; a thread that ended is skipped
        and its group closed.
        """
        return super().sample(threads)

    def _dropped(self, dropped):
        if 'pause_exits' in dropped:
            del self.events['pause_exits']
            LOG.warning('vcpu_sizing: %s; counting all exits only',
                        dropped['pause_exits'])
        if 'exits' in dropped:
            self._off(dropped['exits'])

    def _switched_off(self, why):
        LOG.warning('vcpu_sizing: KVM exits are not counted: %s; pCPU '
                    'estimates and vCPU run delay go on without them', why)


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
