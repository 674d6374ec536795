"""Keep one Placement child provider per cache domain under a compute node.

The model (doc/source/admin/placement.rst):

* child ``<root name>:cacheaware:<domain id>`` under the compute node
  provider, with inventory ``CUSTOM_CACHE_DOMAIN_VCPU`` (total = usable CPUs
  of the domain, max_unit = total, allocation_ratio = the host's CPU ratio)
  and ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` (``membound_total`` slots, ``reserved``
  raised by the agent for undeclared memory-bound VMs), and the traits
  ``CUSTOM_CACHEAWARE_DOMAIN`` + ``CUSTOM_CACHE_L<level>`` (none with
  ``child_traits=False``, the lean model: no request needs them and they
  cost every ``GET /allocation_candidates``);
* ``CUSTOM_CACHEAWARE_AGENT`` on the root while the agent is healthy.

:func:`sync_domain_providers` is a reconcile loop in one call: read what
Placement has, compare with what the domains want, write only the
difference. A second run with the same input makes no write. Generation
conflicts (Nova updates the root all the time) are retried on fresh reads.
The root's inventory and its other traits, and every provider that is not
ours, are never written.
"""

import logging

from nova_cacheaware.contracts import placement as names
from nova_cacheaware.placement import errors
from nova_cacheaware.placement import provider_state

LOG = logging.getLogger(__name__)

#: Attempts of one read-compare-write before :class:`GenerationConflict`.
MAX_ATTEMPTS = 5

_NAME_MARK = ':cacheaware:'


def domain_provider_uuid(compute_rp_uuid, domain_id):
    """The uuid a new domain provider gets: stable per (root, domain).

    Stable uuids make a create that is retried after a lost response
    recognisable, and make the providers easy to find in logs.
    """
    return names.domain_provider_uuid(compute_rp_uuid, domain_id)


