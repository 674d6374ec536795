"""The domain a request claims, chosen when Nova claims it (domain model).

In the per-domain provider model each allocation candidate of a host names
one cache domain, and Nova's scheduler claims the *first* candidate of the
host it picked - never a second one of the same host: when Placement
refuses it (HTTP 409, another request took the domain), Nova moves on to
the next host, and on a region whose last free places are on that host the
request ends in NoValidHost although a domain is still free.

``CacheDomainFilter`` orders each host's candidates when it filters, but
concurrent requests of one scheduler process are filtered before either
claims: both put the same domain first. Nova also keeps one ``HostState``
per host and process and sets its ``allocation_candidates`` for each
request, so a concurrent request may even replace the list a request
filtered before that request reads it.

So the filter hands Nova a :class:`ClaimTimeCandidates` list and keeps
what it knows of the request in this thread (Nova filters, weighs and
claims one request in one thread). When Nova reads the candidate it is
about to claim (``allocation_candidates[0]``), :func:`pick` orders the
host's candidates again, under a process-wide lock, from what the claim
ledger holds at that moment - the claims and the *reservations* of every
other request of the process, and those shared by the other workers - and
reserves the domain it returns (:meth:`~.claims.ClaimLedger.reserve`,
shared over the bus at once). The next request to reach its claim sees
the reservation and takes another domain. Nova's consumption of the host
turns the reservation into the claim; a reservation on another host
replaces it (the claim failed, Nova moved on); one left by a failed
request stops counting after ``claim_pending_seconds``.

What it cannot do: two scheduler *workers* that pick in the same instant,
before either's reservation reached the other over the bus, still choose
alike; Placement then refuses one of them (the admin guide's scheduler
page, "Bursts in the domain model").

**A Clean slot for** ``cache_clean=preferred`` (host model): a declared
memory-bound request that only prefers Clean asks Placement for no
``CUSTOM_CACHE_DOMAIN_MEMBOUND`` slot, so two workers could put it and
another memory-bound request into a host's last Clean place, both
unseen by Placement. When Nova reads such a request's candidate and the
domain the agent will choose (live state plus every claim and
reservation known then) is Clean, :func:`pick` returns the candidate with
one slot added: Placement then serialises the host's Clean places for
``preferred`` as it does for ``required``. If the slot is gone, Placement
refuses and Nova tries its next host. The slot is also asked for where
the Clean place was reserved a moment ago by a concurrent request
(*contested*): one of the two gets it in Placement and the other moves
on, instead of both sharing the domain. A refusal must never cost the
server: the slot is only added while a host the request passed remains
untried after this one (:func:`weighed` records the hosts Nova will try,
from ``CacheAwareWeigher``); on the last host the candidate is
claimed as the flavor asks, and the server may go Dirty, as
``preferred`` allows.
"""

import threading
import typing as ty

from oslo_log import log as logging

from nova_cacheaware.contracts import placement as names
from nova_cacheaware.scheduler import claims as claims_mod
from nova_cacheaware.scheduler import domain_order

#: One pick at a time per process: order and reserve must be one step.
_pick_lock = threading.Lock()
_local = threading.local()
LOG = logging.getLogger(__name__)


class ClaimTimeCandidates(list):
    """A host's candidates in the filter's order; ``[0]`` chosen late.

    Reading index 0 in the thread that filtered the host for the request
    returns :func:`pick`'s candidate; any other read (another thread, a
    slice, iteration) sees the list as the filter ordered it.
    """

    __slots__ = ('host',)

    def __init__(self, ordered, host):
        super().__init__(ordered)
        self.host = host

    def __getitem__(self, index):
        if index == 0:
            chosen = pick(self.host)
            if chosen is not None:
                return chosen
        return super().__getitem__(index)


