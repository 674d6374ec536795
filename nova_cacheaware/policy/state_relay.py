"""What a state relay forwards, folds into a digest, or drops.

Pure (no clock, no I/O, no locks): the relay service
(:mod:`nova_cacheaware.relay.service`) owns one :class:`RelayTable`,
calls :meth:`RelayTable.state` and :meth:`RelayTable.heartbeat` for what
the agents send on a cell's bus and publishes :meth:`RelayTable.digest` on
the API-level bus when :func:`next_digest` says: the states to forward
since the last digest, in full, and the hosts heard without one.

The rule (doc/source/admin/live-state.rst, "State relays"), per host:

1. A state is forwarded, as it came, in the next digest (a newer state of
   the same host that arrives first replaces it; a digest goes at most
   ``max_state_delay_s`` after a state to forward arrived, and at least
   every ``digest_interval_s``), when its generation is newer
   than any this relay heard of the host (a change), when the relay has
   forwarded no state of the host since it started or since a scheduler
   *wanted* the host (:meth:`RelayTable.want`), when its content differs
   from the state of the same generation forwarded before, and always for
   a 1.x state (no generation: old agents send their whole state every
   period).
2. Anything else heard - heartbeats, unchanged resyncs, the resync of a
   generation another relay of the cell forwarded - only marks the host
   heard: the next digest lists it once with the newest generation heard,
   its age and its health.
3. Older than what was heard (a reordered message): dropped, as the
   schedulers would drop it.

Repair is pulled, not pushed: a scheduler worker that lacks a host's
current state (a digest names a generation it does not hold: the state
was lost before or after the relay, or the worker just started) wants the
host (``cacheaware.host.want``), every relay marks it, and its next state
- its next resync at the latest, ``state_resync_s`` - is forwarded. So a
relay never resends an unchanged state on a timer, and a change that one
relay forwarded is not forwarded again by the others when they hear its
heartbeats first. ``full_state_every`` N > 0 adds a push: an unchanged
resync is also forwarded in one resync window out of N (windows of
``resync_window_s`` of the agent's timestamps; a host's turn comes from
a hash of its name, so hosts take turns and relays agree without talking).

Only a generation and a content fingerprint are kept per host, and a
state only until the next digest: the schedulers hold the states, and all
the relay must know is whether it already sent one. At 10 000 hosts that
is a few MiB.

Why states wait for the digest instead of going at once: a scheduler
worker's oslo.messaging listener costs 1 to 6 ms of CPU per
delivery whatever it carries (its poll backs off from 1 ms after every
message), so deliveries per second, not bytes, set its cost. A relay that
forwards many changes sends a digest every ``max_state_delay_s`` instead
of a message per change; one that forwards few (a small cell) sends about
one per ``digest_interval_s`` (doc/source/evaluation/region-state.rst,
"What a delivery costs").
"""

import dataclasses
import hashlib
import json
import math

from nova_cacheaware.contracts import state_digest
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import exception

FORWARD = 'forward'
FOLD = 'fold'
DROP = 'drop'


@dataclasses.dataclass(frozen=True)
class Rules:
    """The relay's settings (``[state_relay]``)."""

    #: The agents' ``state_resync_s``: the width of a resync window.
    resync_window_s: float = 300.0
    #: Forward an unchanged resync in one window of this many (1: all;
    #: 0: never, wants alone repair).
    full_state_every: int = 0
    #: The most entries in one digest message.
    max_entries: int = 1000
    #: The most forwarded states in one digest message.
    max_states: int = 100
    #: Forwarded states' JSON bytes in one digest message (a larger
    #: state goes alone).
    max_state_bytes: int = 1 << 20
    #: The most hosts the table holds (agents are not trusted).
    max_hosts: int = 100000
    #: Hosts unheard this long leave the table.
    forget_s: float = 1800.0


@dataclasses.dataclass(frozen=True)
class Inbound:
    """What the relay reads of one message (the adapter parses it).

    ``generation`` None: a 1.x state. ``stamp``: the agent's timestamp
    of a state, seconds since the epoch (None for a heartbeat).
    ``fingerprint``: the state's content without its timestamp (None for
    a heartbeat). ``size``: the state's JSON bytes (0 for a heartbeat).
    """

    host: str
    generation: object
    agent_healthy: bool
    stamp: object = None
    fingerprint: object = None
    size: int = 0


@dataclasses.dataclass
class _Host:
    generation: int
    healthy: bool
    heard_at: float
    forwarded: object = None   # (generation, fingerprint) last forwarded


