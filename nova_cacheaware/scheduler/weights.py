"""``CacheAwareWeigher``: hosts weighed on the agents' live state.

One weigher with two parts, each with its multiplier (like Nova's
``MetricsWeigher`` with its weight settings): a host's weight is what two
weighers would add through Nova's handler, each raw weight in ``[-1, 1]``
normalised to ``[0, 1]`` and multiplied (:class:`CacheAwareWeigher`).
One pass instead of two: Nova's handler costs about as much per host and
weigher as both parts' own work (:doc:`/evaluation/scheduler`).

**Cache contention** (soft cache preferences). For requests that may be
memory-bound (``cacheaware:workload`` ``memory`` or ``auto``, with
``cache_clean`` not ``off``) the raw weight of a host is, with
``fine = clean_places / domains - min(1, memory_bound_vms / domains)``::

    0.75 + fine / 4   on a host with a Clean place     (in [0.5, 1])
   -0.75 + fine / 4   on a host without one            (in [-1, -0.5])

A Clean place is a domain without a memory-bound instance that has room
for the instance's vCPUs. Every host with a Clean place outweighs every
host without one by half the span (5 at the default multiplier of 10,
more than Nova's default RAM, CPU and disk weighers and the pCPU part
together can put against it); within each band more Clean places and
fewer memory-bound instances win. Both counts take in the claims this
scheduler process knows the live state lacks (its own since the state,
and the other workers' received over the bus, :mod:`.claims`,
:mod:`.claim_share`), so in a burst a host's last Clean place stops
attracting memory-bound requests as soon as one is claimed there. A host
without fresh state is neutral (0, the middle of the span). Requests
without ``cacheaware:`` keys, with ``cache_clean`` ``off`` or with a
declared CPU/IO workload are not weighed by this part. A
``cache_clean=required`` request is weighed by best fit instead: the
raw weight of its host's tightest Clean place, ``2 * vcpus / room - 1``
(``room``: that domain's vCPUs left), -1 without one - so that a small
``required`` server leaves whole Empty domains to larger ones
(:func:`~nova_cacheaware.cachedomain.choice.contention_score`). Multiplier:
``[cacheaware_scheduler] cache_contention_weight_multiplier``, overridden
per aggregate by the metadata key of the same name.

**pCPU availability**. For requests with ``cacheaware:`` keys that float
(not ``hw:cpu_policy=dedicated``), the raw weight of a host is::

    2 * available_pcpus / vcpus  -  1

in ``[-1, 1]``, where ``available_pcpus`` is pCPU-Est's exact max-min fair
estimate for the new instance (its vCPUs floating over the pCPUs guests may
use, capped by the flavor's ``quota:cpu_quota`` / ``quota:cpu_period``)
next to the host's current VMs, as the agent's ``vcpu_sizing`` capability
publishes them. A host without that state is neutral (0, as if the
instance got half its vCPUs). A host where the agent sees a VM in a spin
storm (study 001) gets -1, the lowest weight: a new instance would add
runnable vCPUs where a VM already gets fewer pCPUs than it runs.
Multiplier: ``pcpu_availability_weight_multiplier`` (option or aggregate
key).

A part is not computed where its multiplier is 0; a request no part
applies to (or only parts at 0 on every host) gets :data:`NO_ORDER` (no
per-host work in Nova's handler).

Cost: the host's part of the estimate (pCPU-Est of its current VMs,
:mod:`~nova_cacheaware.pcpu_est.headroom`) is computed once when its
state arrives; a request adds its instance with one binary search, and
both parts' scores are memoised per state and request shape (bounded,
replaced with the state). The request is read once per request
(:mod:`~nova_cacheaware.scheduler.request`), the live state once per host.
"""

import typing as ty

from oslo_log import log as logging

from nova.scheduler import utils
from nova.scheduler import weights

from nova_cacheaware.cachedomain import choice as domain_choice
from nova_cacheaware import conf as ca_conf
from nova_cacheaware import exception
from nova_cacheaware.scheduler import claim_time
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import domain_order
from nova_cacheaware.scheduler import host_state as scheduler_state
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import request

LOG = logging.getLogger(__name__)
CONF = ca_conf.CONF

NEUTRAL = 0.0

#: What a weigher returns when every host gets the same weight. Nova's
#: handler then skips its per-host work for the weigher (``normalize``
#: returns ``()`` for an empty list, and the handler walks the
#: normalized weights, not the hosts): a weight shared by every host only
#: shifts all of them alike and never changes their order, while the
#: handler's loop (multiplier, f-string and debug dicts per host) costs
#: more than our filters for a request we ignore.
#: ``tests/unit/scheduler/test_weigher_skip.py`` holds Nova's handler
#: (every Nova release CI runs) to that.
NO_ORDER = ()


def contention_score(state, vcpus=1, cpu_ratio=1.0, best_fit=False):
    """Raw weight in ``[-1, 1]`` of a host's :class:`HostCacheState`.

    :func:`~nova_cacheaware.cachedomain.choice.contention_score` of the
    state's domains for a ``vcpus``-vCPU instance at ``cpu_ratio``
    (``best_fit``: a ``cache_clean=required`` one); neutral without fresh,
    healthy state listing domains. Memoised per state, ratio, vCPUs and
    kind.
    """
    if state is None or not state.agent_healthy or not state.domains:
        return NEUTRAL
    return scheduler_state.contention(state, vcpus, cpu_ratio, best_fit)


