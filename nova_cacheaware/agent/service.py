"""The agent's pass runner, on lifecycle events and a period.

:class:`Agent` runs one pass (:meth:`Agent.reconcile`, what ``--once``
runs): observe the hypervisor, run the repin step
(:class:`~nova_cacheaware.cachedomain.agent.RepinStep`, the fixed first
step: study 000's sampling, classification, plan and pins), run the
entry-point capabilities (:mod:`.capability`) and report through the
Placement side (:mod:`.placement_side`). :meth:`Agent.run` is the daemon
loop: a pass at start, then one whenever libvirt reports a lifecycle
change (started, resumed, migrated, rebooted: Nova rebuilt the domain and
our live pins are gone) and at least every ``period_s`` seconds.
"""

import dataclasses
import logging
import threading
import time
import typing as ty

from nova_cacheaware.agent import actuator as actuator_mod
from nova_cacheaware.agent import capability as capability_mod
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.agent import metrics as metrics_mod
from nova_cacheaware.agent import outage
from nova_cacheaware.agent import placement_side
from nova_cacheaware.agent import reporting
from nova_cacheaware.agent import specs as specs_mod
from nova_cacheaware.agent import threads
from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.contracts import extra_specs
from nova_cacheaware import exception

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Snapshot:
    """Everything one pass observed.

    ``specs``: each instance's flavor extra specs as Nova holds them (the
    replay documents carry them); ``requests``: the same parsed once per
    pass (:func:`~nova_cacheaware.contracts.extra_specs.parse_extra_specs`),
    what the capabilities read; an instance whose specs could not be read
    (``spec_errors``) has the defaults, one whose ``cacheaware:`` keys are
    invalid has none (``request_errors``: why).
    """

    instances: ty.List[hv.Instance]
    specs: ty.Dict[str, dict]
    spec_errors: ty.Dict[str, str]
    stats: ty.Dict[str, dict]
    counters: ty.Dict[str, dict]
    host_cpus: ty.Tuple[int, ...] = ()
    requests: ty.Dict[str, extra_specs.CacheAwareRequest] = dataclasses.field(
        default_factory=dict)
    request_errors: ty.Dict[str, str] = dataclasses.field(
        default_factory=dict)

    @classmethod
    def parsing(cls, **fields):
        """A snapshot with ``requests`` parsed from ``specs``."""
        requests, errors = {}, {}
        specs = fields['specs']
        for uuid in {i.uuid for i in fields['instances']} | set(specs):
            try:
                requests[uuid] = extra_specs.parse_extra_specs(
                    specs.get(uuid) or {})
            except exception.InvalidInput as e:
                errors[uuid] = str(e)
        return cls(requests=requests, request_errors=errors, **fields)


@dataclasses.dataclass
class Pass:
    """One reconcile: the snapshot, the plan in and out, the decisions."""

    snapshot: Snapshot
    plan_input: cachedomain_model.PlanInput
    plan_output: cachedomain_model.Plan
    decisions: ty.List[repinning.Decision]
    result: actuator_mod.ApplyResult
    problems: ty.List[str]
    capabilities: ty.Dict[str, dict] = dataclasses.field(
        default_factory=dict)


