"""``nova-cacheaware-state-relay``: a cell's live state for the schedulers.

``nova-cacheaware-state-relay [--config-file F]`` runs until
SIGTERM/SIGINT. It reads the agents' ``cacheaware.host.state`` and
heartbeats on the cell's bus (``[state_relay] input_transport_url``, or
``[DEFAULT] transport_url``) and sends the schedulers, on their
notification bus (``[oslo_messaging_notifications] transport_url``),
changed states as they came and one digest of the other hosts heard per
``digest_interval_s`` (doc/source/admin/cells.rst, layout C).
"""

import signal
import sys
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from nova_cacheaware.agent import notify
from nova_cacheaware.conf import opts as conf_opts
from nova_cacheaware import exception
from nova_cacheaware.policy import state_relay
from nova_cacheaware.relay import service
from nova_cacheaware import version

LOG = logging.getLogger(__name__)
PROG = 'nova-cacheaware-state-relay'
EXIT_ERROR = 2


def make_conf(argv):
    """A parsed, private ConfigOpts (tests call :func:`main` repeatedly)."""
    conf = cfg.ConfigOpts()
    conf_opts.register_relay_opts(conf)
    logging.register_options(conf)
    conf.set_default('use_stderr', True)
    conf(argv, project='nova-cacheaware', prog=PROG,
         version=version.version_string())
    return conf


def rules(opts):
    """The :class:`~.state_relay.Rules` of ``[state_relay]``."""
    return state_relay.Rules(
        resync_window_s=opts.agent_resync_s,
        full_state_every=opts.full_state_every,
        max_entries=opts.max_digest_entries, max_hosts=opts.max_hosts,
        forget_s=opts.forget_s)


def build(conf, name=None):
    """The (not started) :class:`~.service.StateRelay` of ``conf``.

    :class:`~nova_cacheaware.exception.InvalidInput` when it would read
    what it sends (same bus and topic in and out).
    """
    opts = conf.state_relay
    # The output first: creating a notification transport registers
    # oslo.messaging's options ([DEFAULT] transport_url included).
    sink = notify.notification_transport(conf)
    source_url = opts.input_transport_url or conf.transport_url
    sink_url = (conf.oslo_messaging_notifications.transport_url
                or conf.transport_url)
    if source_url == sink_url and opts.input_topic == opts.output_topic:
        sink.cleanup()
        raise exception.InvalidInput(
            reason='[state_relay] input and output are the same bus and '
                   'topic (%s): the relay would read what it sends; set '
                   'input_transport_url to the cell\'s bus, or another '
                   'input_topic' % opts.input_topic)
    source = notify.notification_transport(conf, url=source_url)
    table = state_relay.RelayTable(rules(opts), name or service.relay_name())
    requester = rpc = None
    if opts.ask_agents:
        # Imported here: the scheduler's module, needed only to ask.
        from nova_cacheaware.scheduler import state_requests
        rpc = oslo_messaging.get_rpc_transport(conf, url=source_url)
        requester = state_requests.StateRequester(rpc, opts.agent_rpc_topic)
    relay = service.StateRelay(
        source, sink, table, opts.input_topic, opts.output_topic, opts.pool,
        digest_interval_s=opts.digest_interval_s,
        max_state_delay_s=opts.max_state_delay_s,
        max_state_bytes=opts.max_state_bytes,
        stats_interval_s=opts.stats_interval_s, requester=requester)
    relay.rpc_transport = rpc
    return relay


def main(argv=None):
    """Relay until SIGTERM/SIGINT; 0, or 2 on a configuration error."""
    conf = make_conf(sys.argv[1:] if argv is None else argv)
    logging.setup(conf, 'nova-cacheaware')
    try:
        relay = build(conf)
    except exception.InvalidInput as e:
        LOG.error('%s', e)
        return EXIT_ERROR
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    relay.start()
    # The main thread only waits: the handler runs here, between waits.
    while not stop.wait(1.0):
        pass
    LOG.info('Stopping state relay %s', relay.table.name)
    relay.stop()
    relay.log_stats()
    return 0


if __name__ == '__main__':
    sys.exit(main())
