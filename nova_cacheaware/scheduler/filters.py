"""``CacheDomainFilter``: hosts (and allocation candidates) that can honour
a request's ``cacheaware:`` keys.

Placement does the heavy lifting: a flavor asking for All-share carries the
granular group ``resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU=<vcpus>`` (plus
``CUSTOM_CACHE_DOMAIN_MEMBOUND=1`` for Clean), so every allocation candidate
Placement returns already names one cache-domain provider with room. This
filter checks what Placement cannot:

* each candidate must put all the instance's vCPUs on **one** cache-domain
  provider (a flavor written by hand without the granular group, or with a
  smaller amount, would otherwise silently get no All-share);
* with ``cache_clean=required``, the candidate must also claim the domain's
  memory-bound slot, and the domain must not be reported busy by a fresh
  live state;
* a host whose agent reports itself unhealthy in fresh live state, or
  whose agent's state is missing or stale while other agents are heard
  (:mod:`nova_cacheaware.policy.liveness`), gets no All-share or Clean
  request (its pinning would not be applied).

The candidates left are then **ordered** (Nova claims the first one): the
domain policy of :mod:`nova_cacheaware.cachedomain.choice`, fed with the
host's live state and this process's own recent claims
(:mod:`~nova_cacheaware.scheduler.claims`), so a multi-create or a burst
spreads over the host's domains instead of colliding on one; the first
is chosen again, and reserved, when Nova reads it to claim
(:mod:`~nova_cacheaware.scheduler.claim_time`), so that requests filtered
in the same instant claim distinct domains.

In the **host model** (the candidate puts the cache group on the host's one
``<root name>:cacheaware`` child, not on a domain provider; see
:func:`~nova_cacheaware.scheduler.domain_order.is_host_provider`) the
allocation no longer names the domain: the agent chooses it on the host.
With fresh, healthy live state the filter then checks per domain - live
state plus this process's own recent claims - that one has room for all
the vCPUs (and, for ``cache_clean=required``, holds no memory-bound
instance), rejecting the host otherwise, and hands the domain the agent
will choose (same policy, same seed) to the claim ledger. Without live
state Placement's host counts decide and nothing is recorded.

Failing candidates are pruned from ``host_state.allocation_candidates``
(``CandidateFilterMixin``'s contract, in one list comprehension: its
``filter_candidates`` formats three f-strings per candidate even with
debug logging off). A host with none left is rejected, the reason logged
at INFO. Requests without ``cacheaware:`` keys pass every host untouched.
"""

import dataclasses
import typing as ty

from oslo_log import log as logging

from nova.scheduler import filters
from nova.scheduler import utils

from nova_cacheaware import conf as ca_conf
from nova_cacheaware import exception
from nova_cacheaware.policy import liveness
from nova_cacheaware.scheduler import candidates
from nova_cacheaware.scheduler import claim_time
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import consume_hook
from nova_cacheaware.scheduler import domain_order
from nova_cacheaware.scheduler import full_numa
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import metrics
from nova_cacheaware.scheduler import request as sched_request

LOG = logging.getLogger(__name__)
CONF = ca_conf.CONF

#: Importable as ``nova_cacheaware.scheduler.filters.FullNUMAFilter``.
FullNUMAFilter = full_numa.FullNUMAFilter


