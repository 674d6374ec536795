"""In-process cache of the hosts' live cache-domain state, with a TTL.

Fed by the notification listener (:mod:`nova_cacheaware.notifications`),
read by the filter and the weigher. Thread-safe; the clock is injected so
tests (and the benchmark) control time. Freshness is measured from when a
state was *received*, never from the agent's timestamp, so clock skew between
compute nodes and the scheduler cannot make state look fresh; the agent's
timestamp only orders the states of one host (an older one never replaces
a newer one, whatever order the bus delivers them in).

The cache also remembers when the bus was last heard (any host's state)
and since when it has been heard again after a silence: the inputs of the
liveness rule (:func:`nova_cacheaware.policy.liveness.ineligible_reason`).
"""

import threading
import time

from nova_cacheaware.policy import liveness
from nova_cacheaware.scheduler import host_state


class HostStateCache:
    """``host -> HostCacheState`` with a time-to-live in seconds."""

    def __init__(self, ttl, clock=time.monotonic):
        self._ttl = float(ttl)
        self._clock = clock
        self._lock = threading.Lock()
        self._states = {}
        self._last_heard = None    # when any state was last received
        self._heard_since = None   # first reception after a silence
        self._where = {}           # instance uuid -> host listing it
        #: Called as ``on_stored(state)`` after a state is stored (outside
        #: the lock); None: nobody. The scheduler settles its claims.
        self.on_stored = None

    @property
    def ttl(self):
        """Seconds a received state stays fresh."""
        return self._ttl

    def update(self, state):
        """Record ``state`` unless a newer one of its host is already held.

        Returns True when the state was stored. The state's derived values
        are computed here, once per arrival, so that no request pays them.
        """
        held = self._states.get(state.host)
        if held is not None and held[1].timestamp > state.timestamp:
            return False
        state = host_state.for_scheduler(state)
        state.prepare(None if held is None else held[1])
        now = self._clock()
        with self._lock:
            if (self._last_heard is None
                    or now - self._last_heard > self._ttl / 2.0):
                self._heard_since = now
            self._last_heard = now
            held = self._states.get(state.host)
            if held is not None and held[1].timestamp > state.timestamp:
                return False
            self._states[state.host] = (now, state)
            if held is not None:
                for uuid in held[1].instance_uuids - state.instance_uuids:
                    if self._where.get(uuid) == state.host:
                        del self._where[uuid]
            for uuid in state.instance_uuids:
                self._where[uuid] = state.host
        if self.on_stored is not None:
            self.on_stored(state)
        return True

    def located(self, uuid):
        """The host whose latest state lists instance ``uuid``, or None."""
        return self._where.get(uuid)

    def get(self, host):
        """The host's fresh state, or None when missing or older than TTL."""
        entry = self._states.get(host)
        if entry is None or self._clock() - entry[0] > self._ttl:
            return None
        return entry[1]

    def received(self, host):
        """When the host's fresh state was received (this cache's clock).

        None when the state is missing or older than the TTL.
        """
        entry = self._states.get(host)
        if entry is None or self._clock() - entry[0] > self._ttl:
            return None
        return entry[0]

    def forget(self, host):
        """Drop a host's state (e.g. when its compute service is deleted)."""
        with self._lock:
            self._states.pop(host, None)

    def clear(self):
        """Drop every state and what was heard: as new."""
        with self._lock:
            self._states.clear()
            self._where.clear()
            self._last_heard = self._heard_since = None

    def prune(self):
        """Drop stale entries; returns how many were dropped."""
        now = self._clock()
        with self._lock:
            stale = [h for h, (received, _) in self._states.items()
                     if now - received > self._ttl]
            for host in stale:
                del self._states[host]
        return len(stale)

    def __len__(self):
        return len(self._states)

    def live_view(self, host):
        """``host``'s liveness view now (a stale state counts, aged)."""
        now = self._clock()
        entry = self._states.get(host)
        last, since = self._last_heard, self._heard_since
        return liveness.LiveView(
            ttl=self._ttl,
            age=None if entry is None else now - entry[0],
            healthy=entry is not None and entry[1].agent_healthy,
            quiet_for=None if last is None else now - last,
            heard_for=0.0 if since is None else now - since)
