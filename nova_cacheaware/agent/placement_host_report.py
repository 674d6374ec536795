"""The agent's Placement side in the per-host model.

:class:`HostPlacementReporter` keeps the host's one cache provider
(:mod:`nova_cacheaware.placement.host_provider`), migrating per-domain
providers on its first sync, and reads which instances hold All-share room
of the host. The agent then chooses their domains itself
(:func:`nova_cacheaware.cachedomain.assignment.assign_domains`) and tells
the reporter what is left (:meth:`HostPlacementReporter.set_host_load`): the
largest room of one domain becomes ``max_unit`` of
``CUSTOM_CACHE_DOMAIN_VCPU``, the memory-bound VMs no allocation counts
become ``reserved`` of ``CUSTOM_CACHE_DOMAIN_MEMBOUND``. So the claim of
the next scheduler is refused when no domain has room or no domain is
Clean, as fresh as the agent's last sync.
"""

import logging

from nova_cacheaware.agent import placement_report
from nova_cacheaware.agent import reporting
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.placement import host_provider

LOG = logging.getLogger(__name__)


def clean_slots_reserved(sizes, membound_total, membound_by_domain,
                         slots_used, room=None):
    """``reserved`` of the host's MEMBOUND slots. Pure.

    Placement must offer as many slots as there are free Clean places:
    ``sum over domains of max(0, slots - memory-bound VMs there)``, over
    the domains with room for one more vCPU (``room``: ``{domain: vCPUs
    left}``; None: every domain). Its capacity is ``total - reserved -
    used``, so ``reserved = total - used - free``, at least 0 (never below
    what allocations use: an allocation already placed may hold a slot of
    a domain that is no longer Clean).

    Why room: a domain that cpu-bound VMs filled has no memory-bound VM,
    but no ``cache_clean=required`` VM can go there either; counted as
    free, it let Placement admit one that the agent could only put next
    to another memory-bound VM (seen in the concurrency-32 traffic run).
    """
    total = len(sizes) * membound_total
    free = sum(max(0, membound_total - membound_by_domain.get(d, 0))
               for d in sizes if room is None or room.get(d, 1) > 0)
    return max(0, min(total - slots_used, total - slots_used - free))


class HostPlacementReporter(placement_report.PlacementSyncReporter):
    """Keeps this host's cache provider right (``provider_model = host``).

    Constructor arguments as for :class:`~nova_cacheaware.agent.\
placement_report.PlacementSyncReporter` (``child_traits`` is ignored: the
    host provider has no traits of ours).
    """

    per_domain = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.host_uuid = None
        self._load = (None, 0)     # (max_unit, reserved) asked for
        self._load_written = None  # what the last sync wrote
        self._last_args = None     # (domain_set, usable_cpus) last synced

    # -- PlacementReporter ------------------------------------------------

    def _sync_inputs(self, domain_set, usable_cpus):
        # max_unit and reserved asked for are inputs of the sync too.
        return (domain_set, tuple(usable_cpus), self._load)

    def _full_sync(self, root, domain_set, usable_cpus):
        self._last_args = (domain_set, tuple(usable_cpus))
        self._ratio_now = self._ratio(root)
        self._sizes = host_provider.domain_sizes(domain_set, usable_cpus)
        max_unit, reserved = self._load
        result = host_provider.sync_host_provider(
            self.client, root, domain_set,
            cpu_allocation_ratio=self._ratio_now,
            membound_total=self.membound_total,
            usable_cpus=list(usable_cpus), vcpu_max_unit=max_unit,
            membound_reserved=reserved)
        if result.provider_uuid != self.host_uuid:
            # A new provider (first sync, or deleted by hand): read every
            # allocation again.
            self._stale = set(self._held)
        self.host_uuid = result.provider_uuid
        self._load_written = self._load
        self.last_sync = result
        return result

    def set_host_load(self, vcpus_by_domain, membound_by_domain):
        """Make ``max_unit`` and ``reserved`` follow the host (next sync).

        :param vcpus_by_domain: vCPUs of the host-held instances the agent
            put in each domain.
        :param membound_by_domain: memory-bound VMs the agent pins in each
            domain (declared or classified, counted by an allocation or
            not).
        Written at once when it changes (one inventory write), so the
        next claim already sees it.
        """
        capacity = self.domain_capacity()
        if not capacity:
            return
        room = {d: capacity[d] - vcpus_by_domain.get(d, 0)
                for d in capacity}
        max_unit = max([1] + list(room.values()))
        reserved = clean_slots_reserved(
            self._sizes, self.membound_total, membound_by_domain,
            len(self.membound_holders()), room)
        self._load = (max_unit, reserved)
        if self._load != self._load_written and self._last_args:
            LOG.info('cache provider %s: largest domain room %d vCPUs, '
                     '%d memory-bound slots reserved', self.host_uuid,
                     max_unit, reserved)
            self._in_sync = None
            self._full_sync(self.compute_node_uuid(), *self._last_args)

    def set_membound_reserved(self, reserved_by_domain):
        """Unused in the per-host model (see :meth:`set_host_load`)."""
        return {}

    def provider_uuids(self):
        """No per-domain providers in this model."""
        return {}

    def host_provider_uuid(self):
        """The host provider's uuid once synced, else None."""
        return self.host_uuid

    # -- allocations ------------------------------------------------------

    def held_domains(self, uuids):
        """``{uuid: ANY_DOMAIN}`` for instances holding host room.

        One ``GET /allocations/{uuid}`` per instance not in the cache; kept
        while Placement is down, as in the per-domain model.
        """
        if self.host_uuid is None:
            return {}

        def interpret(uuid, allocations):
            resources = allocations.get(self.host_uuid, {}).get(
                'resources', {})
            return (reporting.ANY_DOMAIN
                    if resources.get(names.RC_DOMAIN_VCPU) else None,
                    bool(resources.get(names.RC_DOMAIN_MEMBOUND)))
        return self._read_held(uuids, interpret)
