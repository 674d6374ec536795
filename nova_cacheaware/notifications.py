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
            for e in (host_state.EVENT_TYPE, state_wire.HEARTBEAT_EVENT)))

    def __init__(self, cache, count=None):
        self._cache = cache
        # count(kind, outcome) per message: the scheduler's metrics.
        self._count = count or _no_count

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """Handle one ``cacheaware.host.state`` or heartbeat notification."""
        heartbeat = event_type == state_wire.HEARTBEAT_EVENT
        kind = 'heartbeat' if heartbeat else 'state'
        try:
            if heartbeat:
                message = state_wire.parse_heartbeat(payload)
            else:
                message = state_wire.parse_state(payload)
        except exception.InvalidInput as e:
            LOG.warning('Dropping %s from %s: %s', event_type, publisher_id,
                        e)
            self._count(kind, 'invalid')
            return oslo_messaging.NotificationResult.HANDLED
        kept = (self._cache.heartbeat(message) if heartbeat
                else self._cache.update(message))
        self._count(kind, 'stored' if kept else 'out_of_order')
        if not kept:
            LOG.debug('Ignoring out-of-order %s for host %s', event_type,
                      message.host)
        return oslo_messaging.NotificationResult.HANDLED


def _no_count(kind, outcome):
    """Count nothing (the endpoint's default)."""


def start_host_state_listener(transport, cache, topic, pool,
                              executor='threading', endpoints=(),
                              count=None):
    """Start (and return) a listener feeding ``cache`` from ``topic``.

    ``endpoints``: more endpoints on the same queue (the scheduler
    workers' shared claims); ``count(kind, outcome)``: called per message
    (``state``/``heartbeat``; ``stored``, ``out_of_order``, ``invalid``).
    The caller stops it with ``listener.stop(); listener.wait()``.
    """
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic=topic)],
        [HostStateEndpoint(cache, count)] + list(endpoints),
        executor=executor, pool=pool)
    listener.start()
    LOG.info('Listening for %s on topic %s (queue %s)',
             host_state.EVENT_TYPE, topic, pool)
    return listener
