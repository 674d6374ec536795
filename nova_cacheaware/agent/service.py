"""The agent: observe -> decide -> act, on lifecycle events and a period.

:class:`Agent` wires the injected pieces together; :meth:`Agent.reconcile`
is one full pass and is what ``--once`` runs. :meth:`Agent.run` is the daemon
loop: a pass at start, then one whenever libvirt reports a lifecycle change
(started, resumed, migrated, rebooted: Nova rebuilt the domain and our live
pins are gone) and at least every ``period_s`` seconds.
"""

import dataclasses
import logging
import threading
import typing as ty

from nova_cacheaware.agent import actuator as actuator_mod
from nova_cacheaware.agent import counters as counters_mod
from nova_cacheaware.agent import decide
from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.agent import outage
from nova_cacheaware.agent import reporting
from nova_cacheaware.agent import specs as specs_mod
from nova_cacheaware.agent import threads
from nova_cacheaware.api import specs as api_specs
from nova_cacheaware import exception
from nova_cacheaware.policy import domain_choice
from nova_cacheaware.topology import cpulist

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Snapshot:
    """Everything one pass observed."""

    instances: ty.List[hv.Instance]
    specs: ty.Dict[str, dict]
    spec_errors: ty.Dict[str, str]
    stats: ty.Dict[str, dict]
    counters: ty.Dict[str, dict]
    host_cpus: ty.Tuple[int, ...] = ()


@dataclasses.dataclass
class Pass:
    """One reconcile: the snapshot, the plan in and out, the decisions."""

    snapshot: Snapshot
    plan_input: dict
    plan_output: dict
    decisions: ty.List[decide.Decision]
    result: actuator_mod.ApplyResult
    problems: ty.List[str]
    capabilities: ty.Dict[str, dict] = dataclasses.field(
        default_factory=dict)