class _Syncer(object):
    """State of one sync run (the counters of the result)."""

    def __init__(self, client, result):
        self.client = client
        self.result = result

    def update(self, what, rp_uuid, read, decide, write):
        """Read-compare-write with retries on stale generations.

        ``read()`` returns a document with ``resource_provider_generation``;
        ``decide(doc)`` returns the new value or None when nothing changes;
        ``write(generation, value)`` writes it. Returns True if it wrote.
        """
        for _attempt in range(MAX_ATTEMPTS):
            doc = read()
            value = decide(doc)
            if value is None:
                return False
            try:
                write(doc['resource_provider_generation'], value)
            except errors.ConcurrentUpdate:
                self.result.conflicts_retried += 1
                LOG.debug('generation conflict writing %s of %s; retrying',
                          what, rp_uuid)
                continue
            self.result.writes += 1
            return True
        raise errors.GenerationConflict(what='writing %s' % what,
                                        rp_uuid=rp_uuid,
                                        attempts=MAX_ATTEMPTS)

    def set_inventories(self, rp_uuid, desired):
        client = self.client

        def decide(doc):
            if provider_state.same_inventories(doc['inventories'], desired):
                return None
            # About to write: never below what allocations use.
            usages = client.get('/resource_providers/%s/usages'
                                % rp_uuid)['usages']
            floored, raised = provider_state.floored_inventories(
                desired, usages)
            for rc, (wanted, kept) in sorted(raised.items()):
                LOG.warning('provider %s: %s total %d would fall below what '
                            'allocations use (%d); kept at %d until they '
                            'are gone', rp_uuid, rc, wanted, usages[rc],
                            kept)
            self.result.floored.extend('%s:%s' % (rp_uuid, rc)
                                       for rc in sorted(raised))
            if provider_state.same_inventories(doc['inventories'], floored):
                return None
            return floored

        return self.update(
            'inventories', rp_uuid,
            lambda: client.get_inventories(rp_uuid), decide,
            lambda gen, inv: client.put_inventories(rp_uuid, gen, inv))

    def set_child_traits(self, rp_uuid, wanted):
        flipped = []

        def decide(doc):
            current = set(doc['traits'])
            # Keep traits someone else put on the child; own only ours.
            new = {t for t in current
                   if not provider_state.is_managed_child_trait(t)}
            new |= wanted
            flipped[:] = [(names.TRAIT_AGENT in new)
                          != (names.TRAIT_AGENT in current)]
            return None if new == current else new
        client = self.client
        changed = self.update(
            'traits', rp_uuid, lambda: client.get_traits(rp_uuid), decide,
            lambda gen, traits: client.put_traits(rp_uuid, gen, traits))
        if changed and any(flipped):
            self.result.agent_trait_changed = True
        return changed

    def set_agent_trait(self, rp_uuid, healthy):
        """Add (healthy) or remove ``CUSTOM_CACHEAWARE_AGENT`` on ``rp_uuid``.

        Only on our own providers: the root is Nova's, and a write there
        moves its generation under nova-compute's feet (its next update
        then fails with a generation conflict, logged at ERROR).
        """
        def decide(doc):
            current = set(doc['traits'])
            if healthy:
                new = current | {names.TRAIT_AGENT}
            else:
                new = current - {names.TRAIT_AGENT}
            return None if new == current else new
        client = self.client
        changed = self.update(
            'agent trait', rp_uuid, lambda: client.get_traits(rp_uuid),
            decide,
            lambda gen, traits: client.put_traits(rp_uuid, gen, traits))
        self.result.agent_trait_changed |= bool(changed)
        return changed

    def ensure_names(self, resource_classes, traits):
        """Create missing custom resource classes and traits (2 GETs)."""
        missing_rcs = set(resource_classes) - \
            self.client.existing_resource_classes()
        missing_traits = set(traits) - self.client.existing_traits(traits)
        for rc in sorted(missing_rcs):
            self.client.ensure_resource_class(rc)
            self.result.writes += 1
        for trait in sorted(missing_traits):
            self.client.ensure_trait(trait)
            self.result.writes += 1
        self.result.created_names = sorted(missing_rcs | missing_traits)

    def create_child(self, name, rp_uuid, parent_uuid, inventories, traits):
        """Create a provider; return False if another run just created it."""
        try:
            provider = self.client.create_provider(name, rp_uuid,
                                                   parent_uuid)
        except errors.PlacementAPIError as e:
            if e.status == 409:
                return False
            raise
        self.result.writes += 1
        # Fast path for a fresh provider: write at the generations the
        # responses give (3 requests); fall back to read-compare-write if
        # something else touched it meanwhile.
        try:
            doc = self.client.put_inventories(
                rp_uuid, provider['generation'], inventories)
            self.result.writes += 1
            if traits:  # a new provider has none: nothing to write
                self.client.put_traits(
                    rp_uuid, doc['resource_provider_generation'], traits)
                self.result.writes += 1
                if names.TRAIT_AGENT in traits:
                    self.result.agent_trait_changed = True
        except errors.ConcurrentUpdate:
            self.result.conflicts_retried += 1
            self.set_inventories(rp_uuid, inventories)
            self.set_child_traits(rp_uuid, traits)
        return True


def _our_children(tree, root_uuid, prefix):
    """``{domain id: provider}`` of our children of ``root_uuid``.

    Ours: a direct child whose name has the ``:cacheaware:`` mark. The part
    before it is normally the root's name; after a rename of the root it is
    the old name, and the provider is renamed, not replaced. When two carry
    the same domain id, the one with the current name wins and the other
    is left out (so it is not deleted by mistake either).
    """
    ours = {}
    for p in tree:
        if (p.get('parent_provider_uuid') != root_uuid
                or _NAME_MARK not in p['name']):
            continue
        domain_id = p['name'].rsplit(_NAME_MARK, 1)[1]
        if domain_id not in ours or p['name'].startswith(prefix):
            ours[domain_id] = p
    return ours