class Terms(ty.NamedTuple):
    """What a request asks, the same on every host (made once per request).

    ``cache``: the process's live-state cache (read again when Nova
    claims: fresher than what the filter saw); the rest as for
    :func:`~.domain_order.rank_candidates`.
    """

    vcpus: int
    memory_bound: bool
    instance: ty.Optional[str]
    request: ty.Any
    clean_required: bool
    cache: ty.Any
    ledger: ty.Any
    #: Host model: a declared memory-bound ``cache_clean=preferred``
    #: request; the candidate names the host's cache provider, the agent
    #: chooses the domain, and the request claims a free Clean slot (see
    #: :func:`_choose_host`).
    clean_slot: bool = False


class _Offer(object):
    """One host's candidates as the filter left them, and the choice."""

    # A few hundred bytes per host and request: the filter makes one for
    # every host that passes an All-share request.
    __slots__ = ('candidates', 'host_state', 'chosen', 'claim')

    def __init__(self, candidates, host_state):
        self.candidates = candidates
        self.host_state = host_state
        self.chosen = None
        #: The reservation made with the choice (None: none).
        self.claim = None


def begin(request, instance):
    """Start scheduling ``instance`` of ``request`` in this thread.

    Called by the filter before it looks at any host: offers of the
    previous instance (a multi-create filters again for each) are
    dropped; instances already consumed stay known while the request is
    the same, so that Nova's listing of alternates reserves nothing.
    """
    if getattr(_local, 'request', None) != request:
        _local.request = request
        _local.consumed = set()
    _local.instance = instance
    _local.offers = {}
    _local.terms = None
    # The hosts Nova will try for this instance (None: unknown) and those
    # whose candidate it has read so far.
    _local.weighed = None
    _local.tried = set()


def weighed(hosts):
    """Nova weighed ``hosts`` (uuids) for this thread's instance.

    Nova tries them in weight order until one claim succeeds; Nova calls
    no weigher when one host is left, so "unknown" means "this host is
    the last". Only requests that may claim a Clean slot need it.
    """
    terms = getattr(_local, 'terms', None)
    if terms is not None and terms.clean_slot:
        _local.weighed = frozenset(hosts)


def offer(host, candidates, host_state, terms):
    """Remember ``candidates`` of ``host`` for this thread's request.

    ``terms``: the request's :class:`Terms` (the filter makes them once
    per request; the first offer's are kept).
    """
    offers = getattr(_local, 'offers', None)
    if offers is None:
        return
    if _local.terms is None:
        _local.terms = terms
    offers[host] = _Offer(candidates, host_state)


def pick(host):
    """The candidate this thread's request claims on ``host``, or None.

    None when this thread filtered no such host for its request (the
    caller then uses the list as it is). The first read orders and
    reserves; later reads (Nova's consumption, the ledger) return the
    same candidate.
    """
    offers = getattr(_local, 'offers', None)
    if not offers:
        return None
    found = offers.get(host)
    if found is None:
        return None
    if found.chosen is None:
        found.chosen = _choose(found)
    return found.chosen


def picked(host):
    """The candidate :func:`pick` returned for ``host`` in this thread.

    None when Nova did not read this thread's choice for the host (a
    concurrent request replaced the list first: Nova claimed what that
    list held).
    """
    offers = getattr(_local, 'offers', None)
    found = offers.get(host) if offers else None
    return None if found is None else found.chosen


def reserved(host):
    """The claim this thread reserved on ``host`` when Nova read it, or None.

    In the host model it names the domain the agent was predicted to
    choose at that moment; Nova's consumption records it as the claim.
    """
    offers = getattr(_local, 'offers', None)
    found = offers.get(host) if offers else None
    return None if found is None else found.claim


