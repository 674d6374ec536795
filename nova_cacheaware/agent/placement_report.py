"""The agent's Placement side: domain providers, ``reserved``, allocations.

:class:`PlacementSyncReporter` implements
:class:`~nova_cacheaware.agent.reporting.PlacementReporter` over
:mod:`nova_cacheaware.placement`:

* finds the compute node's resource provider by its name (Nova names it
  after the hypervisor hostname: libvirt's ``getHostname()``, or
  ``[agent] hypervisor_hostname``);
* reconciles the cache-domain child providers
  (:func:`~nova_cacheaware.placement.provider_sync.sync_domain_providers`)
  every pass, cheaply: one ``GET /resource_providers?in_tree=`` compares
  the generations of the compute node's tree with those of the last pass
  that found everything in sync; only a changed tree (a provider deleted
  or edited by hand, an allocation, Nova's own updates of the root) gets
  the full read-compare-write. Providers deleted by hand come back, and
  inventories and traits changed by hand are restored, within one pass;
* puts ``CUSTOM_CACHEAWARE_AGENT`` on its providers (never the root, which
  is Nova's) at every full sync and takes
  it off when the agent stops cleanly (:meth:`withdraw`);
* sets ``reserved`` of ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` on a domain where
  the agent pins a memory-bound VM whose own allocation does not use that
  domain's slot (undeclared, no cache group, or an allocation on a retired
  domain's provider: :meth:`membound_holders` tells which do). Never above
  ``total`` and never
  into capacity that allocations use: Placement accepts an inventory whose
  capacity falls below its usage (it only logs a warning), which would
  leave the provider over-committed, so the value is clamped to
  ``total - used``;
* reads each instance's allocation (``GET /allocations/{uuid}``) to learn
  which domain provider it holds; cached per instance, dropped on the
  instance's lifecycle events, and kept when Placement is down.
"""

import logging
import urllib.parse

import os_resource_classes as orc

from nova_cacheaware.agent import reporting
from nova_cacheaware.contracts import placement as names
from nova_cacheaware import exception
from nova_cacheaware.placement import errors
from nova_cacheaware.placement import host_provider
from nova_cacheaware.placement import provider_sync

LOG = logging.getLogger(__name__)

#: Attempts of one reserved write on generation conflicts.
MAX_ATTEMPTS = 5


class ComputeNodeNotFound(exception.CacheAwareError):
    """Placement has no provider named after this compute node (yet)."""

    msg_fmt = ('no resource provider named %(name)s in Placement (has '
               'nova-compute registered this host? set [agent] '
               'hypervisor_hostname if its name differs)')


