"""``[state_relay]``: nova-cacheaware-state-relay's options.

Read by the relay's own file (``nova-cacheaware-state-relay.conf``); see
doc/source/admin/cells.rst (layout C) and doc/source/admin/live-state.rst.
"""

from oslo_config import cfg

from nova_cacheaware.conf import groups

relay_group = cfg.OptGroup(
    'state_relay',
    title='nova-cacheaware state relay',
    help='Where the relay reads the agents\' live state (a cell\'s bus) and '
         'where it sends it on (the bus the schedulers listen on).')

relay_opts = [
    cfg.StrOpt('input_transport_url',
               secret=True,
               help="""
The bus the agents publish their state on: the cell's bus.

Unset: ``[DEFAULT] transport_url`` of this file (copy nova-compute's, the
cell's bus). The relays of a cell read one shared queue there
(``pool``): each message reaches one relay.

Related options:

* ``[oslo_messaging_notifications] transport_url``: where the relay sends
  (the schedulers' notification bus)
"""),
    cfg.StrOpt('input_topic',
               default='cacheaware_host_state',
               help="""
Topic the agents publish on (their ``[cacheaware_scheduler]
host_state_topic``).
"""),
    cfg.StrOpt('output_topic',
               default='cacheaware_host_state',
               help="""
Topic the schedulers listen on (nova.conf's ``[cacheaware_scheduler]
host_state_topic``). The relay refuses to start when input and output are
the same topic on the same bus: it would read what it sends.
"""),
    cfg.StrOpt('pool',
               default='cacheaware-state-relay',
               help="""
Name of the queue the relays of one cell share on the input bus.

Every relay of a cell must use the same name, so that RabbitMQ hands each
message to one of them (competing consumers).
"""),
    cfg.FloatOpt('digest_interval_s',
                 default=1.0,
                 min=0.1,
                 max=60.0,
                 help="""
Longest seconds between two digests (``cacheaware.host.digest``).

A digest carries the states worth forwarding that arrived since the last
one (changes, wanted hosts), in full, and lists every other host heard
meanwhile (heartbeats, unchanged resyncs). A digest goes this often, or
sooner when a state waits (``max_state_delay_s``). Each message costs
every scheduler worker 1 to 6 ms of CPU, whatever it carries;
keep the interval far below the schedulers' ``host_state_ttl``.

Related options:

* ``max_state_delay_s``
"""),
    cfg.FloatOpt('max_state_delay_s',
                 default=0.5,
                 min=0.0,
                 max=60.0,
                 help="""
Longest seconds a state to forward waits for the next digest.

A change reaches the schedulers up to this much later than it reached the
relay; meanwhile further changes join it, so a relay of a busy cell sends
one message per this interval instead of one per change. 0: a digest goes
as soon as a state arrives (one message per change). The default, 0.5 s,
is a twentieth of the agents' default period: at 10 000 hosts it halves a
scheduler worker's deliveries against 0.2 s, for 0.3 s of staleness at
most (doc/source/evaluation/region-state.rst).
"""),
    cfg.IntOpt('max_digest_entries',
               default=1000,
               min=1,
               max=5000,
               help="""
The most hosts in one digest message; more are split over several.
"""),
    cfg.FloatOpt('agent_resync_s',
                 default=300.0,
                 min=1.0,
                 help="""
The agents' ``[agent] state_resync_s`` (used with ``full_state_every``).

Windows of this many seconds of the agents' own timestamps; a window must
hold a resync of every live agent, so set it to the agents' value or more.
"""),
    cfg.IntOpt('full_state_every',
               default=0,
               min=0,
               help="""
Also forward a host's unchanged state in one resync window out of this many.

0 (the default): never. A scheduler worker that lacks a host's current
state (it started, or a state was lost) asks the relays for it
(``cacheaware.host.want``) and the host's next resync is forwarded, so
unchanged states need no resend. N > 0 adds a push for schedulers that
cannot send wants: every host's state reaches them within ``(N + 1) *
agent_resync_s``, at the cost of one forwarded state per host per N
resyncs (1 forwards every resync: as many states as direct mode).
"""),
    cfg.BoolOpt('ask_agents',
                default=True,
                help="""
Ask the agents of wanted hosts for their state.

When a scheduler worker wants hosts (it started, or lacks a state), the
relay casts ``send_state`` to those hosts' agents on the cell's bus (one
fanout when more than 50 hosts are wanted at once), so their states come
within ``[agent] state_request_spread_s`` instead of at their next resync.
The schedulers' own requests (``[cacheaware_scheduler]
request_host_state``) cannot reach agents on a cell's bus. Needs the
agents' describe RPC server (``[cacheaware_status] agent_rpc``).

Related options:

* ``agent_rpc_topic``
"""),
    cfg.StrOpt('agent_rpc_topic',
               default='cacheaware-agent',
               help="""
RPC topic of the agents' RPC servers (their ``[cacheaware_status]
agent_rpc_topic``), on the cell's bus.
"""),
    cfg.IntOpt('max_state_bytes',
               default=4 * 1024 * 1024,
               min=1024,
               help="""
Largest state (payload JSON) the relay forwards; larger ones are dropped
and counted. Payload 2.0 states are a few KB; 1.5 states of hosts with
hundreds of VMs reach about 1 MB.
"""),
    cfg.IntOpt('max_hosts',
               default=100000,
               min=1,
               help="""
The most hosts the relay keeps track of. Messages of further hosts are
dropped (and counted) until hosts unheard for ``forget_s`` leave.
"""),
    cfg.FloatOpt('forget_s',
                 default=1800.0,
                 min=1.0,
                 help="""
Seconds after which a host not heard from leaves the relay's table.
"""),
    cfg.IntOpt('stats_interval_s',
               default=300,
               min=0,
               help="""
Seconds between two INFO lines of the relay's counters (0: never).
"""),
]


def register_opts(conf):
    """Register ``[state_relay]`` on ``conf``."""
    groups.register(conf, relay_group, relay_opts)


def list_opts():
    """``{group: opts}`` for oslo-config-generator."""
    return {relay_group: relay_opts}
