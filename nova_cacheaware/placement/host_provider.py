"""Keep one Placement child provider of cache counts under a compute node.

The per-host model (``[placement] provider_model = host``, the default; see
doc/source/admin/placement.rst): one child ``<root name>:cacheaware`` under
the compute node provider of a host that runs the agent, with

* ``CUSTOM_CACHE_DOMAIN_VCPU``: ``total`` = the usable CPUs of all the
  host's cache domains, ``allocation_ratio`` = the host's CPU ratio,
  ``max_unit`` = the largest room one domain still has for one instance
  (kept current by the agent; the largest domain when none is known);
* ``CUSTOM_CACHE_DOMAIN_MEMBOUND``: ``total`` = domains x slots per domain,
  ``reserved`` = slots taken by memory-bound instances that no allocation
  counts (kept current by the agent).

Requests do not change: the granular cache group of a flavor is satisfied
by this one provider, so Placement returns one candidate per host instead
of one per domain, and every request of the region reads two providers per
opted-in tree instead of one per domain plus one. The domain itself is
chosen on the host (:func:`nova_cacheaware.cachedomain.choice.\
assign_domains`).

:func:`sync_host_provider` is a reconcile step like
:func:`~nova_cacheaware.placement.provider_sync.sync_domain_providers` (read,
compare, write the difference, retry stale generations) and the
**migration** from the per-domain model: the allocations that running
instances hold on domain providers are moved to the host provider, and the
domain providers' inventories removed, in one ``POST /reshaper`` (atomic:
no allocation is lost or doubled at any moment); the emptied domain
providers are then deleted.
"""

import dataclasses
import logging
import typing as ty
import uuid

from nova_cacheaware.contracts import placement as names
from nova_cacheaware import exception
from nova_cacheaware.placement import errors
from nova_cacheaware.placement import provider_state
from nova_cacheaware.placement import provider_sync

LOG = logging.getLogger(__name__)

#: Attempts of one reshape before :class:`GenerationConflict`.
MAX_ATTEMPTS = provider_sync.MAX_ATTEMPTS


@dataclasses.dataclass
class HostSyncResult(provider_state.SyncCounters):
    """What one host-provider sync did."""

    provider_uuid: ty.Optional[str] = None
    created: bool = False
    updated: bool = False
    #: Consumers whose allocation was moved from domain providers.
    reshaped: ty.List[str] = dataclasses.field(default_factory=list)


def host_provider_uuid(compute_rp_uuid):
    """The uuid a new host provider gets: stable per compute node."""
    return str(uuid.uuid5(uuid.UUID(compute_rp_uuid), 'cacheaware'))


def domain_sizes(domain_set, usable_cpus=None):
    """``{domain id: usable CPUs}``; domains with none are left out."""
    usable = None if usable_cpus is None else set(usable_cpus)
    out = {}
    for domain in domain_set.domains:
        count = len(domain.cpus) if usable is None else sum(
            1 for c in domain.cpus if c in usable)
        if count:
            out[domain.id] = count
    return out


def desired_inventories(sizes, cpu_allocation_ratio, membound_total,
                        vcpu_max_unit=None, membound_reserved=0):
    """Inventories of the host provider for ``{domain id: CPUs}``.

    ``vcpu_max_unit`` None: the largest domain at the allocation ratio (no
    instance known). It is cut to ``1..that``: a VM larger than every
    domain can never be All-share on the host. ``membound_reserved`` is
    cut to ``0..total``.
    """
    vcpus = sum(sizes.values())
    largest = max(1, int(max(sizes.values()) * cpu_allocation_ratio))
    max_unit = largest if vcpu_max_unit is None else max(
        1, min(int(vcpu_max_unit), largest))
    slots = len(sizes) * membound_total
    return {
        names.RC_DOMAIN_VCPU: {
            'total': vcpus, 'reserved': 0, 'min_unit': 1,
            'max_unit': max_unit, 'step_size': 1,
            'allocation_ratio': float(cpu_allocation_ratio)},
        names.RC_DOMAIN_MEMBOUND: {
            'total': slots,
            'reserved': max(0, min(int(membound_reserved), slots)),
            # One instance takes one slot (a Clean domain of its own).
            'min_unit': 1, 'max_unit': 1, 'step_size': 1,
            'allocation_ratio': 1.0},
    }