class Agent:
    """Observe, decide, act. Every dependency is injected.

    ``domain_set`` is the host's :class:`~nova_cacheaware.topology.domains.
    DomainSet`; ``usable_cpus`` the CPUs floating guests may use (None: every
    CPU of the domains).
    """

    def __init__(self, hypervisor, domain_set, planner, actuator,
                 spec_source=None, counter_source=None, placement=None,
                 publisher=None, usable_cpus=None, max_vcpus_per_cpu=1.0,
                 capabilities=(), classifier=None):
        self.hypervisor = hypervisor
        self.domain_set = domain_set
        self.planner = planner
        self.actuator = actuator
        self.spec_source = spec_source or specs_mod.NullSpecSource()
        self.counter_source = (counter_source
                               or counters_mod.NoCounterSource())
        self.placement = placement or reporting.LoggingPlacementReporter()
        self.publisher = publisher or reporting.LoggingStatePublisher()
        self.usable_cpus = (tuple(sorted(usable_cpus)) if usable_cpus
                            else tuple(sorted(c for d in domain_set.domains
                                              for c in d.cpus)))
        self.max_vcpus_per_cpu = max_vcpus_per_cpu
        self.capabilities = tuple(capabilities)
        # Run-time classification of 'auto' VMs (None: declared only).
        self.classifier = classifier
        self.last_held = {}
        # Per-host model: {uuid: domain} the agent chose for host room.
        self._chosen = {}
        self._choice_input = None  # its replay document (--dump-state)
        self._base = {}  # {domain: (vCPUs, memory-bound)} without host room
        self._choice_loads = None  # what the choice counted (live state)
        self._unplaced = set()  # host-held instances that found no domain
        self.outages = outage.Outages()
        self._membound_homes = {}
        # Crosses from libvirt's OS thread to this loop (green or not).
        self._wake = threads.Waker()
        self._stop = threading.Event()
        self._last_counts = {}

    # -- observe ------------------------------------------------------------

    def observe(self):
        """Read instances, their specs, vCPU stats and counters."""
        instances = self.hypervisor.list_instances()
        specs, errors = {}, {}
        for instance in instances:
            try:
                specs[instance.uuid] = self.spec_source.extra_specs(
                    instance.uuid)
            except specs_mod.SpecLookupFailed as e:
                # Unknown specs: treated as 'auto' (never moved as
                # memory-bound), retried next pass.
                errors[instance.uuid] = str(e)
                LOG.warning('%s', e)
        try:
            stats = self.hypervisor.vcpu_stats()
        except Exception as e:  # stats are optional context
            LOG.debug('no vCPU stats: %s', e)
            stats = {}
        return Snapshot(instances=instances, specs=specs, spec_errors=errors,
                        stats=stats, counters=self._sample_counters(
                            instances),
                        host_cpus=tuple(self.hypervisor.host_cpus()))

    def _usable(self, snapshot):
        # Never plan on a CPU the hypervisor does not have online now.
        host = set(snapshot.host_cpus)
        return tuple(c for c in self.usable_cpus if c in host)

    def _sample_counters(self, instances):
        if not self.counter_source.available():
            return {}
        counts = self.counter_source.sample(
            hv.vcpu_thread_ids(self.hypervisor, instances))
        out = {}
        for key, now in counts.items():
            before = self._last_counts.get(key)
            if before:
                out[key] = counters_mod.derived(before, now)
        self._last_counts = counts
        return out

    # -- decide -------------------------------------------------------------

    def _held_domains(self, snapshot):
        # Placement being down never stops pinning: the reporter keeps the
        # last known allocations; anything else wrong means none this pass.
        if getattr(self.placement, 'last_sync', True) is None:
            # First pass: learn the providers before deciding, or instances
            # holding a domain would be planned as if they held none.
            self.sync_placement(self._usable(snapshot))
        try:
            return self.placement.held_domains(
                [i.uuid for i in snapshot.instances])
        except Exception as e:
            LOG.warning('reading allocations failed: %s', e)
            return self.last_held

    def _choose_domains(self, snapshot, held):
        """Resolve :data:`~.reporting.ANY_DOMAIN` (per-host model).

        Instances holding room of the host get a domain from
        :func:`~nova_cacheaware.policy.domain_choice.assign_domains`, with
        the scheduler's rule and seed: the one they had, else the best
        for them now. Those that fit nowhere are left out (they stay on
        Nova's CPUs, reported not All-share).
        """
        domains = decide.usable_domains(self.domain_set,
                                        self._usable(snapshot))
        cpus_of = {d['id']: set(d['cpus']) for d in domains}
        capacity = {d: c for d, c in self.placement.domain_capacity().items()
                    if d in cpus_of}
        wanted = []
        base = {}
        for instance in snapshot.instances:
            pins = set()
            for cpus in instance.live.values():
                pins |= set(cpus)
            current = next((d for d, cpus in sorted(cpus_of.items())
                            if pins and pins <= cpus), None)
            if held.get(instance.uuid) != reporting.ANY_DOMAIN:
                if current is not None:
                    # Pinned into one domain without host room (by the
                    # planner, as memory-bound): it takes room and Clean,
                    # as in the live state the scheduler sees.
                    vcpus, memory = base.get(current, (0, 0))
                    base[current] = (
                        vcpus + len(instance.nova.allowed),
                        memory + int(self._membound_homes.get(
                            instance.uuid) == current))
                continue
            wanted.append(domain_choice.HostHeld(
                uuid=instance.uuid, vcpus=len(instance.nova.allowed),
                memory_bound=_clean_wanted(snapshot.specs.get(instance.uuid)),
                current=current, previous=self._chosen.get(instance.uuid),
                order=domain_xml.creation_order(instance.nova.name)))
        self._choice_input = domain_choice.choice_to_dict(capacity, wanted,
                                                          base)
        self._base = base
        chosen = domain_choice.assign_domains(capacity, wanted, base)
        self._choice_loads = domain_choice.choice_loads(wanted, chosen, base)
        for uuid, domain in sorted(chosen.items()):
            if domain is None:
                # Once per instance, not every pass while it waits.
                (LOG.debug if uuid in self._unplaced else LOG.warning)(
                    'instance %s holds All-share room of this host but no '
                    'cache domain has room for it now (two claims raced '
                    'between agent syncs): it stays on Nova\'s CPUs', uuid)
            elif self._chosen.get(uuid) != domain:
                LOG.info('instance %s: cache domain %s', uuid, domain)
        self._unplaced = {u for u, d in chosen.items() if d is None}
        self._chosen = {u: d for u, d in chosen.items() if d is not None}
        out = {u: d for u, d in held.items() if d != reporting.ANY_DOMAIN}
        out.update(self._chosen)
        return out

    def decide(self, snapshot):
        """Plan input, planner output and per-instance decisions."""
        held = self._held_domains(snapshot)
        if any(d == reporting.ANY_DOMAIN for d in held.values()):
            held = self._choose_domains(snapshot, held)
        else:
            self._chosen = {}
            self._choice_input = self._choice_loads = None
            self._base = {}
        self.last_held = held
        specs = snapshot.specs
        if self.classifier is not None:
            specs = self.classifier.effective_specs(snapshot)
        plan_input, why = decide.build_plan_input(
            self.domain_set, self._usable(snapshot), snapshot.instances,
            specs, self.max_vcpus_per_cpu, held=held)
        if plan_input['domains']:
            plan_output = self.planner(plan_input)
        else:
            # No usable CPU in any domain: nothing can be planned or moved.
            LOG.warning('no usable cache domain (check [agent] '
                        'cpu_shared_set); nothing is moved')
            plan_output = {'vms': {}, 'domains': {}, 'unplaced': []}
            why = {u: (False, 'no usable cache domain') for u in why}
        decisions = decide.decisions_from_plan(
            plan_input, plan_output, snapshot.instances, why, held=held,
            chosen=frozenset(self._chosen))
        if self.classifier is not None:
            # Sampling windows: an 'auto' VM briefly in the other mode.
            decisions = self.classifier.adjust(snapshot, plan_input,
                                               plan_output, decisions)
        return plan_input, plan_output, decisions

    # -- one pass -----------------------------------------------------------

    def reconcile(self):
        """Observe, decide and act once; return the :class:`Pass`."""
        snapshot = self.observe()
        plan_input, plan_output, decisions = self.decide(snapshot)
        problems = [p for p in (decide.audit_dedicated(d) for d in decisions
                                if d.action == decide.AUDIT) if p]
        for problem in problems:
            LOG.warning('%s', problem)
        result = self.actuator.apply(decisions)
        reports = self._run_capabilities(snapshot)
        self._report(plan_output, decisions, reports,
                     usable=self._usable(snapshot))
        return Pass(snapshot=snapshot, plan_input=plan_input,
                    plan_output=plan_output, decisions=decisions,
                    result=result, problems=problems, capabilities=reports)

    def _run_capabilities(self, snapshot):
        # One capability failing never stops pinning or the others.
        reports = {}
        for capability in self.capabilities:
            try:
                reports[capability.name] = capability.reconcile(snapshot)
            except Exception as e:
                LOG.exception('capability %s failed: %s', capability.name, e)
                reports[capability.name] = {'error': str(e)}
        return reports

    def sync_placement(self, usable=None):
        """Reconcile the domain providers with Placement (every pass).

        Cheap when nothing changed (the reporter compares generations).
        Covers topology changes (usable CPUs on- or offline), providers
        deleted or edited by hand, and re-asserts the agent's trait.
        Placement being down never stops pinning: one WARNING when it goes,
        one INFO when it is back.
        """
        usable = tuple(self.usable_cpus if usable is None else usable)
        try:
            self.placement.sync_domains(self.domain_set, usable)
        except Exception as e:
            self.outages.failed(
                'Placement', e, 'pinning goes on with the last known '
                'allocations; the sync is retried every pass')
            return False
        self.outages.ok('Placement')
        return True

    def membound_reserved(self, decisions):
        """``{domain id: n}``: memory-bound VMs not counted by Placement.

        Every VM the agent pins All-share in one domain as memory-bound
        (declared ``workload=memory`` or classified), unless its own
        allocation already uses that domain's MEMBOUND slot. So a VM whose
        allocation names a retired domain (the domain set changed), or none
        (no cache group in its flavor), still takes the slot of the domain
        it now runs in, and Clean holds for the next request.
        """
        slots = self.placement.membound_holders()
        out = {}
        for uuid, home in self._memory_bound_homes(decisions).items():
            if slots.get(uuid) != home:
                out[home] = out.get(home, 0) + 1
        return out

    def _memory_bound_homes(self, decisions):
        """``{uuid: domain id}`` of every memory-bound VM pinned in one."""
        found = (self.classifier.memory_bound()
                 if self.classifier is not None else set())
        homes = {}
        for d in decisions:
            if d.workload != 'memory' and d.uuid not in found:
                continue
            if d.action == decide.REPIN and len(d.domains) == 1:
                home = d.domains[0]
            elif d.uuid in self._membound_homes:
                # In a Partial-share sampling window: its slot stays
                # reserved (no Placement write, no window for others).
                home = self._membound_homes[d.uuid]
            else:
                continue
            homes[d.uuid] = home
        self._membound_homes = homes
        return homes

    def host_load(self, decisions):
        """``(vcpus by domain, memory-bound VMs by domain)`` (per-host).

        The first: vCPUs of the instances holding host room that the agent
        put in each domain, plus those pinned into one domain without host
        room; the second: every memory-bound VM it pins in
        one domain. What ``max_unit`` and ``reserved`` are made of.
        """
        vcpus = {d: v for d, (v, _m) in self._base.items()}
        for d in decisions:
            domain = self._chosen.get(d.uuid)
            if domain is not None:
                vcpus[domain] = vcpus.get(domain, 0) + len(d.allowed)
        memory = {}
        for home in self._memory_bound_homes(decisions).values():
            memory[home] = memory.get(home, 0) + 1
        return vcpus, memory

    def _report(self, plan_output, decisions, reports=None, usable=None):
        # Reporting never stops pinning: log and go on.
        if self.sync_placement(usable):
            try:
                if self.placement.per_domain:
                    self.placement.set_membound_reserved(
                        self.membound_reserved(decisions))
                else:
                    self.placement.set_host_load(*self.host_load(decisions))
            except Exception as e:
                LOG.warning('setting MEMBOUND reserved failed (%s); '
                            'retrying next pass', e)
        try:
            state = reporting.host_state(plan_output, decisions)
            state['usable_cpus'] = {
                d['id']: len(d['cpus']) for d in decide.usable_domains(
                    self.domain_set, self.usable_cpus
                    if usable is None else usable)}
            state['providers'] = self.placement.provider_uuids()
            state['domain_capacity'] = self.placement.domain_capacity()
            if not self.placement.per_domain:
                state['host_provider'] = self.placement.host_provider_uuid()
                state['domain_load'] = self._choice_loads
            for capability in self.capabilities:
                report = (reports or {}).get(capability.name)
                extra = (capability.host_state(report)
                         if report is not None and 'error' not in report
                         else None)
                if extra is not None:
                    state[capability.name] = extra
            self.publisher.publish(state)
        except Exception as e:
            LOG.warning('publishing the host state failed: %s', e)

    def dump_state(self, snapshot=None, reports=None):
        """The ``plan`` input document plus an ``"agent"`` context section.

        ``nova-cacheaware plan --input FILE`` replays it (the planner ignores
        the extra section). ``reports`` are the capabilities' reports of
        the pass that observed ``snapshot``.
        """
        snapshot = snapshot or self.observe()
        usable = self._usable(snapshot)
        # The same input the last pass planned with: classified VMs as
        # memory, VMs holding a domain in Placement fixed there.
        specs = (self.classifier.effective_specs(snapshot)
                 if self.classifier is not None else snapshot.specs)
        plan_input, why = decide.build_plan_input(
            self.domain_set, usable, snapshot.instances,
            specs, self.max_vcpus_per_cpu, held=self.last_held)
        doc = dict(plan_input)
        doc['agent'] = {
            'usable_cpus': list(usable),
            'cache_level': self.domain_set.level,
            'instances': {
                i.uuid: {
                    'name': i.nova.instance_name or i.nova.name,
                    'flavor': i.nova.flavor,
                    'allowed': {str(v): list(c)
                                for v, c in sorted(i.nova.allowed.items())},
                    'nova_pinned': i.nova.nova_pinned,
                    'dedicated': i.nova.dedicated,
                    'movable_reason': why[i.uuid][1],
                    'holds_domain': self.last_held.get(i.uuid),
                    'extra_specs': snapshot.specs.get(i.uuid, {}),
                    'spec_error': snapshot.spec_errors.get(i.uuid),
                    'vcpu_stats': {str(v): s for v, s in sorted(
                        snapshot.stats.get(i.uuid, {}).items())},
                } for i in snapshot.instances},
            'counters': snapshot.counters,
        }
        if reports is not None:
            doc['agent']['capabilities'] = reports
        previous = getattr(self.planner, 'previous', None)
        if previous is not None and previous() is not None:
            # The last plan was incremental: replay it against its input.
            doc['previous'] = previous()
        if self._choice_input is not None:
            # Replay: nova-cacheaware domain-choice --input <this file>.
            doc['agent']['domain_choice'] = self._choice_input
        return doc

    # -- daemon loop ----------------------------------------------------------

    def on_event(self, uuid, reason):
        """Lifecycle callback (libvirt's event thread): queue it, wake up.

        Runs on an OS thread that is not the loop's: it only posts to the
        :class:`~nova_cacheaware.agent.threads.Waker`; the loop handles the
        event (:meth:`handle_events`).
        """
        self._wake.post((uuid, reason))

    def handle_events(self, events):
        """Act on queued lifecycle events (on the loop's thread)."""
        for uuid, reason in events:
            LOG.debug('lifecycle event %s for %s', reason, uuid)
            if reason == hv.CLOSED:
                LOG.warning('libvirt closed the connection to %s; '
                            'reconnecting', getattr(self.hypervisor, 'uri',
                                                    'the hypervisor'))
            if uuid and reason == hv.STOPPED:
                self.spec_source.forget(uuid)
            if uuid:
                # Started, migrated, resized...: its allocation may have
                # changed; read it again at the next pass.
                self.placement.forget_instance(uuid)

    def run(self, period_s):
        """Reconcile at start, on events and every ``period_s`` seconds."""
        self.sync_placement()
        self.hypervisor.start(self.on_event)
        try:
            while not self._stop.is_set():
                self.reconcile_safely()
                self.handle_events(self._wake.wait(period_s))
        finally:
            self.withdraw()
            self.release_capabilities()
            self.hypervisor.stop()
            self.counter_source.close()
            self._wake.close()

    def withdraw(self):
        """Stop promising pinning: the agent's trait leaves the root.

        A clean stop only; a killed agent is noticed by the scheduler when
        its live state goes stale (doc/source/admin/failure-modes.rst).
        """
        try:
            if self.placement.withdraw():
                LOG.info('%s removed from the compute node provider: no '
                         'All-share request lands here until the agent '
                         'is back', 'CUSTOM_CACHEAWARE_AGENT')
        except Exception as e:
            LOG.warning('could not remove the agent trait from Placement '
                        '(%s); the scheduler notices the silence after '
                        '[cacheaware_scheduler] host_state_ttl', e)

    def release_capabilities(self):
        """Let every capability give back what it changed."""
        for capability in self.capabilities:
            try:
                capability.release()
            except Exception:
                LOG.exception('capability %s failed to release',
                              capability.name)

    def reconcile_safely(self):
        """:meth:`reconcile`, logging instead of raising."""
        try:
            one = self.reconcile()
            self.outages.ok('libvirtd')
            return one
        except hv.HypervisorUnavailable as e:
            self.outages.failed('libvirtd', e,
                                'retrying at the next period or event')
        except decide.PlannerError as e:
            LOG.error('%s; nothing changed', e)
        except Exception:
            LOG.exception('reconcile failed; nothing more changed')
        return None

    def stop(self):
        """Ask :meth:`run` to return after the current pass."""
        self._stop.set()
        self._wake.set()


