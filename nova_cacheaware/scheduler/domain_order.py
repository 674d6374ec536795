"""The domain inside a host: candidate order (domain model), prediction
(host model).

Thin adapter around :func:`nova_cacheaware.cachedomain.choice.
order_domains`: it turns the freshest knowledge the scheduler process has
- the agent's live state of the host and this process's own claims since
(:mod:`nova_cacheaware.scheduler.claims`) - into
:class:`~nova_cacheaware.cachedomain.choice.DomainLoad` values.

* **Domain model** (one provider per cache domain, the allocation names the
  domain): :func:`order_candidates` reorders the host's candidates and
  tells the ledger which domain it handed out first. Loads are keyed by
  provider uuid.
* **Both models**: the weigher reads the same rows
  (:func:`host_domain_rows`, claims matched to domains by id or provider)
  to count the Clean places a host has left.
* **Host model** (one ``<root name>:cacheaware`` child per host, one
  candidate per host; the agent chooses the domain on the host with the
  same policy, seeded with the instance uuid): :func:`host_domain_rows`
  gives the domains' loads keyed by **domain id**, :func:`room_reason`
  says why no domain can take the instance, and :func:`hand_out_domain`
  predicts the domain the agent will choose and hands it to the ledger,
  so that the next instance of a burst is counted against it.
"""

import functools

from oslo_log import log as logging