def availability_score(state, vcpus, cap=None):
    """Raw weight in ``[-1, 1]`` of a host for a new ``vcpus``-vCPU instance.

    0 (neutral) without fresh, healthy state carrying ``vcpu_affinity``;
    -1 where the agent sees a VM in a spin storm. Memoised per state and
    (vCPUs, cap): :meth:`~.host_state.HostCacheState.pcpu_score`.
    """
    if state is None or not state.agent_healthy or vcpus < 1:
        return NEUTRAL
    if state.storming_vms:
        return -1.0
    value = state.pcpu_score(vcpus, cap)
    return NEUTRAL if value is None else value


class CacheAwareWeigher(weights.BaseHostWeigher):
    """Cache contention and pCPU availability, in one pass over the hosts.

    The weight a host gets is what Nova's handler would add for two
    weighers, each normalised from ``[-1, 1]`` and multiplied::

        m_contention * (contention + 1) / 2  +  m_pcpu * (availability + 1) / 2

    ``m_*`` are the parts' multipliers (option, or aggregate key of the
    same name); a part the request does not concern adds nothing to any
    host, nor is a part computed for a host where its multiplier is 0.
    The multipliers are applied here, so :meth:`weight_multiplier` is 1
    and the bounds ``[0, 1]`` leave the weights as they are: one weigher
    costs Nova's handler a multiplier call, three log entries and an
    f-string per host, two cost twice that (measured:
    :doc:`/evaluation/scheduler`).
    """

    minval = 0.0
    maxval = 1.0

    def weight_multiplier(self, host_state):
        """1: the parts' multipliers are in the weights already."""
        return 1.0

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Weights of every host; :data:`NO_ORDER` if no part applies."""
        # Tells claim_time which hosts Nova will try.
        claim_time.weighed(obj.obj.uuid for obj in weighed_obj_list)
        req = request.of(weight_properties)
        opts = CONF.cacheaware_scheduler
        cache = live_state.get_cache()
        parts = [part for part in (
            _Contention.of(req, opts, cache), _Availability.of(req, opts))
            if part is not None]
        if not all(part.multiplier for part in parts) and not any(
                obj.obj.aggregates for obj in weighed_obj_list):
            # An aggregate key may turn on a part the option turns off.
            parts = [part for part in parts if part.multiplier]
        if not parts:
            return NO_ORDER
        get = cache.get
        out = []
        for obj in weighed_obj_list:
            host_state = obj.obj
            state = get(host_state.host)
            weight = 0.0
            for part in parts:
                multiplier = part.multiplier
                if host_state.aggregates:
                    multiplier = utils.get_weight_multiplier(
                        host_state, part.OPTION, multiplier)
                if multiplier:
                    weight += multiplier * (part.score(state, host_state)
                                            + 1.0) / 2.0
            out.append(weight)
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug('CacheAwareWeigher parts %s for %d hosts',
                      ', '.join(type(p).__name__ for p in parts), len(out))
        return out

    def _weigh_object(self, host_state, weight_properties):
        got = self.weigh_objects([weights.WeighedHost(host_state, 0.0)],
                                 weight_properties)
        return got[0] if got else 0.0


class _Contention(ty.NamedTuple):
    """The cache contention part of a request (see the module's text)."""

    OPTION = 'cache_contention_weight_multiplier'

    multiplier: float
    vcpus: int
    #: ``cache_clean=required``: the tightest Clean place wins.
    best_fit: bool
    cache: ty.Any
    ledger: ty.Any

    @classmethod
    def of(cls, req, opts, cache):
        """The part for ``req``, or None when every host is neutral."""
        # Invalid keys: CacheDomainFilter has already refused the request
        # when it is enabled.
        if not req.contention_weighed:
            return None
        return cls(getattr(opts, cls.OPTION), req.vcpus,
                   req.cacheaware.clean_required, cache,
                   claims.get_ledger(opts.claim_memory_seconds,
                                     opts.claim_settle_seconds,
                                     opts.claim_pending_seconds))

    def score(self, state, host_state):
        """Raw weight in ``[-1, 1]`` of ``host_state`` with ``state``."""
        if state is None or not state.agent_healthy or not state.domains:
            return NEUTRAL
        ledger = self.ledger
        if ledger.has_claims(host_state.uuid, host_state.num_instances):
            # The claims this process knows the state lacks (its own and
            # the other workers'), as the filter counts them: in a burst
            # the Clean places a host has left fall with every claim, not
            # once per agent period.
            cache = self.cache
            rows, own = domain_order.host_domain_rows(
                host_state, state, cache.received(host_state.host), ledger,
                domain_order.elsewhere_of(cache, host_state.host))
            if own:
                return domain_choice.contention_score(rows, self.vcpus,
                                                      self.best_fit)
        return scheduler_state.contention(
            state, self.vcpus, host_state.cpu_allocation_ratio or 1.0,
            self.best_fit)


class _Availability(ty.NamedTuple):
    """The pCPU availability part of a request (see the module's text)."""

    OPTION = 'pcpu_availability_weight_multiplier'

    multiplier: float
    #: ``(vCPUs, cap)``: the request's shape, the key of the state's memo.
    shape: ty.Tuple[int, ty.Optional[float]]

    @classmethod
    def of(cls, req, opts):
        """The part for ``req``, or None when every host is neutral."""
        # Flavors without our keys keep Nova's ordering; dedicated pCPUs
        # are Placement's exclusive PCPU inventory.
        if not req.pcpu_weighed:
            return None
        return cls(getattr(opts, cls.OPTION), (req.vcpus, req.cap))

    def score(self, state, host_state):
        """Raw weight in ``[-1, 1]`` of ``host_state`` with ``state``."""
        try:
            return availability_score(state, *self.shape)
        except exception.InvalidInput as e:
            LOG.warning('CacheAwareWeigher: no pCPU estimate for %s: %s',
                        host_state.host, e)
            return NEUTRAL


def all_weighers():
    """Every weigher of nova-cacheaware, for ``weight_classes``."""
    return [CacheAwareWeigher]
