"""Keep one Placement child provider per cache domain under a compute node.

The model (DESIGN "Placement model", doc/source/admin/placement.rst):

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

import dataclasses
import logging
import math
import typing as ty
import uuid

from nova_cacheaware import exception
from nova_cacheaware import names
from nova_cacheaware.placement import errors

LOG = logging.getLogger(__name__)

#: Attempts of one read-compare-write before :class:`GenerationConflict`.
MAX_ATTEMPTS = 5

_NAME_MARK = ':cacheaware:'


@dataclasses.dataclass
class SyncCounters:
    """What any provider sync did, whatever the provider model."""

    compute_rp_uuid: str
    #: Domain ids whose per-domain provider was deleted.
    deleted: ty.List[str] = dataclasses.field(default_factory=list)
    #: Providers of vanished domains that still hold allocations: kept,
    #: with their inventory fully reserved so that nothing new lands there.
    kept_with_allocations: ty.List[str] = dataclasses.field(
        default_factory=list)
    root_traits_changed: bool = False
    #: Custom resource classes and traits this run created.
    created_names: ty.List[str] = dataclasses.field(default_factory=list)
    #: Successful write requests (POST/PUT/DELETE); 0 when in sync.
    writes: int = 0
    #: Writes refused for a stale generation and retried.
    conflicts_retried: int = 0
    #: Resource classes whose total was kept above the wanted one because
    #: allocations use more (see :func:`floored_inventories`).
    floored: ty.List[str] = dataclasses.field(default_factory=list)

    def to_dict(self):
        """A JSON-able dict (for logs and the CLI)."""
        return dataclasses.asdict(self)


@dataclasses.dataclass
class SyncResult(SyncCounters):
    """What one per-domain sync did; lists hold domain ids, sorted."""

    created: ty.List[str] = dataclasses.field(default_factory=list)
    updated: ty.List[str] = dataclasses.field(default_factory=list)
    unchanged: ty.List[str] = dataclasses.field(default_factory=list)
    #: domain id -> provider uuid, for every domain that has a provider.
    providers: ty.Dict[str, str] = dataclasses.field(default_factory=dict)


def domain_provider_uuid(compute_rp_uuid, domain_id):
    """The uuid a new domain provider gets: stable per (root, domain).

    Stable uuids make a create that is retried after a lost response
    recognisable, and make the providers easy to find in logs.
    """
    return str(uuid.uuid5(uuid.UUID(compute_rp_uuid), 'cacheaware:%s'
                          % domain_id))


def desired_inventories(vcpus, cpu_allocation_ratio, membound_total,
                        membound_reserved):
    """Inventories of one domain provider with ``vcpus`` usable CPUs."""
    return {
        names.RC_DOMAIN_VCPU: {
            'total': vcpus, 'reserved': 0, 'min_unit': 1,
            # A VM cannot be All-share in a domain smaller than itself.
            'max_unit': vcpus, 'step_size': 1,
            'allocation_ratio': float(cpu_allocation_ratio)},
        names.RC_DOMAIN_MEMBOUND: {
            'total': membound_total, 'reserved': membound_reserved,
            'min_unit': 1, 'max_unit': membound_total, 'step_size': 1,
            'allocation_ratio': 1.0},
    }


def floored_inventories(desired, usages):
    """``desired`` with no total lowered below what allocations use.

    Placement accepts an inventory whose capacity
    (``(total - reserved) * allocation_ratio``) falls below the provider's
    usage, and only logs a warning: the provider is then over-committed
    until the allocations go. A class whose ``desired`` capacity is below
    its usage keeps a total just large enough for the usage (its
    ``reserved`` is kept, so nothing new fits in the difference either);
    ``max_unit`` is not changed. When the total alone holds the usage and
    only ``reserved`` is too high (claims made since the agent computed
    it: the host model's MEMBOUND slots), ``reserved`` is lowered to what
    the allocations leave instead, and the total is not reported raised.
    Returns ``(inventories, {rc: (wanted total, kept total)})`` for the
    classes raised. Pure.
    """
    out, raised = {}, {}
    for rc, inv in desired.items():
        used = usages.get(rc, 0)
        ratio = float(inv['allocation_ratio'])
        capacity = (inv['total'] - inv['reserved']) * ratio
        if used <= capacity + 1e-9:
            out[rc] = inv
            continue
        if used <= inv['total'] * ratio + 1e-9:
            out[rc] = dict(inv, reserved=inv['total'] - int(
                math.ceil(used / ratio - 1e-9)))
            continue
        need = inv['reserved'] + int(math.ceil(used / ratio - 1e-9))
        out[rc] = dict(inv, total=need)
        raised[rc] = (inv['total'], need)
    return out, raised


def retired_inventories(current):
    """``current`` with every class fully reserved (no new allocations)."""
    return {rc: dict(inv, reserved=inv['total'])
            for rc, inv in current.items()}


def domain_traits(level, child_traits=True):
    """Traits of a domain provider at cache ``level`` (None: packages).

    ``child_traits=False``: none. No request needs them (the resource
    classes alone select the domain providers), and every
    ``GET /allocation_candidates`` reads the traits of every provider of
    every candidate tree, twice for a request with the cache group (see
    doc/source/evaluation/placement.rst).
    """
    if not child_traits:
        return set()
    traits = {names.TRAIT_DOMAIN}
    if level is not None:
        traits.add(names.cache_level_trait(level))
    return traits


def _is_managed_child_trait(trait):
    return trait == names.TRAIT_DOMAIN or (
        trait.startswith('CUSTOM_CACHE_L') and trait[14:].isdigit())


def _same_inventories(current, desired):
    if set(current) != set(desired):
        return False
    for rc, want in desired.items():
        have = current[rc]
        for field, value in want.items():
            if field == 'allocation_ratio':
                # Placement on MySQL/MariaDB stores it as a 4-byte FLOAT:
                # 1.1 comes back as 1.100000023841858.
                if not math.isclose(float(have[field]), value,
                                    rel_tol=1e-6):
                    return False
            elif have.get(field) != value:
                return False
    return True


def _validate(domain_set, cpu_allocation_ratio, membound_total,
              membound_reserved, usable_cpus):
    if not (isinstance(cpu_allocation_ratio, (int, float))
            and not isinstance(cpu_allocation_ratio, bool)
            and math.isfinite(cpu_allocation_ratio)
            and cpu_allocation_ratio > 0):
        raise exception.InvalidInput(
            reason='cpu_allocation_ratio must be a finite number > 0, not %r'
                   % (cpu_allocation_ratio,))
    if (not isinstance(membound_total, int) or isinstance(membound_total,
                                                          bool)
            or membound_total < 1):
        raise exception.InvalidInput(
            reason='membound_total must be an integer >= 1, not %r'
                   % (membound_total,))
    ids = [d.id for d in domain_set.domains]
    if len(set(ids)) != len(ids):
        raise exception.InvalidInput(
            reason='duplicate cache domain ids: %s' % sorted(ids))
    for domain_id, reserved in (membound_reserved or {}).items():
        if domain_id not in ids:
            raise exception.InvalidInput(
                reason='membound_reserved names unknown domain %r'
                       % (domain_id,))
        if (not isinstance(reserved, int) or isinstance(reserved, bool)
                or not 0 <= reserved <= membound_total):
            raise exception.InvalidInput(
                reason='membound_reserved[%r] must be an integer in '
                       '0..%d, not %r' % (domain_id, membound_total,
                                          reserved))
    if usable_cpus is not None and not all(
            isinstance(c, int) for c in usable_cpus):
        raise exception.InvalidInput(reason='usable_cpus must be CPU ids')


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
            if _same_inventories(doc['inventories'], desired):
                return None
            # About to write: never below what allocations use.
            usages = client.get('/resource_providers/%s/usages'
                                % rp_uuid)['usages']
            floored, raised = floored_inventories(desired, usages)
            for rc, (wanted, kept) in sorted(raised.items()):
                LOG.warning('provider %s: %s total %d would fall below what '
                            'allocations use (%d); kept at %d until they '
                            'are gone', rp_uuid, rc, wanted, usages[rc],
                            kept)
            self.result.floored.extend('%s:%s' % (rp_uuid, rc)
                                       for rc in sorted(raised))
            if _same_inventories(doc['inventories'], floored):
                return None
            return floored

        return self.update(
            'inventories', rp_uuid,
            lambda: client.get_inventories(rp_uuid), decide,
            lambda gen, inv: client.put_inventories(rp_uuid, gen, inv))

    def set_child_traits(self, rp_uuid, wanted):
        def decide(doc):
            current = set(doc['traits'])
            # Keep traits someone else put on the child; own only ours.
            new = {t for t in current if not _is_managed_child_trait(t)}
            new |= wanted
            return None if new == current else new
        client = self.client
        return self.update(
            'traits', rp_uuid, lambda: client.get_traits(rp_uuid), decide,
            lambda gen, traits: client.put_traits(rp_uuid, gen, traits))

    def set_root_agent_trait(self, rp_uuid, healthy):
        def decide(doc):
            current = set(doc['traits'])
            if healthy:
                new = current | {names.TRAIT_AGENT}
            else:
                new = current - {names.TRAIT_AGENT}
            return None if new == current else new
        client = self.client
        return self.update(
            'agent trait', rp_uuid, lambda: client.get_traits(rp_uuid),
            decide,
            lambda gen, traits: client.put_traits(rp_uuid, gen, traits))

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
    :param agent_healthy: whether ``CUSTOM_CACHEAWARE_AGENT`` belongs on the
        root (True) or must be removed (False).
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
    _validate(domain_set, cpu_allocation_ratio, membound_total,
              membound_reserved, usable_cpus)
    membound_reserved = membound_reserved or {}
    result = SyncResult(compute_rp_uuid=compute_rp_uuid)
    syncer = _Syncer(client, result)

    root = client.get_provider(compute_rp_uuid)
    prefix = names.domain_provider_name(root['name'], '')
    usable = None if usable_cpus is None else set(usable_cpus)
    wanted = {}
    for domain in domain_set.domains:
        cpus = domain.cpus if usable is None else [
            c for c in domain.cpus if c in usable]
        if cpus:
            wanted[domain.id] = (
                desired_inventories(len(cpus), cpu_allocation_ratio,
                                    membound_total,
                                    membound_reserved.get(domain.id, 0)),
                domain_traits(domain.level, child_traits))

    all_traits = {names.TRAIT_AGENT}
    for _inv, traits in wanted.values():
        all_traits |= traits
    syncer.ensure_names([names.RC_DOMAIN_VCPU, names.RC_DOMAIN_MEMBOUND],
                        all_traits)

    if not agent_healthy:
        # Withdraw the promise first: the scheduler stops trusting this
        # host before its domains change.
        result.root_traits_changed = syncer.set_root_agent_trait(
            compute_rp_uuid, False)

    existing = _our_children(client.providers_in_tree(compute_rp_uuid),
                             compute_rp_uuid, prefix)
    for domain_id in sorted(wanted):
        inventories, traits = wanted[domain_id]
        name = prefix + domain_id
        provider = existing.get(domain_id)
        if provider is None:
            rp_uuid = domain_provider_uuid(compute_rp_uuid, domain_id)
            if syncer.create_child(name, rp_uuid, compute_rp_uuid,
                                   inventories, traits):
                result.created.append(domain_id)
                result.providers[domain_id] = rp_uuid
                continue
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

    for domain_id in sorted(set(existing) - set(wanted)):
        _remove_stale(syncer, domain_id, existing[domain_id]['uuid'])

    if agent_healthy:
        result.root_traits_changed = syncer.set_root_agent_trait(
            compute_rp_uuid, True)
    # Run every pass: only a sync that changed something is news.
    LOG.log(logging.INFO if result.writes else logging.DEBUG,
            'cache domain providers of %s: %d created, %d updated, '
            '%d deleted, %d kept with allocations, %d writes',
            compute_rp_uuid, len(result.created), len(result.updated),
            len(result.deleted), len(result.kept_with_allocations),
            result.writes)
    return result


def set_agent_trait(client, compute_rp_uuid, present):
    """Put ``CUSTOM_CACHEAWARE_AGENT`` on the root (True) or take it off.

    Only that trait is written; the root's other traits are kept. Returns
    True if it wrote.
    """
    syncer = _Syncer(client, SyncResult(compute_rp_uuid=compute_rp_uuid))
    if present:
        client.ensure_trait(names.TRAIT_AGENT)
    return syncer.set_root_agent_trait(compute_rp_uuid, present)


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
        lambda doc: (None if _same_inventories(
            doc['inventories'], retired_inventories(doc['inventories']))
            else retired_inventories(doc['inventories'])),
        lambda gen, inv: client.put_inventories(rp_uuid, gen, inv))
