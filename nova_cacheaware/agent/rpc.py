"""The agent's read-only describe RPC server (``openstack cacheaware``).

``nova-cacheaware-api`` asks one agent, by host name, for its host view
(:mod:`~nova_cacheaware.agent.describe`) when an operator runs ``openstack
cacheaware host show`` or ``server show``: detail that would cost every
scheduler a lot to receive from 10 000 hosts every period is fetched from
the one host that has it, on demand. The server listens on the transport
the agent publishes its state to (the schedulers' bus, which in a
multi-cell cloud is not the cell's: doc/source/admin/cells.rst), topic
``[cacheaware_status] agent_rpc_topic``, server name the agent's host.

Answers are built from the latest pass the agent completed (no libvirt
call on the RPC thread) and are bounded by the host's servers and domains.
"""

import importlib
import random
import time

from oslo_log import log as logging
import oslo_messaging
from oslo_messaging import opts as messaging_opts

from nova_cacheaware.agent import describe
from nova_cacheaware.agent import notify
from nova_cacheaware.contracts import state_wire

LOG = logging.getLogger(__name__)

#: The RPC API version the endpoint answers (the API service asks it).
RPC_VERSION = '1.0'
NAMESPACE = 'cacheaware_describe'
_NOTIFICATIONS = 'oslo_messaging_notifications'


def transport(conf, url=None):
    """An RPC transport to the bus the agent's notifications go to.

    ``url``, else ``[oslo_messaging_notifications] transport_url`` when
    set, else ``[DEFAULT] transport_url``, on Nova's exchange as the
    notifications are (:func:`~.notify.notification_transport`).
    """
    oslo_messaging.set_transport_defaults(
        control_exchange=notify.NOVA_EXCHANGE)
    for group, opts in messaging_opts.list_opts():
        if group == _NOTIFICATIONS:
            conf.register_opts(opts, group=group)
    _register_global_only(conf)
    url = url or conf[_NOTIFICATIONS].transport_url or None
    return oslo_messaging.get_rpc_transport(conf, url=url)


#: ``(module, list and group name)`` of the options recent oslo.messaging
#: registers on the global CONF only, yet reads from the transport's conf
#: in every RPC call and dispatch (metrics, tracing); what its own
#: ``ConfFixture`` registers on a private conf.
_GLOBAL_ONLY = (('oslo_messaging._metrics.client', 'oslo_messaging_metrics'),
                ('oslo_messaging._tracing.client', 'oslo_messaging_tracing'))


def _register_global_only(conf):
    for module, name in _GLOBAL_ONLY:
        try:
            opts = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue    # an oslo.messaging without that feature
        conf.register_opts(opts, group=name)


class DescribeEndpoint:
    """``describe_host()`` and ``describe_server(uuid)`` of one agent.

    ``agent``: the :class:`~nova_cacheaware.agent.service.Agent` (its
    ``last_pass``, ``last_pass_at`` and ``last_reports``); ``stale_s``:
    a pass older than this marks the agent unhealthy.
    """

    target = oslo_messaging.Target(namespace=NAMESPACE, version=RPC_VERSION)

    def __init__(self, agent, host, model, stale_s, clock=time.monotonic):
        self.agent = agent
        self.host = host
        self.model = model
        self.stale_s = stale_s
        self._clock = clock

    def describe_host(self, ctxt):
        """The host-view document; None before the first pass."""
        one = getattr(self.agent, 'last_pass', None)
        if one is None:
            return None
        age = self._clock() - self.agent.last_pass_at
        publisher = getattr(self.agent, 'publisher', None)
        last = getattr(publisher, 'last', None)
        return describe.build_host_view(
            self.host, self.model, self.agent.domain_set, one,
            self.agent.last_reports, healthy=age <= self.stale_s,
            generation=getattr(last, 'generation', None))

    def describe_server(self, ctxt, uuid):
        """The server's entry plus ``host``; None if not on this host."""
        view = self.describe_host(ctxt)
        return None if view is None else describe.server_view(view, uuid)


class StateRequestEndpoint:
    """``send_state(spread)``: a scheduler asks for the agent's full state.

    Cast by a nova-scheduler worker that starts (fanout, ``spread`` True:
    answered after a delay drawn from ``[0, spread_s]``) or that missed
    one host's update (to that host, ``spread`` False: the next pass).
    Only the publisher's timing changes: nothing is read or written on
    the host, and requests coalesce, so a flood costs one state.
    """

    target = oslo_messaging.Target(
        namespace=state_wire.STATE_REQUEST_NAMESPACE,
        version=state_wire.STATE_REQUEST_VERSION)

    def __init__(self, agent, spread_s, draw=None):
        self.agent = agent
        self.spread_s = spread_s
        self._draw = draw or random.Random().random

    def send_state(self, ctxt, spread=True):
        """Send the full state at a pass soon (never raises)."""
        publisher = getattr(self.agent, 'publisher', None)
        request = getattr(publisher, 'request_state', None)
        if request is None:
            return
        delay = self.spread_s * self._draw() if spread is True else 0.0
        request(delay)


def model_of(conf):
    """The document's ``model`` of ``[placement] provider_model``."""
    return (describe.PER_DOMAIN if conf.placement.provider_model == 'domain'
            else describe.PER_HOST)


def serve(conf, agent, host):
    """Start and return the describe RPC server, or None when off.

    Off unless ``[cacheaware_status] agent_rpc`` and ``[agent]
    notifications`` (no bus otherwise). A bus that is down is logged:
    the agent pins without it.
    """
    opts = conf.cacheaware_status
    if not (opts.agent_rpc and conf.agent.notifications):
        return None
    endpoints = [DescribeEndpoint(agent, host, model_of(conf),
                                  stale_s=3 * conf.agent.period_s),
                 StateRequestEndpoint(agent,
                                      conf.agent.state_request_spread_s)]
    try:
        return start_server(transport(conf), opts.agent_rpc_topic, host,
                            endpoints)
    except Exception as e:
        LOG.error('No describe RPC server (openstack cacheaware host show '
                  'will answer 503 for %s): %s', host, e)
        return None


def start_server(rpc_transport, topic, host, endpoints):
    """Start an RPC server for ``endpoints`` as server ``host``; return it."""
    server = oslo_messaging.get_rpc_server(
        rpc_transport, oslo_messaging.Target(topic=topic, server=host),
        list(endpoints), executor='threading')
    server.start()
    LOG.info('Answering describe_host and send_state on topic %s as '
             'server %s', topic, host)
    return server
