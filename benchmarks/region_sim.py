"""In-process region: real publishers, the wire, a real scheduler cache.

Agents: one real :class:`~nova_cacheaware.agent.notify.
NotificationStatePublisher` per host and payload version, on a recording
transport and a simulated clock. Scheduler: each recorded message is
serialized the way the bus carries it (oslo.messaging's messagingv2
envelope, :func:`wire_body`), then decoded and handed to the real
:class:`~nova_cacheaware.notifications.HostStateEndpoint` over a real
:class:`~nova_cacheaware.scheduler.state_cache.HostStateCache`; only that
receiving part is timed (``time.process_time``).

One shortcut, on the agent side only: :class:`AgentMemo` stands in for
``notify.to_host_cache_state`` while the region runs. The real function
is pure apart from the timestamp, and costs 4-7 ms per 200-VM host (it
solves the pCPU levels); 10 000 hosts x every period would take minutes
per simulated period. The memo runs the real function whenever a host's
report changed and otherwise returns the same state with a new timestamp;
it keeps a slimmer copy (no per-VM records, no affinity document) for
2.0-only hosts, whose compact payload is checked to be identical. The
publisher's own work (compact form, cadence, message) runs for real at
every pass; the agent's full pass cost is timed apart, without the memo
(:func:`agent_pass_ms`).
"""

import dataclasses
import datetime
import json
import random
import time
from unittest import mock
import uuid as uuid_mod

from nova_cacheaware.agent import notify
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import notifications
from nova_cacheaware.pcpu_est import headroom as pcpu_headroom
from nova_cacheaware.policy import state_cadence
from nova_cacheaware.scheduler import state_cache

TOPIC = 'cacheaware_host_state'
#: The defaults of ``[agent]`` and ``[cacheaware_scheduler]``.
PERIOD_S = 10.0
HEARTBEAT_S = 60.0
RESYNC_S = 300.0
TTL_S = 180.0
_REAL_TO_STATE = notify.to_host_cache_state


def wire_body(message):
    """The AMQP body oslo.messaging sends for a messagingv2 ``message``.

    The driver adds a ``_unique_id`` and wraps the JSON of the message in
    the 2.0 envelope, which kombu serializes as JSON again.
    """
    inner = dict(message, _unique_id=uuid_mod.uuid4().hex)
    return json.dumps({'oslo.version': '2.0',
                       'oslo.message': json.dumps(inner)})


class SimClock:
    """Simulated monotonic seconds, shared by publishers and the cache."""

    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


class RecordingTransport:
    """A notification transport that keeps the messages it is handed."""

    def __init__(self):
        self.messages = []

    def _send_notification(self, target, ctxt, message, version, retry=None):
        """Keep ``message`` (what the driver would put on the bus)."""
        self.messages.append(message)

    def take(self):
        """The messages sent since the last call."""
        out, self.messages = self.messages, []
        return out

    def cleanup(self):
        """Nothing to release."""


class AgentMemo:
    """``to_host_cache_state`` for unchanged reports (module docstring)."""

    def __init__(self, full_hosts=()):
        self.full_hosts = set(full_hosts)
        self.memo = {}
        self.current = None
        self.built = 0

    def __call__(self, report, host, now=None, sizing_view=None):
        """The state of ``report``: built anew only when it changed."""
        stamp = now or datetime.datetime.now(datetime.timezone.utc)
        sim = self.current
        held = self.memo.get(host)
        if held is not None and held[0] == sim.changes:
            return dataclasses.replace(held[1], timestamp=stamp)
        built = _REAL_TO_STATE(sim.report(), host, now, sizing_view)
        self.built += 1
        keep = built if host in self.full_hosts else _slim(built)
        self.memo[host] = (sim.changes, keep)
        sim.drop_report()
        return built

    def installed(self):
        """Context manager: the memo stands in for the real function."""
        return mock.patch.object(notify, 'to_host_cache_state', self)

    def publish(self, publisher, sim):
        """``publisher.publish()`` of ``sim``'s report (a pass)."""
        self.current = sim
        # The report is built only when the memo needs it (a 200-VM
        # report is ~300 KB: 10 000 of them do not fit in memory).
        return publisher.publish(_LAZY)


class _LazyReport:
    """Placeholder: :class:`AgentMemo` builds the real report itself."""


_LAZY = _LazyReport()


def _slim(state):
    """``state`` without per-VM records; its 2.0 payload is unchanged."""
    slim = dataclasses.replace(state, vms=(), vcpu_affinity=None,
                               listed=state.instance_uuids,
                               storming=state.storming_vms)
    full, lean = state_wire.to_compact(state), state_wire.to_compact(slim)
    if full != lean:
        raise AssertionError('the slim state changes the 2.0 payload of %s'
                             % state.host)
    return slim