class CacheDomainFilter(filters.BaseHostFilter, filters.CandidateFilterMixin):
    """Pass hosts whose candidates honour the ``cacheaware:`` request."""

    # Rebuild keeps the host and its allocations: nothing to re-check.
    RUN_ON_REBUILD = False

    def __init__(self):
        super().__init__()
        # Nova instantiates enabled filters once per scheduler process.
        consume_hook.install(record_consumed)
        # Configuration, not request state (every thread sees the same):
        # read once per request in filter_all, not once per host - an
        # option lookup costs more than most of the per-host work.
        self._opts = None

    def filter_all(self, filter_obj_list, spec_obj):
        """Nova's per-request entry: what every host shares, then each host.

        Nova's ``_filter_one`` would ask per host what is the same for
        every host (a rebuild? the parsed flavor, the instance): asked
        once here. Requests without ``cacheaware:`` keys (and rebuilds)
        pass every host untouched, with no per-host call.
        """
        self._opts = _options()
        metrics.REQUESTS.inc()
        shared = _Shared.of(spec_obj, self._opts)
        # The instances of a multi-create share one RequestSpec object.
        claim_time.begin(id(spec_obj), shared.instance)
        if not self.RUN_ON_REBUILD and utils.request_is_rebuild(spec_obj):
            return filter_obj_list
        memo = shared.memo
        if memo.invalid is None and not memo.cacheaware.present:
            return filter_obj_list
        return [host for host in filter_obj_list
                if self._passes(host, spec_obj, shared)]

    def host_passes(self, host_state, spec_obj):
        """True if the host can honour the request; prunes candidates."""
        return self._passes(host_state, spec_obj, _Shared.of(spec_obj))

    def _passes(self, host_state, spec_obj, shared):
        memo = shared.memo
        if memo.invalid is not None:
            # Flavors written before the validators were installed.
            self._reject(host_state, 'invalid_specs',
                         'flavor %s has invalid extra specs: %s'
                         % (spec_obj.flavor.flavorid,
                            exception.InvalidInput(reason=memo.invalid)))
            return False
        request = memo.cacheaware
        if not request.present:
            return True
        problems = memo.contradictions
        if problems:
            # Keys that contradict each other (Nova's validators see one
            # key at a time): no host can honour the flavor.
            self._reject(host_state, 'contradicting_specs',
                         'flavor %s has contradicting extra '
                         'specs: %s' % (spec_obj.flavor.flavorid,
                                        '; '.join(problems)))
            return False
        if not shared.live_checked:
            return True

        fresh, view = shared.cache.admit(host_state.host)
        if view is not None:
            opts = self._opts or _options()
            why = liveness.ineligible_reason(view, opts.stale_host_state)
            if why is not None:
                self._reject(host_state, metrics.liveness_reason(why), why)
                return False
        received, live = fresh or (None, None)
        if not shared.all_share:
            return True
        return self._candidates_pass(host_state, spec_obj, shared, live,
                                     received)

    def _candidates_pass(self, host_state, spec_obj, shared, live,
                         received):
        """All-share: keep the candidates with one domain, best first."""
        memo, cache = shared.memo, shared.cache
        request = memo.cacheaware
        vcpus, clean = shared.vcpus, shared.clean_required
        busy = frozenset()
        if clean and live is not None:
            busy = live.busy_providers

        before = host_state.allocation_candidates
        kept = [c for c in before
                if candidates.reason(c, vcpus, clean, busy) is None]
        if not kept:
            host_state.allocation_candidates = kept
            why = (candidates.reason(before[0], vcpus, clean, busy)
                   if before else
                   'Placement returned no allocation candidate')
            self._reject(host_state, 'no_one_domain_candidate',
                         'no allocation candidate puts all %d '
                         'vCPUs in one cache domain%s (%d candidates; first '
                         'refused because %s)' % (
                             vcpus, ' with a Clean slot' if clean else '',
                             len(before), why))
            return False
        if domain_order.is_host_provider(
                domain_order.candidate_provider(kept[0]), host_state.uuid,
                live):
            host_state.allocation_candidates = kept
            if not self._host_model_passes(host_state, spec_obj, shared,
                                           live, received):
                return False
            if shared.slot_wanted:
                self._offer_clean_slot(host_state, spec_obj, shared, kept)
            return True
        # Nova claims the first candidate: put the domain to claim first,
        # and choose it again when Nova claims (claim_time).
        ledger = shared.ledger
        instance = shared.instance
        elsewhere = domain_order.elsewhere_of(cache, host_state.host)
        ordered = domain_order.order_candidates(
            host_state, kept, vcpus, request.clean_wanted, instance, live,
            received, ledger,
            # The instances of a multi-create share one RequestSpec object.
            request=id(spec_obj), elsewhere=elsewhere,
            clean_required=request.clean_required)
        if not ordered:
            host_state.allocation_candidates = ordered
            self._reject(host_state, 'domains_closed',
                         domain_order.CLOSED_REASON % vcpus)
            return False
        claim_time.offer(host_state.uuid, kept, host_state, claim_time.Terms(
            vcpus, request.clean_wanted, instance, id(spec_obj),
            request.clean_required, cache, ledger))
        host_state.allocation_candidates = claim_time.ClaimTimeCandidates(
            ordered, host_state.uuid)
        return True

    def _host_model_passes(self, host_state, spec_obj, shared, live,
                           received):
        """Host model: a domain with room, and the agent's choice predicted.

        Without live state Placement's host counts decide (``max_unit``
        and ``reserved`` as fresh as the agent's last sync) and nothing is
        recorded.
        """
        if live is None:
            return True
        cache, ledger, vcpus = shared.cache, shared.ledger, shared.vcpus
        if ledger.has_claims(host_state.uuid, host_state.num_instances):
            rows, own = domain_order.host_domain_rows(
                host_state, live, received, ledger,
                domain_order.elsewhere_of(cache, host_state.host))
        else:
            # Most hosts of a region: nothing claimed here lately.
            rows, own = live.domain_rows(
                host_state.cpu_allocation_ratio or 1.0), ()
        # A cpu/io request may share a required instance's domain.
        closed = (domain_order.closed_domains(live, own)
                  if shared.clean_wanted else frozenset())
        why = domain_order.room_reason(
            rows, vcpus, shared.clean_required, len(own), closed)
        if why is not None:
            self._reject(host_state, 'no_domain_room', why)
            return False
        domain_order.hand_out_domain(
            host_state, rows, vcpus, shared.clean_wanted,
            shared.instance, ledger,
            # The instances of a multi-create share one RequestSpec object.
            request=id(spec_obj), closed=closed,
            clean_required=shared.clean_required)
        return True

    def _offer_clean_slot(self, host_state, spec_obj, shared, kept):
        """Host model: let claim_time add a free Clean slot at claim time.

        Every host such a request passes is offered, live state or not,
        so that claim_time sees each host Nova tries: the slot is added
        only while another one remains.
        """
        claim_time.offer(host_state.uuid, kept, host_state, claim_time.Terms(
            shared.vcpus, shared.clean_wanted, shared.instance, id(spec_obj),
            False, shared.cache, shared.ledger, clean_slot=True))
        host_state.allocation_candidates = claim_time.ClaimTimeCandidates(
            kept, host_state.uuid)

    @staticmethod
    def _reject(host_state, label, reason):
        # label: one of metrics.REFUSAL_REASONS; reason: the log's text.
        metrics.refused(label)
        LOG.info('CacheDomainFilter rejects host %s (node %s): %s',
                 host_state.host, host_state.nodename, reason)