def _host_child(tree, root_uuid):
    """Our host provider in ``tree``: a direct child named ``*:cacheaware``.

    After a rename of the root its name still carries the old root name;
    it is found all the same and renamed.
    """
    for p in tree:
        if (p.get('parent_provider_uuid') == root_uuid
                and p['name'].endswith(':cacheaware')):
            return p
    return None


def _validate(domain_set, cpu_allocation_ratio, membound_total,
              usable_cpus, vcpu_max_unit, membound_reserved):
    # The per-domain checks are the same; reserved is one number here.
    provider_state.validate(domain_set, cpu_allocation_ratio, membound_total,
                            None, usable_cpus)
    for value, what in ((vcpu_max_unit, 'vcpu_max_unit'),
                        (membound_reserved, 'membound_reserved')):
        if value is not None and (not isinstance(value, int)
                                  or isinstance(value, bool) or value < 0):
            raise exception.InvalidInput(
                reason='%s must be an integer >= 0, not %r' % (what, value))


def sync_host_provider(client, compute_rp_uuid, domain_set, *,
                       cpu_allocation_ratio=1.0, membound_total=1,
                       usable_cpus=None, vcpu_max_unit=None,
                       membound_reserved=0, agent_healthy=True):
    """Make the host provider under ``compute_rp_uuid`` match the host.

    Parameters as for :func:`~nova_cacheaware.placement.provider_sync.\
sync_domain_providers`, plus ``vcpu_max_unit`` and ``membound_reserved``
    (see :func:`desired_inventories`). Per-domain providers of the old
    model are migrated (see the module docstring). A host with no usable
    CPU in any domain gets no provider (an existing one without
    allocations is deleted, one with allocations is kept, fully reserved).

    :returns: :class:`HostSyncResult`.
    :raises InvalidInput: bad arguments (nothing was written).
    :raises ResourceProviderNotFound: no provider ``compute_rp_uuid``.
    :raises GenerationConflict: retries exhausted.
    :raises ProviderNameTaken: the host provider's name is used elsewhere.
    :raises PlacementError: any other failure of Placement.
    """
    _validate(domain_set, cpu_allocation_ratio, membound_total, usable_cpus,
              vcpu_max_unit, membound_reserved)
    result = HostSyncResult(compute_rp_uuid=compute_rp_uuid)
    syncer = provider_sync._Syncer(client, result)
    root = client.get_provider(compute_rp_uuid)
    name = names.host_provider_name(root['name'])
    sizes = domain_sizes(domain_set, usable_cpus)

    syncer.ensure_names([names.RC_DOMAIN_VCPU, names.RC_DOMAIN_MEMBOUND],
                        {names.TRAIT_AGENT})
    tree = client.providers_in_tree(compute_rp_uuid)
    olds = provider_sync._our_children(
        tree, compute_rp_uuid, names.domain_provider_name(root['name'], ''))
    host = _host_child(tree, compute_rp_uuid)
    if not agent_healthy:
        # Withdraw the promise first: the scheduler stops trusting this
        # host before its counts change. The old model's providers too.
        for provider in ([host] if host else []) + list(olds.values()):
            syncer.set_agent_trait(provider['uuid'], False)
    wanted = (desired_inventories(sizes, cpu_allocation_ratio,
                                  membound_total, vcpu_max_unit,
                                  membound_reserved) if sizes else None)
    if host is None and wanted is not None:
        host = _create(client, result, name, compute_rp_uuid)
    if host is not None:
        _update_host(syncer, host, name, compute_rp_uuid, olds, wanted)
    for domain_id in sorted(olds):
        provider_sync._remove_stale(syncer, domain_id,
                                    olds[domain_id]['uuid'])

    if agent_healthy and host is not None and wanted is not None:
        syncer.set_agent_trait(host['uuid'], True)
    LOG.log(logging.INFO if result.writes else logging.DEBUG,
            'cache provider of %s: %s, %d allocations moved from %d domain '
            'providers, %d writes', compute_rp_uuid,
            'created' if result.created else 'updated' if result.updated
            else 'unchanged', len(result.reshaped), len(result.deleted),
            result.writes)
    return result