class Agent:
    """Observe, repin, run the capabilities, report. Dependencies injected.

    ``domain_set`` is the host's :class:`~nova_cacheaware.topology.domains.
    DomainSet`; ``repin`` the :class:`~nova_cacheaware.cachedomain.agent.
    RepinStep`; ``usable_cpus`` the CPUs floating guests may use (None:
    every CPU of the domains).
    """

    def __init__(self, hypervisor, domain_set, repin, spec_source=None,
                 placement=None, publisher=None, usable_cpus=None,
                 capabilities=(), metrics=None):
        self.hypervisor = hypervisor
        self.domain_set = domain_set
        self.repin = repin
        self.spec_source = spec_source or specs_mod.NullSpecSource()
        self.usable_cpus = (tuple(sorted(usable_cpus)) if usable_cpus
                            else tuple(sorted(c for d in domain_set.domains
                                              for c in d.cpus)))
        self.capabilities = tuple(capabilities)
        #: :class:`~.metrics.AgentMetrics` (exported when [agent]
        #: metrics_listen is set).
        self.metrics = metrics or metrics_mod.AgentMetrics()
        self.outages = outage.Outages()
        #: Placement and the live state: reads, the domain choice, writes.
        self.placement_side = placement_side.PlacementSide(
            placement or reporting.LoggingPlacementReporter(),
            publisher or reporting.LoggingStatePublisher(),
            self.outages, self.metrics)
        # Crosses from libvirt's OS thread to this loop (green or not).
        self._wake = threads.Waker()
        self._stop = threading.Event()
        # What the describe RPC answers from (agent/rpc.py): the latest
        # good pass, when it ended, each capability's newest report.
        self.last_pass = self.last_pass_at = None
        self.last_reports = {}

    @property
    def placement(self):
        """The Placement reporter (its :class:`PlacementSide` holds it)."""
        return self.placement_side.placement

    @placement.setter
    def placement(self, reporter):
        self.placement_side.placement = reporter

    @property
    def publisher(self):
        """The live-state publisher (its :class:`PlacementSide` holds it)."""
        return self.placement_side.publisher

    @publisher.setter
    def publisher(self, publisher):
        self.placement_side.publisher = publisher

    @property
    def last_held(self):
        """``{uuid: domain id}`` the last pass found held or chose."""
        return self.placement_side.last_held

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
        counters = self.repin.sample_counters(
            instances, lambda: hv.vcpu_thread_ids(self.hypervisor, instances))
        return Snapshot.parsing(
            instances=instances, specs=specs, spec_errors=errors,
            stats=stats, counters=counters,
            host_cpus=tuple(self.hypervisor.host_cpus()))

    def _usable(self, snapshot):
        # Never plan on a CPU the hypervisor does not have online now.
        host = set(snapshot.host_cpus)
        return tuple(c for c in self.usable_cpus if c in host)

    # -- decide -------------------------------------------------------------

    def decide(self, snapshot):
        """The repin step's plan input, plan and decisions (all typed).

        What Placement holds (and, per-host model, the domains chosen for
        the host room held) is read first: those instances stay in their
        domain.
        """
        side = self.placement_side
        usable = self._usable(snapshot)
        classifier = self.repin.classifier
        held = side.held(snapshot, self.domain_set, usable,
                         not_memory_bound=classifier.not_memory_bound()
                         if classifier is not None else ())
        return self.repin.decide(snapshot, self.domain_set, usable, held,
                                 chosen=frozenset(side.chosen),
                                 waiting=frozenset(side.unplaced),
                                 closed=side.required_domains())

    # -- one pass -----------------------------------------------------------

    def reconcile(self):
        """Observe, decide and act once; return the :class:`Pass`."""
        snapshot = self.observe()
        plan_input, plan, decisions = self.decide(snapshot)
        result, problems = self.repin.act(snapshot, decisions)
        reports = self._run_capabilities(snapshot)
        self.placement_side.report(
            plan, decisions, self.domain_set, self._usable(snapshot),
            reports=reports, capabilities=self.capabilities,
            classifier=self.repin.classifier)
        return Pass(snapshot=snapshot, plan_input=plan_input,
                    plan_output=plan, decisions=decisions,
                    result=result, problems=problems, capabilities=reports)

    def _run_capabilities(self, snapshot):
        # One capability failing never stops pinning or the others.
        reports = {}
        for capability in self.capabilities:
            try:
                reports[capability.name] = capability.reconcile(snapshot)
            except Exception as e:
                LOG.exception('capability %s failed: %s', capability.name, e)
                reports[capability.name] = capability_mod.Failed(str(e))
        return reports

    def dump_state(self, snapshot=None, reports=None):
        """The ``plan`` input document plus an ``"agent"`` context section.

        ``nova-cacheaware plan --input FILE`` replays it (the planner ignores
        the extra section) under the planner's ``objective``
        (:meth:`~nova_cacheaware.cachedomain.agent.RepinStep.
        state_document`). ``reports`` are the capabilities' reports of the
        pass that observed ``snapshot``.
        """
        snapshot = snapshot or self.observe()
        doc = self.repin.state_document(
            snapshot, self.domain_set, self._usable(snapshot),
            self.last_held, waiting=frozenset(self.placement_side.unplaced),
            closed=self.placement_side.required_domains())
        if reports is not None:
            doc['agent']['capabilities'] = capability_mod.as_documents(
                reports)
        if self.placement_side.choice_input is not None:
            # Replay: nova-cacheaware domain-choice --input <this file>.
            doc['agent']['domain_choice'] = (
                self.placement_side.choice_input)
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
        self.placement_side.sync(self.domain_set, self.usable_cpus)
        self.hypervisor.start(self.on_event)
        try:
            while not self._stop.is_set():
                self.reconcile_safely()
                self.handle_events(self._wake.wait(period_s))
        finally:
            self.placement_side.withdraw()
            self.release_capabilities()
            self.hypervisor.stop()
            self.repin.close()
            self._wake.close()

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
        started = time.monotonic()
        try:
            one = self.reconcile()
            self.outages.ok('libvirtd')
            self.last_reports.update(
                (k, r) for k, r in one.capabilities.items()
                if not isinstance(r, capability_mod.Failed) and r.get('vms'))
            self.last_pass, self.last_pass_at = one, time.monotonic()
            self.metrics.observe_pass(one, time.monotonic() - started)
            return one
        except hv.HypervisorUnavailable as e:
            self.outages.failed('libvirtd', e,
                                'retrying at the next period or event')
        except repinning.PlannerError as e:
            LOG.error('%s; nothing changed', e)
        except Exception:
            LOG.exception('reconcile failed; nothing more changed')
        self.metrics.failed_pass(time.monotonic() - started)
        return None

    def stop(self):
        """Ask :meth:`run` to return after the current pass."""
        self._stop.set()
        self._wake.set()