class _Shared(ty.NamedTuple):
    """What every host of one request shares (made once per request)."""

    memo: sched_request.Request
    instance: ty.Optional[str]
    cache: ty.Any
    ledger: claims.ClaimLedger
    # The request's terms each host reads (derived from ``memo`` once).
    vcpus: int
    all_share: bool
    clean_required: bool
    clean_wanted: bool
    #: All-share or Clean required: the host's liveness is checked.
    live_checked: bool
    slot_wanted: bool

    @classmethod
    def of(cls, spec_obj, opts=None):
        """Parse ``spec_obj`` (memoised on its flavor) and look up the rest.

        First use in this process starts the live-state listener, whatever
        the request: state must be there when a cache-aware request comes.
        ``opts``: :func:`_options` when the caller has read them.
        """
        memo = sched_request.of(spec_obj)
        request = memo.cacheaware
        return cls(memo, _instance_uuid(spec_obj), live_state.get_cache(),
                   _ledger(opts or _options()), memo.vcpus,
                   request.all_share, request.clean_required,
                   request.clean_wanted,
                   request.all_share or request.clean_required,
                   _slot_wanted(request))


class _Options(ty.NamedTuple):
    stale_host_state: str
    claim_memory_seconds: float
    claim_settle_seconds: float
    claim_pending_seconds: float


def _options():
    """The ``[cacheaware_scheduler]`` options the filter reads per host."""
    opts = CONF.cacheaware_scheduler
    return _Options(opts.stale_host_state, opts.claim_memory_seconds,
                    opts.claim_settle_seconds, opts.claim_pending_seconds)


def record_consumed(host_state, spec_obj):
    """Record the claim Nova made on ``host_state`` (:mod:`.consume_hook`).

    Only All-share requests claim a cache domain; the others, and flavors
    with invalid keys, record nothing.
    """
    memo = sched_request.of(spec_obj)
    if memo.invalid is not None or not memo.cacheaware.all_share:
        return
    claim_time.consumed(_instance_uuid(spec_obj))
    opts = CONF.cacheaware_scheduler
    ledger = _ledger(opts)
    # Before any row is read: the hand-out guess must not count it too.
    ledger.exact = True
    cache = live_state.get_cache()
    live = cache.get(host_state.host)
    reserved = claim_time.reserved(host_state.uuid)
    if reserved is not None and reserved.instance == _instance_uuid(
            spec_obj):
        # Host model: the domain predicted when Nova read the candidate,
        # before this instance's own reservation counted.
        ledger.record(host_state.uuid, dataclasses.replace(
            reserved, at=ledger.now(), pending=False))
        return
    claim = domain_order.consumed_claim(
        host_state, spec_obj, memo.cacheaware.clean_wanted, live,
        cache.received(host_state.host) if live is not None else None,
        ledger, domain_order.elsewhere_of(cache, host_state.host),
        clean_required=memo.cacheaware.clean_required,
        # What this thread's request claimed, even if a concurrent
        # request has replaced the host's candidate list since.
        candidate=claim_time.picked(host_state.uuid))
    if claim is not None:
        ledger.record(host_state.uuid, claim)


def _ledger(opts):
    """This process's claim ledger, sized by ``opts``.

    ``opts``: :func:`_options` or ``[cacheaware_scheduler]`` itself.
    """
    return claims.get_ledger(opts.claim_memory_seconds,
                             opts.claim_settle_seconds,
                             opts.claim_pending_seconds)


def _slot_wanted(request):
    """A declared memory-bound request that only prefers Clean.

    It claims a Clean slot at claim time when one is free
    (:mod:`.claim_time`); ``auto`` requests do not: the classifier may
    find them CPU-bound, and a slot they held would be lost to a
    ``required`` one.
    """
    return request.workload == 'memory' and request.cache_clean == 'preferred'


def _instance_uuid(spec_obj):
    # Unset on specs built without an instance (e.g. some move checks).
    if spec_obj.obj_attr_is_set('instance_uuid'):
        return spec_obj.instance_uuid
    return None


def all_filters():
    """Every filter of nova-cacheaware, for ``available_filters``."""
    return [CacheDomainFilter, FullNUMAFilter]
