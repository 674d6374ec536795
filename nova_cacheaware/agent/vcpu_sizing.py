"""Agent capability ``vcpu_sizing``: pCPU-Est per instance, spin, sizing.

Every pass it

1. gathers every running domain's vCPU affinities (the live pinning) and
   caps (``<cputune>`` ``quota``/``period`` and ``global_quota``, or the
   live ``vcpu_quota``/``global_quota`` scheduler parameters where libvirt
   has them), Nova's instances and every other domain the agent may see;
2. computes the exact max-min fair estimate
   (:mod:`nova_cacheaware.policy.pcpu_est`) of every instance: each
   configured vCPU counts as a claimant, also one a guest has offlined, so
   ``apply`` never feeds back into its own estimate;
3. measures spinning: the share of time each vCPU waited runnable
   (``vcpu.N.delay``), the KVM exit counters libvirt reports in its ``vm``
   statistics group (absent under TCG), and all and pause-loop exits per
   vCPU thread through the ``kvm:kvm_exit`` tracepoint
   (:class:`KvmExitCounter`, off with a single log line where the host has
   no tracefs or no kvm module);
4. for ``cacheaware:vcpu_sizing=recommend`` and ``apply``: records the
   estimate in the domain's metadata (namespace :data:`METADATA_NS`) and
   writes the guest file (``[vcpu_sizing] guest_file``) through the QEMU
   guest agent;
5. for ``apply``: onlines exactly the recommended number of vCPUs through
   the guest agent, with hysteresis (:func:`~nova_cacheaware.policy.
   vcpu_sizing.target_online`), never offlining vCPU 0. The vCPUs it
   offlined are recorded in the metadata, so they are onlined again when
   the instance opts out, when the agent stops (:meth:`release`), after an
   agent restart, and - when the guest agent stopped answering - at the
   first pass it answers again (logged while it does not).

Instances with ``cacheaware:numa=full`` are only estimated: the
``numa_balance`` capability owns their vCPUs' online state.
"""

import ctypes
import fcntl
import logging
import os
import time
from xml.etree import ElementTree

from nova_cacheaware.agent import capability
from nova_cacheaware.agent import counters
from nova_cacheaware.agent import guest_agent as ga_mod
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.api import specs as specs_mod
from nova_cacheaware.conf import vcpu_sizing as conf_mod
from nova_cacheaware import exception
from nova_cacheaware.policy import pcpu_est
from nova_cacheaware.policy import vcpu_sizing as policy
from nova_cacheaware.topology import cpulist

LOG = logging.getLogger(__name__)

#: Namespace and key of this capability's domain metadata element.
METADATA_NS = 'http://openstack.org/xmlns/nova-cacheaware/vcpu-sizing/1.0'
METADATA_KEY = 'cacheaware-sizing'

OFF, RECOMMEND, APPLY = 'off', 'recommend', 'apply'

# perf_event_open for tracepoints.
PERF_TYPE_TRACEPOINT = 2
#: ``_IOW('$', 6, char *)``: attach a filter to a tracepoint event.
PERF_EVENT_IOC_SET_FILTER = 0x40082406
TRACEFS_ROOTS = ('/sys/kernel/tracing', '/sys/kernel/debug/tracing')
#: ``exit_reason`` of a pause-loop exit: VMX basic reason 40, SVM 0x77.
PAUSE_EXIT_REASON = {'vmx': 40, 'svm': 0x77}


# --------------------------------------------------------------------------
# kvm:kvm_exit through perf_event_open
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# Reading affinities and caps from libvirt
# --------------------------------------------------------------------------

def caps_from_xml(xml, vcpus):
    """``{vcpu: cap}`` from a domain XML's ``<cputune>`` (empty: no cap).

    ``quota``/``period`` cap each vCPU; ``global_quota``/``global_period``
    cap the whole domain and are spread evenly over its vCPUs.
    """
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as e:
        raise exception.InvalidInput(reason='domain XML: %s' % e) from None

    def text(name):
        el = root.find('cputune/' + name)
        return None if el is None or el.text is None else el.text.strip()

    return _caps(text('quota'), text('period'), text('global_quota'),
                 text('global_period'), vcpus)


def caps_from_params(params, vcpus):
    """``{vcpu: cap}`` from live scheduler parameters; None if they lack it.

    ``params`` is ``schedulerParametersFlags()``: qemu has ``vcpu_quota``,
    ``vcpu_period``, ``global_quota``, ``global_period``; other drivers
    have none of these (None: use the XML).
    """
    if not any(k in params for k in ('vcpu_quota', 'global_quota')):
        return None
    return _caps(params.get('vcpu_quota'), params.get('vcpu_period'),
                 params.get('global_quota'), params.get('global_period'),
                 vcpus)


