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

Sending never fails a request: one attempt, errors logged at DEBUG (the
claim is then known to this worker only, as before). Payloads from the bus
are validated (:func:`from_payload`); a bad one is logged and dropped.
"""

import math

from oslo_log import log as logging
import oslo_messaging

from nova_cacheaware import exception
from nova_cacheaware.scheduler import claims

LOG = logging.getLogger(__name__)

EVENT_TYPE = 'cacheaware.host.claim'
VERSION = '1.0'
MAJOR = 1


def to_payload(host, claim, origin):
    """The notification payload of ``claim`` on ``host`` (a dict).

    :param host: the compute node uuid the ledger keys claims by.
    :param origin: the sending worker's name (its own copy is ignored).
    """
    return {'version': VERSION, 'origin': origin, 'host': host,
            'domain': claim.provider, 'instance': claim.instance,
            'vcpus': claim.vcpus, 'memory_bound': claim.memory_bound}


def from_payload(payload, now):
    """``(origin, host, Claim)`` of a payload; the claim made at ``now``.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` naming the
    first problem (wrong major version, missing or mistyped field).
    """
    if not isinstance(payload, dict):
        raise exception.InvalidInput(reason='payload must be an object')
    version = payload.get('version')
    if not isinstance(version, str) or version.split('.')[0] != str(MAJOR):
        raise exception.InvalidInput(
            reason='claim payload version %r not supported (major %d '
                   'expected)' % (version, MAJOR))
    for key in ('origin', 'host', 'domain'):
        if not isinstance(payload.get(key), str) or not payload[key]:
            raise exception.InvalidInput(
                reason='%s must be a non-empty string' % key)
    instance = payload.get('instance')
    if instance is not None and not isinstance(instance, str):
        raise exception.InvalidInput(reason='instance must be a string')
    vcpus = payload.get('vcpus')
    if (not isinstance(vcpus, int) or isinstance(vcpus, bool)
            or not 0 < vcpus <= 1 << 16):
        raise exception.InvalidInput(reason='vcpus must be an int >= 1')
    memory = payload.get('memory_bound')
    if not isinstance(memory, bool):
        raise exception.InvalidInput(reason='memory_bound must be a bool')
    if not isinstance(now, float) or not math.isfinite(now):
        raise exception.InvalidInput(reason='now must be a finite float')
    return payload['origin'], payload['host'], claims.Claim(
        provider=payload['domain'], instance=instance, vcpus=vcpus,
        memory_bound=memory, at=now)


class ClaimPublisher:
    """Sends this worker's claims (``ledger.on_claim``); never raises."""

    def __init__(self, transport, topic, origin):
        self.origin = origin
        self.sent = 0
        self.failed = 0
        self._notifier = oslo_messaging.Notifier(
            transport, publisher_id='nova-cacheaware-scheduler.%s' % origin,
            driver='messagingv2', topics=[topic], retry=0)

    def __call__(self, host, claim):
        """Publish ``claim`` on ``host``."""
        try:
            self._notifier.info({}, EVENT_TYPE,
                                to_payload(host, claim, self.origin))
            self.sent += 1
        except Exception as e:   # never fail a scheduling request
            self.failed += 1
            LOG.debug('cannot share claim on %s: %s', host, e)


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
