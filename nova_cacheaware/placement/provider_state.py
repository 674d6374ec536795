"""The pure parts of the provider syncs: results, wanted state, checks.

What :mod:`~nova_cacheaware.placement.provider_sync` (one provider per
cache domain) and :mod:`~nova_cacheaware.placement.host_provider` (one per
host) return and decide without a request to Placement: the counters of a
run, the inventories and traits a provider should have, how a lowered
total is floored at what allocations use, and the check of the sync's
arguments. No I/O.
"""

import dataclasses
import math
import typing as ty

from nova_cacheaware.contracts import placement as names
from nova_cacheaware import exception


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
    #: ``CUSTOM_CACHEAWARE_AGENT`` was added to or removed from one of our
    #: providers (never the root: that is Nova's).
    agent_trait_changed: bool = False
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


def is_managed_child_trait(trait):
    """True for the traits a sync owns on its children."""
    return trait in (names.TRAIT_DOMAIN, names.TRAIT_AGENT) or (
        trait.startswith(names.TRAIT_CACHE_LEVEL_PREFIX)
        and trait[len(names.TRAIT_CACHE_LEVEL_PREFIX):].isdigit())


def same_inventories(current, desired):
    """True when ``current`` already has every field ``desired`` sets."""
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


def validate(domain_set, cpu_allocation_ratio, membound_total,
             membound_reserved, usable_cpus):
    """Refuse bad sync arguments with InvalidInput before any write."""
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