def sync_domain_providers(client, compute_rp_uuid, domain_set, *,
                          cpu_allocation_ratio=1.0, membound_total=1,
                          membound_reserved=None, agent_healthy=True,
                          usable_cpus=None, child_traits=True):
    """Make Placement's domain providers under ``compute_rp_uuid`` match.

    :param client: a :class:`~nova_cacheaware.placement.client.\
PlacementClient`.
    :param compute_rp_uuid: the compute node's resource provider (Nova's).
    :param domain_set: the host's :class:`~nova_cacheaware.topology.domains.\
DomainSet`.
    :param cpu_allocation_ratio: allocation ratio of the domain vCPU
        inventory (use the host's ``cpu_allocation_ratio``).
    :param membound_total: memory-bound VM slots per domain (1: Clean).
    :param membound_reserved: ``{domain_id: slots}`` taken by memory-bound
        VMs that did not declare it (0 when absent).
    :param agent_healthy: whether ``CUSTOM_CACHEAWARE_AGENT`` belongs on
        every domain provider (True) or must be removed (False, before
        anything else is written). The root is never written: it is Nova's.
    :param usable_cpus: CPU ids guests may use (Nova's shared CPU set); a
        domain's total counts only these, and a domain with none gets no
        provider. None: every CPU of the domain.
    :param child_traits: put ``CUSTOM_CACHEAWARE_DOMAIN`` and
        ``CUSTOM_CACHE_L<level>`` on the domain providers (True) or keep
        them off, removing ours if present (False).
    :returns: :class:`SyncResult`.
    :raises InvalidInput: bad arguments (nothing was written).
    :raises ResourceProviderNotFound: no provider ``compute_rp_uuid``.
    :raises GenerationConflict: retries exhausted on one provider.
    :raises ProviderNameTaken: a domain's name is used outside this tree.
    :raises PlacementError: any other failure of Placement.
    """
    provider_state.validate(domain_set, cpu_allocation_ratio,
                            membound_total, membound_reserved, usable_cpus)
    result = provider_state.SyncResult(compute_rp_uuid=compute_rp_uuid)
    syncer = _Syncer(client, result)
    root = client.get_provider(compute_rp_uuid)
    prefix = names.domain_provider_name(root['name'], '')
    wanted = _wanted(domain_set, usable_cpus, cpu_allocation_ratio,
                     membound_total, membound_reserved or {}, child_traits,
                     agent_healthy)
    syncer.ensure_names([names.RC_DOMAIN_VCPU, names.RC_DOMAIN_MEMBOUND],
                        {names.TRAIT_AGENT}.union(
                            *(traits for _inv, traits in wanted.values())))
    existing = _our_children(client.providers_in_tree(compute_rp_uuid),
                             compute_rp_uuid, prefix)
    if not agent_healthy:
        # Withdraw the promise first: the scheduler stops trusting this
        # host before its domains change.
        for provider in existing.values():
            syncer.set_agent_trait(provider['uuid'], False)
    for domain_id in sorted(wanted):
        existing = _sync_child(syncer, compute_rp_uuid, prefix, domain_id,
                               wanted[domain_id], existing)
    for domain_id in sorted(set(existing) - set(wanted)):
        _remove_stale(syncer, domain_id, existing[domain_id]['uuid'])
    _log_result(result)
    return result


def _log_result(result):
    # Run every pass: only a sync that changed something is news.
    LOG.log(logging.INFO if result.writes else logging.DEBUG,
            'cache domain providers of %s: %d created, %d updated, '
            '%d deleted, %d kept with allocations, %d writes',
            result.compute_rp_uuid, len(result.created),
            len(result.updated), len(result.deleted),
            len(result.kept_with_allocations), result.writes)


