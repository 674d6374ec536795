"""Where the agent reports: Placement and the scheduler's live state.

Narrow injected interfaces with logging defaults, so the agent runs (and
pins) without Placement or a message bus:

* :class:`PlacementReporter`: ``sync_domains`` every pass (the provider
  tree of cache domains; cheap when nothing changed), ``withdraw`` on a
  clean stop, ``set_membound_reserved`` for the memory-bound VMs pinned in
  a domain whose allocation does not use its slot. The real one wraps
  ``nova_cacheaware.placement`` (``provider_sync.sync_domain_providers``).
* :class:`StatePublisher`: ``publish(doc)`` of the ``cacheaware.host.state``
  payload. The real one emits an oslo.messaging notification.
"""

import abc
import logging

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
        """Send one ``cacheaware.host.state`` payload (a dict)."""


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
    """No message bus configured: log the payload at debug level."""

    def publish(self, state):
        """Log the payload."""
        LOG.debug('cacheaware.host.state (not sent): %s', state)


def host_state(plan, decisions, health='ok'):
    """The agent's report that becomes a ``cacheaware.host.state`` payload.

    Domains with their state and memory-bound VMs (from ``plan``, the
    planner's :class:`~nova_cacheaware.cachedomain.model.Plan`),
    the class of each VM, and the agent's health. Not versioned itself:
    the payload's version is :data:`nova_cacheaware.contracts.host_state.
    VERSION`, set when :func:`~nova_cacheaware.agent.notify.
    to_host_cache_state` builds it.
    """
    return {
        'health': health,
        'domains': {d: {'state': p.state, 'memory_vms': list(p.memory_vms)}
                    for d, p in sorted(plan.domains.items())},
        'vms': {d.uuid: {'workload': d.workload, 'movable': d.movable,
                         'domains': list(d.domains),
                         'vcpus': len(d.desired or d.current)}
                for d in decisions},
    }
