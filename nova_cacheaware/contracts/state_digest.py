"""``cacheaware.host.digest``: a state relay's heartbeats of many hosts.

A state relay (``nova-cacheaware-state-relay``,
:mod:`nova_cacheaware.policy.state_relay`) reads the agents' states and
heartbeats on a cell's bus and sends the schedulers, on the API-level
bus, every ``[state_relay] digest_interval_s`` one digest: the states worth
forwarding that it heard meanwhile (changes, wanted hosts), in full and as
the agents sent them, and the hosts it heard without one (heartbeats,
unchanged resyncs). One delivery per relay per interval instead of one
per state or heartbeat: a scheduler worker's oslo.messaging listener
costs 1 to 6 ms of CPU per delivery, so at 10 000 hosts the
count of deliveries is what sets its cost
(doc/source/evaluation/region-state.rst).

Payload (version 1.0)::

    {"version": "1.0", "relay": "relay-a",
     "states": [<cacheaware.host.state payload>, ...],
     "entries": [[host, generation, age_ms, agent_healthy], ...]}

``states`` may be absent (none). The reader checks each state as it
checks a state sent on its own and drops (and counts) only a bad one: a
state of a payload major the reader does not know must not cost the
heartbeats of a whole cell. It reads the states before the entries.

``age_ms``: how long before the digest was sent the relay last heard the
host. The scheduler counts the host as heard ``age_ms`` before it
received the digest: an age, not a time of day, so that no clock of the
relay, the agents or the schedulers has to agree with another (the
scheduler already measures freshness from reception, never from a sender's
clock). ``generation``: the newest the relay heard for the host; a
scheduler holding an older state knows it missed one (as from a
heartbeat). Entries are lists, not objects, because a digest of 500 hosts
is read by every scheduler worker every second: names would double it.

``cacheaware.host.want`` goes the other way, from a scheduler worker to
every relay, on :func:`want_topic` of the API-level bus: the hosts whose
current state the worker lacks (a digest names a generation it does not
hold, or it holds nothing: it just started, or a state was lost). Each
relay forwards those hosts' next state in full (their next resync at the
latest), so no relay needs to resend unchanged states on a timer::

    {"version": "1.0", "scheduler": "<queue>", "hosts": [host, ...]}

Readers ignore keys they do not know (minors may add them). Pure module.
"""

import dataclasses

from nova_cacheaware import exception

DIGEST_EVENT = 'cacheaware.host.digest'
WANT_EVENT = 'cacheaware.host.want'
VERSION = '1.0'
MAJOR = 1

#: The most entries a digest may carry (a reader refuses more); the
#: relay's ``max_digest_entries`` is bounded by it.
MAX_ENTRIES = 5000
#: The most states a digest may carry (a reader refuses more).
MAX_STATES = 1000
#: Nova's host names are at most 255 characters (its column's size).
MAX_HOST = 255
#: Generations are milliseconds since the epoch plus changes: far below.
MAX_GENERATION = 2 ** 63 - 1
#: An age above an hour is no heartbeat of this digest's interval.
MAX_AGE_MS = 3600 * 1000
#: A relay's name, for the logs.
MAX_RELAY = 255


@dataclasses.dataclass(frozen=True)
class Entry:
    """``host`` was heard ``age_ms`` before the digest, at ``generation``."""

    host: str
    generation: int
    age_ms: int
    agent_healthy: bool


@dataclasses.dataclass(frozen=True)
class Digest:
    """A relay's :class:`Entry` list and forwarded state payloads."""

    relay: str
    entries: tuple
    version: str = VERSION
    states: tuple = ()


def digest_payload(digest):
    """The JSON-ready payload of a :class:`Digest`."""
    payload = {'version': digest.version, 'relay': digest.relay,
               'entries': [[e.host, e.generation, e.age_ms,
                            e.agent_healthy] for e in digest.entries]}
    if digest.states:
        payload['states'] = list(digest.states)
    return payload