def _update_host(syncer, host, name, root_uuid, olds, wanted):
    """Name, allocations and inventory of the existing host provider."""
    client, result = syncer.client, syncer.result
    result.provider_uuid = host['uuid']
    if host['name'] != name:
        client.rename_provider(host['uuid'], name, root_uuid)
        result.writes += 1
        result.updated = True
    if olds:
        _reshape(client, result, host['uuid'], olds, wanted)
    if wanted is None:
        _retire_host(syncer, host['uuid'])
    elif syncer.set_inventories(host['uuid'], wanted):
        result.updated = not result.created


def _create(client, result, name, root_uuid):
    rp_uuid = host_provider_uuid(root_uuid)
    try:
        client.create_provider(name, rp_uuid, root_uuid)
    except errors.PlacementAPIError as e:
        if e.status != 409:
            raise
        # A concurrent sync created it, or the name is taken elsewhere.
        host = _host_child(client.providers_in_tree(root_uuid), root_uuid)
        if host is None:
            raise errors.ProviderNameTaken(name=name,
                                           parent=root_uuid) from None
        return host
    result.writes += 1
    result.created = True
    # The inventory is written by the caller's read-compare-write (after
    # a reshape, if one is needed): one GET more, one code path.
    return {'uuid': rp_uuid, 'name': name}


def retire_host_provider(client, compute_rp_uuid):
    """Back to the per-domain model: remove the host provider.

    Deleted when nothing holds it; otherwise kept with its inventory fully
    reserved (no new claim lands there) until the instances holding it are
    gone. Returns the provider's uuid while one is left, else None.
    """
    host = _host_child(client.providers_in_tree(compute_rp_uuid),
                       compute_rp_uuid)
    if host is None:
        return None
    result = HostSyncResult(compute_rp_uuid=compute_rp_uuid,
                            provider_uuid=host['uuid'])
    _retire_host(provider_sync._Syncer(client, result), host['uuid'])
    if result.provider_uuid is not None:
        LOG.warning('the per-host cache provider %s still holds '
                    'allocations: kept, fully reserved, until they are '
                    'gone', host['uuid'])
    return result.provider_uuid


def _retire_host(syncer, rp_uuid):
    client = syncer.client
    if not client.get_provider_allocations(rp_uuid):
        try:
            client.delete_provider(rp_uuid)
            syncer.result.writes += 1
            syncer.result.provider_uuid = None
            return
        except errors.ResourceProviderNotFound:
            syncer.result.provider_uuid = None
            return
        except errors.ProviderInUse:
            pass  # an allocation arrived between our read and the delete
    syncer.update(
        'inventories', rp_uuid, lambda: client.get_inventories(rp_uuid),
        lambda doc: (None if provider_state.same_inventories(
            doc['inventories'],
            provider_state.retired_inventories(doc['inventories']))
            else provider_state.retired_inventories(doc['inventories'])),
        lambda gen, inv: client.put_inventories(rp_uuid, gen, inv))