def format_decisions(decisions, result=None):
    """The decisions as a table for a person (``--once``)."""
    rows = [('INSTANCE', 'NAME', 'WORKLOAD', 'ACTION', 'CURRENT', 'DESIRED',
             'DOMAINS', 'REASON')]

    def pins(m):
        groups = {}
        for v, cpus in sorted(m.items()):
            groups.setdefault(cpulist.format_cpulist(cpus), []).append(v)
        return ' '.join('%s:%s' % (cpulist.format_cpulist(vs), cpus)
                        for cpus, vs in groups.items()) or '-'

    for d in decisions:
        action = d.action if d.changes() or d.action == decide.AUDIT \
            else decide.KEEP
        rows.append((d.uuid[:8], d.name[:16] or '-', d.workload, action,
                     pins(d.current), pins(d.desired),
                     ','.join(d.domains) or '-', d.reason))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths)) + '  ' + r[-1]
             for r in rows]
    if result is not None:
        lines.append('repins: %d ok, %d failed, %d deferred, %d dry-run'
                     % (len(result.succeeded), len(result.failed),
                        len(result.deferred), len(result.dry_run)))
    return '\n'.join(lines)


def _clean_wanted(extra_specs):
    """The scheduler's memory-bound rule for a flavor (False if invalid)."""
    try:
        return api_specs.parse_extra_specs(extra_specs or {}).clean_wanted
    except exception.InvalidInput:
        return False