def _choose(found):
    terms = _local.terms
    if _local.instance in _local.consumed:
        # Nova lists alternates once its claims are made: nothing is
        # claimed here now.
        return found.candidates[0]
    if terms.clean_slot:
        return _choose_host(found, terms)
    host_state = found.host_state
    host = host_state.uuid
    live = terms.cache.get(host_state.host)
    received = (terms.cache.received(host_state.host)
                if live is not None else None)
    with _pick_lock:
        ordered, provider = domain_order.rank_candidates(
            host_state, found.candidates, terms.vcpus, terms.memory_bound,
            terms.instance, live, received, terms.ledger, terms.request,
            domain_order.elsewhere_of(terms.cache, host_state.host),
            terms.clean_required)
        if provider is None:
            # Every domain closed since the filter ran: Nova claims this
            # host anyway; Placement decides.
            return found.candidates[0]
        _reserve(terms, host, provider)
        return ordered[0]


def _choose_host(found, terms):
    """Host model: reserve the agent's domain; add a free Clean slot."""
    host_state = found.host_state
    host = host_state.uuid
    candidate = found.candidates[0]
    tried = _local.tried
    tried.add(host)
    live = terms.cache.get(host_state.host)
    if live is None:
        # Without live state Placement's host counts decide, as in the
        # filter.
        LOG.debug('preferred %s on %s: no live state, no Clean slot',
                  terms.instance, host)
        return candidate
    received = terms.cache.received(host_state.host)
    with _pick_lock:
        rows, own = domain_order.host_domain_rows(
            host_state, live, received, terms.ledger,
            domain_order.elsewhere_of(terms.cache, host_state.host))
        loads = domain_order.host_loads(
            rows, domain_order.closed_domains(live, own))
        if not loads:
            # A state with no domain arrived since the filter: Placement's
            # host counts decide, as without live state.
            return candidate
        domain = domain_order.predict_domain(
            loads, terms.vcpus, terms.memory_bound,
            terms.instance or host)
        load = next(d for d in loads if d.provider == domain)
        clean = load.memory_bound == 0 and (
            load.vcpus_total is None
            or load.vcpus_used + terms.vcpus <= load.vcpus_total)
        # A concurrent request reserved the Clean place this one was
        # weighed for: whichever of the two Placement admits first keeps
        # it, and the other moves on to its next host.
        contested = not clean and any(
            c.pending and c.memory_bound and c.instance != terms.instance
            for c in own)
        weighed_hosts = _local.weighed
        untried = bool(weighed_hosts) and bool(weighed_hosts - tried)
        found.claim = _reserve(terms, host, domain)
    slot = untried and (clean or contested)
    LOG.debug('preferred %s on %s: domain %s clean=%s contested=%s '
              'untried=%s: Clean slot %s', terms.instance, host, domain,
              clean, contested, untried, 'asked' if slot else 'not asked')
    return with_clean_slot(candidate) if slot else candidate


def _reserve(terms, host, provider):
    """Reserve ``provider`` (a domain) on ``host`` for the request; the claim.

    Under :data:`_pick_lock`: choosing and reserving are one step.
    """
    claim = claims_mod.Claim(
        provider=provider, instance=terms.instance, vcpus=terms.vcpus,
        memory_bound=terms.memory_bound, at=terms.ledger.now(),
        request=terms.request, clean_required=terms.clean_required,
        pending=True)
    terms.ledger.reserve(host, claim)
    return claim


def with_clean_slot(candidate):
    """A copy of host-model ``candidate`` that also claims a Clean slot.

    One ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` on the provider that holds the
    cache group's vCPUs; the candidate itself is left as Placement gave
    it (other threads may read it).
    """
    allocations = {}
    for provider, alloc in candidate['allocations'].items():
        resources = alloc['resources']
        if names.RC_DOMAIN_VCPU in resources:
            alloc = dict(alloc, resources=dict(
                resources, **{names.RC_DOMAIN_MEMBOUND: 1}))
        allocations[provider] = alloc
    return dict(candidate, allocations=allocations)


def consumed(instance):
    """Nova consumed a host for ``instance`` in this thread."""
    done = getattr(_local, 'consumed', None)
    if done is not None and instance is not None:
        done.add(instance)