def _caps(quota, period, global_quota, global_period, vcpus):
    if vcpus < 1:
        return {}
    cap = policy.combine_caps(
        policy.cap_from_quota(quota, period),
        policy.cap_from_quota(global_quota, global_period, vcpus))
    return {} if cap is None or cap >= 1.0 else {
        v: cap for v in range(vcpus)}


def parse_metadata(xml):
    """``(mode, offlined vCPUs)`` from this capability's metadata element."""
    try:
        root = ElementTree.fromstring(xml)
        return (root.get('mode'),
                frozenset(cpulist.parse_cpulist(root.get('offlined') or '')))
    except (ElementTree.ParseError, ValueError) as e:
        raise exception.InvalidInput(
            reason='vcpu_sizing metadata: %s' % e) from None


def metadata_xml(mode, estimate, offlined):
    """This capability's metadata element (attributes only)."""
    el = ElementTree.Element('sizing', {
        'mode': mode,
        'available_pcpus': '%.6f' % estimate.available_pcpus,
        'recommended_vcpus': str(estimate.recommended_vcpus),
        'offlined': cpulist.format_cpulist(sorted(offlined)),
    })
    return ElementTree.tostring(el, encoding='unicode')


class LibvirtView:
    """What :class:`VcpuSizing` reads and writes through libvirt."""

    def __init__(self, hypervisor):
        self.hypervisor = hypervisor

    def _libvirt(self):
        import libvirt
        return libvirt

    def domains(self, instances):
        """``{uuid: VMAffinity}`` of every running domain the agent sees.

        Nova instances take their live pinning from ``instances``; other
        domains (not Nova's, still using the pCPUs) are read here.
        """
        libvirt = self._libvirt()
        known = {i.uuid: i for i in instances}
        hyper = self.hypervisor

        def collect(conn):
            test = conn.getType() == 'TEST'
            live = 0 if test else libvirt.VIR_DOMAIN_AFFECT_LIVE
            out = {}
            for dom in conn.listAllDomains(
                    libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
                uuid = dom.UUIDString()
                if (hyper.domain_filter is not None
                        and not hyper.domain_filter(uuid)):
                    continue
                try:
                    out[uuid] = self._affinity(dom, known.get(uuid), live)
                except libvirt.libvirtError as e:
                    if e.get_error_code() != libvirt.VIR_ERR_NO_DOMAIN:
                        raise
                except exception.InvalidInput as e:
                    LOG.warning('vcpu_sizing: skipping domain %s: %s',
                                uuid, e)
            return out

        return hyper.call(collect)

    def _affinity(self, dom, instance, live_flag):
        libvirt = self._libvirt()
        if instance is not None:
            vcpus = dict(instance.live)
        else:
            vcpus = {v: tuple(i for i, on in enumerate(m) if on)
                     for v, m in enumerate(dom.vcpuPinInfo(live_flag))}
        caps = None
        try:
            caps = caps_from_params(
                dom.schedulerParametersFlags(live_flag), len(vcpus))
        except libvirt.libvirtError as e:
            if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                raise
        if caps is None:
            caps = caps_from_xml(dom.XMLDesc(0), len(vcpus))
        caps = {v: c for v, c in caps.items() if v in vcpus}
        return pcpu_est.VMAffinity(vcpus=vcpus, caps=caps)

    def kvm_stats(self):
        """``{uuid: {stat: value}}`` of the ``vm`` statistics group.

        Keeps the exit and yield counters only; None when this libvirt or
        driver has no such group.
        """
        libvirt = self._libvirt()
        group = getattr(libvirt, 'VIR_DOMAIN_STATS_VM', None)
        if group is None:
            return None
        hyper = self.hypervisor

        def collect(conn):
            out = {}
            for dom, stats in conn.getAllDomainStats(
                    group, libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE):
                uuid = dom.UUIDString()
                if (hyper.domain_filter is not None
                        and not hyper.domain_filter(uuid)):
                    continue
                out[uuid] = {k: v for k, v in stats.items()
                             if isinstance(v, (int, float))
                             and ('exit' in k or 'yield' in k)}
            return out

        try:
            return hyper.call(collect)
        except libvirt.libvirtError as e:
            if e.get_error_code() in (libvirt.VIR_ERR_NO_SUPPORT,
                                      libvirt.VIR_ERR_ARGUMENT_UNSUPPORTED,
                                      libvirt.VIR_ERR_INVALID_ARG):
                return None
            raise

    def metadata(self, uuid):
        """This capability's metadata element of ``uuid``, or None."""
        libvirt = self._libvirt()
        hyper = self.hypervisor

        def read(conn):
            dom = hyper.lookup(conn, uuid)
            flags = (0 if conn.getType() == 'TEST'
                     else libvirt.VIR_DOMAIN_AFFECT_LIVE)
            try:
                return dom.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT,
                                    METADATA_NS, flags)
            except libvirt.libvirtError as e:
                if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN_METADATA:
                    return None
                raise

        return hyper.call(read)

    def set_metadata(self, uuid, xml):
        """Set (``xml``) or remove (None) the element on the live domain."""
        libvirt = self._libvirt()
        hyper = self.hypervisor

        def write(conn):
            dom = hyper.lookup(conn, uuid)
            flags = (0 if conn.getType() == 'TEST'
                     else libvirt.VIR_DOMAIN_AFFECT_LIVE)
            dom.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, xml,
                            METADATA_KEY if xml else None, METADATA_NS,
                            flags)

        hyper.call(write)


