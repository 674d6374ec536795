"""Spinning of vCPUs, as the ``vcpu_sizing`` capability measures it.

:class:`SpinMeter` turns what a pass sees into rates per instance: the
share of time each vCPU waited runnable (``vcpu.N.delay``), the KVM exit
counters libvirt reports in its ``vm`` statistics group (absent under TCG),
and all and pause-loop exits per vCPU thread through the ``kvm:kvm_exit``
tracepoint (:class:`KvmExitCounter`, off with a single log line where the
host has no tracefs or no kvm module).
"""

import ctypes
import fcntl
import logging
import os

from nova_cacheaware.agent import counters
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.vcpu_sizing import policy

LOG = logging.getLogger(__name__)

OFF, RECOMMEND, APPLY = 'off', 'recommend', 'apply'

# perf_event_open for tracepoints.
PERF_TYPE_TRACEPOINT = 2
#: ``_IOW('$', 6, char *)``: attach a filter to a tracepoint event.
PERF_EVENT_IOC_SET_FILTER = 0x40082406
TRACEFS_ROOTS = ('/sys/kernel/tracing', '/sys/kernel/debug/tracing')
#: ``exit_reason`` of a pause-loop exit: VMX basic reason 40, SVM 0x77.
PAUSE_EXIT_REASON = {'vmx': 40, 'svm': 0x77}


class KvmExitCounter:
    """All and pause-loop KVM exits per vCPU thread (``kvm:kvm_exit``).

    One counting event per thread for every exit and, where the CPU vendor
    is known and the kernel takes the filter, one filtered on the pause
    exit reason. The first "cannot" (no tracefs, no kvm, no permission)
    switches the counter off for good, logged once; :attr:`unsupported`
    says why.
    """

    def __init__(self, roots=TRACEFS_ROOTS, opener=counters.perf_event_open,
                 reader=counters.read_count, set_filter=None,
                 cpuinfo='/proc/cpuinfo'):
        self.roots = roots
        self._open = opener
        self._read = reader
        self._set_filter = set_filter or _ioctl_filter
        self._cpuinfo = cpuinfo
        self._fds = {}              # (tid, 'exits'|'pause_exits') -> fd
        self._id = None
        self._pause_filter = None
        self.unsupported = None

    def _probe(self):
        if self._id is not None or self.unsupported:
            return not self.unsupported
        for root in self.roots:
            path = os.path.join(root, 'events', 'kvm', 'kvm_exit', 'id')
            try:
                with open(path) as f:
                    self._id = int(f.read().strip())
                break
            except (OSError, ValueError):
                continue
        if self._id is None:
            self._off('no kvm:kvm_exit tracepoint under %s (tracefs not '
                      'mounted or kvm not loaded)' % ' or '.join(self.roots))
            return False
        reason = PAUSE_EXIT_REASON.get(_virt_flag(self._cpuinfo))
        if reason is not None:
            self._pause_filter = 'exit_reason == %d' % reason
        return True

    def _off(self, why):
        self.unsupported = why
        LOG.warning('vcpu_sizing: KVM exits are not counted: %s; pCPU '
                    'estimates and vCPU run delay go on without them', why)
        self.close()

    def available(self):
        """True while the tracepoint can be counted on this host."""
        return self._probe()

    def sample(self, threads):
        """``{key: {'exits': n[, 'pause_exits': n]}}``, cumulative."""
        if not self._probe():
            return {}
        out = {}
        live = set()
        for key, tid in threads.items():
            counts = {}
            for name in ('exits', 'pause_exits'):
                if name == 'pause_exits' and self._pause_filter is None:
                    continue
                live.add((tid, name))
                try:
                    fd = self._fds.get((tid, name))
                    if fd is None:
                        fd = self._open_one(tid, name)
                        if fd is None:
                            continue
                    counts[name] = self._read(fd)
                except counters.PerfUnsupported as e:
                    self._off('perf_event_open: %s' % e)
                    return {}
                except PermissionError as e:
                    self._off('perf_event_open: %s' % e)
                    return {}
                except OSError as e:       # the thread ended
                    LOG.debug('no kvm_exit count for thread %s: %s', tid, e)
            if counts:
                out[key] = counts
        for stale in [k for k in self._fds if k not in live]:
            os.close(self._fds.pop(stale))
        return out

    def _open_one(self, tid, name):
        attr = counters.make_attr(PERF_TYPE_TRACEPOINT, self._id)
        fd = self._open(attr, tid)
        if name == 'pause_exits':
            try:
                self._set_filter(fd, self._pause_filter)
            except OSError as e:
                os.close(fd)
                LOG.warning('vcpu_sizing: the kernel refused the pause '
                            'exit filter (%s); counting all exits only', e)
                self._pause_filter = None
                return None
        self._fds[(tid, name)] = fd
        return fd

    def close(self):
        """Close every open event."""
        counters.close_all(self._fds)


def _ioctl_filter(fd, text):
    buf = ctypes.create_string_buffer(text.encode())
    fcntl.ioctl(fd, PERF_EVENT_IOC_SET_FILTER, ctypes.addressof(buf))


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
