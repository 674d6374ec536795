"""Agent capability ``vcpu_sizing``: pCPU-Est per instance, spin, sizing.

Every pass it

1. gathers every running domain's vCPU affinities (the live pinning) and
   caps (``<cputune>`` ``quota``/``period`` and ``global_quota``, or the
   live ``vcpu_quota``/``global_quota`` scheduler parameters where libvirt
   has them), Nova's instances and every other domain the agent may see;
2. computes the exact max-min fair estimate
   (:mod:`nova_cacheaware.pcpu_est.estimate`) of every instance: each
   configured vCPU counts as a claimant, also one a guest has offlined, so
   ``apply`` never feeds back into its own estimate;
3. measures spinning: the share of time each vCPU waited runnable
   (``vcpu.N.delay``), the KVM exit counters libvirt reports in its ``vm``
   statistics group (absent under TCG), and all and pause-loop exits per
   vCPU thread through the ``kvm:kvm_exit`` tracepoint
   (:class:`~.spin.KvmExitCounter`, off with a single log line where
   the host has no tracefs or no kvm module);
4. for ``cacheaware:vcpu_sizing=recommend`` and ``apply``: records the
   estimate in the domain's metadata (namespace
   :data:`~.view.METADATA_NS`) and writes the guest file
   (``[vcpu_sizing] guest_file``) through the QEMU guest agent;
5. detects spin storms (study 001, :mod:`~.spin_storm`): per instance,
   from its online vCPUs' run delay and pause-loop exits, with hysteresis;
   reported always, written into the guest file for ``recommend``;
6. for ``apply``: with ``apply_when = storm`` (the default) offlines vCPUs
   down to the recommended number while a storm lasts and onlines them all
   after it (:func:`~nova_cacheaware.vcpu_sizing.spin_storm.online_target`);
   with ``apply_when = always`` onlines exactly the recommended number at
   every pass, with hysteresis (:func:`~.policy.target_online`). Never
   vCPU 0. The vCPUs it
   offlined are recorded in the metadata, so they are onlined again when
   the instance opts out, when the agent stops (:meth:`release`), after an
   agent restart, and - when the guest agent stopped answering - at the
   first pass it answers again (logged while it does not).

Instances with ``cacheaware:numa=full`` are only estimated: the
``numa_balance`` capability owns their vCPUs' online state.

This module is the orchestration and the factory; the reads and writes on
domains are :mod:`~.view` (over the hypervisor port), the
spinning measurement :mod:`~.spin`, the decisions
:mod:`nova_cacheaware.vcpu_sizing.policy` and :mod:`~.policy.pcpu_est`.
"""

import logging
import os
import time

from nova_cacheaware.agent import capability
from nova_cacheaware.agent import guest_agent as ga_mod
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.agent import reporting
from nova_cacheaware.conf import vcpu_sizing as conf_mod
from nova_cacheaware.contracts import extra_specs as specs_mod
from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.topology import cpulist
from nova_cacheaware.vcpu_sizing import model
from nova_cacheaware.vcpu_sizing import policy
from nova_cacheaware.vcpu_sizing import spin as vcpu_spin
from nova_cacheaware.vcpu_sizing import spin_storm as storm_policy
from nova_cacheaware.vcpu_sizing import storm_states
from nova_cacheaware.vcpu_sizing import view as view_mod

LOG = logging.getLogger(__name__)

