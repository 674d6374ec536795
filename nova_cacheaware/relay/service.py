"""The state relay's I/O: one listener on a cell's bus, sends to the API's.

A thin adapter around :class:`~nova_cacheaware.policy.state_relay.
RelayTable`, which decides everything: :class:`StateRelay` parses what
the listener hands it and gives it to the table, and a thread of its own
sends the table's digest (the states to forward and the hosts heard)
when :func:`~nova_cacheaware.policy.state_relay.next_digest` says.

The relays of a cell listen on one shared queue (the same ``pool``), so
RabbitMQ hands each agent message to one of them: two or more relays per
cell share the work and survive each other's loss. Each relay keeps its
own table; a state that one relay forwarded may be forwarded once more by
another (it cannot know), never less often than the rule says.
"""

import json
import os
import socket
import threading
import time
import uuid as uuid_mod

from oslo_log import log as logging
import oslo_messaging
from oslo_utils import timeutils

from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_digest
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import exception
from nova_cacheaware.policy import state_relay

LOG = logging.getLogger(__name__)

#: The messagingv2 envelope version (what the agents send).
ENVELOPE_VERSION = 2.0
PRIORITY = 'info'
#: Send attempts beyond the first before a message is given up: the
#: table then forwards the host's next state (a lost forward is repaired
#: by the agent's next resync, not by retrying for ever while the cell's
#: queue fills up).
SEND_RETRY = 1
#: Invalid messages logged at WARNING per stats interval; more at DEBUG
#: (agents are not trusted: a broken one must not flood the log).
WARNINGS_PER_INTERVAL = 10
#: A want of more hosts than this asks every agent of the cell at once
#: (one fanout cast) instead of each host: a scheduler worker that starts
#: wants every host.
FANOUT_AT = 50
#: Least seconds between two fanout requests of one relay (the agents
#: coalesce requests anyway; this keeps the cell's bus quiet).
FANOUT_EVERY_S = 60.0


class RelayEndpoint:
    """Notification endpoint on the input bus: hands messages over."""

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^(%s)$' % '|'.join(
            e.replace('.', r'\.')
            for e in (host_state.EVENT_TYPE, state_wire.HEARTBEAT_EVENT)))

    def __init__(self, relay):
        self._relay = relay

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """One agent message: :meth:`StateRelay.received`."""
        self._relay.received(publisher_id, event_type, payload)
        return oslo_messaging.NotificationResult.HANDLED


class WantEndpoint:
    """Notification endpoint on the output bus: schedulers' wants."""

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^%s$' % state_digest.WANT_EVENT.replace('.', r'\.'))

    def __init__(self, relay):
        self._relay = relay

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """One want: :meth:`StateRelay.wanted`."""
        self._relay.wanted(publisher_id, payload)
        return oslo_messaging.NotificationResult.HANDLED


def relay_name(hostname=None, pid=None):
    """``<hostname>-<pid>``: names this relay in its digests and logs."""
    return '%s-%d' % (hostname or socket.gethostname(),
                      os.getpid() if pid is None else pid)


