"""``[cacheaware_status]``: what operators see, and how it gets there.

Read by the agent (its describe RPC server) and by
``nova-cacheaware-api`` (the listener and the RPC client behind ``openstack
cacheaware ...``); see doc/source/admin/operator-cli.rst.
"""

from oslo_config import cfg

from nova_cacheaware.conf import groups

status_group = cfg.OptGroup(
    'cacheaware_status',
    title='nova-cacheaware status API and agent describe RPC',
    help='The agents answer describe_host/describe_server over '
         'oslo.messaging RPC; nova-cacheaware-api serves them and the '
         'live host list to the openstack CLI.')

status_opts = [
    cfg.BoolOpt('agent_rpc',
                default=True,
                help="""
Run the agent's read-only describe RPC server.

The agent answers ``describe_host`` and ``describe_server`` from its latest
pass on ``agent_rpc_topic`` (server: its host name), on the transport it
publishes its state to (``[oslo_messaging_notifications] transport_url``,
else ``[DEFAULT] transport_url``). Only ``nova-cacheaware-api`` calls it.
Needs ``[agent] notifications``.
"""),
    cfg.StrOpt('agent_rpc_topic',
               default='cacheaware-agent',
               help='oslo.messaging RPC topic of the agents\' describe '
                    'server (the server name is the agent\'s host).'),
    cfg.FloatOpt('rpc_timeout',
                 default=10.0,
                 min=0.1,
                 help="""
Seconds nova-cacheaware-api waits for an agent's describe answer.

An agent that does not answer in time gives the API's caller HTTP 503.
"""),
    cfg.StrOpt('listener_pool_prefix',
               default='cacheaware-status',
               help="""
Prefix of nova-cacheaware-api's listener pool (queue) names.

Each API process listens to the agents' state topic on its own queue,
``<prefix>-<hostname>-<pid>``, as a scheduler worker does with
``[cacheaware_scheduler] host_state_pool_prefix``: it gets every host's
state without taking any from the schedulers. Add a RabbitMQ policy with
``expires`` for queues matching ``^<prefix>-``.
"""),
]


def register_opts(conf):
    """Register ``[cacheaware_status]`` on ``conf``."""
    groups.register(conf, status_group, status_opts)


def list_opts():
    """``{group: opts}`` for oslo-config-generator."""
    return {status_group: status_opts}