def _content(payload):
    """A state payload's content as canonical JSON (timestamp aside)."""
    doc = {k: v for k, v in payload.items() if k != 'timestamp'}
    return json.dumps(doc, sort_keys=True, separators=(',', ':'),
                      default=str).encode()


def fingerprint(payload):
    """A short digest of a state payload's content (timestamp aside)."""
    return hashlib.blake2b(_content(payload), digest_size=12).digest()


def read_state(payload, max_bytes):
    """The :class:`Inbound` of a ``cacheaware.host.state`` payload.

    The whole payload is checked as a scheduler would
    (:func:`~.state_wire.parse_state`), so a relay never forwards what
    every scheduler would drop, and is refused above ``max_bytes`` of
    JSON. :class:`~nova_cacheaware.exception.InvalidInput` otherwise.
    """
    if not isinstance(payload, dict):
        raise exception.InvalidInput(reason='payload must be an object')
    content = _content(payload)
    if len(content) > max_bytes:
        raise exception.InvalidInput(reason='state of %d bytes, more than '
                                            '%d' % (len(content), max_bytes))
    state = state_wire.parse_state(payload)
    if not state_digest.is_host(state.host):
        raise exception.InvalidInput(
            reason='host must be 1-%d characters' % state_digest.MAX_HOST)
    if state.generation is not None and not state_digest.is_generation(
            state.generation):
        raise exception.InvalidInput(reason='generation out of range')
    return Inbound(host=state.host, generation=state.generation,
                   agent_healthy=state.agent_healthy,
                   stamp=state.timestamp.timestamp(),
                   fingerprint=hashlib.blake2b(content,
                                               digest_size=12).digest(),
                   size=len(content))


def read_heartbeat(payload):
    """The :class:`Inbound` of a heartbeat payload, or InvalidInput."""
    beat = state_wire.parse_heartbeat(payload)
    if not (state_digest.is_host(beat.host)
            and state_digest.is_generation(beat.generation)):
        raise exception.InvalidInput(
            reason='host (1-%d characters) or generation out of range'
                   % state_digest.MAX_HOST)
    return Inbound(host=beat.host, generation=beat.generation,
                   agent_healthy=beat.agent_healthy)


def turn(host, every):
    """Which of ``every`` resync windows is ``host``'s (stable hash).

    A cryptographic hash, not crc32: numbered host names (``cmp1`` ...
    ``cmp300``) fall unevenly into crc32's residues.
    """
    return int.from_bytes(hashlib.blake2b(host.encode(),
                                          digest_size=8).digest(),
                          'big') % every


