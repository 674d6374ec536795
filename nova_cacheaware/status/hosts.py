"""The API service's copy of the live state, and the host list from it.

The service listens to the agents' state topic exactly as a scheduler
worker does (:func:`nova_cacheaware.notifications.
start_host_state_listener` into a
:class:`~nova_cacheaware.scheduler.state_cache.HostStateCache`), on its own
queue: ``[cacheaware_status] listener_pool_prefix``, one per process, so it
neither takes messages from the schedulers nor misses any host. Listing
the hosts walks that memory: O(hosts), no message to any agent.
"""

from oslo_log import log as logging

from nova_cacheaware.agent import describe
from nova_cacheaware.contracts import cache_state
from nova_cacheaware import notifications
from nova_cacheaware.scheduler import state_cache

LOG = logging.getLogger(__name__)


class StatusCache(state_cache.HostStateCache):
    """A host-state cache that can also list every host it holds."""

    def rows(self):
        """One :func:`host_row` per host with a state, sorted by host."""
        now = self._clock()
        with self._lock:
            # Copies under the lock, the walk outside (as freshness()).
            states, beats = dict(self._states), dict(self._beats)
        return [host_row(host, received, state, beats.get(host), now,
                         self.ttl)
                for host, (received, state) in sorted(states.items())]

    def host_of(self, uuid):
        """The host whose newest state lists instance ``uuid``, or None."""
        with self._lock:
            states = dict(self._states)
        for host, (_, state) in sorted(states.items()):
            if uuid in state.instance_uuids:
                return host
        return None

    def knows(self, host):
        """True when a state or heartbeat of ``host`` was heard."""
        return host in self._states or host in self._beats


def host_row(host, received, state, beat, now, ttl):
    """The ``GET /v1/hosts`` entry of one host's held state.

    ``beat``: the cache's ``(received, generation, healthy)`` of its
    newest heartbeat or state. ``age``: seconds since the state was
    received or confirmed by a heartbeat naming its generation; ``alive``:
    heard (state or heartbeat) within the TTL.
    """
    confirmed, generation, healthy = received, state.generation, \
        state.agent_healthy
    heard = received
    if beat is not None:
        heard = max(heard, beat[0])
        if state.generation is None or beat[1] == state.generation:
            confirmed = max(confirmed, beat[0])
        if beat[0] >= received:
            healthy = beat[2]
        if generation is None or beat[1] > generation:
            generation = beat[1]
    counts = {s: 0 for s in cache_state.DOMAIN_STATES}
    for domain in state.domains:
        counts[domain.state] += 1
    return {'host': host,
            'model': model_of(state),
            'domains': len(state.domains),
            'empty': counts[cache_state.EMPTY],
            'clean': counts[cache_state.CLEAN],
            'dirty': counts[cache_state.DIRTY],
            'servers': len(state.instance_uuids),
            'agent_alive': now - heard <= ttl,
            'agent_healthy': bool(healthy),
            'state_age_s': round(now - confirmed, 1),
            'generation': generation}


def model_of(state):
    """``per-host``/``per-domain`` by the providers the state names.

    None when it names none: the agent does not report to Placement
    (``[agent] report_placement``), so no model is in force.
    """
    if state.host_provider:
        return describe.PER_HOST
    if any(d.provider_uuid for d in state.domains):
        return describe.PER_DOMAIN
    return None


def start(conf, transport, cache):
    """Start the listener feeding ``cache``; returns it (stop + wait)."""
    pool = notifications.process_pool_name(
        conf.cacheaware_status.listener_pool_prefix)
    return notifications.start_host_state_listener(
        transport, cache, conf.cacheaware_scheduler.host_state_topic, pool)