from nova_cacheaware.cachedomain import choice as domain_choice
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.placement import host_provider
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
        agent's ``vcpus_capacity``, else the domain's usable CPUs times
        it, as in Placement's inventory).
    :param own_claims: :class:`~nova_cacheaware.scheduler.claims.Claim` s
        the live state does not show yet.
    :param request: the token of the request being scheduled: its own
        earlier claims count as ``claimed_now``.
    """
    known = live.domain_by_provider() if live is not None else {}
    memory, used, total, last, now = {}, {}, {}, {}, {}
    required = set()
    for provider in providers:
        domain = known.get(provider)
        memory[provider] = len(domain.memory_bound_vms) if domain else 0
        if domain is not None and domain.required_holders:
            required.add(provider)
        used[provider] = (domain.vcpus_used or 0) if domain else 0
        total[provider] = (domain.capacity(cpu_ratio) if domain is not None
                           else None)
    for claim in own_claims:
        if claim.provider in memory:
            memory[claim.provider] += int(claim.memory_bound)
            used[claim.provider] += claim.vcpus
            if claim.clean_required:
                required.add(claim.provider)
            last[claim.provider] = max(claim.at,
                                       last.get(claim.provider, claim.at))
            if request is not None and claim.request == request:
                now[claim.provider] = now.get(claim.provider, 0) + 1
    return {p: domain_choice.DomainLoad(provider=p, memory_bound=memory[p],
                                        vcpus_used=used[p],
                                        vcpus_total=total[p],
                                        last_claim=last.get(p),
                                        claimed_now=now.get(p, 0),
                                        holds_required=p in required)
            for p in providers}


#: Why a memory-bound request found only closed domains (per-domain model).
CLOSED_REASON = ('every allocation candidate with room for %d vCPUs is a '
                 'cache domain holding a cache_clean=required instance')


def order_candidates(host_state, candidates, vcpus, memory_bound,
                     instance, live, received, ledger, request=None,
                     elsewhere=None, clean_required=False):
    """Return ``candidates`` reordered; record the first as handed out.

    With live state, a memory-bound request that does not itself require
    Clean (``memory_bound`` and not ``clean_required``) loses the
    candidates of domains holding a ``cache_clean=required`` instance
    (the live state's ``required_holders`` and the claims since): it
    would make that instance Dirty. The list returned may then be empty.
    A required request needs no such check (each required instance holds
    its domain's ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` in Placement). Without
    live state claims only reorder, as everywhere (a claim of a server
    deleted since must not cost a placement): those domains come last.

    :param host_state: Nova's ``HostState`` (``uuid``, ``num_instances``,
        ``cpu_allocation_ratio`` are read).
    :param candidates: the host's remaining allocation candidates.
    :param memory_bound: order by the memory-bound rule.
    :param instance: the instance uuid being scheduled (tie-break seed).
    :param live: the host's fresh, healthy live state, or None.
    :param received: when ``live`` was received (ledger clock), or None.
    :param ledger: this process's :class:`~.claims.ClaimLedger`.
    :param request: a token shared by the instances of one request.
    :param elsewhere: as for :meth:`~.claims.ClaimLedger.claims`.
    :param clean_required: the request asks ``cache_clean=required``
        (recorded with its claim, which closes the domain).
    """
    ledger.observe(host_state.uuid, host_state.num_instances)
    ordered, first = rank_candidates(
        host_state, candidates, vcpus, memory_bound, instance, live,
        received, ledger, request, elsewhere, clean_required)
    if first is not None:
        ledger.hand_out(host_state.uuid, host_state.num_instances,
                        claims_mod.Claim(
                            provider=first, instance=instance, vcpus=vcpus,
                            memory_bound=memory_bound, at=ledger.now(),
                            request=request, clean_required=clean_required))
    return ordered


def rank_candidates(host_state, candidates, vcpus, memory_bound, instance,
                    live, received, ledger, request=None, elsewhere=None,
                    clean_required=False):
    """``(ordered candidates, provider of the first)``; records nothing.

    The order of :func:`order_candidates` from what the ledger holds now
    (claims and reservations of every request but the instance's own
    earlier ones). The provider is None when no candidate names a
    domain or none is left.
    """
    host = host_state.uuid
    by_provider = {}
    for candidate in candidates:
        by_provider.setdefault(candidate_provider(candidate),
                               []).append(candidate)
    providers = [p for p in by_provider if p is not None]
    if not providers:
        return candidates, None
    listed = live.instance_uuids if live is not None else frozenset()
    own = ledger.claims(host, received, listed, elsewhere)
    loads = domain_loads(providers, live,
                         host_state.cpu_allocation_ratio or 1.0, own, request)
    if memory_bound and live is not None and not clean_required:
        providers = [p for p in providers if not loads[p].holds_required]
        if not providers:
            return [], None
    order = domain_choice.order_domains(
        [loads[p] for p in providers], vcpus, memory_bound,
        instance or host)
    ordered = [c for p in order for c in by_provider[p]]
    ordered += by_provider.get(None, [])
    LOG.debug('domain order for host %s (%d own claims): %s', host,
              len(own), order)
    return ordered, order[0]


# --- host model -----------------------------------------------------------

@functools.lru_cache(maxsize=1 << 16)
def host_child_uuid(compute_rp_uuid):
    """The uuid the agent gives the host provider it creates, or None.

    :func:`nova_cacheaware.placement.host_provider.host_provider_uuid`,
    memoised (the filter asks per host and request); None when
    ``compute_rp_uuid`` is not a uuid (unit tests' hosts).
    """
    try:
        return host_provider.host_provider_uuid(compute_rp_uuid)
    except (TypeError, ValueError, AttributeError):
        return None


def is_host_provider(provider, host_uuid, live):
    """True when ``provider`` is the host's one cache child (host model).

    :param provider: the provider a candidate puts the cache group on.
    :param host_uuid: the compute node (root provider) uuid.
    :param live: the host's fresh live state, or None.

    The live state's ``host_provider`` (payload 1.3) decides when it names
    one; otherwise a provider none of the state's domains names, when they
    name some (they do in the domain model); otherwise the uuid the agent
    gives the child it creates.
    """
    if live is not None:
        if live.host_provider is not None:
            return provider == live.host_provider
        if live.domain_providers:
            return provider not in live.domain_providers
    return host_uuid is not None and provider == host_child_uuid(host_uuid)


def host_domain_rows(host_state, live, received, ledger, elsewhere=None):
    """Host model: ``(rows, own claims)`` of a host with live state.

    ``rows`` are the state's :meth:`~nova_cacheaware.scheduler.host_state.
    HostCacheState.domain_rows` at the host's CPU allocation ratio -
    ``(domain id, memory-bound instances, Clean holders, vCPUs used,
    capacity or None)`` - with this process's claims that the state does
    not show yet added (their vCPUs, and for those wanting Clean one
    memory-bound instance and Clean holder each), matched by domain id.

    :param host_state: Nova's ``HostState`` (``uuid``, ``num_instances``
        and ``cpu_allocation_ratio`` are read).
    :param live: the host's fresh, healthy ``HostCacheState``.
    :param received: when ``live`` was received (ledger clock).
    :param ledger: this process's :class:`~.claims.ClaimLedger`.
    :param elsewhere: as for :meth:`~.claims.ClaimLedger.claims`.
    """
    host = host_state.uuid
    ledger.observe(host, host_state.num_instances)
    rows = live.domain_rows(host_state.cpu_allocation_ratio or 1.0)
    own = ledger.claims(host, received, live.instance_uuids, elsewhere)
    if not own:
        return rows, own
    # Domain-model claims name the domain's provider, host-model ones its
    # id (the weigher reads rows in both models).
    ids = {provider: d.id for provider, d in
           live.domain_by_provider().items()}
    memory, used = {}, {}
    for claim in own:
        domain = ids.get(claim.provider, claim.provider)
        memory[domain] = memory.get(domain, 0) + int(claim.memory_bound)
        used[domain] = used.get(domain, 0) + claim.vcpus
    return tuple(
        (domain, mem + memory[domain], clean + memory[domain],
         vcpus + used[domain], capacity)
        if domain in used else (domain, mem, clean, vcpus, capacity)
        for domain, mem, clean, vcpus, capacity in rows), own


def elsewhere_of(cache, host):
    """``elsewhere(uuid)``: True when another host's live state lists it.

    For :meth:`~.claims.ClaimLedger.claims`; ``cache`` is the process's
    :class:`~.state_cache.HostStateCache`, ``host`` Nova's host name.
    """
    def elsewhere(uuid):
        where = cache.located(uuid)
        return where is not None and where != host
    return elsewhere


def host_loads(rows, closed=frozenset()):
    """Host model: the DomainLoads of ``rows``, keyed by domain id.

    Clean is judged by the Clean holders, capacity is the row's, and a
    domain in ``closed`` (:func:`closed_domains`) holds a
    ``cache_clean=required`` instance. Only what the agent itself knows:
    recency and per-request counts are left out, so that the prediction
    is the agent's choice.
    """
    return [domain_choice.DomainLoad(
        provider=domain, memory_bound=clean, vcpus_used=used,
        vcpus_total=capacity, holds_required=domain in closed)
        for domain, _memory, clean, used, capacity in rows]


def closed_domains(live, own):
    """Host model: ids of the domains closed to memory-bound requests.

    Those holding a ``cache_clean=required`` instance, in the live state
    (payload 1.5) or claimed since. ``own`` are the claims
    :func:`host_domain_rows` returned with the rows (host-model claims
    name the domain id).
    """
    closed = live.required_domains
    extra = [claim.provider for claim in own if claim.clean_required]
    return closed.union(extra) if extra else closed


def room_reason(rows, vcpus, clean_required, own_claims=0,
                closed=frozenset()):
    """Why no domain of ``rows`` can take the instance, or None.

    A domain can when it is not known to lack room for ``vcpus`` (its
    capacity minus the vCPUs used), with ``clean_required`` holds no
    memory-bound instance, and is not in ``closed``: a memory-bound
    request that does not require Clean passes the domains holding a
    ``cache_clean=required`` instance (:func:`closed_domains`).
    """
    # Runs per host and request: stop at the first domain that can.
    for domain, memory, _clean, used, capacity in rows:
        if ((capacity is None or used + vcpus <= capacity)
                and not (clean_required and memory)
                and domain not in closed):
            return None
    if not rows:
        return "its agent's live state lists no cache domain"
    counted = (' (counting %d recent claims of this scheduler)' % own_claims
               if own_claims else '')
    fitting = [row for row in rows
               if row[4] is None or row[3] + vcpus <= row[4]]
    if not fitting:
        room, domain = max((capacity - used, domain)
                           for domain, _m, _c, used, capacity in rows)
        return ("no cache domain has room for %d vCPUs in its agent's live "
                "state%s: %d domains, the most room is %d vCPUs in %s"
                % (vcpus, counted, len(rows), room, domain))
    if not clean_required:
        return ("every cache domain with room for %d vCPUs holds a "
                "cache_clean=required instance in its agent's live "
                "state%s: %d of %d domains have room"
                % (vcpus, counted, len(fitting), len(rows)))
    return ("no cache domain with room for %d vCPUs is free of "
            "memory-bound instances in its agent's live state%s: %d of "
            "%d domains have room, all hold one"
            % (vcpus, counted, len(fitting), len(rows)))


def predict_domain(loads, vcpus, memory_bound, seed):
    """The domain the agent will choose for the instance ``seed``.

    The agent orders the host's domains with the same policy
    (:func:`~nova_cacheaware.cachedomain.assignment.assign_domains`, the
    tightest of equally clean domains first) and the same seed, the
    instance uuid: with the same knowledge it picks the same domain.
    """
    return domain_choice.order_domains(loads, vcpus, memory_bound, seed,
                                       best_fit=True)[0]


def consumed_claim(host_state, spec_obj, memory_bound, live, received,
                   ledger, elsewhere=None, clean_required=False,
                   candidate=None):
    """The claim Nova has just made on ``host_state``, or None.

    Called when Nova consumes the host for ``spec_obj``'s instance
    (:mod:`.consume_hook`): it claimed ``candidate`` when given (the one
    :mod:`.claim_time` chose), else the host's first allocation
    candidate. Domain model: the claim names that candidate's domain
    provider. Host model: the domain the agent is predicted to choose,
    from the live state and every claim recorded before this one (None
    without live state, as in the filter).
    """
    if candidate is None:
        candidates = host_state.allocation_candidates or ()
        candidate = candidates[0] if candidates else None
    provider = candidate_provider(candidate) if candidate else None
    if provider is None:
        return None
    instance = (spec_obj.instance_uuid
                if spec_obj.obj_attr_is_set('instance_uuid') else None)
    vcpus = spec_obj.flavor.vcpus
    if is_host_provider(provider, host_state.uuid, live):
        if live is None:
            return None
        rows, own = host_domain_rows(host_state, live, received, ledger,
                                     elsewhere)
        provider = predict_domain(
            host_loads(rows, closed_domains(live, own)), vcpus,
            memory_bound, instance or host_state.uuid)
    return claims_mod.Claim(
        provider=provider, instance=instance, vcpus=vcpus,
        memory_bound=memory_bound, at=ledger.now(), request=id(spec_obj),
        clean_required=clean_required)


def hand_out_domain(host_state, rows, vcpus, memory_bound, instance,
                    ledger, request=None, closed=frozenset(),
                    clean_required=False):
    """Host model: hand the agent's predicted domain to the ledger.

    The prediction (:func:`predict_domain`) is made only when the ledger
    needs it - when Nova is seen to have claimed this host: the filter
    passes every host with room, Nova claims one. Nothing once the
    ledger's claims are exact (Nova's consumption reports each claim: no
    hand-out is read again).
    """
    if ledger.exact:
        return
    host = host_state.uuid
    seed = instance or host
    ledger.hand_out(
        host, host_state.num_instances, claims_mod.Claim(
            provider=None, instance=instance, vcpus=vcpus,
            memory_bound=memory_bound, at=ledger.now(), request=request,
            clean_required=clean_required),
        resolve=lambda: predict_domain(host_loads(rows, closed), vcpus,
                                       memory_bound, seed))
