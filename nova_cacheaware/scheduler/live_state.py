"""The scheduler worker's view of live host state (one per process).

:func:`get_cache` returns this process's
:class:`~nova_cacheaware.scheduler.state_cache.HostStateCache` and, on first
use in a process, starts its notification listener (never at import or in a
plugin constructor). Forked workers forget their parent's cache and listener
(an ``os.register_at_fork`` hook) and start their own on first use; the
filter calls :func:`get_cache` once per host, so it makes no system call.
A listener that cannot start is logged once per process and the plugins run
without live state (neutral weights), never failing a request.
"""

import os
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from nova_cacheaware import conf as ca_conf
from nova_cacheaware import notifications
from nova_cacheaware.scheduler import claim_share
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import metrics
from nova_cacheaware.scheduler import state_cache
from nova_cacheaware.scheduler import state_requests

LOG = logging.getLogger(__name__)
CONF = ca_conf.CONF

_lock = threading.Lock()
_process = {'cache': None, 'listener': None, 'publisher': None,
            'transport': None, 'rpc_transport': None}


def get_cache():
    """This process's host-state cache; starts the listener once."""
    cache = _process['cache']
    if cache is not None:
        return cache
    with _lock:
        if _process['cache'] is None:
            opts = CONF.cacheaware_scheduler
            cache = state_cache.HostStateCache(
                opts.host_state_ttl, recent_s=opts.claim_memory_seconds)
            # A claim ends once a state lists its instance, whether or not
            # a request asks about that host while it does.
            cache.on_stored = claims.state_stored
            listener = None
            if opts.listen_for_host_state:
                listener = _start_listener(cache, opts)
            _process.update(cache=cache, listener=listener)
            # First use in a worker, after the fork: its own port.
            metrics.start_exporter(opts, lambda: _process['cache'])
    return _process['cache']


def _forget_in_child():
    # The parent's listener threads do not exist in a forked child, and the
    # parent's queue is not the child's (one pool per process).
    global _lock
    _lock = threading.Lock()
    _process.update(cache=None, listener=None, publisher=None,
                    transport=None, rpc_transport=None)


os.register_at_fork(after_in_child=_forget_in_child)


def _start_listener(cache, opts):
    pool = notifications.process_pool_name(opts.host_state_pool_prefix)
    try:
        transport = oslo_messaging.get_notification_transport(CONF)
        _process['transport'] = transport
        endpoints = []
        if opts.share_claims:
            # Other workers' claims arrive on the same queue; ours go out
            # as the ledger records them (claim_share).
            endpoints.append(claim_share.HostClaimEndpoint(
                lambda: claims.get_ledger(opts.claim_memory_seconds,
                                          opts.claim_settle_seconds,
                                          opts.claim_pending_seconds), pool))
            publisher = claim_share.ClaimPublisher(
                transport, opts.host_state_topic, pool)
            _process['publisher'] = publisher
            claims.share_with(publisher)
        listener = notifications.start_host_state_listener(
            transport, cache, opts.host_state_topic, pool,
            endpoints=endpoints, count=metrics.received)
    except (oslo_messaging.MessagingException, cfg.Error, OSError) as e:
        LOG.error('No live cache state in this scheduler process: cannot '
                  'listen on topic %s: %s', opts.host_state_topic, e)
        return None
    if opts.request_host_state:
        _request_states(cache, opts)
    return listener


def _request_states(cache, opts):
    # Once the listener's queue exists: the answers must find it.
    try:
        rpc_transport = oslo_messaging.get_rpc_transport(
            CONF, url=CONF.oslo_messaging_notifications.transport_url or None)
    except (oslo_messaging.MessagingException, cfg.Error) as e:
        LOG.warning('Not asking the agents for their state (each host is '
                    'known at its next change or resync): %s', e)
        return
    _process['rpc_transport'] = rpc_transport
    requester = state_requests.StateRequester(rpc_transport,
                                              opts.agent_rpc_topic)
    cache.on_missing = requester.host
    requester.everyone()


def reset():
    """Stop this process's listener and forget its cache (tests, reload)."""
    with _lock:
        listener, publisher, transport, rpc_transport = (
            _process['listener'], _process['publisher'],
            _process['transport'], _process['rpc_transport'])
        _process.update(cache=None, listener=None, publisher=None,
                        transport=None, rpc_transport=None)
    claims.share_with(None)
    if publisher is not None:
        publisher.stop(timeout=5)
    if listener is not None:
        listener.stop()
        listener.wait()
    for one in (transport, rpc_transport):
        if one is not None:
            # Its connection pool would otherwise outlive the listener.
            one.cleanup()
