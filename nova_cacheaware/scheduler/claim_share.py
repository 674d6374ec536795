"""Scheduler workers tell each other their cache-domain claims.

Each nova-scheduler worker process remembers the claims it made itself
(:mod:`nova_cacheaware.scheduler.claims`) until the agents' live state
shows them; without more, a worker learns the claims of the *other*
workers only from that state, one agent period later, and in a burst two
workers hand the same Empty domain to two memory-bound instances.

So when a worker records a claim it publishes it as a
``cacheaware.host.claim`` notification on the topic the live state uses
(``[cacheaware_scheduler] host_state_topic``), and every worker's listener
- the one that reads the live state, one queue per process - adds the
claims of the others to its own ledger (:meth:`~.claims.ClaimLedger.
add`). A claim received counts exactly like one made: until the live
state lists the instance, until a state received ``claim_settle_seconds``
later still does not, or at most ``claim_memory_seconds``.

Sending never slows, blocks or fails a request: the scheduling path only
puts the claim in a bounded in-memory queue (:class:`ClaimPublisher`), and
one daemon thread per process sends it - one attempt, errors logged at
DEBUG (the claim is then known to this worker only, as without sharing).
When the queue is full (the bus is down or slow) the oldest claim is
dropped and counted: a claim is worth something for one agent period, a
backlog of old ones is not. Payloads from the bus are validated
(:func:`from_payload`); a bad one is logged and dropped.

The thread is a :class:`threading.Thread`: Nova 34's nova-scheduler
starts with native threads by default (``nova.monkey_patch.patch(
backend='threading')``; ``OS_NOVA_DISABLE_EVENTLET_PATCHING`` can still
choose eventlet). Under eventlet monkey patching it is a green thread, the
queue's condition a green one, and the send yields on the socket as Nova's
own notifications do.
"""

import collections
import math
import threading
import uuid

from oslo_log import log as logging
import oslo_messaging
from oslo_utils import timeutils

from nova_cacheaware.contracts import schema
from nova_cacheaware import exception
from nova_cacheaware.scheduler import claims

LOG = logging.getLogger(__name__)

EVENT_TYPE = 'cacheaware.host.claim'
#: Claims waiting to be sent at most; the oldest is dropped beyond.
QUEUE_SIZE = 256
VERSION = '1.2'
MAJOR = 1


def to_payload(host, claim, origin):
    """The notification payload of ``claim`` on ``host`` (a dict).

    :param host: the compute node uuid the ledger keys claims by.
    :param origin: the sending worker's name (its own copy is ignored).
    """
    return {'version': VERSION, 'origin': origin, 'host': host,
            'domain': claim.provider, 'instance': claim.instance,
            'vcpus': claim.vcpus, 'memory_bound': claim.memory_bound,
            'clean_required': claim.clean_required,
            'pending': claim.pending}


def _is_text(value):
    return isinstance(value, str) and value != ''


def _is_vcpus(value):
    return (isinstance(value, int) and not isinstance(value, bool)
            and 0 < value <= 1 << 16)


_TEXT = schema.Check(_is_text, '%(key)s must be a non-empty string')
#: A claim, declared once, checked in this order (the first problem speaks).
CLAIM = schema.Obj({
    'origin': (_TEXT, schema.AS_NULL),
    'host': (_TEXT, schema.AS_NULL),
    'domain': (_TEXT, schema.AS_NULL),
    'instance': (schema.Check(lambda v: v is None or isinstance(v, str),
                              '%(key)s must be a string'), None),
    'vcpus': (schema.Check(_is_vcpus, '%(key)s must be an int >= 1'),
              schema.AS_NULL),
    'memory_bound': (schema.Check(schema.is_bool, '%(key)s must be a bool'),
                     schema.AS_NULL),
    # 1.1; a 1.0 sender's claims are not known to be required.
    'clean_required': (schema.Check(schema.is_bool,
                                    '%(key)s must be a bool'), False),
    # 1.2: a reservation made at claim time (it counts for
    # claim_pending_seconds); a 1.1 sender shares claims only.
    'pending': (schema.Check(schema.is_bool, '%(key)s must be a bool'),
                False),
}, 'payload must be an object')


def _invalid(message):
    return exception.InvalidInput(reason=message)


def from_payload(payload, now):
    """``(origin, host, Claim)`` of a payload; the claim made at ``now``.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` naming the
    first problem (wrong major version, missing or mistyped field).
    Unknown fields are ignored (a newer minor version's).
    """
    if not isinstance(payload, dict):
        raise _invalid('payload must be an object')
    # Checked first, alone: another major version may have another shape.
    version = payload.get('version')
    if not isinstance(version, str) or version.split('.')[0] != str(MAJOR):
        raise _invalid('claim payload version %r not supported (major %d '
                       'expected)' % (version, MAJOR))
    with schema.reraise(_invalid):
        doc = CLAIM.check(payload, 'payload', '')
    if not isinstance(now, float) or not math.isfinite(now):
        raise _invalid('now must be a finite float')
    return doc['origin'], doc['host'], claims.Claim(
        provider=doc['domain'], instance=doc['instance'], vcpus=doc['vcpus'],
        memory_bound=doc['memory_bound'], at=now,
        clean_required=doc['clean_required'], pending=doc['pending'])