# --------------------------------------------------------------------------
# The capability
# --------------------------------------------------------------------------

class _VmState:
    """What the capability remembers of one instance between passes."""

    def __init__(self, offlined=frozenset()):
        self.offlined = frozenset(offlined)   # vCPUs we took offline
        self.pending = None                   # target_online's pending
        self.guest_down = False               # logged the outage already
        self.file = None                      # (text, monotonic time)
        self.metadata = None                  # last XML written


class VcpuSizing(capability.Capability):
    """pCPU-Est per instance, spin measurements, recommend and apply."""

    name = 'vcpu_sizing'

    def __init__(self, hypervisor, guest_agent, exit_counter=None,
                 hysteresis=0.25, stable_passes=2,
                 guest_file='/run/cacheaware/pcpus', guest_refresh_s=300,
                 clock=time.monotonic, view=None):
        self.hypervisor = hypervisor
        self.guest_agent = guest_agent
        self.exit_counter = exit_counter
        self.hysteresis = hysteresis
        self.stable_passes = stable_passes
        self.guest_file = guest_file
        self.guest_refresh_s = guest_refresh_s
        self.clock = clock
        self.view = view or LibvirtView(hypervisor)
        self._vms = {}            # uuid -> _VmState
        self._last = None         # (time, {uuid: {vcpu: delay}}, kvm, exits)
        self._kvm_stats_off = False

    # -- one pass -------------------------------------------------------------

    def reconcile(self, snapshot):
        """Estimate, measure, recommend and apply; return the report."""
        now = self.clock()
        usable = tuple(snapshot.host_cpus) or None
        domains = self.view.domains(snapshot.instances)
        request = pcpu_est.EstimateRequest(vms=domains, pcpus=usable)
        result = pcpu_est.estimate(request)
        spin = self._spin(snapshot, domains, now)
        vms = {}
        seen = set()
        for instance in snapshot.instances:
            uuid = instance.uuid
            estimate = result.vms.get(uuid)
            if estimate is None:
                continue
            seen.add(uuid)
            mode, why = self._mode(snapshot.specs.get(uuid))
            entry = {
                'mode': mode,
                'vcpus': len(domains[uuid].vcpus),
                'available_pcpus': round(estimate.available_pcpus, 6),
                'recommended_vcpus': estimate.recommended_vcpus,
                'shares': {str(v): round(s, 6)
                           for v, s in sorted(estimate.vcpus.items())},
            }
            if domains[uuid].caps:
                entry['caps'] = {str(v): c for v, c in
                                 sorted(domains[uuid].caps.items())}
            if why:
                entry['reason'] = why
            entry.update(spin.get(uuid, {}))
            try:
                self._guest(uuid, mode, estimate, entry, now)
            except hv.DomainGone:
                continue
            vms[uuid] = entry
        for gone in set(self._vms) - seen:
            del self._vms[gone]
        return {
            'pcpus': list(usable or ()),
            'affinity': request.to_dict(),
            'others': sorted(set(domains) - seen),
            'kvm_exit_tracepoint': self._tracepoint_state(),
            'vms': vms,
        }

    def _mode(self, extra_specs):
        try:
            request = specs_mod.parse_extra_specs(extra_specs or {})
        except exception.InvalidInput as e:
            return OFF, 'bad extra specs: %s' % e
        if request.numa == 'full' and request.vcpu_sizing != OFF:
            return OFF, ('cacheaware:numa=full: numa_balance owns the '
                         'vCPUs; estimate only')
        return request.vcpu_sizing, None

    def _tracepoint_state(self):
        if self.exit_counter is None:
            return 'off'
        return self.exit_counter.unsupported or 'on'

    # -- spinning -------------------------------------------------------------

    def _spin(self, snapshot, domains, now):
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

    # -- recommend and apply ------------------------------------------------

    def _state(self, uuid):
        state = self._vms.get(uuid)
        if state is None:
            # After an agent restart the metadata says what we offlined.
            offlined, xml = frozenset(), None
            try:
                xml = self.view.metadata(uuid)
                if xml:
                    offlined = parse_metadata(xml)[1]
            except exception.InvalidInput as e:
                LOG.warning('vcpu_sizing: %s: %s', uuid, e)
            state = self._vms[uuid] = _VmState(offlined)
            state.metadata = xml
        return state

    def _guest(self, uuid, mode, estimate, entry, now):
        state = self._state(uuid)
        restored = False
        if state.offlined and (mode != APPLY or state.guest_down):
            # Opted out of apply (off or recommend), or the guest agent was
            # silent: give every offlined vCPU back first. In apply mode
            # sizing starts again at the next pass.
            restored = self._restore(
                uuid, state, entry,
                'guest agent is back' if mode == APPLY else 'opted out')
            if not restored:                # still not answering
                entry['offlined'] = cpulist.format_cpulist(
                    sorted(state.offlined))
                return
        if mode == OFF:
            self._record(uuid, state, mode, estimate)
            return
        try:
            if mode == APPLY and not restored:
                self._apply(uuid, state, estimate, entry)
            elif mode != APPLY:
                state.pending = None
            self._write_file(uuid, state, estimate, mode, entry, now)
            state.guest_down = False
            entry['guest_agent'] = 'ok'
        except ga_mod.GuestAgentUnavailable as e:
            entry['guest_agent'] = 'not answering'
            if state.offlined and not state.guest_down:
                LOG.warning('vcpu_sizing: guest agent of %s is not '
                            'answering (%s); vCPUs %s stay offline until it '
                            'answers, then they are onlined again', uuid, e,
                            cpulist.format_cpulist(sorted(state.offlined)))
            elif not state.guest_down:
                LOG.info('vcpu_sizing: guest agent of %s is not answering '
                         '(%s); nothing changed', uuid, e)
            state.guest_down = True
        except ga_mod.GuestAgentError as e:
            entry['guest_agent'] = 'error: %s' % e
            LOG.warning('vcpu_sizing: %s', e)
        if state.offlined:
            entry['offlined'] = cpulist.format_cpulist(sorted(state.offlined))
        self._record(uuid, state, mode, estimate)

    def _apply(self, uuid, state, estimate, entry):
        every, online, offlinable = self.guest_agent.vcpus(uuid)
        if not every or 0 not in online:
            raise ga_mod.GuestAgentError(
                uuid=uuid, reason='vCPU report without vCPU 0 online')
        target, state.pending = policy.target_online(
            len(online), estimate.available_pcpus, len(every),
            self.hysteresis, state.pending, self.stable_passes)
        entry['online'] = len(online)
        entry['target'] = target.online
        entry['action'] = target.reason
        if not target.act:
            return
        to_on, to_off = policy.plan_online(every, online, offlinable,
                                           target.online)
        if to_on:
            self.guest_agent.set_vcpus(uuid, to_on, online=True)
            state.offlined = state.offlined - to_on
        if to_off:
            # Recorded before acting: a crash in between still restores.
            state.offlined = state.offlined | to_off
            self._record(uuid, state, APPLY, estimate)
            self.guest_agent.set_vcpus(uuid, to_off, online=False)
        entry['online'] = len(online) + len(to_on) - len(to_off)
        LOG.info('vcpu_sizing: %s: %d vCPUs online (estimate %.2f pCPUs)',
                 uuid, entry['online'], estimate.available_pcpus)

    def _restore(self, uuid, state, entry, why):
        """Online every vCPU we offlined; True when done."""
        try:
            every, online, _ = self.guest_agent.vcpus(uuid)
            back = (state.offlined & every) - online
            self.guest_agent.set_vcpus(uuid, back, online=True)
        except ga_mod.GuestAgentError as e:
            entry['guest_agent'] = 'not answering'
            if not state.guest_down:
                LOG.warning('vcpu_sizing: cannot online vCPUs %s of %s '
                            '(%s: %s); retrying every pass',
                            cpulist.format_cpulist(sorted(state.offlined)),
                            uuid, why, e)
            state.guest_down = True
            return False
        LOG.info('vcpu_sizing: %s: onlined vCPUs %s again (%s)', uuid,
                 cpulist.format_cpulist(sorted(back)) or 'none', why)
        state.offlined = frozenset()
        state.pending = None
        state.guest_down = False
        entry['action'] = 'restored (%s)' % why
        entry['guest_agent'] = 'ok'
        return True

    def _write_file(self, uuid, state, estimate, mode, entry, now):
        text = policy.guest_file(estimate, mode)
        if state.file is not None and state.file[0] == text and (
                not self.guest_refresh_s
                or now - state.file[1] < self.guest_refresh_s):
            entry['guest_file'] = 'unchanged'
            return
        try:
            self.guest_agent.write_file(uuid, self.guest_file, text)
        except ga_mod.GuestAgentUnavailable:
            raise
        except ga_mod.GuestAgentError:
            # Most likely the directory is missing (a fresh /run).
            self.guest_agent.exec(uuid, '/bin/mkdir',
                                  ['-p', os.path.dirname(self.guest_file)])
            self.guest_agent.write_file(uuid, self.guest_file, text)
        state.file = (text, now)
        entry['guest_file'] = 'written'

    def _record(self, uuid, state, mode, estimate):
        xml = (metadata_xml(mode, estimate, state.offlined)
               if mode != OFF or state.offlined else None)
        if xml == state.metadata:
            return
        try:
            self.view.set_metadata(uuid, xml)
            state.metadata = xml
        except hv.DomainGone:
            pass

    # -- plug-in interface --------------------------------------------------

    def host_state(self, report):
        """The VMs' affinities (payload 1.1 ``vcpu_affinity``), estimates."""
        return {
            'vcpu_affinity': report['affinity'],
            'vms': {uuid: {k: v for k, v in entry.items()
                           if k in ('mode', 'vcpus', 'available_pcpus',
                                    'recommended_vcpus', 'online',
                                    'run_delay', 'kvm_stats_per_s',
                                    'kvm_exits_per_s')}
                    for uuid, entry in report['vms'].items()},
        }

    def format_report(self, report):
        """One line per instance for ``--once``."""
        lines = ['vcpu_sizing: %d pCPUs, kvm_exit tracepoint: %s'
                 % (len(report['pcpus']), report['kvm_exit_tracepoint'])]
        for uuid, e in sorted(report['vms'].items()):
            lines.append('  %s %-9s %d vCPUs  %.2f pCPUs -> %d%s%s' % (
                uuid[:8], e['mode'], e['vcpus'], e['available_pcpus'],
                e['recommended_vcpus'],
                '  online %d' % e['online'] if 'online' in e else '',
                '  (%s)' % e['reason'] if 'reason' in e else ''))
        return lines

    def release(self):
        """Online again every vCPU this capability took offline."""
        for uuid, state in list(self._vms.items()):
            if not state.offlined:
                continue
            entry = {}
            try:
                self._restore(uuid, state, entry, 'agent stopping')
                if not state.offlined:
                    self.view.set_metadata(uuid, None)
            except hv.DomainGone:
                continue
            if state.offlined:
                LOG.error('vcpu_sizing: vCPUs %s of %s stay offline: its '
                          'guest agent is not answering; the next agent '
                          'start onlines them (they are recorded in the '
                          'domain metadata)',
                          cpulist.format_cpulist(sorted(state.offlined)),
                          uuid)
        if self.exit_counter is not None:
            self.exit_counter.close()


def factory(conf, hypervisor):
    """Entry point: a :class:`VcpuSizing` configured from ``[vcpu_sizing]``."""
    conf_mod.register_opts(conf)
    opts = conf.vcpu_sizing
    return VcpuSizing(
        hypervisor,
        ga_mod.GuestAgent(hypervisor, timeout_s=opts.guest_agent_timeout_s),
        exit_counter=KvmExitCounter() if opts.kvm_exit_tracepoint else None,
        hysteresis=opts.hysteresis, stable_passes=opts.stable_passes,
        guest_file=opts.guest_file, guest_refresh_s=opts.guest_refresh_s)