def _wanted(domain_set, usable_cpus, cpu_allocation_ratio, membound_total,
            membound_reserved, child_traits, agent_healthy):
    """``{domain id: (inventories, traits)}`` of the domains with CPUs."""
    agent = {names.TRAIT_AGENT} if agent_healthy else set()
    usable = None if usable_cpus is None else set(usable_cpus)
    wanted = {}
    for domain in domain_set.domains:
        cpus = domain.cpus if usable is None else [
            c for c in domain.cpus if c in usable]
        if cpus:
            wanted[domain.id] = (
                provider_state.desired_inventories(
                    len(cpus), cpu_allocation_ratio, membound_total,
                    membound_reserved.get(domain.id, 0)),
                provider_state.domain_traits(domain.level, child_traits) |
                agent)
    return wanted


def _sync_child(syncer, compute_rp_uuid, prefix, domain_id, want,
                existing):
    """Create or update one domain's provider; return ``existing``.

    ``existing`` is re-read (and returned) when a create met a 409.
    """
    client, result = syncer.client, syncer.result
    inventories, traits = want
    name = prefix + domain_id
    provider = existing.get(domain_id)
    if provider is None:
        rp_uuid = domain_provider_uuid(compute_rp_uuid, domain_id)
        if syncer.create_child(name, rp_uuid, compute_rp_uuid,
                               inventories, traits):
            result.created.append(domain_id)
            result.providers[domain_id] = rp_uuid
            return existing
        # 409: a concurrent sync created it, or the name is taken
        # elsewhere; only the first case is ours to update.
        existing = _our_children(
            client.providers_in_tree(compute_rp_uuid), compute_rp_uuid,
            prefix)
        provider = existing.get(domain_id)
        if provider is None:
            raise errors.ProviderNameTaken(name=name,
                                           parent=compute_rp_uuid)
    rp_uuid = provider['uuid']
    result.providers[domain_id] = rp_uuid
    changed = False
    if provider['name'] != name:
        # The compute node provider was renamed: follow it.
        client.rename_provider(rp_uuid, name, compute_rp_uuid)
        result.writes += 1
        changed = True
    changed = syncer.set_inventories(rp_uuid, inventories) or changed
    changed = syncer.set_child_traits(rp_uuid, traits) or changed
    (result.updated if changed else result.unchanged).append(domain_id)
    return existing


def withdraw_agent_trait(client, compute_rp_uuid):
    """Take ``CUSTOM_CACHEAWARE_AGENT`` off our providers under the root.

    Every child whose name carries the ``:cacheaware`` mark (the domain
    providers and the host provider of either model); their other traits
    and the root are left alone. Returns True if it wrote.
    """
    syncer = _Syncer(client, provider_state.SyncResult(
        compute_rp_uuid=compute_rp_uuid))
    changed = False
    for provider in client.providers_in_tree(compute_rp_uuid):
        if (provider.get('parent_provider_uuid') == compute_rp_uuid
                and names.is_ours(provider['name'])):
            changed = syncer.set_agent_trait(provider['uuid'],
                                             False) or changed
    return changed


def _remove_stale(syncer, domain_id, rp_uuid):
    client, result = syncer.client, syncer.result
    try:
        allocations = client.get_provider_allocations(rp_uuid)
    except errors.ResourceProviderNotFound:
        result.deleted.append(domain_id)
        return
    if not allocations:
        try:
            client.delete_provider(rp_uuid)
            result.writes += 1
            result.deleted.append(domain_id)
            return
        except errors.ResourceProviderNotFound:
            # Someone else removed it: the goal is reached.
            result.deleted.append(domain_id)
            return
        except errors.ProviderInUse:
            pass  # an allocation arrived between our read and the delete
    LOG.warning('cache domain %s no longer exists on this host but its '
                'provider %s still holds allocations: kept, with its '
                'inventory fully reserved, until they are gone',
                domain_id, rp_uuid)
    result.kept_with_allocations.append(domain_id)
    syncer.update(
        'inventories', rp_uuid, lambda: client.get_inventories(rp_uuid),
        lambda doc: (None if provider_state.same_inventories(
            doc['inventories'],
            provider_state.retired_inventories(doc['inventories']))
            else provider_state.retired_inventories(doc['inventories'])),
        lambda gen, inv: client.put_inventories(rp_uuid, gen, inv))