def bus_sender(transport, topic, origin):
    """``send(host, claim)``: one notification on ``topic``, one attempt.

    The message is what oslo.messaging's ``messagingv2`` notification
    driver sends (``<topic>.info``, priority INFO), handed to the transport
    itself with ``retry=0``: an ``oslo_messaging.Notifier`` would catch a
    failed delivery, log it at ERROR with a traceback for every claim, and
    return as if it had been sent. This one raises, so the publisher
    counts it.
    """
    target = oslo_messaging.Target(topic='%s.info' % topic)
    publisher_id = 'nova-cacheaware-scheduler.%s' % origin

    def send(host, claim):
        message = {'message_id': str(uuid.uuid4()),
                   'publisher_id': publisher_id, 'event_type': EVENT_TYPE,
                   'priority': 'INFO',
                   'payload': to_payload(host, claim, origin),
                   'timestamp': str(timeutils.utcnow())}
        transport._send_notification(target, {}, message, version=2.0,
                                     retry=0)
    return send


class ClaimPublisher:
    """Sends this worker's claims (``ledger.on_claim``) in the background.

    Calling it only queues the claim (never blocks on the bus, never
    raises); one daemon thread, started on the first claim, sends the
    queue's claims one at a time. Counters (read them under no lock; they
    only grow): ``queued``, ``sent``, ``failed`` (one attempt each),
    ``dropped`` (the oldest, pushed out of a full queue).

    :param send: ``send(host, claim)`` publishing one claim, raising when
        it was not delivered; the default is :func:`bus_sender`.
    :param size: the queue's capacity (:data:`QUEUE_SIZE`).
    """

    def __init__(self, transport, topic, origin, send=None, size=QUEUE_SIZE):
        self.origin = origin
        self.queued = self.sent = self.failed = self.dropped = 0
        self._size = max(1, int(size))
        self._pending = collections.deque()
        self._cond = threading.Condition()
        self._thread = None
        self._stopping = False
        self._send = send or bus_sender(transport, topic, origin)

    def __call__(self, host, claim):
        """Queue ``claim`` on ``host`` for sending; returns at once."""
        try:
            with self._cond:
                if len(self._pending) >= self._size:
                    self._pending.popleft()
                    self.dropped += 1
                self._pending.append((host, claim))
                self.queued += 1
                if self._thread is None and not self._stopping:
                    self._thread = threading.Thread(
                        target=self._run, daemon=True,
                        name='cacheaware-claim-share')
                    self._thread.start()
                self._cond.notify()
        except Exception as e:   # never fail a scheduling request
            LOG.debug('cannot queue claim on %s: %s', host, e)

    def pending(self):
        """The claims queued and not yet taken by the sender (a list)."""
        with self._cond:
            return list(self._pending)

    def _next(self):
        with self._cond:
            while not self._pending and not self._stopping:
                self._cond.wait()
            return self._pending.popleft() if self._pending else None

    def _run(self):
        while True:
            item = self._next()
            if item is None:
                return
            host, claim = item
            try:
                self._send(host, claim)
                self.sent += 1
            except Exception as e:   # the claim stays known here only
                self.failed += 1
                LOG.debug('cannot share claim on %s: %s', host, e)

    def stop(self, timeout=None):
        """Send what is queued, then end the thread (tests, reload).

        Returns True when the thread has ended (or never started).
        """
        with self._cond:
            self._stopping = True
            self._cond.notify()
            thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()


class HostClaimEndpoint:
    """Notification endpoint: other workers' claims into this ledger.

    :param ledger: a callable returning this process's ledger (asked per
        message: tests and reloads replace it).
    :param origin: this worker's name; its own claims are skipped.
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^%s$' % EVENT_TYPE.replace('.', r'\.'))

    def __init__(self, ledger, origin):
        self._ledger = ledger
        self.origin = origin

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """Handle one ``cacheaware.host.claim`` notification."""
        ledger = self._ledger()
        try:
            origin, host, claim = from_payload(payload, float(ledger.now()))
        except exception.InvalidInput as e:
            LOG.warning('Dropping %s from %s: %s', event_type, publisher_id,
                        e)
            return oslo_messaging.NotificationResult.HANDLED
        if origin != self.origin:
            ledger.add(host, claim)
        return oslo_messaging.NotificationResult.HANDLED
