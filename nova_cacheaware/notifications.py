"""``cacheaware.host.state`` on the message bus: emitter and listener.

The agent publishes with :func:`publish_host_state`; every nova-scheduler
worker process runs one listener (:func:`start_host_state_listener`) that
feeds its :class:`~nova_cacheaware.scheduler.state_cache.HostStateCache`.
The payload itself is :mod:`nova_cacheaware.contracts.host_state`: this
module imports nothing of the scheduler.

Why one pool per process: oslo.messaging notification listeners that share
a pool (or all use none) share one queue, and RabbitMQ hands each message to
only one of them. A scheduler worker must see *every* host's state, so each
process listens with its own pool (:func:`process_pool_name`), i.e. its own
queue bound to the topic.
"""

import os
import socket

from oslo_log import log as logging
import oslo_messaging

from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_digest
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import exception

LOG = logging.getLogger(__name__)

PRIORITY = 'info'


def make_notifier(transport, host, topic):
    """A notifier that publishes versioned (messagingv2) host state."""
    return oslo_messaging.Notifier(
        transport, publisher_id='nova-cacheaware-agent.%s' % host,
        driver='messagingv2', topics=[topic])


def publish_host_state(notifier, state):
    """Publish a :class:`~.host_state.HostCacheState` (or its payload dict).

    A payload dict is checked with :func:`~.host_state.from_payload` first,
    so a malformed document raises InvalidInput here instead of being
    dropped by every scheduler.
    """
    if isinstance(state, dict):
        state_wire.parse_state(state)
        payload = state
    else:
        payload = host_state.to_payload(state)
    notifier.info({}, host_state.EVENT_TYPE, payload)


def process_pool_name(prefix, hostname=None, pid=None):
    """``<prefix>-<hostname>-<pid>``: one listener queue per process."""
    return '%s-%s-%d' % (prefix, hostname or socket.gethostname(),
                         os.getpid() if pid is None else pid)


class HostStateEndpoint:
    """Notification endpoint: parses payloads into the cache.

    Malformed payloads are logged and dropped (the bus is not trusted);
    a bad message never stops the listener.
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^(%s)$' % '|'.join(
            e.replace('.', r'\.')
            for e in (host_state.EVENT_TYPE, state_wire.HEARTBEAT_EVENT,
                      state_digest.DIGEST_EVENT)))

    def __init__(self, cache, count=None, want=None):
        self._cache = cache
        # count(kind, outcome) per message: the scheduler's metrics.
        self._count = count or _no_count
        # want(hosts): ask the state relays for these hosts' states.
        self._want = want

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """Handle one state, heartbeat or relay digest notification."""
        if event_type == state_digest.DIGEST_EVENT:
            self._digest(publisher_id, payload)
        else:
            self._one(publisher_id, event_type, payload)
        return oslo_messaging.NotificationResult.HANDLED

    def _one(self, publisher_id, event_type, payload):
        heartbeat = event_type == state_wire.HEARTBEAT_EVENT
        kind = 'heartbeat' if heartbeat else 'state'
        try:
            if heartbeat:
                message = state_wire.parse_heartbeat(payload)
            else:
                # The cache's own state class, parsed into (no copy).
                message = self._cache.parse_state(payload)
        except exception.InvalidInput as e:
            LOG.warning('Dropping %s from %s: %s', event_type, publisher_id,
                        e)
            self._count(kind, 'invalid')
            return
        kept = (self._cache.heartbeat(message) if heartbeat
                else self._cache.update(message))
        self._count(kind, 'stored' if kept else 'out_of_order')
        if not kept:
            LOG.debug('Ignoring out-of-order %s for host %s', event_type,
                      message.host)

    def _digest(self, publisher_id, payload):
        # A state relay's heartbeats of many hosts: one message, one
        # count (the entries are heartbeats the relay already counted).
        try:
            digest = state_digest.parse_digest(payload)
        except exception.InvalidInput as e:
            LOG.warning('Dropping %s from %s: %s', state_digest.DIGEST_EVENT,
                        publisher_id, e)
            self._count('digest', 'invalid')
            return
        # The states first: an entry may name the generation of a state
        # the same digest carries.
        for state in digest.states:
            self._one(publisher_id, host_state.EVENT_TYPE, state)
        kept, wanted = self._cache.digest(digest.entries)
        self._count('digest', 'stored' if kept == len(digest.entries)
                    else 'out_of_order')
        if wanted and self._want is not None:
            self._want(wanted)


def _no_count(kind, outcome):
    """Count nothing (the endpoint's default)."""


class WantPublisher:
    """Asks the state relays for hosts' states (``cacheaware.host.want``).

    Called by :class:`HostStateEndpoint` with the hosts a digest names
    whose current state the cache lacks. A want that cannot be sent is
    logged and dropped: the cache asks again a TTL later, and the
    agents' resyncs still reach relays that forward them.
    """

    def __init__(self, transport, topic, scheduler):
        self.scheduler = scheduler
        self._notifier = oslo_messaging.Notifier(
            transport, publisher_id='nova-scheduler.%s' % scheduler,
            driver='messagingv2', topics=[state_digest.want_topic(topic)],
            retry=0)

    def __call__(self, hosts):
        """Send one want per :data:`~.state_digest.MAX_ENTRIES` hosts."""
        step = state_digest.MAX_ENTRIES
        for i in range(0, len(hosts), step):
            self._notifier.info({}, state_digest.WANT_EVENT,
                                state_digest.want_payload(
                                    self.scheduler, hosts[i:i + step]))


def start_host_state_listener(transport, cache, topic, pool,
                              executor='threading', endpoints=(),
                              count=None, want=True):
    """Start (and return) a listener feeding ``cache`` from ``topic``.

    ``endpoints``: more endpoints on the same queue (the scheduler
    workers' shared claims); ``count(kind, outcome)``: called per message
    (``state``/``heartbeat``/``digest``; ``stored``, ``out_of_order``,
    ``invalid``); ``want``: ask state relays for the hosts a digest
    names whose state the cache lacks (:class:`WantPublisher` on the same
    transport; False: never ask).
    The caller stops it with ``listener.stop(); listener.wait()``.
    """
    wanting = WantPublisher(transport, topic, pool) if want else None
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic=topic)],
        [HostStateEndpoint(cache, count, wanting)] + list(endpoints),
        executor=executor, pool=pool)
    listener.start()
    LOG.info('Listening for %s on topic %s (queue %s)',
             host_state.EVENT_TYPE, topic, pool)
    return listener
