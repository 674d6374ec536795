"""Where the agent reports: Placement and the scheduler's live state.

Narrow injected interfaces with logging defaults, so the agent runs (and
pins) without Placement or a message bus:

* :class:`PlacementReporter`: ``sync_domains`` every pass (the provider
  tree of cache domains; cheap when nothing changed), ``withdraw`` on a
  clean stop, ``set_membound_reserved`` for the memory-bound VMs pinned in
  a domain whose allocation does not use its slot. The real one wraps
  ``nova_cacheaware.placement`` (``provider_sync.sync_domain_providers``).
* :class:`StatePublisher`: ``publish(report)`` of the pass's
  :class:`HostReport`, which becomes the ``cacheaware.host.state``
  payload. The real one emits an oslo.messaging notification.

:class:`HostReport` is the one typed form of the host's live state inside
the agent: the Placement side builds it once per pass
(:func:`host_report`), each capability adds its typed section
(:meth:`~.capability.Capability.host_state`), and the publisher turns it
into the contract's state (:func:`~.notify.to_host_cache_state`).
"""

import abc
import dataclasses
import logging
import typing as ty

from nova_cacheaware.contracts import vcpu_affinity

LOG = logging.getLogger(__name__)

#: ``held_domains`` value in the per-host model: the instance holds room of
#: the host, and the agent chooses the domain.
ANY_DOMAIN = '*'


class PlacementReporter(abc.ABC):
    """Keeps Placement's cache-domain providers in line with the host."""

    #: True when allocations name the domain (``provider_model =
    #: domain``); False in the per-host model, where ``held_domains``
    #: answers :data:`ANY_DOMAIN` and the agent reports its choice with
    #: ``set_host_load``.
    per_domain = True

    @abc.abstractmethod
    def sync_domains(self, domain_set, usable_cpus):
        """Create/update the domain child providers and their inventory."""

    @abc.abstractmethod
    def set_membound_reserved(self, reserved_by_domain):
        """``{domain id: reserved}`` on ``CUSTOM_CACHE_DOMAIN_MEMBOUND``."""

    def held_domains(self, uuids):
        """``{instance uuid: domain id}`` of instances holding a domain.

        An instance whose Placement allocation includes one of this host's
        cache-domain providers holds that domain (the agent pins it there).
        The default knows of none.
        """
        return {}

    def forget_instance(self, uuid):
        """Drop what is cached about ``uuid`` (its allocation may change)."""

    def provider_uuids(self):
        """``{domain id: provider uuid}`` once synced; ``{}`` before."""
        return {}

    def domain_capacity(self):
        """``{domain id: vCPUs it holds All-share}``; ``{}``: unknown."""
        return {}

    def membound_holders(self):
        """``{instance uuid: domain id}``: allocations with a MEMBOUND slot.

        Instances whose Placement allocation already uses their domain's
        memory-bound slot (``reserved`` must not count them again). The
        default knows of none.
        """
        return {}

    def withdraw(self):
        """The agent stops cleanly: stop promising pinning. Default: no-op."""


class StatePublisher(abc.ABC):
    """Publishes the host's live cache state for the scheduler."""

    @abc.abstractmethod
    def publish(self, state):
        """Send the ``cacheaware.host.state`` of a :class:`HostReport`."""


class LoggingPlacementReporter(PlacementReporter):
    """No Placement configured: log what would be reported."""

    _said = False

    def sync_domains(self, domain_set, usable_cpus):
        """Log the domains (once: it is called every pass)."""
        if not self._said:
            LOG.info('Placement reporting is off: %d cache domains not '
                     'synced', len(domain_set.domains))
            self._said = True

    def set_membound_reserved(self, reserved_by_domain):
        """Log the reserved values."""
        LOG.debug('Placement reporting is off: membound reserved %s',
                  reserved_by_domain)


class LoggingStatePublisher(StatePublisher):
    """No message bus configured: log the report at debug level."""

    def publish(self, state):
        """Log the report."""
        LOG.debug('cacheaware.host.state (not sent): %s', state)