def _check_version(payload, kind):
    """``payload``'s version; refused if no object or of another major."""
    if not isinstance(payload, dict):
        raise _invalid('payload must be an object')
    version = payload.get('version')
    if not isinstance(version, str) or version.split('.')[0] != str(MAJOR):
        raise _invalid('%s version %r not supported (major %d expected)'
                       % (kind, version, MAJOR))
    return version


def _invalid(message):
    return exception.InvalidInput(reason=message)


def _is_int(value, top):
    return (isinstance(value, int) and not isinstance(value, bool)
            and 0 <= value <= top)


def is_host(value):
    """True for a host name a message may carry (1-255 characters)."""
    return isinstance(value, str) and 0 < len(value) <= MAX_HOST


def is_generation(value):
    """True for a generation a message may carry (an int >= 0)."""
    return _is_int(value, MAX_GENERATION)


def parse_digest(payload):
    """A :class:`Digest` of a ``cacheaware.host.digest`` payload.

    :class:`~nova_cacheaware.exception.InvalidInput` naming the first
    problem: another major, more than :data:`MAX_ENTRIES` entries, or an
    entry that is not ``[host, generation, age_ms, agent_healthy]`` within
    bounds, or ``states`` that is not a list of at most
    :data:`MAX_STATES` objects. The whole digest is refused then: a relay
    writes only valid entries, so one bad entry means a bad sender. The
    states themselves are the reader's to check, one by one.
    """
    version = _check_version(payload, 'digest')
    relay = payload.get('relay')
    if not isinstance(relay, str) or not 0 < len(relay) <= MAX_RELAY:
        raise _invalid('relay must be a string of 1-%d characters'
                       % MAX_RELAY)
    raw = payload.get('entries')
    if not isinstance(raw, list):
        raise _invalid('entries must be a list')
    if len(raw) > MAX_ENTRIES:
        raise _invalid('%d entries, more than %d' % (len(raw), MAX_ENTRIES))
    states = payload.get('states', [])
    if not (isinstance(states, list) and len(states) <= MAX_STATES
            and all(isinstance(s, dict) for s in states)):
        raise _invalid('states must be a list of at most %d objects'
                       % MAX_STATES)
    return Digest(relay=relay, version=version, states=tuple(states),
                  entries=tuple(_entry(i, e) for i, e in enumerate(raw)))


def _entry(index, raw):
    if not (isinstance(raw, list) and len(raw) == 4 and is_host(raw[0])
            and is_generation(raw[1]) and _is_int(raw[2], MAX_AGE_MS)
            and isinstance(raw[3], bool)):
        raise _invalid('entry %d must be [host (1-%d characters), '
                       'generation >= 0, age_ms 0-%d, agent_healthy bool]'
                       % (index, MAX_HOST, MAX_AGE_MS))
    return Entry(*raw)


def want_topic(topic):
    """The topic of wants beside the schedulers' state ``topic``.

    Its own topic, so that relays do not receive the states and digests
    they send, and schedulers not the wants.
    """
    return '%s_want' % topic


def want_payload(scheduler, hosts):
    """The JSON-ready payload of a want for ``hosts``."""
    return {'version': VERSION, 'scheduler': scheduler,
            'hosts': list(hosts)}


def parse_want(payload):
    """``(scheduler, hosts)`` of a ``cacheaware.host.want`` payload.

    :class:`~nova_cacheaware.exception.InvalidInput` on another major,
    more than :data:`MAX_ENTRIES` hosts or a host that is not 1-255
    characters.
    """
    _check_version(payload, 'want')
    scheduler = payload.get('scheduler')
    hosts = payload.get('hosts')
    if not isinstance(scheduler, str) or not 0 < len(scheduler) <= MAX_RELAY:
        raise _invalid('scheduler must be a string of 1-%d characters'
                       % MAX_RELAY)
    if not isinstance(hosts, list) or len(hosts) > MAX_ENTRIES:
        raise _invalid('hosts must be a list of at most %d' % MAX_ENTRIES)
    if not all(is_host(h) for h in hosts):
        raise _invalid('hosts must be strings of 1-%d characters'
                       % MAX_HOST)
    return scheduler, tuple(hosts)
