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

Agents sending payload 2.0 send their state when it changes and a
heartbeat between (:mod:`nova_cacheaware.policy.state_cadence`). A
heartbeat keeps the agent alive in the liveness rule and *confirms* the
state it names by generation: a state is fresh while it was received or
confirmed within the TTL. A heartbeat naming a newer generation than the
state held means a state was lost: the held one is no longer given out
(:meth:`HostStateCache.get` says None: Placement decides for that host,
the weighers are neutral) until the agent's next state, at its next
change or resync. A 1.x state (no generation) is fresh for the TTL after
it was received, as before.
"""

import collections
import threading
import time

from nova_cacheaware.policy import liveness
from nova_cacheaware.scheduler import host_state


#: Hosts unheard for this many TTLs are forgotten (:meth:`prune`).
FORGET_TTLS = 10


class HostStateCache:
    """``host -> HostCacheState`` with a time-to-live in seconds."""

    def __init__(self, ttl, clock=time.monotonic, recent_s=120.0):
        """A cache whose states stay fresh ``ttl`` seconds.

        ``recent_s``: how long :meth:`located` knows where an instance
        appeared (the scheduler's ``claim_memory_seconds``: no claim
        lives longer).
        """
        self._ttl = float(ttl)
        self._clock = clock
        self._recent_s = float(recent_s)
        self._lock = threading.Lock()
        self._states = {}
        self._last_heard = None    # when any state was last received
        self._heard_since = None   # first reception after a silence
        # instance uuid -> (host, when): instances that appeared on a host
        # (not in its previous state) lately, oldest first. Not every
        # instance of the region: 2 million uuids cost a worker hundreds
        # of MiB, and only new ones can make a claim wrong.
        self._arrived = collections.OrderedDict()
        self._beats = {}           # host -> (received, generation, healthy)
        self._wanted = {}          # host -> (asked relays when, generation)
        self._pruned_at = clock()
        #: Called as ``on_stored(state)`` after a state is stored (outside
        #: the lock); None: nobody. The scheduler settles its claims.
        self.on_stored = None
        #: Called as ``on_missing(host)`` (outside the lock) when a
        #: heartbeat names a state this cache does not hold (none, or an
        #: older generation); None: nobody. The scheduler asks the agent.
        self.on_missing = None

    @property
    def ttl(self):
        """Seconds a received state stays fresh."""
        return self._ttl

    @staticmethod
    def parse_state(payload):
        """A state payload parsed into the state this cache stores.

        :func:`~nova_cacheaware.scheduler.host_state.from_payload`
        (:class:`~nova_cacheaware.exception.InvalidInput` when malformed).
        """
        return host_state.from_payload(payload)

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
            self._heard(now)
            self._prune_due(now)
            held = self._states.get(state.host)
            if held is not None and held[1].timestamp > state.timestamp:
                return False
            self._states[state.host] = (now, state)
            if state.generation is not None:
                # A newer state (by timestamp) names the generation now,
                # even a lower one: a restarted agent whose clock went back.
                self._beats[state.host] = (now, state.generation,
                                           state.agent_healthy)
            if held is not None:
                self._track_arrivals(held[1], state, now)
        if self.on_stored is not None:
            self.on_stored(state)
        return True

    def heartbeat(self, beat):
        """Record a :class:`~nova_cacheaware.contracts.state_wire.Heartbeat`.

        Returns True unless a newer generation of its host was heard.
        """
        now = self._clock()
        with self._lock:
            self._heard(now)
            self._prune_due(now)
            kept = self._beat(beat.host, now, beat.generation,
                              beat.agent_healthy)
            held = self._states.get(beat.host)
            # A 1.x state held (no generation): the agent, upgraded
            # since, sent a 2.0 state this cache missed.
            missing = kept and (held is None or held[1].generation is None
                                or held[1].generation < beat.generation)
        if missing and self.on_missing is not None:
            self.on_missing(beat.host)
        return kept

    def digest(self, entries):
        """Record a state relay's digest entries (:mod:`.state_digest`).

        Each entry counts as a heartbeat received ``age_ms`` before now:
        the relay heard the host then, and ages measured by one clock
        (the relay's) need no agreement between clocks. Returns ``(kept,
        wanted)``: how many entries were kept (the others name an older
        generation than one already heard), and the hosts whose current
        state this cache lacks (none held, or an older generation), each
        at most once per TTL: the scheduler asks the relays for them.
        """
        now = self._clock()
        kept, wanted = 0, []
        with self._lock:
            self._heard(now)
            self._prune_due(now)
            for e in entries:
                kept += self._beat(e.host, now - e.age_ms / 1000.0,
                                   e.generation, e.agent_healthy)
                if self._lacks(e.host, e.generation, now):
                    self._wanted[e.host] = (now, e.generation)
                    wanted.append(e.host)
        return kept, wanted

    def _lacks(self, host, generation, now):
        # Under the lock. No state of ``generation`` held, and not asked
        # for it yet (or a TTL ago: the want or the answer was lost).
        held = self._states.get(host)
        if (held is not None and held[1].generation is not None
                and held[1].generation >= generation):
            return False
        asked = self._wanted.get(host)
        return (asked is None or asked[1] < generation
                or now - asked[0] >= self._ttl)

    def _heard(self, now):
        if (self._last_heard is None
                or now - self._last_heard > self._ttl / 2.0):
            self._heard_since = now
        self._last_heard = now

    def _beat(self, host, now, generation, healthy):
        held = self._beats.get(host)
        if held is not None:
            if held[1] > generation:
                return False
            if held[1] == generation and held[0] > now:
                # A digest's entry heard before what is held: not newer.
                return True
        self._beats[host] = (now, generation, healthy)
        return True

    def _fresh(self, host, now):
        """``(confirmed, state)`` of a host's fresh state, or None.

        Confirmed: when the state was received, or a heartbeat naming its
        generation was, whichever is later.
        """
        entry = self._states.get(host)
        if entry is None:
            return None
        confirmed = entry[0]
        generation = entry[1].generation
        if generation is not None:
            beat = self._beats.get(host)
            if beat is not None:
                if beat[1] > generation:
                    return None
                if beat[1] == generation:
                    confirmed = max(confirmed, beat[0])
        return None if now - confirmed > self._ttl else (confirmed, entry[1])

    def _track_arrivals(self, previous, state, now):
        # Under the lock.
        arrived = self._arrived
        for uuid in _new(previous.instance_uuids, state.instance_uuids):
            arrived[uuid] = (state.host, now)
            arrived.move_to_end(uuid)
        for uuid in _new(state.instance_uuids, previous.instance_uuids):
            if arrived.get(uuid, (None,))[0] == state.host:
                del arrived[uuid]
        while arrived:
            oldest = next(iter(arrived.values()))
            if now - oldest[1] <= self._recent_s:
                break
            arrived.popitem(last=False)

    def located(self, uuid):
        """The host where instance ``uuid`` appeared lately, or None.

        Lately: within ``recent_s``, in a state that followed one of the
        same host without it (a host's first state tells nothing new). A
        host whose later state lacks it again forgets it.
        """
        entry = self._arrived.get(uuid)
        if entry is None or self._clock() - entry[1] > self._recent_s:
            return None
        return entry[0]

    def get(self, host):
        """The host's fresh state, or None when missing, stale or outdated.

        Fresh: received or confirmed by a heartbeat within the TTL;
        outdated: a heartbeat names a newer generation.
        """
        entry = self._fresh(host, self._clock())
        return None if entry is None else entry[1]

    def admit(self, host):
        """``(fresh, view)`` of a host, in one read of its entries.

        ``fresh``: ``(received, state)`` of its fresh state (what
        :meth:`received` and :meth:`get` say), or None. ``view`` is None
        when the fresh state's agent is heard healthy (its state's flag,
        or a heartbeat's when that came last): the liveness rule admits
        such a host under every policy, so the caller asks nothing more.
        Otherwise it is :meth:`live_view`.
        """
        now = self._clock()
        fresh = self._fresh(host, now)
        if fresh is not None:
            beat = self._beats.get(host)
            healthy = (beat[2] if beat is not None and beat[0] >= fresh[0]
                       else fresh[1].agent_healthy)
            if healthy:
                return fresh, None
        return fresh, self.live_view(host)

    def received(self, host):
        """When the host's fresh state was last known current.

        This cache's clock: when the state was received, or confirmed by a
        heartbeat naming its generation (the agent's state then still
        lacked whatever it lacks). None when :meth:`get` gives no state.
        Claims are judged against this: one that a state current this
        long after it still does not list did not stick.
        """
        entry = self._fresh(host, self._clock())
        return None if entry is None else entry[0]

    def forget(self, host):
        """Drop a host's state (e.g. when its compute service is deleted)."""
        with self._lock:
            self._states.pop(host, None)
            self._beats.pop(host, None)

    def clear(self):
        """Drop every state and what was heard: as new."""
        with self._lock:
            self._states.clear()
            self._beats.clear()
            self._wanted.clear()
            self._arrived.clear()
            self._last_heard = self._heard_since = None

    def prune(self):
        """Forget hosts unheard for :data:`FORGET_TTLS` TTLs; states gone.

        A compute removed from the region (or whose agent stays dead)
        keeps nothing in memory after that. The scheduler loses nothing it
        uses: the state was long stale, and the liveness rule refuses a
        host without state as it refuses one with a stale state
        (:mod:`nova_cacheaware.policy.liveness`). Not after one TTL: after
        a bus outage every host's next state is compared with the one
        held, to locate the instances that appeared meanwhile. A state
        made outdated by a newer heartbeat is kept (its host is heard).
        Runs by itself once per TTL, at an arrival.
        """
        now = self._clock()
        with self._lock:
            return self._prune(now)

    def _prune(self, now):
        self._pruned_at = now
        ttl = self._ttl * FORGET_TTLS
        stale = [host for host, (received, _) in self._states.items()
                 if now - max(received, self._beats.get(host, (0.0,))[0])
                 > ttl]
        for host in stale:
            del self._states[host]
        for host in [h for h, beat in self._beats.items()
                     if now - beat[0] > ttl and h not in self._states]:
            del self._beats[host]
        for host in [h for h, w in self._wanted.items() if now - w[0] > ttl]:
            del self._wanted[host]
        return len(stale)

    def _prune_due(self, now):
        # Called under the lock on every arrival: one walk per TTL.
        if now - self._pruned_at >= self._ttl:
            self._prune(now)

    def __len__(self):
        return len(self._states)

    def freshness(self):
        """``[(status, age)]`` of every host this cache knows (metrics).

        ``status``: ``fresh``, ``outdated`` (a heartbeat names a newer
        generation than the state held) or ``missing_or_stale`` (a state
        older than the TTL, or heartbeats and no state); ``age``: seconds
        since the state was received or confirmed, None without a state.
        For a scrape, not a request: it walks every host.
        """
        now = self._clock()
        with self._lock:
            # Copies under the lock, the walk outside: the listener's
            # updates never wait for a scrape of 10 000 hosts.
            states, beats = dict(self._states), dict(self._beats)
        out = []
        for host, (received, state) in states.items():
            confirmed, beat = received, beats.get(host)
            if state.generation is not None and beat is not None:
                if beat[1] > state.generation:
                    out.append(('outdated', now - received))
                    continue
                if beat[1] == state.generation:
                    confirmed = max(received, beat[0])
            age = now - confirmed
            out.append(('fresh' if age <= self._ttl else 'missing_or_stale',
                        age))
        out.extend(('missing_or_stale', None)
                   for host in beats if host not in states)
        return out

    def live_view(self, host):
        """``host``'s liveness view now (a stale state counts, aged)."""
        now = self._clock()
        entry = self._states.get(host)
        heard = None if entry is None else (entry[0], entry[1].agent_healthy)
        beat = self._beats.get(host)
        if beat is not None and (heard is None or beat[0] >= heard[0]):
            heard = (beat[0], beat[2])
        last, since = self._last_heard, self._heard_since
        return liveness.LiveView(
            ttl=self._ttl,
            age=None if heard is None else now - heard[0],
            healthy=heard is not None and heard[1],
            quiet_for=None if last is None else now - last,
            heard_for=0.0 if since is None else now - since)


def _new(before, after):
    """The uuids of ``after`` not in ``before`` (instance id sets)."""
    new_since = getattr(after, 'new_since', None)
    if new_since is not None and hasattr(before, 'raw'):
        return new_since(before)
    return [u for u in after if u not in before]