OFF, RECOMMEND, APPLY = 'off', 'recommend', 'apply'
#: ``[vcpu_sizing] apply_when``: size only in a storm, or always.
STORM, ALWAYS = 'storm', 'always'


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
                 clock=time.monotonic, view=None, apply_when=STORM,
                 storm_thresholds=None):
        if apply_when not in (STORM, ALWAYS):
            raise exception.InvalidInput(
                reason='apply_when must be storm or always, not %r'
                       % (apply_when,))
        self.hypervisor = hypervisor
        self.guest_agent = guest_agent
        self.exit_counter = exit_counter
        self.hysteresis = hysteresis
        self.stable_passes = stable_passes
        self.guest_file = guest_file
        self.guest_refresh_s = guest_refresh_s
        self.clock = clock
        self.view = view or view_mod.LibvirtView(hypervisor)
        self.spin = vcpu_spin.SpinMeter(self.view, exit_counter, hypervisor)
        self.apply_when = apply_when
        self.storms = storm_states.StormWatch(storm_thresholds)
        self._vms = {}            # uuid -> _VmState
        self._affinity_doc = None  # the last report's affinity document
        self._affinity = None      # ... parsed

    # -- one pass -------------------------------------------------------------

    def reconcile(self, snapshot):
        """Estimate, measure, recommend and apply; return the report."""
        now = self.clock()
        usable = tuple(snapshot.host_cpus) or None
        domains = self.view.domains(snapshot.instances)
        request = pcpu_est.EstimateRequest(vms=domains, pcpus=usable)
        result = pcpu_est.estimate(request)
        spin = self.spin.measure(snapshot, domains, now)
        vms = {}
        seen = set()
        for instance in snapshot.instances:
            uuid = instance.uuid
            estimate = result.vms.get(uuid)
            if estimate is None:
                continue
            seen.add(uuid)
            mode, why = self._mode(snapshot.requests.get(uuid),
                                   snapshot.request_errors.get(uuid))
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
            storm = self.storms.observe(uuid, entry,
                                        self._state(uuid).offlined)
            entry['storm'] = storm_states.report(storm)
            try:
                self._guest(uuid, mode, estimate, entry, now, storm.storm)
            except hv.DomainGone:
                continue
            vms[uuid] = entry
        for gone in set(self._vms) - seen:
            del self._vms[gone]
        self.storms.forget(seen)
        return {
            'pcpus': list(usable or ()),
            'affinity': request.to_dict(),
            'others': sorted(set(domains) - seen),
            'kvm_exit_tracepoint': self._tracepoint_state(),
            'vms': vms,
            'spin_storm': self.storms.replay_doc(),
        }

    def _mode(self, request, error):
        if request is None:
            return OFF, 'bad extra specs: %s' % error
        if request.numa == 'full' and request.vcpu_sizing != OFF:
            return OFF, ('%s=full: numa_balance owns the vCPUs; estimate '
                         'only' % specs_mod.NUMA)
        return request.vcpu_sizing, None

    def _tracepoint_state(self):
        if self.exit_counter is None:
            return 'off'
        return self.exit_counter.unsupported or 'on'

    # -- recommend and apply ------------------------------------------------

    def _state(self, uuid):
        state = self._vms.get(uuid)
        if state is None:
            # After an agent restart the metadata says what we offlined.
            offlined, xml = frozenset(), None
            try:
                xml = self.view.metadata(uuid)
                if xml:
                    offlined = view_mod.parse_metadata(xml)[1]
            except exception.InvalidInput as e:
                LOG.warning('vcpu_sizing: %s: %s', uuid, e)
            state = self._vms[uuid] = _VmState(offlined)
            state.metadata = xml
        return state

    def _guest(self, uuid, mode, estimate, entry, now, storm=False):
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
                self._apply(uuid, state, estimate, entry, storm)
            elif mode != APPLY:
                state.pending = None
            self._write_file(uuid, state, estimate, mode, entry, now,
                             storm)
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

    def _target(self, state, online, every, estimate, storm):
        """``(vCPUs to have online, act?, why)`` by ``apply_when``."""
        if self.apply_when == STORM:
            want = storm_policy.online_target(
                storm, estimate.recommended_vcpus, len(every))
            why = ('spin storm: %d vCPUs (pCPU-Est)' % want if storm
                   else 'no spin storm: every vCPU online')
            return want, want != len(online), why
        target, state.pending = policy.target_online(
            len(online), estimate.available_pcpus, len(every),
            self.hysteresis, state.pending, self.stable_passes)
        return target.online, target.act, target.reason

    def _apply(self, uuid, state, estimate, entry, storm=False):
        every, online, offlinable = self.guest_agent.vcpus(uuid)
        if not every or 0 not in online:
            raise ga_mod.GuestAgentError(
                uuid=uuid, reason='vCPU report without vCPU 0 online')
        want, act, why = self._target(state, online, every, estimate, storm)
        entry['online'] = len(online)
        entry['target'] = want
        entry['action'] = why
        if not act:
            return
        to_on, to_off = policy.plan_online(every, online, offlinable, want)
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

    def _write_file(self, uuid, state, estimate, mode, entry, now,
                    storm=False):
        text = policy.guest_file(estimate, mode, storm)
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
        xml = (view_mod.metadata_xml(mode, estimate, state.offlined)
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
        """The VMs' affinities (payload 1.1 ``vcpu_affinity``), estimates.

        The affinity document is parsed when it changed since the last
        pass only: the section then hands the same object, and the
        publisher derives its pCPU levels once.
        """
        doc = report['affinity']
        if doc != self._affinity_doc:
            self._affinity = pcpu_est.EstimateRequest.from_dict(doc)
            self._affinity_doc = doc
        return host_section(report, self._affinity)

    def format_report(self, report):
        """One line per instance for ``--once``."""
        lines = ['vcpu_sizing: %d pCPUs, kvm_exit tracepoint: %s'
                 % (len(report['pcpus']), report['kvm_exit_tracepoint'])]
        for uuid, e in sorted(report['vms'].items()):
            lines.append('  %s %-9s %d vCPUs  %.2f pCPUs -> %d%s%s%s' % (
                uuid[:8], e['mode'], e['vcpus'], e['available_pcpus'],
                e['recommended_vcpus'],
                '  online %d' % e['online'] if 'online' in e else '',
                '  SPIN STORM' if e.get('storm', {}).get('storm') else '',
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
        exit_counter=(vcpu_spin.KvmExitCounter() if opts.kvm_exit_tracepoint
                      else None),
        hysteresis=opts.hysteresis, stable_passes=opts.stable_passes,
        guest_file=opts.guest_file, guest_refresh_s=opts.guest_refresh_s,
        apply_when=opts.apply_when,
        storm_thresholds=model.StormThresholds(
            enter_delay=opts.storm_enter_delay,
            leave_delay=opts.storm_leave_delay,
            enter_pause_exits=opts.storm_enter_pause_exits,
            leave_pause_exits=opts.storm_leave_pause_exits,
            enter_periods=opts.storm_enter_periods,
            leave_periods=opts.storm_leave_periods,
            max_leave_periods=opts.storm_max_leave_periods))


def host_section(report, affinity):
    """The typed host-state section of a pass's ``report``.

    ``affinity``: the report's affinity document, parsed. Each VM's
    pCPU-Est estimate and spin-storm verdict (None: unknown).
    """
    return reporting.SizingSection(affinity=affinity, vms={
        uuid: reporting.VmSizing(
            pcpu_estimate=entry['available_pcpus'],
            spin_storm=(None if entry['storm'] is None
                        else bool(entry['storm']['storm'])))
        for uuid, entry in report['vms'].items()})