class PlacementSyncReporter(reporting.PlacementReporter):
    """Keeps this host's cache-domain providers and ``reserved`` right.

    :param client: a :class:`~nova_cacheaware.placement.client.\
PlacementClient`.
    :param hostname: the compute node provider's name, or a callable
        returning it (asked on first use: libvirt's ``getHostname``).
    :param cpu_allocation_ratio: ratio of the domains' vCPU inventory; None
        takes the root's ``VCPU`` ``allocation_ratio`` (Nova's).
    :param membound_total: memory-bound slots per domain.
    :param child_traits: see ``sync_domain_providers``.
    """

    def __init__(self, client, hostname, cpu_allocation_ratio=None,
                 membound_total=1, child_traits=True):
        self.client = client
        self._hostname = hostname
        self.cpu_allocation_ratio = cpu_allocation_ratio
        self.membound_total = membound_total
        self.child_traits = child_traits
        self.root_uuid = None
        self.last_sync = None
        self._providers = {}   # domain id -> provider uuid
        self._wanted = {}      # domain id -> reserved asked for
        self._applied = {}     # domain id -> reserved written (clamped)
        self._held = {}        # instance uuid -> domain id or None
        self._stale = set()    # cached, but to be read again
        self._membound = set()  # instances whose allocation has a slot
        self._down = False
        self._in_sync = None   # (inputs, {rp uuid: generation}) in sync
        self._reserved_written = False
        self._sizes = {}       # domain id -> usable CPUs, last full sync
        self._ratio_now = 1.0  # CPU allocation ratio of the last full sync

    # -- compute node -----------------------------------------------------

    def hostname(self):
        """The compute node provider's name."""
        if callable(self._hostname):
            self._hostname = self._hostname()
        return self._hostname

    def compute_node_uuid(self):
        """The compute node provider's uuid (looked up once by name)."""
        if self.root_uuid is None:
            name = self.hostname()
            doc = self.client.get('/resource_providers?name=%s'
                                  % urllib.parse.quote(name, safe=''))
            providers = doc['resource_providers']
            if not providers:
                raise ComputeNodeNotFound(name=name)
            self.root_uuid = providers[0]['uuid']
        return self.root_uuid

    def _ratio(self, root):
        if self.cpu_allocation_ratio is not None:
            return self.cpu_allocation_ratio
        inv = self.client.get_inventories(root)['inventories'].get(orc.VCPU)
        return float(inv['allocation_ratio']) if inv else 1.0

    # -- PlacementReporter ------------------------------------------------

    def sync_domains(self, domain_set, usable_cpus):
        """Reconcile the domain providers; keeps the ``reserved`` already set.

        One read when nothing changed since the last pass that found the
        tree in sync (same domains, same usable CPUs, same generations);
        otherwise a full sync. A domain that vanished loses its
        ``reserved``; the others keep the value last written (clamped again
        to what allocations leave). Returns the last full sync's result.
        """
        root = self.compute_node_uuid()
        inputs = self._sync_inputs(domain_set, usable_cpus)
        generations = self._generations(root)
        if root not in generations:
            # The compute node provider is gone (its service deleted, maybe
            # registered again under a new uuid): look it up by name again.
            self.root_uuid = self._in_sync = None
            root = self.compute_node_uuid()
            generations = self._generations(root)
        if self._in_sync == (inputs, generations):
            return self.last_sync
        result = self._full_sync(root, domain_set, usable_cpus)
        # Remember the tree as read before the sync, and only if the sync
        # found nothing to write: any later change, ours included, shows
        # as a new generation and is compared in full next pass.
        self._in_sync = ((inputs, generations) if result.writes == 0
                         and not self._reserved_written else None)
        return result

    def _sync_inputs(self, domain_set, usable_cpus):
        """What, besides the tree's generations, a sync depends on."""
        return (domain_set, tuple(usable_cpus))

    def _generations(self, root):
        return {p['uuid']: p['generation']
                for p in self.client.providers_in_tree(root)}

    def _full_sync(self, root, domain_set, usable_cpus):
        ids = {d.id for d in domain_set.domains}
        self._wanted = {d: r for d, r in self._wanted.items() if d in ids}
        reserved = self._clamped(self._wanted) if self._providers else {}
        self._ratio_now = self._ratio(root)
        self._sizes = host_provider.domain_sizes(domain_set, usable_cpus)
        result = provider_sync.sync_domain_providers(
            self.client, root, domain_set,
            cpu_allocation_ratio=self._ratio_now,
            membound_total=self.membound_total,
            membound_reserved=reserved, usable_cpus=list(usable_cpus),
            child_traits=self.child_traits)
        # Back from the per-host model: its provider must take no claim.
        host_provider.retire_host_provider(self.client, root)
        if result.providers != self._providers:
            # Providers with new uuids: read every allocation again.
            self._stale = set(self._held)
        self._providers = dict(result.providers)
        self._applied = {d: reserved.get(d, 0) for d in self._providers}
        self.last_sync = result
        self._reserved_written = False
        if any(self._wanted.get(d, 0) != self._applied.get(d, 0)
               for d in self._providers):
            self._write_reserved()
        return result

    def domain_capacity(self):
        """``{domain id: vCPUs it holds All-share}`` as of the last sync.

        Its usable CPUs times the ratio the providers were written with
        (``[agent] domain_cpu_allocation_ratio``, else Nova's), rounded
        down: what the agent publishes as ``vcpus_capacity``.
        """
        return {d: int(n * self._ratio_now) for d, n in self._sizes.items()}

    def withdraw(self):
        """Take ``CUSTOM_CACHEAWARE_AGENT`` off our providers (clean stop).

        Placement then offers this host to no All-share request until an
        agent syncs again. True if the trait was removed now.
        """
        self._in_sync = None
        # Looked up if this run never reached Placement: the trait may be
        # left from the previous run.
        return provider_sync.withdraw_agent_trait(
            self.client, self.compute_node_uuid())

    def set_membound_reserved(self, reserved_by_domain):
        """Ask for ``{domain id: reserved}``; writes only what changed.

        Values are cut to ``0..membound_total`` and then to what the
        domain's MEMBOUND allocations leave free. Domains not named get 0.
        Returns ``{domain id: reserved}`` as written.
        """
        if not self._providers:
            return {}
        self._wanted = {d: max(0, min(int(reserved_by_domain.get(d, 0)),
                                      self.membound_total))
                        for d in self._providers}
        if self._wanted == self._applied:
            return dict(self._applied)
        return self._write_reserved()

    def provider_uuids(self):
        """``{domain id: provider uuid}`` from the last sync."""
        return dict(self._providers)

    # -- reserved ---------------------------------------------------------

    def _membound_used(self, rp_uuid):
        usages = self.client.get('/resource_providers/%s/usages'
                                 % rp_uuid)['usages']
        return usages.get(names.RC_DOMAIN_MEMBOUND, 0)

    def _clamped(self, wanted):
        out = {}
        for domain_id, value in wanted.items():
            rp_uuid = self._providers.get(domain_id)
            if rp_uuid is None or value <= 0:
                continue
            free = self.membound_total - self._membound_used(rp_uuid)
            out[domain_id] = max(0, min(value, free))
            if out[domain_id] < value:
                LOG.info('cache domain %s: %d memory-bound slot(s) held by '
                         'allocations; reserved %d instead of %d',
                         domain_id, self.membound_total - free,
                         out[domain_id], value)
        return out

    def _write_reserved(self):
        clamped = self._clamped(self._wanted)
        for domain_id, rp_uuid in sorted(self._providers.items()):
            value = clamped.get(domain_id, 0)
            if self._applied.get(domain_id) == value:
                continue
            self._put_reserved(rp_uuid, value)
            self._reserved_written = True
            self._applied[domain_id] = value
            LOG.info('cache domain %s: MEMBOUND reserved = %d', domain_id,
                     value)
        return dict(self._applied)

    def _put_reserved(self, rp_uuid, value):
        for _attempt in range(MAX_ATTEMPTS):
            doc = self.client.get_inventories(rp_uuid)
            inventories = doc['inventories']
            inv = inventories.get(names.RC_DOMAIN_MEMBOUND)
            if inv is None or inv['reserved'] == value:
                return
            new = dict(inventories)
            new[names.RC_DOMAIN_MEMBOUND] = dict(
                inv, reserved=min(value, inv['total']))
            try:
                self.client.put_inventories(
                    rp_uuid, doc['resource_provider_generation'], new)
                return
            except errors.ConcurrentUpdate:
                continue
        raise errors.GenerationConflict(what='writing reserved',
                                        rp_uuid=rp_uuid,
                                        attempts=MAX_ATTEMPTS)

    # -- allocations ------------------------------------------------------

    def held_domains(self, uuids):
        """``{uuid: domain id}`` of the instances holding a domain provider.

        One ``GET /allocations/{uuid}`` per instance not in the cache.
        Placement down: the last known answers are kept (and returned), the
        others are asked again at the next call.
        """
        if not self._providers:
            return {}
        by_rp = {rp: d for d, rp in self._providers.items()}

        def interpret(uuid, allocations):
            held = [by_rp[rp] for rp in allocations if rp in by_rp]
            if len(held) > 1:
                LOG.warning('instance %s holds %d cache domains (%s); '
                            'pinned to none', uuid, len(held),
                            ', '.join(sorted(held)))
            if len(held) != 1:
                return None, False
            return held[0], any(
                allocations[rp]['resources'].get(names.RC_DOMAIN_MEMBOUND)
                for rp in allocations if rp in by_rp)
        return self._read_held(uuids, interpret)

    def _read_held(self, uuids, interpret):
        """The held-instance cache both provider models share.

        ``interpret(uuid, allocations)`` returns ``(held value or None,
        holds a MEMBOUND slot)`` for one instance's allocations.
        """
        uuids = list(uuids)
        # Instances gone from the host are forgotten.
        self._held = {u: d for u, d in self._held.items() if u in uuids}
        self._membound &= set(self._held)
        self._stale &= set(self._held)
        for uuid in uuids:
            if uuid in self._held and uuid not in self._stale:
                continue
            try:
                doc = self.client.get('/allocations/%s' % uuid)
            except errors.PlacementError as e:
                if not self._down:
                    LOG.warning('cannot read allocations from Placement '
                                '(%s); keeping the last known ones', e)
                self._down = True
                break
            self._down = False
            self._stale.discard(uuid)
            self._held[uuid], slot = interpret(uuid,
                                               doc.get('allocations', {}))
            (self._membound.add if slot else self._membound.discard)(uuid)
        return {u: self._held[u] for u in uuids
                if self._held.get(u) is not None}

    def membound_holders(self):
        """Instances whose allocation holds a MEMBOUND slot of their domain.

        As of the last :meth:`held_domains`; ``{uuid: domain id}``.
        """
        return {u: self._held[u] for u in self._membound
                if self._held.get(u) is not None}

    def forget_instance(self, uuid):
        """Read ``uuid``'s allocation again next time.

        The cached answer stays until then: with Placement down the
        instance keeps its domain.
        """
        if uuid in self._held:
            self._stale.add(uuid)
