"""``CacheContentionWeigher``: soft cache preferences from live agent state.

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
"""

from oslo_log import log as logging

from nova.scheduler import utils
from nova.scheduler import weights

from nova_cacheaware.api import specs
from nova_cacheaware import conf as ca_conf
from nova_cacheaware import exception
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


def all_weighers():
    """Every weigher of nova-cacheaware, for ``weight_classes``."""
    return [CacheContentionWeigher]