def moved_allocations(allocations, old_uuids, host_uuid):
    """One consumer's ``allocations`` with ``old_uuids`` folded into host.

    ``{rp: {'resources': {rc: n}}}`` in and out; the resources of every
    provider in ``old_uuids`` are added up on ``host_uuid``. Pure.
    """
    out = {}
    for rp, alloc in allocations.items():
        target = host_uuid if rp in old_uuids else rp
        resources = out.setdefault(target, {'resources': {}})['resources']
        for rc, amount in alloc['resources'].items():
            resources[rc] = resources.get(rc, 0) + amount
    return out


def _reshape(client, result, host_uuid, olds, wanted):
    """Move every allocation on the domain providers ``olds`` to the host.

    One ``POST /reshaper`` per attempt, with the generations and consumer
    generations it read; a 409 (Nova or a scheduler changed something in
    between) reads everything again.
    """
    old_uuids = {p['uuid'] for p in olds.values()}
    for _attempt in range(MAX_ATTEMPTS):
        consumers = set()
        for rp in sorted(old_uuids):
            try:
                consumers |= set(client.get_provider_allocations(rp))
            except errors.ResourceProviderNotFound:
                continue
        if not consumers:
            return
        body = _reshape_body(client, result, host_uuid, old_uuids,
                             consumers, wanted)
        try:
            client.post('/reshaper', body, expected=(204,))
        except errors.ConcurrentUpdate:
            result.conflicts_retried += 1
            continue
        except errors.PlacementAPIError as e:
            if e.status != 403:
                raise
            # Placement's default policy gives POST /reshaper to the
            # service role only (nova-compute's user has it).
            LOG.error('cannot move the allocations of %d instances to the '
                      'host provider: Placement refused POST /reshaper '
                      '(%s); give the agent\'s [placement] user the '
                      '"service" role, as nova-compute\'s has. The domain '
                      'providers are kept, fully reserved, until those '
                      'instances are gone', len(consumers), e)
            return
        result.writes += 1
        result.reshaped = sorted(consumers)
        LOG.info('moved the allocations of %d instances from %d cache '
                 'domain providers to the host provider %s',
                 len(consumers), len(old_uuids), host_uuid)
        return
    raise errors.GenerationConflict(what='reshaping to the host provider',
                                    rp_uuid=host_uuid, attempts=MAX_ATTEMPTS)


def _reshape_body(client, result, host_uuid, old_uuids, consumers, wanted):
    """The ``POST /reshaper`` body moving ``consumers`` to the host.

    Read now, with the generations it must carry; the host's inventory is
    ``wanted`` (None: what it has), floored at the usage it gets.
    """
    body = {'inventories': {}, 'allocations': {}}
    usage = {}
    for consumer in sorted(consumers):
        doc = client.get('/allocations/%s' % consumer)
        moved = moved_allocations(doc['allocations'], old_uuids, host_uuid)
        for rc, n in moved.get(host_uuid, {}).get('resources', {}).items():
            usage[rc] = usage.get(rc, 0) + n
        body['allocations'][consumer] = {
            'allocations': moved,
            'project_id': doc['project_id'],
            'user_id': doc['user_id'],
            'consumer_generation': doc['consumer_generation'],
            'consumer_type': doc.get('consumer_type', 'INSTANCE')}
    host_doc = client.get_inventories(host_uuid)
    current = client.get('/resource_providers/%s/usages'
                         % host_uuid)['usages']
    for rc, n in current.items():
        usage[rc] = usage.get(rc, 0) + n
    inventories = wanted if wanted is not None else host_doc['inventories']
    inventories, raised = provider_state.floored_inventories(inventories,
                                                             usage)
    result.floored.extend('%s:%s' % (host_uuid, rc) for rc in raised)
    body['inventories'][host_uuid] = {
        'resource_provider_generation':
            host_doc['resource_provider_generation'],
        'inventories': inventories}
    for rp in sorted(old_uuids):
        try:
            gen = client.get_inventories(rp)['resource_provider_generation']
        except errors.ResourceProviderNotFound:
            continue
        body['inventories'][rp] = {'resource_provider_generation': gen,
                                   'inventories': {}}
    return body