@dataclasses.dataclass(frozen=True)
class VmReport:
    """One instance as the pass left it."""

    #: Its class (``memory``, ``cpu``, ``unknown``, ...).
    workload: str
    #: The domains its vCPUs are pinned in (one: it lives in that domain).
    domains: ty.Tuple[str, ...] = ()
    #: Its vCPUs; None: not counted (no domain's ``vcpus_used`` then).
    vcpus: ty.Optional[int] = None


@dataclasses.dataclass(frozen=True)
class VmSizing:
    """One instance's figures in the ``vcpu_sizing`` section."""

    #: pCPU-Est's available pCPUs; None: unknown.
    pcpu_estimate: ty.Optional[float] = None
    #: In a spin storm; None: unknown.
    spin_storm: ty.Optional[bool] = None


#: An instance the ``vcpu_sizing`` section does not list.
NOT_SIZED = VmSizing()


@dataclasses.dataclass(frozen=True)
class SizingSection:
    """What ``vcpu_sizing`` shows the scheduler (its host-state section)."""

    #: The host's VMs, affinities and caps (payload 1.1 ``vcpu_affinity``);
    #: the same object while they do not change.
    affinity: ty.Optional[vcpu_affinity.EstimateRequest] = None
    #: ``{instance uuid: VmSizing}``.
    vms: ty.Mapping[str, VmSizing] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class HostReport:
    """The agent's live state of the host after a pass.

    Not versioned itself: the payload's version is set when
    :func:`~nova_cacheaware.agent.notify.to_host_cache_state` turns it
    into the contract's state. Every domain of the host is a key of
    ``memory_vms``; the other per-domain maps may omit a domain.
    """

    #: ``{domain id: memory-bound VMs pinned there}``.
    memory_vms: ty.Mapping[str, ty.Tuple[str, ...]] = dataclasses.field(
        default_factory=dict)
    #: ``{instance uuid: VmReport}``.
    vms: ty.Mapping[str, VmReport] = dataclasses.field(default_factory=dict)
    #: False: the agent says it is unhealthy.
    healthy: bool = True
    #: ``{domain id: CPUs usable now}`` (absent: 0).
    usable_cpus: ty.Mapping[str, int] = dataclasses.field(
        default_factory=dict)
    #: ``{domain id: provider uuid}`` once synced (per-domain model).
    providers: ty.Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: ``{domain id: vCPUs it holds All-share}`` (absent: unknown).
    domain_capacity: ty.Mapping[str, int] = dataclasses.field(
        default_factory=dict)
    #: The host's one cache provider (per-host model), or None.
    host_provider: ty.Optional[str] = None
    #: Per-host model: ``{domain: (vCPUs, Clean holders)}`` the agent's
    #: domain choice counted (absent: ``(0, 0)``); None: it made none.
    domain_load: ty.Optional[ty.Mapping[str, ty.Tuple[int, int]]] = None
    #: ``{domain: cache_clean=required instances}`` (absent: 0); None:
    #: unknown.
    domain_required: ty.Optional[ty.Mapping[str, int]] = None
    #: ``{capability name: its typed section}``
    #: (:meth:`~.capability.Capability.host_state`).
    sections: ty.Mapping[str, ty.Any] = dataclasses.field(
        default_factory=dict)

    def sizing(self):
        """The :class:`SizingSection` among the sections, or None."""
        for section in self.sections.values():
            if isinstance(section, SizingSection):
                return section
        return None


def host_report(plan, decisions, **fields):
    """The pass's :class:`HostReport` of ``plan`` and ``decisions``.

    Memory-bound VMs per domain from ``plan`` (the planner's
    :class:`~nova_cacheaware.cachedomain.model.Plan`), the class, domains
    and vCPUs of each VM from ``decisions``; ``fields``: the rest of
    :class:`HostReport` (what Placement and the capabilities add).
    """
    return HostReport(
        memory_vms={d: tuple(p.memory_vms)
                    for d, p in sorted(plan.domains.items())},
        vms={d.uuid: VmReport(workload=d.workload, domains=tuple(d.domains),
                              vcpus=len(d.desired or d.current))
             for d in decisions},
        **fields)
