"""Order a host's allocation candidates: the domain to claim comes first.

Thin adapter around :func:`nova_cacheaware.policy.domain_choice.
order_domains`: it turns the freshest knowledge the scheduler process has
- the agent's live state of the host and this process's own claims since
(:mod:`nova_cacheaware.scheduler.claims`) - into
:class:`~nova_cacheaware.policy.domain_choice.DomainLoad` values, reorders
the candidates, and tells the ledger which domain it handed out first.
"""

from oslo_log import log as logging

from nova_cacheaware import names
from nova_cacheaware.policy import domain_choice
from nova_cacheaware.scheduler import claims as claims_mod

LOG = logging.getLogger(__name__)


def candidate_provider(candidate):
    """The cache-domain provider uuid a candidate claims, or None."""
    for uuid, alloc in candidate['allocations'].items():
        if names.RC_DOMAIN_VCPU in alloc['resources']:
            return uuid
    return None


def domain_loads(providers, live, cpu_ratio, own_claims, request=None):
    """``{provider: DomainLoad}`` from live state plus this process's claims.

    :param providers: the candidate domains' provider uuids.
    :param live: the host's fresh, healthy ``HostCacheState`` or None.
    :param cpu_ratio: the host's CPU allocation ratio (capacity is the
        domain's usable CPUs times it, as in Placement's inventory).
    :param own_claims: :class:`~nova_cacheaware.scheduler.claims.Claim` s
        the live state does not show yet.
    :param request: the token of the request being scheduled: its own
        earlier claims count as ``claimed_now``.
    """
    known = live.domain_by_provider() if live is not None else {}
    memory, used, total, last, now = {}, {}, {}, {}, {}
    for provider in providers:
        domain = known.get(provider)
        memory[provider] = len(domain.memory_bound_vms) if domain else 0
        used[provider] = (domain.vcpus_used or 0) if domain else 0
        total[provider] = (int(domain.usable_cpus * cpu_ratio)
                           if domain is not None and domain.usable_cpus
                           and domain.vcpus_used is not None else None)
    for claim in own_claims:
        if claim.provider in memory:
            memory[claim.provider] += int(claim.memory_bound)
            used[claim.provider] += claim.vcpus
            last[claim.provider] = max(claim.at,
                                       last.get(claim.provider, claim.at))
            if request is not None and claim.request == request:
                now[claim.provider] = now.get(claim.provider, 0) + 1
    return {p: domain_choice.DomainLoad(provider=p, memory_bound=memory[p],
                                        vcpus_used=used[p],
                                        vcpus_total=total[p],
                                        last_claim=last.get(p),
                                        claimed_now=now.get(p, 0))
            for p in providers}


def order_candidates(host_state, candidates, vcpus, memory_bound,
                     instance, live, received, ledger, request=None):
    """Return ``candidates`` reordered; record the first as handed out.

    :param host_state: Nova's ``HostState`` (``uuid``, ``num_instances``,
        ``cpu_allocation_ratio`` are read).
    :param candidates: the host's remaining allocation candidates.
    :param memory_bound: order by the memory-bound rule.
    :param instance: the instance uuid being scheduled (tie-break seed).
    :param live: the host's fresh, healthy live state, or None.
    :param received: when ``live`` was received (ledger clock), or None.
    :param ledger: this process's :class:`~.claims.ClaimLedger`.
    :param request: a token shared by the instances of one request.
    """
    host = host_state.uuid
    ledger.observe(host, host_state.num_instances)
    by_provider = {}
    for candidate in candidates:
        by_provider.setdefault(candidate_provider(candidate),
                               []).append(candidate)
    providers = [p for p in by_provider if p is not None]
    if not providers:
        return candidates
    listed = live.instance_uuids if live is not None else frozenset()
    own = ledger.claims(host, received, listed)
    loads = domain_loads(providers, live,
                         host_state.cpu_allocation_ratio or 1.0, own, request)
    order = domain_choice.order_domains(
        [loads[p] for p in providers], vcpus, memory_bound,
        instance or host)
    ordered = [c for p in order for c in by_provider[p]]
    ordered += by_provider.get(None, [])
    LOG.debug('domain order for host %s (%d own claims): %s', host,
              len(own), order)
    ledger.hand_out(host, host_state.num_instances, claims_mod.Claim(
        provider=order[0], instance=instance, vcpus=vcpus,
        memory_bound=memory_bound, at=ledger.now(), request=request))
    return ordered
