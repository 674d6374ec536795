"""Weighers on live agent state: cache contention and pCPU availability.

``CacheContentionWeigher``: soft cache preferences.

For requests that may be memory-bound (``cacheaware:workload`` ``memory`` or
``auto``, with ``cache_clean`` not ``off``) the raw weight of a host is, with
``fine = clean_places / domains - min(1, memory_bound_vms / domains)``::

    0.75 + fine / 4   on a host with a Clean place     (in [0.5, 1])
   -0.75 + fine / 4   on a host without one            (in [-1, -0.5])

A Clean place is a domain without a memory-bound instance that has room
for the instance's vCPUs. Every host with a Clean place outweighs every
host without one by half the span (5 at the default multiplier of 10,
more than Nova's default RAM, CPU and disk weighers and
PCPUAvailabilityWeigher together can put against it); within each band
more Clean places and fewer memory-bound instances win. Both counts take
in the claims this scheduler process knows the live state lacks (its own
since the state, and the other workers' received over the bus,
:mod:`.claims`, :mod:`.claim_share`), so in a burst a host's last Clean
place stops attracting memory-bound requests as soon as one is claimed
there.
Weights are normalised against the fixed bounds ``[-1, 1]`` (not against
the other hosts), so a host without fresh state - neutral, 0 - always sits
in the middle. Requests without ``cacheaware:`` keys, with ``cache_clean``
``off`` or with a declared CPU/IO workload get 0 on every host, which leaves
Nova's ordering unchanged.

The multiplier is ``[cacheaware_scheduler]
cache_contention_weight_multiplier``, overridden per aggregate by the
metadata key of the same name.

``PCPUAvailabilityWeigher``: for requests with ``cacheaware:`` keys that
float (not ``hw:cpu_policy=dedicated``), the raw weight of a host is::

    2 * available_pcpus / vcpus  -  1

in ``[-1, 1]``, where ``available_pcpus`` is pCPU-Est's exact max-min fair
estimate for the new instance (its vCPUs floating over the pCPUs guests may
use, capped by the flavor's ``quota:cpu_quota`` / ``quota:cpu_period``)
next to the host's current VMs, as the agent's ``vcpu_sizing`` capability
publishes them (payload 1.1 ``vcpu_affinity``). A host without that state
is neutral (0, as if the instance got half its vCPUs). A host where the
agent sees a VM in a spin storm (payload ``spin_storm``, study 001) gets
-1, the lowest weight: a new instance would add runnable vCPUs where a VM
already gets fewer pCPUs than it runs. Multiplier:
``pcpu_availability_weight_multiplier``.

Cost: the host's part of the estimate (pCPU-Est of its current VMs,
:mod:`~nova_cacheaware.policy.pcpu_headroom`) is computed once when its
state arrives; a request adds its instance with one binary search, and the
score is memoised per state and request shape (bounded, replaced with the
state). Both weighers read the request once per request
(:mod:`~nova_cacheaware.scheduler.request`) and return neutral weights
without a per-host call for requests they ignore.
"""

from oslo_log import log as logging

from nova.scheduler import utils
from nova.scheduler import weights

from nova_cacheaware import conf as ca_conf
from nova_cacheaware import exception
from nova_cacheaware.policy import domain_choice
from nova_cacheaware.scheduler import claim_time
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import domain_order
from nova_cacheaware.scheduler import host_state as scheduler_state
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import request

LOG = logging.getLogger(__name__)
CONF = ca_conf.CONF

NEUTRAL = 0.0

#: Request shapes (vCPUs, cap) memoised per host state: a few flavors make
#: most requests; past this many the oldest shape is dropped.
SCORES_PER_STATE = 32

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


def contention_score(state, vcpus=1, cpu_ratio=1.0):
    """Raw weight in ``[-1, 1]`` of a host's :class:`HostCacheState`.

    :func:`~nova_cacheaware.policy.domain_choice.contention_score` of the
    state's domains for a ``vcpus``-vCPU instance at ``cpu_ratio``;
    neutral without fresh, healthy state listing domains. Memoised per
    state, ratio and vCPUs.
    """
    if state is None or not state.agent_healthy or not state.domains:
        return NEUTRAL
    return scheduler_state.contention(state, vcpus, cpu_ratio)