class RelayTable:
    """Per-host generations and what was forwarded; see the module doc."""

    def __init__(self, rules, name):
        self.rules = rules
        self.name = name
        self._hosts = {}
        self._pending = {}   # host -> None, in the order first heard
        self._outbox = {}    # host -> (payload, bytes) to forward
        #: When the oldest state in the outbox arrived (None: none waits).
        self.waiting_since = None
        #: ``{(kind, outcome): messages}``: the relay's metrics.
        self.counts = {}

    def __len__(self):
        return len(self._hosts)

    def count(self, kind, outcome):
        """Count one message of ``kind`` with ``outcome``."""
        key = (kind, outcome)
        self.counts[key] = self.counts.get(key, 0) + 1

    def _admit(self, kind, msg, now):
        """The host's entry for ``msg``, or None (counted) to drop it."""
        held = self._hosts.get(msg.host)
        if held is None:
            held = self._new(msg, now)
            if held is None:
                self.count(kind, 'table_full')
        elif msg.generation < held.generation:
            self.count(kind, 'out_of_order')
            return None
        return held

    def state(self, msg, now, payload=None):
        """:data:`FORWARD`, :data:`FOLD` or :data:`DROP` a state ``msg``.

        A forwarded state's ``payload`` goes out in the next
        :meth:`digest`.
        """
        if msg.generation is None:
            self.count('state', 'forwarded_1x')
            self._forward(msg, payload, now)
            return FORWARD
        held = self._admit('state', msg, now)
        if held is None:
            return DROP
        newer = msg.generation > held.generation
        self._heard(held, msg, now)
        content = (msg.generation, msg.fingerprint)
        last = held.forwarded
        if (newer or last is None or self._turn(msg)
                or (last[0] == msg.generation and last != content)):
            held.forwarded = content
            # The state itself tells the schedulers the host was heard.
            self._pending.pop(msg.host, None)
            self._forward(msg, payload, now)
            self.count('state', 'forwarded')
            return FORWARD
        self._pending[msg.host] = None
        self.count('state', 'folded')
        return FOLD

    def _forward(self, msg, payload, now):
        if payload is not None:
            if not self._outbox:
                self.waiting_since = now
            # Replaces a state of the host still waiting: only the newest
            # matters to the schedulers.
            self._outbox.pop(msg.host, None)
            self._outbox[msg.host] = (payload, msg.size)

    def heartbeat(self, msg, now):
        """:data:`FOLD` or :data:`DROP` a heartbeat ``msg``."""
        held = self._admit('heartbeat', msg, now)
        if held is None:
            return DROP
        self._heard(held, msg, now)
        self._pending[msg.host] = None
        self.count('heartbeat', 'folded')
        return FOLD

    def want(self, hosts, now):
        """Schedulers lack these hosts' states: forward their next ones.

        Hosts this relay does not know (another cell's) are ignored.
        Returns the hosts marked.
        """
        marked = []
        for host in hosts:
            held = self._hosts.get(host)
            if held is not None:
                held.forwarded = None
                marked.append(host)
        self.count('want', 'received')
        key = ('want', 'hosts_marked')
        self.counts[key] = self.counts.get(key, 0) + len(marked)
        return marked

    def not_forwarded(self, host, now):
        """A forwarded state did not get out: send its host's next one.

        The host goes into the next digest (the schedulers learn its
        generation and keep it alive), and its next state is forwarded
        whatever it holds.
        """
        held = self._hosts.get(host)
        if held is not None:
            held.forwarded = None
            self._pending[host] = None

    def digest(self, now):
        """The :class:`~.state_digest.Digest` list due now (may be empty).

        The states to forward, in chunks of ``max_states`` and
        ``max_state_bytes``, and every host heard since the last digest
        and not forwarded since, once, in chunks of ``max_entries``; then
        the table forgets hosts unheard for ``forget_s``.
        """
        states = _chunks(list(self._outbox.values()),
                         self.rules.max_states, self.rules.max_state_bytes)
        self._outbox = {}
        self.waiting_since = None
        entries = []
        for host in self._pending:
            held = self._hosts.get(host)
            if held is None:
                continue
            age = max(0, int(round((now - held.heard_at) * 1000)))
            entries.append(state_digest.Entry(
                host=host, generation=held.generation,
                age_ms=min(age, state_digest.MAX_AGE_MS),
                agent_healthy=held.healthy))
        self._pending = {}
        self._forget(now)
        size = max(1, min(self.rules.max_entries, state_digest.MAX_ENTRIES))
        listed = [tuple(entries[i:i + size])
                  for i in range(0, len(entries), size)]
        count = max(len(listed), len(states))
        return [state_digest.Digest(
            relay=self.name,
            entries=listed[i] if i < len(listed) else (),
            states=states[i] if i < len(states) else ())
            for i in range(count)]

    def _new(self, msg, now):
        # Full: new names wait until digest() forgets unheard hosts (a
        # walk per digest, not per message of a flood of made-up names).
        if len(self._hosts) >= self.rules.max_hosts:
            return None
        held = _Host(generation=msg.generation, healthy=msg.agent_healthy,
                     heard_at=now)
        self._hosts[msg.host] = held
        return held

    def _heard(self, held, msg, now):
        held.generation = max(held.generation, msg.generation)
        held.healthy = msg.agent_healthy
        held.heard_at = now

    def _turn(self, msg):
        every = self.rules.full_state_every
        if every <= 0:
            return False
        if every == 1:
            return True
        if msg.stamp is None or not math.isfinite(msg.stamp):
            return False
        window = int(msg.stamp // self.rules.resync_window_s)
        return window % every == turn(msg.host, every)

    def _forget(self, now):
        gone = [h for h, held in self._hosts.items()
                if now - held.heard_at > self.rules.forget_s]
        for host in gone:
            del self._hosts[host]
            self._pending.pop(host, None)


def next_digest(last_at, waiting_since, interval_s, max_state_delay_s):
    """When the next digest is due (monotonic seconds).

    ``interval_s`` after the last one, or sooner: ``max_state_delay_s``
    after the oldest state waiting to be forwarded arrived
    (``waiting_since``; None when none waits).
    """
    due = last_at + interval_s
    if waiting_since is not None:
        due = min(due, waiting_since + max_state_delay_s)
    return due


def _chunks(sized, most, max_bytes):
    """``[(payload, bytes), ...]`` as tuples of payloads within bounds."""
    most = max(1, min(most, state_digest.MAX_STATES))
    out, chunk, total = [], [], 0
    for payload, size in sized:
        if chunk and (len(chunk) == most or total + size > max_bytes):
            out.append(tuple(chunk))
            chunk, total = [], 0
        chunk.append(payload)
        total += size
    if chunk:
        out.append(tuple(chunk))
    return out
