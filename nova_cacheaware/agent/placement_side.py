"""The Placement and scheduler side of the agent's repinning pass.

:class:`PlacementSide`, one per :class:`~.service.Agent`, owns the
Placement reporter, the live-state publisher and what a pass learnt from
them: which instances hold a domain in Placement, the per-host model's
domain choice for the room they hold, the ``MEMBOUND`` reserved values or
the host load the reporter writes back, and the ``cacheaware.host.state``
payload. What it needs of the pass (the snapshot, the usable CPUs, the
classifier, the capabilities, their reports) comes in as arguments.
Placement or the message bus being down never stops pinning: each step
logs and goes on.
"""

import logging

from nova_cacheaware.agent import capability as capability_mod
from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import reporting
from nova_cacheaware.cachedomain import assignment as domain_assignment
from nova_cacheaware.cachedomain import choice_doc as domain_choice_doc
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.contracts import placement as names

# The agent's pass: its lines keep the agent's logger.
LOG = logging.getLogger('nova_cacheaware.agent.service')


class PlacementSide:
    """Placement reads and writes of the agent's repinning passes."""

    def __init__(self, placement, publisher, outages, metrics):
        self.placement = placement
        self.publisher = publisher
        self.outages = outages
        self.metrics = metrics
        #: ``{uuid: domain id}`` the last pass found held (or chose).
        self.last_held = {}
        #: Per-host model: ``{uuid: domain}`` the agent chose for host room.
        self.chosen = {}
        #: Host-held instances that found no domain (on Nova's CPUs).
        self.unplaced = set()
        #: The choice's replay document (``--dump-state``), or None.
        self.choice_input = None
        self._base = {}  # {domain: (vCPUs, memory-bound)} without host room
        self._choice_loads = None  # what the choice counted (live state)
        self._required_loads = None  # {domain: cache_clean=required VMs}
        self._membound_homes = {}

    def held(self, snapshot, domain_set, usable, not_memory_bound=()):
        """``{uuid: domain id}`` held in Placement, chosen where needed.

        ``domain_set``: the host's cache domains; ``usable``: the CPUs
        usable now; ``not_memory_bound``: the ``auto`` instances the
        classifier has found not memory-bound (the choice counts them as
        the live state does, not against Clean).

        Per-host model: instances holding the host's room get a domain
        (:meth:`_choose_domains`); per-domain model: Placement names it.
        Remembered as :attr:`last_held`.
        """
        held = self._read_held(snapshot, domain_set, usable)
        if any(d == reporting.ANY_DOMAIN for d in held.values()):
            held = self._choose_domains(snapshot, held, domain_set, usable,
                                        frozenset(not_memory_bound))
        else:
            self.chosen = {}
            self.unplaced = set()
            self.choice_input = self._choice_loads = None
            self._required_loads = self._held_required(snapshot, held)
            self._base = {}
        self.last_held = held
        return held

    def required_domains(self):
        """The domains the last :meth:`held` found holding a required one.

        Each holds a ``cache_clean=required`` instance: closed to every
        other memory-bound instance the agent places. Empty when unknown
        (per-domain model before Placement's first sync).
        """
        return frozenset(d for d, n in (self._required_loads or {}).items()
                         if n)

    def _read_held(self, snapshot, domain_set, usable):
        # Placement being down never stops pinning: the reporter keeps the
        # last known allocations; anything else wrong means none this pass.
        if getattr(self.placement, 'last_sync', True) is None:
            # First pass: learn the providers before deciding, or instances
            # holding a domain would be planned as if they held none.
            self.sync(domain_set, usable)
        try:
            return self.placement.held_domains(
                [i.uuid for i in snapshot.instances])
        except Exception as e:
            LOG.warning('reading allocations failed: %s', e)
            return self.last_held

    def _choose_domains(self, snapshot, held, domain_set, usable,
                        not_memory_bound):
        """Resolve :data:`~.reporting.ANY_DOMAIN` (per-host model).

        Instances holding room of the host get a domain from
        :func:`~nova_cacheaware.cachedomain.assignment.assign_domains`, with
        the scheduler's rule and seed: the one they had, else the best
        for them now. Those that fit nowhere are left out (they stay on
        Nova's CPUs, reported not All-share). An instance counts against
        Clean when its flavor wants Clean and the classifier has not found
        it not memory-bound (``not_memory_bound``).
        """
        domains = repinning.plan_domains(domain_set, usable)
        cpus_of = {d.id: set(d.cpus) for d in domains}
        capacity = {d: c for d, c in self.placement.domain_capacity().items()
                    if d in cpus_of}
        wanted = []
        base = {}
        slots = self.placement.membound_holders()
        for instance in snapshot.instances:
            pins = set().union(*instance.live.values())
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
            wanted_clean, required = _clean_rules(
                snapshot.requests.get(instance.uuid))
            # An 'auto' one found CPU-bound is no memory-bound neighbour
            # (as the live state's column and Placement's reserved count
            # it); found memory-bound again, it wants its Clean back.
            wanted_clean = (wanted_clean
                            and instance.uuid not in not_memory_bound)
            wanted.append(domain_assignment.HostHeld(
                uuid=instance.uuid, vcpus=len(instance.nova.allowed),
                memory_bound=wanted_clean, clean_required=required,
                holds_slot=instance.uuid in slots,
                current=current, previous=self.chosen.get(instance.uuid),
                order=domain_xml.creation_order(instance.nova.name)))
        self.choice_input = domain_choice_doc.choice_to_dict(
            capacity, wanted, base)
        self._base = base
        chosen = domain_assignment.assign_domains(capacity, wanted, base)
        self._choice_loads = domain_assignment.choice_loads(wanted, chosen,
                                                            base)
        self._required_loads = domain_assignment.required_holders(
            [vm.uuid for vm in wanted if vm.clean_required], chosen)
        self._log_choice(chosen)
        self.unplaced = {u for u, d in chosen.items() if d is None}
        self.chosen = {u: d for u, d in chosen.items() if d is not None}
        out = {u: d for u, d in held.items() if d != reporting.ANY_DOMAIN}
        out.update(self.chosen)
        return out

    def _log_choice(self, chosen):
        """Log new domains, and instances left without one (once each)."""
        for uuid, domain in sorted(chosen.items()):
            if domain is None:
                (LOG.debug if uuid in self.unplaced else LOG.warning)(
                    'instance %s holds All-share room of this host but no '
                    'cache domain it may join has room now (two claims '
                    'raced between agent syncs; a memory-bound instance '
                    'never joins a cache_clean=required one): it stays on '
                    'Nova\'s CPUs', uuid)
            elif self.chosen.get(uuid) != domain:
                LOG.info('instance %s: cache domain %s', uuid, domain)

    def _held_required(self, snapshot, held):
        """Per-domain model: ``required_holders`` where Placement says.

        ``held``: ``{uuid: domain id}`` of the pass. None (unknown)
        without a Placement reporter that has synced.
        """
        if getattr(self.placement, 'last_sync', None) is None:
            return None
        return domain_assignment.required_holders(
            [uuid for uuid in held
             if _clean_rules(snapshot.requests.get(uuid))[1]], held)

    def sync(self, domain_set, usable):
        """Reconcile the domain providers with Placement (every pass).

        Cheap when nothing changed (the reporter compares generations).
        Covers topology changes (usable CPUs on- or offline), providers
        deleted or edited by hand, and re-asserts the agent's trait.
        Placement being down never stops pinning: one WARNING when it goes,
        one INFO when it is back.
        """
        try:
            self.placement.sync_domains(domain_set, tuple(usable))
        except Exception as e:
            self.metrics.placement_sync_failed()
            self.outages.failed(
                'Placement', e, 'pinning goes on with the last known '
                'allocations; the sync is retried every pass')
            return False
        self.outages.ok('Placement')
        return True

    def membound_reserved(self, decisions, classifier=None):
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
        for uuid, home in self._memory_bound_homes(
                decisions, classifier).items():
            if slots.get(uuid) != home:
                out[home] = out.get(home, 0) + 1
        return out

    def _memory_bound_homes(self, decisions, classifier):
        """``{uuid: domain id}`` of every memory-bound VM pinned in one."""
        found = (classifier.memory_bound()
                 if classifier is not None else set())
        homes = {}
        for d in decisions:
            if d.workload != 'memory' and d.uuid not in found:
                continue
            if d.action == repinning.REPIN and len(d.domains) == 1:
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

    def host_load(self, decisions, classifier=None):
        """``(vcpus by domain, memory-bound VMs by domain)`` (per-host).

        The first: vCPUs of the instances holding host room that the agent
        put in each domain, plus those pinned into one domain without host
        room; the second: every memory-bound VM it pins in
        one domain. What ``max_unit`` and ``reserved`` are made of.
        """
        vcpus = {d: v for d, (v, _m) in self._base.items()}
        for d in decisions:
            domain = self.chosen.get(d.uuid)
            if domain is not None:
                vcpus[domain] = vcpus.get(domain, 0) + len(d.allowed)
        memory = {}
        for home in self._memory_bound_homes(decisions,
                                             classifier).values():
            memory[home] = memory.get(home, 0) + 1
        return vcpus, memory

    def report(self, plan, decisions, domain_set, usable, reports=None,
               capabilities=(), classifier=None):
        """Write the pass back: Placement's values, then the live state.

        ``domain_set`` and ``usable``: as for :meth:`held`.
        ``reports``: the ``capabilities``' reports of the pass, whose
        typed ``host_state`` sections join the host report
        (:meth:`host_report`).
        """
        # Reporting never stops pinning: log and go on.
        if self.sync(domain_set, usable):
            try:
                if self.placement.per_domain:
                    self.placement.set_membound_reserved(
                        self.membound_reserved(decisions, classifier))
                else:
                    self.placement.set_host_load(
                        *self.host_load(decisions, classifier))
            except Exception as e:
                LOG.warning('setting MEMBOUND reserved failed (%s); '
                            'retrying next pass', e)
        try:
            self.publisher.publish(self.host_report(
                plan, decisions, domain_set, usable, reports, capabilities))
        except Exception as e:
            LOG.warning('publishing the host state failed: %s', e)

    def host_report(self, plan, decisions, domain_set, usable, reports,
                    capabilities):
        """The pass's :class:`~.reporting.HostReport`, sections included.

        Each capability with a report adds its typed section
        (:meth:`~.capability.Capability.host_state`; None: nothing).
        """
        sections = {}
        for capability in capabilities:
            report = capability_mod.report_of(reports, capability.name)
            section = (capability.host_state(report)
                       if report is not None else None)
            if section is not None:
                sections[capability.name] = section
        per_host = not self.placement.per_domain
        return reporting.host_report(
            plan, decisions,
            usable_cpus={d['id']: len(d['cpus'])
                         for d in repinning.usable_domains(domain_set,
                                                           usable)},
            providers=self.placement.provider_uuids(),
            domain_capacity=self.placement.domain_capacity(),
            host_provider=(self.placement.host_provider_uuid()
                           if per_host else None),
            domain_load=self._choice_loads if per_host else None,
            domain_required=self._required_loads, sections=sections)

    def withdraw(self):
        """Stop promising pinning: the agent's trait leaves its providers.

        A clean stop only; a killed agent is noticed by the scheduler when
        its live state goes stale (doc/source/admin/failure-modes.rst).
        """
        try:
            if self.placement.withdraw():
                LOG.info('%s removed from the cache providers: no '
                         'All-share request lands here until the agent '
                         'is back', names.TRAIT_AGENT)
        except Exception as e:
            LOG.warning('could not remove the agent trait from Placement '
                        '(%s); the scheduler notices the silence after '
                        '[cacheaware_scheduler] host_state_ttl', e)


def _clean_rules(request):
    """``(clean wanted, clean required)`` of a flavor's parsed request.

    As the scheduler reads them; both False for invalid keys (None).
    """
    if request is None:
        return False, False
    return request.clean_wanted, request.clean_required