class StateRelay:
    """Reads agents' messages on ``source``, sends on ``sink``.

    :param source: the input (cell) notification transport.
    :param sink: the output (API-level) notification transport.
    :param table: a :class:`~.state_relay.RelayTable`.
    :param requester: a :class:`~nova_cacheaware.scheduler.state_requests.
        StateRequester` on the cell's bus: wanted hosts' agents are asked
        for their state (``send_state``) instead of the relay waiting for
        their resync; None: never ask.
    :param clock: monotonic seconds (tests).
    """

    def __init__(self, source, sink, table, input_topic, output_topic,
                 pool, digest_interval_s=1.0, max_state_bytes=4 << 20,
                 stats_interval_s=300, clock=time.monotonic,
                 requester=None, max_state_delay_s=0.5):
        self.source = source
        self.sink = sink
        self.table = table
        self.input_topic = input_topic
        self.output_topic = output_topic
        self.pool = pool
        self.digest_interval_s = digest_interval_s
        self.max_state_delay_s = max_state_delay_s
        self.max_state_bytes = max_state_bytes
        self.stats_interval_s = stats_interval_s
        self.publisher_id = 'nova-cacheaware-state-relay.%s' % table.name
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # Set when a state to forward arrives: the digest may be due
        # sooner than the thread planned.
        self._wake = threading.Event()
        self._thread = None
        self.listener = None
        self.want_listener = None
        self._warned = 0
        self.requester = requester
        #: The requester's transport, released at :meth:`stop`.
        self.rpc_transport = None
        self._fanout_at = None
        #: Messages and body bytes sent, per event type.
        self.sent = {}

    def received(self, publisher_id, event_type, payload):
        """Handle one agent message; never raises (the bus is untrusted)."""
        heartbeat = event_type == state_wire.HEARTBEAT_EVENT
        kind = 'heartbeat' if heartbeat else 'state'
        try:
            msg = (state_relay.read_heartbeat(payload) if heartbeat
                   else state_relay.read_state(payload,
                                               self.max_state_bytes))
        except exception.InvalidInput as e:
            self._invalid(kind, publisher_id, e)
            return
        except Exception as e:
            # A parser bug must not stop the relay: count, log, go on.
            LOG.exception('Cannot read %s from %s', event_type, publisher_id)
            self._invalid(kind, publisher_id, e)
            return
        now = self._clock()
        with self._lock:
            if heartbeat:
                self.table.heartbeat(msg, now)
                return
            waited = self.table.waiting_since is not None
            self.table.state(msg, now, payload)
            first = not waited and self.table.waiting_since is not None
        if first:
            self._wake.set()

    def wanted(self, publisher_id, payload):
        """A scheduler's want: forward those hosts' next states."""
        try:
            _scheduler, hosts = state_digest.parse_want(payload)
        except exception.InvalidInput as e:
            self._invalid('want', publisher_id, e)
            return
        now = self._clock()
        with self._lock:
            marked = self.table.want(hosts, now)
            fanout = len(marked) > FANOUT_AT and (
                self._fanout_at is None
                or now - self._fanout_at >= FANOUT_EVERY_S)
            if fanout:
                self._fanout_at = now
        if self.requester is None or not marked:
            return
        # The agents are on this relay's cell bus, where the schedulers'
        # own requests (request_host_state) cannot reach them: ask them
        # here, so a wanted state comes at the agent's next pass (plus its
        # spread) rather than at its resync.
        if fanout:
            self.requester.everyone()
        elif len(marked) <= FANOUT_AT:
            for host in marked:
                self.requester.host(host)

    def _invalid(self, kind, publisher_id, error):
        with self._lock:
            self.table.count(kind, 'invalid')
            self._warned += 1
            loud = self._warned <= WARNINGS_PER_INTERVAL
        (LOG.warning if loud else LOG.debug)(
            'Dropping %s from %s: %s', kind, publisher_id, error)

    def flush(self):
        """Send the digest due now; the number of digest messages sent.

        The states of a message that could not be sent are forwarded
        again at their hosts' next state.
        """
        with self._lock:
            digests = self.table.digest(self._clock())
        for digest in digests:
            if self._send(state_digest.DIGEST_EVENT,
                          state_digest.digest_payload(digest)):
                continue
            with self._lock:
                for state in digest.states:
                    self.table.not_forwarded(state['host'], self._clock())
        return len(digests)

    def _send(self, event_type, payload):
        # What an oslo.messaging Notifier with the messagingv2 driver
        # sends, through the transport so that a failure is known (the
        # Notifier logs and swallows it). True when sent.
        message = {'message_id': str(uuid_mod.uuid4()),
                   'publisher_id': self.publisher_id,
                   'event_type': event_type,
                   'priority': PRIORITY.upper(),
                   'payload': payload,
                   'timestamp': str(timeutils.utcnow())}
        target = oslo_messaging.Target(
            topic='%s.%s' % (self.output_topic, PRIORITY))
        try:
            self.sink._send_notification(target, {}, message,
                                         version=ENVELOPE_VERSION,
                                         retry=SEND_RETRY)
        except Exception as e:
            with self._lock:
                self.table.count(event_type, 'send_failed')
            LOG.warning('Cannot send %s on topic %s: %s', event_type,
                        self.output_topic, e)
            return False
        with self._lock:
            count = self.sent.setdefault(event_type, [0, 0])
            count[0] += 1
            count[1] += len(json.dumps(message, default=str))
        return True

    def start(self):
        """Start the listener and the digest thread."""
        self.listener = oslo_messaging.get_notification_listener(
            self.source, [oslo_messaging.Target(topic=self.input_topic)],
            [RelayEndpoint(self)], executor='threading', pool=self.pool)
        self.listener.start()
        # Every relay hears every want (a queue of its own): any of them
        # may receive the wanted host's next state.
        self.want_listener = oslo_messaging.get_notification_listener(
            self.sink, [oslo_messaging.Target(
                topic=state_digest.want_topic(self.output_topic))],
            [WantEndpoint(self)], executor='threading',
            pool='%s-want-%s' % (self.pool, self.table.name))
        self.want_listener.start()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='state-relay-digest')
        self._thread.start()
        LOG.info('State relay %s: reading %s (queue %s), sending on %s '
                 'every %.1f s (a state waits %.2f s at most)',
                 self.table.name, self.input_topic, self.pool,
                 self.output_topic, self.digest_interval_s,
                 self.max_state_delay_s)

    def _run(self):
        stats_at = last = self._clock()
        while not self._stop.is_set():
            with self._lock:
                due = state_relay.next_digest(
                    last, self.table.waiting_since, self.digest_interval_s,
                    self.max_state_delay_s)
            delay = due - self._clock()
            if delay > 0:
                # Woken early by a state: plan again.
                self._wake.wait(delay)
                self._wake.clear()
                continue
            last = self._clock()
            try:
                self.flush()
            except Exception:
                LOG.exception('Cannot send the digest')
            now = self._clock()
            if (self.stats_interval_s
                    and now - stats_at >= self.stats_interval_s):
                stats_at = now
                self.log_stats()

    def log_stats(self):
        """One INFO line of the relay's counters (and reset the warnings)."""
        with self._lock:
            counts = sorted('%s/%s=%d' % (k + (v,))
                            for k, v in self.table.counts.items())
            hosts = len(self.table)
            self._warned = 0
        LOG.info('State relay %s: %d hosts; %s', self.table.name, hosts,
                 ', '.join(counts) or 'nothing received')

    def stop(self, cleanup=True):
        """Stop listening, send the last digest, release the transports."""
        for listener in (self.listener, self.want_listener):
            if listener is not None:
                listener.stop()
                listener.wait()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self.flush()
        except Exception:
            LOG.exception('Cannot send the last digest')
        if cleanup:
            self.source.cleanup()
            self.sink.cleanup()
            if self.rpc_transport is not None:
                self.rpc_transport.cleanup()
