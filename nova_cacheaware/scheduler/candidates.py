"""Placement's allocation candidates as ``CacheDomainFilter`` judges them.

A cache-aware candidate puts all the instance's vCPUs on one cache-domain
provider (the granular group ``resources_CACHE``), and for
``cache_clean=required`` also claims that domain's memory-bound slot.
"""

from nova_cacheaware.contracts import placement as names

_RC_VCPU = names.RC_DOMAIN_VCPU


def reason(candidate, vcpus, clean_required, busy_providers):
    """Why ``candidate`` cannot host the request, or None when it can.

    ``candidate`` is one Placement allocation request
    (``{'allocations': {rp_uuid: {'resources': {...}}}, ...}``).
    """
    # Runs per candidate, host and request: one walk, no list.
    uuid = resources = None
    for provider, alloc in candidate['allocations'].items():
        if _RC_VCPU in alloc['resources']:
            if uuid is not None:
                return 'it spreads the vCPUs over %d cache domains' % sum(
                    1 for a in candidate['allocations'].values()
                    if _RC_VCPU in a['resources'])
            uuid, resources = provider, alloc['resources']
    if uuid is None:
        return ('it has no %s allocation (flavor lacks the cache group, see '
                '"nova-cacheaware flavor show-specs")' % _RC_VCPU)
    if resources[_RC_VCPU] < vcpus:
        return ('it claims %d of %d vCPUs in the cache domain'
                % (resources[_RC_VCPU], vcpus))
    if clean_required:
        if resources.get(names.RC_DOMAIN_MEMBOUND, 0) < 1:
            return ('it claims no %s slot in domain provider %s'
                    % (names.RC_DOMAIN_MEMBOUND, uuid))
        if uuid in busy_providers:
            return ('the agent reports domain provider %s holding a '
                    'memory-bound instance' % uuid)
    return None