class _RequestWeigher(weights.BaseHostWeigher):
    """A weigher that reads the request once, not once per host."""

    minval = -1.0
    maxval = 1.0
    #: ``[cacheaware_scheduler]`` option (and aggregate key) of the
    #: multiplier.
    MULTIPLIER_OPTION = None

    def __init__(self):
        super().__init__()
        # Configuration, not request state: re-read at every request
        # (weigh_objects), so all threads see the same value.
        self._configured = None

    def weight_multiplier(self, host_state):
        """Configured multiplier, overridable by aggregate metadata."""
        configured = self._configured
        if configured is None:
            configured = self._configured = self._read_multiplier()
        if not host_state.aggregates:
            # Nova calls this once per host and weigher: an option lookup
            # costs more than everything else our weighers do per host.
            return configured
        return utils.get_weight_multiplier(host_state,
                                           self.MULTIPLIER_OPTION, configured)

    def _read_multiplier(self):
        return getattr(CONF.cacheaware_scheduler, self.MULTIPLIER_OPTION)

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Raw weights of every host; :data:`NO_ORDER` if we ignore it."""
        self._configured = self._read_multiplier()
        wanted = self._wanted(request.of(weight_properties))
        if wanted is None:
            return NO_ORDER
        cache = live_state.get_cache()
        return [self._score(cache.get(obj.obj.host), wanted, obj.obj)
                for obj in weighed_obj_list]

    def _weigh_object(self, host_state, weight_properties):
        wanted = self._wanted(request.of(weight_properties))
        if wanted is None:
            return NEUTRAL
        return self._score(live_state.get_cache().get(host_state.host),
                           wanted, host_state)

    def _wanted(self, req):
        """What the scores depend on, or None when every host is neutral."""
        raise NotImplementedError()

    def _score(self, state, wanted, host_state):
        raise NotImplementedError()


class CacheContentionWeigher(_RequestWeigher):
    """Prefer hosts with Empty cache domains for memory-bound requests."""

    MULTIPLIER_OPTION = 'cache_contention_weight_multiplier'

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Raw weights; tells claim_time which hosts Nova will try."""
        claim_time.weighed(obj.obj.uuid for obj in weighed_obj_list)
        return super().weigh_objects(weighed_obj_list, weight_properties)

    def _wanted(self, req):
        # Invalid keys: CacheDomainFilter has already refused the request
        # when it is enabled.
        if not req.contention_weighed:
            return None
        opts = CONF.cacheaware_scheduler
        return (req.vcpus, live_state.get_cache(), claims.get_ledger(
            opts.claim_memory_seconds, opts.claim_settle_seconds,
            opts.claim_pending_seconds))

    def _score(self, state, wanted, host_state):
        if state is None or not state.agent_healthy or not state.domains:
            return NEUTRAL
        vcpus, cache, ledger = wanted
        ratio = host_state.cpu_allocation_ratio or 1.0
        if not ledger.has_claims(host_state.uuid, host_state.num_instances):
            return contention_score(state, vcpus, ratio)
        # The claims this process knows the state lacks (its own and the
        # other workers'), as the filter counts them: in a burst the Clean
        # places a host has left fall with every claim, not once per
        # agent period.
        rows, own = domain_order.host_domain_rows(
            host_state, state, cache.received(host_state.host), ledger,
            domain_order.elsewhere_of(cache, host_state.host))
        if not own:
            return contention_score(state, vcpus, ratio)
        return domain_choice.contention_score(rows, vcpus)


def availability_score(state, vcpus, cap=None):
    """Raw weight in ``[-1, 1]`` of a host for a new ``vcpus``-vCPU instance.

    0 (neutral) without fresh, healthy state carrying ``vcpu_affinity``.
    Memoised per state and (vCPUs, cap): the state's
    :attr:`~.host_state.HostCacheState.pcpu_headroom` makes a miss cheap.
    """
    if state is None or not state.agent_healthy or vcpus < 1:
        return NEUTRAL
    if state.storming_vms:
        return -1.0
    scores = state.pcpu_scores
    key = (vcpus, cap)
    value = scores.get(key)
    if value is None:
        headroom = state.pcpu_headroom
        if headroom is None:
            return NEUTRAL
        available = headroom.available_pcpus(vcpus, cap)
        value = 2.0 * min(1.0, available / vcpus) - 1.0
        if len(scores) >= SCORES_PER_STATE:
            try:
                # Oldest first (insertion order); another thread may have
                # dropped it already.
                del scores[next(iter(scores))]
            except (KeyError, StopIteration, RuntimeError):
                pass
        scores[key] = value
    return value


class PCPUAvailabilityWeigher(_RequestWeigher):
    """Prefer hosts where a new instance gets the most real pCPUs."""

    MULTIPLIER_OPTION = 'pcpu_availability_weight_multiplier'

    def _wanted(self, req):
        # Flavors without our keys keep Nova's ordering; dedicated pCPUs
        # are Placement's exclusive PCPU inventory.
        if not req.pcpu_weighed:
            return None
        return req.vcpus, req.cap

    def _score(self, state, wanted, host_state):
        try:
            return availability_score(state, *wanted)
        except exception.InvalidInput as e:
            LOG.warning('PCPUAvailabilityWeigher: no estimate for %s: %s',
                        host_state.host, e)
            return NEUTRAL


def all_weighers():
    """Every weigher of nova-cacheaware, for ``weight_classes``."""
    return [CacheContentionWeigher, PCPUAvailabilityWeigher]