@dataclasses.dataclass
class Tally:
    """What one delivery handed the scheduler, and its CPU."""

    states: int = 0
    heartbeats: int = 0
    state_bytes: int = 0
    heartbeat_bytes: int = 0
    state_cpu_s: float = 0.0
    heartbeat_cpu_s: float = 0.0
    dropped: int = 0

    @property
    def messages(self):
        """States and heartbeats."""
        return self.states + self.heartbeats

    @property
    def cpu_s(self):
        """Receiving CPU seconds of all messages."""
        return self.state_cpu_s + self.heartbeat_cpu_s

    @property
    def bytes(self):
        """Bytes of all message bodies."""
        return self.state_bytes + self.heartbeat_bytes

    def add(self, other):
        """Add ``other``'s figures to this one's."""
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name)
                    + getattr(other, field.name))


class Region:
    """Hosts' publishers of one payload version and one scheduler worker."""

    def __init__(self, hosts, version, memo, period_s=PERIOD_S,
                 cadence=None, clock=None):
        self.hosts = list(hosts)
        self.version = version
        self.memo = memo
        self.period_s = period_s
        self.cadence = cadence or state_cadence.Cadence(
            heartbeat_s=HEARTBEAT_S, resync_s=RESYNC_S)
        self.clock = clock or SimClock()
        self.transport = RecordingTransport()
        self.cache = state_cache.HostStateCache(TTL_S, clock=self.clock)
        self.endpoint = notifications.HostStateEndpoint(self.cache)
        self.publishers = {}
        #: The newest state body per host (for the memory benchmark).
        self.last_body = {}

    def restart(self, sims):
        """New publishers (agents restarted) for ``sims``."""
        for sim in sims:
            # Each host's resync jitter drawn from its own seed: a run
            # repeats (the agents' unseeded draws made the lost-update
            # run's outcome vary from one run to the next).
            self.publishers[sim.name] = notify.NotificationStatePublisher(
                self.transport, sim.name, TOPIC, version=self.version,
                cadence=self.cadence, clock=self.clock,
                draw=random.Random(sim.name).random)

    def agent_pass(self):
        """Every started agent's pass; returns its CPU seconds."""
        start = time.process_time()
        for sim in self.hosts:
            publisher = self.publishers.get(sim.name)
            if publisher is not None:
                self.memo.publish(publisher, sim)
        return time.process_time() - start

    def deliver(self, drop=None, keep_bodies=False):
        """Hand the scheduler what the agents sent; a :class:`Tally`.

        ``drop(message)`` -> True loses that message on the bus.
        """
        tally = Tally()
        groups = {True: [], False: []}
        for message in self.transport.take():
            if drop is not None and drop(message):
                tally.dropped += 1
                continue
            beat = message['event_type'] == state_wire.HEARTBEAT_EVENT
            body = wire_body(message)
            groups[beat].append(body)
            if keep_bodies and not beat:
                self.last_body[message['payload']['host']] = body
        tally.states, tally.heartbeats = len(groups[False]), len(groups[True])
        tally.state_bytes = sum(map(len, groups[False]))
        tally.heartbeat_bytes = sum(map(len, groups[True]))
        tally.state_cpu_s = receive(self.endpoint, groups[False])
        tally.heartbeat_cpu_s = receive(self.endpoint, groups[True])
        return tally

    def step(self, drop=None, keep_bodies=False):
        """One period: every agent's pass, then delivery.

        Returns ``(tally, agent CPU seconds)``; the caller moves the
        (shared) clock on.
        """
        agent_s = self.agent_pass()
        return self.deliver(drop, keep_bodies), agent_s


def receive(endpoint, bodies):
    """Decode and dispatch ``bodies``; the CPU seconds it took."""
    start = time.process_time()
    for body in bodies:
        envelope = json.loads(body)
        message = json.loads(envelope['oslo.message'])
        endpoint.info({}, message['publisher_id'], message['event_type'],
                      message['payload'],
                      {'message_id': message['message_id'],
                       'timestamp': message['timestamp']})
    return time.process_time() - start


def agent_pass_ms(sims):
    """The agent's publish() cost per pass, without the memo (ms).

    Per host: 2.0 with a changed report (a state is sent), 2.0 unchanged
    (nothing is due), 1.5 (the whole state, every pass). Every pass builds
    the state from the report, as the real agent does; ``pcpu_levels``:
    the part of it that solves the 2.0 pCPU levels.
    """
    out = {'2.0_changed': [], '2.0_unchanged': [], '1.5': [],
           'pcpu_levels': []}
    clock = SimClock()
    for sim in sims:
        report = sim.report()
        affinity = report.sizing().affinity
        start = time.process_time()
        pcpu_headroom.share_levels(affinity)
        out['pcpu_levels'].append((time.process_time() - start) * 1e3)
        for version in state_wire.WRITABLE:
            publisher = notify.NotificationStatePublisher(
                RecordingTransport(), sim.name, TOPIC, version=version,
                clock=clock)
            passes = ('2.0_changed', '2.0_unchanged') if version == '2.0' \
                else ('1.5',)
            for key in passes:
                start = time.process_time()
                publisher.publish(report)
                out[key].append((time.process_time() - start) * 1e3)
                clock.now += PERIOD_S
        sim.drop_report()
    return out
