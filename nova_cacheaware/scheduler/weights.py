"""Weighers on live agent state: cache contention and pCPU availability.

``CacheContentionWeigher``: soft cache preferences.

For requests that may be memory-bound (``cacheaware:workload`` ``memory`` or
``auto``, with ``cache_clean`` not ``off``) the raw weight of a host is::

    empty_domains / domains  -  min(1, memory_bound_vms / domains)

in ``[-1, 1]``: more Empty domains and fewer memory-bound instances win.
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
is neutral (0, as if the instance got half its vCPUs). Multiplier:
``pcpu_availability_weight_multiplier``.
"""

import threading

from oslo_log import log as logging

from nova.scheduler import utils
from nova.scheduler import weights

from nova_cacheaware.api import specs
from nova_cacheaware import conf as ca_conf
from nova_cacheaware import exception
from nova_cacheaware.policy import vcpu_sizing
from nova_cacheaware.scheduler import live_state

LOG = logging.getLogger(__name__)
CONF = ca_conf.CONF

NEUTRAL = 0.0


def contention_score(state):
    """Raw weight in ``[-1, 1]`` of a host's :class:`HostCacheState`."""
    if state is None or not state.agent_healthy or not state.domains:
        return NEUTRAL
    count = len(state.domains)
    return (state.empty_domains / count
            - min(1.0, state.memory_bound_vms / count))


class CacheContentionWeigher(weights.BaseHostWeigher):
    """Prefer hosts with Empty cache domains for memory-bound requests."""

    minval = -1.0
    maxval = 1.0

    def weight_multiplier(self, host_state):
        """Configured multiplier, overridable by aggregate metadata."""
        return utils.get_weight_multiplier(
            host_state, 'cache_contention_weight_multiplier',
            CONF.cacheaware_scheduler.cache_contention_weight_multiplier)

    def _weigh_object(self, host_state, weight_properties):
        try:
            request = specs.parse_extra_specs(
                weight_properties.flavor.extra_specs)
        except exception.InvalidInput:
            # CacheDomainFilter has already refused it when enabled.
            return NEUTRAL
        if not (request.present and request.clean_wanted):
            return NEUTRAL
        return contention_score(live_state.get_cache().get(host_state.host))


def flavor_cap(extra_specs):
    """The per-vCPU cap of ``quota:cpu_quota``/``quota:cpu_period``, or None.

    Nova's libvirt driver writes these into ``<cputune>``, where libvirt
    applies the quota to each vCPU. Unreadable values count as no cap (Nova
    validates them at flavor creation).
    """
    quota = (extra_specs or {}).get('quota:cpu_quota')
    try:
        return vcpu_sizing.cap_from_quota(
            quota, (extra_specs or {}).get('quota:cpu_period'))
    except exception.InvalidInput:
        return None


def availability_score(state, vcpus, cap=None):
    """Raw weight in ``[-1, 1]`` of a host for a new ``vcpus``-vCPU instance.

    0 (neutral) without fresh, healthy state carrying ``vcpu_affinity``.
    """
    if (state is None or not state.agent_healthy
            or state.vcpu_affinity is None or vcpus < 1):
        return NEUTRAL
    estimate = vcpu_sizing.new_instance_estimate(state.vcpu_affinity,
                                                 vcpus, cap)
    if estimate is None:
        return NEUTRAL
    return 2.0 * min(1.0, estimate.available_pcpus / vcpus) - 1.0


class _ScoreCache:
    """Scores per (host, state timestamp, vCPUs, cap).

    A host's state changes once per agent period while every request weighs
    every host: the estimate is computed once per state and request shape.
    """

    MAX_ENTRIES = 4096

    def __init__(self):
        self._lock = threading.Lock()
        self._scores = {}

    def score(self, state, vcpus, cap):
        """:func:`availability_score`, memoised."""
        if state is None:
            return NEUTRAL
        key = (state.host, state.timestamp, id(state), vcpus, cap)
        with self._lock:
            hit = self._scores.get(key)
        if hit is not None:
            return hit
        value = availability_score(state, vcpus, cap)
        with self._lock:
            if len(self._scores) >= self.MAX_ENTRIES:
                self._scores.clear()
            self._scores[key] = value
        return value


_SCORES = _ScoreCache()


class PCPUAvailabilityWeigher(weights.BaseHostWeigher):
    """Prefer hosts where a new instance gets the most real pCPUs."""

    minval = -1.0
    maxval = 1.0

    def weight_multiplier(self, host_state):
        """Configured multiplier, overridable by aggregate metadata."""
        return utils.get_weight_multiplier(
            host_state, 'pcpu_availability_weight_multiplier',
            CONF.cacheaware_scheduler.pcpu_availability_weight_multiplier)

    def _weigh_object(self, host_state, weight_properties):
        flavor = weight_properties.flavor
        extra_specs = flavor.extra_specs or {}
        try:
            request = specs.parse_extra_specs(extra_specs)
        except exception.InvalidInput:
            return NEUTRAL
        if not request.present:
            # Flavors without our keys keep Nova's ordering.
            return NEUTRAL
        if extra_specs.get('hw:cpu_policy') == 'dedicated':
            # Dedicated pCPUs are Placement's PCPU inventory: exclusive.
            return NEUTRAL
        state = live_state.get_cache().get(host_state.host)
        try:
            return _SCORES.score(state, flavor.vcpus,
                                 flavor_cap(extra_specs))
        except exception.InvalidInput as e:
            LOG.warning('PCPUAvailabilityWeigher: no estimate for %s: %s',
                        host_state.host, e)
            return NEUTRAL


def all_weighers():
    """Every weigher of nova-cacheaware, for ``weight_classes``."""
    return [CacheContentionWeigher, PCPUAvailabilityWeigher]
