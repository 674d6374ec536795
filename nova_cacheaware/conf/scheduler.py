"""``[cacheaware_scheduler]``: the Nova scheduler plugins' options.

Read by nova-scheduler (the options live in nova.conf next to Nova's own).
"""

from oslo_config import cfg

from nova_cacheaware.conf import groups

scheduler_group = cfg.OptGroup(
    'cacheaware_scheduler',
    title='nova-cacheaware scheduler plugins',
    help='Options of CacheDomainFilter, CacheAwareWeigher and the '
         'live host-state listener that feeds them.')

scheduler_opts = [
    cfg.FloatOpt('cache_contention_weight_multiplier',
                 default=10.0,
                 help="""
Multiplier of CacheAwareWeigher's cache contention part.

For memory-bound and auto-classified requests the part puts every host
with a Clean place (a cache domain without a memory-bound instance, with
room) at least half its span above every host without one, and orders
hosts within each group by Empty domains and memory-bound instances. The
default (10) makes that half span (5) outweigh Nova's default RAM, CPU and
disk weighers and the pCPU availability part together (at most 4 when
they all disagree), so that a ``preferred`` instance, which holds no
Placement slot, lands where it can be alone while one exists. Requests
without cache-aware keys are weighed neutral on every host, so the value
does not change their placement. Keep it above twice the sum of the other
weighers' multipliers for Clean places to win. It can be overridden per
host aggregate with the aggregate metadata key
``cache_contention_weight_multiplier``.

Possible values:
* a positive number: prefer uncontended hosts (larger = stronger)
* 0.0: ignore cache contention (the part is not computed)
* a negative number: pack memory-bound instances (not recommended)
"""),
    cfg.FloatOpt('pcpu_availability_weight_multiplier',
                 default=1.0,
                 help="""
Multiplier of CacheAwareWeigher's pCPU availability part.

For requests with ``cacheaware:`` extra specs that are not
``hw:cpu_policy=dedicated``, the part prefers hosts where the new
instance's estimated available pCPUs (pCPU-Est over the host's current VMs,
from the agent's live state) are the largest share of its vCPUs. It can be
overridden per host aggregate with the aggregate metadata key
``pcpu_availability_weight_multiplier``.

Possible values:
* a positive number: prefer hosts where the instance gets more pCPUs
* 0.0: ignore pCPU availability (the part is not computed)
"""),
    cfg.IntOpt('host_state_ttl',
               default=180,
               min=1,
               help="""
Seconds a host's live state stays usable after it was received.

Older (or missing) state makes the weigher neutral for that host; for
All-share and Clean requests the filter then applies ``stale_host_state``.
A heartbeat confirming the state counts as receiving it. Set it to two or
three times the agents' longest silence (``[agent] state_heartbeat_s``, or
``period_s`` for agents pinned to payload 1.5; at least twice): a dead or
hung agent's host stops getting All-share/Clean requests at most this long
after its last message.

Related options:

* ``stale_host_state``
"""),
    cfg.StrOpt('stale_host_state',
               default='refuse',
               choices=[
                   ('refuse', 'refuse All-share/Clean requests on a host '
                              'whose agent state is missing or stale while '
                              'other agents are heard'),
                   ('trust_placement', 'leave such hosts to Placement '
                                       '(the CUSTOM_CACHEAWARE_AGENT trait '
                                       'alone)'),
               ],
               help="""
What CacheDomainFilter does with All-share and Clean requests on a host
whose live state is missing or older than ``host_state_ttl``.

With ``refuse`` the host is refused while the bus carries other agents'
state (its agent is dead, hung or cut off). The host is left to Placement
(the ``CUSTOM_CACHEAWARE_AGENT`` trait, which the agent removes when it
stops cleanly) when no host's state has arrived for ``host_state_ttl / 2``
seconds (a RabbitMQ outage or no agent publishing: refusing every host
would stop all cache-aware scheduling), and for ``host_state_ttl / 2``
seconds after the bus is heard again (scheduler start, end of an outage),
while live agents have not all published yet. A fresh state always
decides by the agent's reported health.

Related options:

* ``host_state_ttl``
* ``[agent] period_s`` and ``[agent] notifications`` on the compute nodes
"""),
    cfg.IntOpt('claim_memory_seconds',
               default=120,
               min=0,
               help="""
Seconds at most a scheduler process remembers a cache-domain claim it made.

Each scheduler process remembers the domains it handed out and saw claimed,
so that a burst of requests (a multi-create, concurrent boots) is spread
over a host's domains before the agent's live state shows the new
instances. A claim is forgotten as soon as the live state lists the
instance, when a state received ``claim_settle_seconds`` later still does
not (the claim did not stick), or after this many seconds (hosts without
an agent: the scheduler does not see deletes there, so a long memory
misleads more than it helps). 0 turns the memory off.

Related options:

* ``claim_settle_seconds``
"""),
    cfg.IntOpt('claim_settle_seconds',
               default=60,
               min=1,
               help="""
Seconds after a claim by which the agent's live state is expected to list
the new instance.

A live state received this long after a claim that does not list the
instance ends the scheduler's memory of the claim (the build failed or
went elsewhere). Set it above the time an instance takes to spawn plus the
agent's report interval.

Related options:

* ``claim_memory_seconds``
"""),
    cfg.IntOpt('claim_pending_seconds',
               default=10,
               min=1,
               help="""
Seconds at most a domain reservation counts before Nova's claim of it is
seen.

In the per-domain provider model the domain a request claims is chosen
when Nova reads the candidate it is about to claim, and reserved at once,
so that concurrent requests of the process (and, shared, of the other
workers) choose other domains. Nova's consumption of the host turns the
reservation into a claim; a request that failed (NoValidHost, Placement
down) leaves one that stops counting after this many seconds. Keep it
above the time one Placement claim takes under load, retries included.

Related options:

* ``claim_memory_seconds`` (a reservation never counts longer)
"""),
    cfg.BoolOpt('listen_for_host_state',
                default=True,
                help="""
Start a notification listener for ``cacheaware.host.state`` in every
scheduler worker process (on first use of the plugins).

When False the plugins see no live state: the filter relies on Placement
alone and the weigher is neutral.
"""),
    cfg.BoolOpt('share_claims',
                default=True,
                help="""
Let the scheduler worker processes tell each other their cache-domain
claims.

Each worker publishes every claim it records as a ``cacheaware.host.claim``
notification on ``host_state_topic``, and its live-state listener counts
the claims of the other workers like its own, so that concurrent requests
handled by different workers (``[scheduler] workers`` > 1, or several
scheduler hosts) see each other's claims at once instead of one agent
period later. Needs ``listen_for_host_state``.
"""),
    cfg.BoolOpt('request_host_state',
                default=True,
                help="""
Ask the agents for their full state instead of waiting for it.

A worker whose listener starts casts ``send_state`` to every agent (one
fanout on ``agent_rpc_topic``): without it, a worker that (re)starts knows
only the hosts whose state changes, until each agent's resync (``[agent]
state_resync_s``, 300 s), and leaves the others to ``stale_host_state``
meanwhile. The agents answer within their ``state_request_spread_s``. A
worker that hears a heartbeat naming a state it never received (lost, or
sent before it listened) asks that host again, at most once a minute per
host. Needs the agents' describe RPC server (``[cacheaware_status]
agent_rpc``, on by default) on the bus this worker listens on.
"""),
    cfg.StrOpt('agent_rpc_topic',
               default='cacheaware-agent',
               help="""
oslo.messaging RPC topic of the agents' RPC servers (the agents'
``[cacheaware_status] agent_rpc_topic``): where ``request_host_state``
casts.
"""),
    cfg.StrOpt('host_state_topic',
               default='cacheaware_host_state',
               help="""
oslo.messaging notification topic the agents publish host state on.

Related options:

* ``[oslo_messaging_notifications] transport_url`` picks the bus
  (default: nova's ``transport_url``).
"""),
    cfg.StrOpt('host_state_pool_prefix',
               default='cacheaware-scheduler',
               help="""
Prefix of the per-process listener pool (queue) names.

Each scheduler worker listens on its own queue named
``<prefix>-<hostname>-<pid>`` so that every worker receives every host's
state. Add a RabbitMQ policy with ``expires`` for queues matching
``^<prefix>-`` so queues of stopped workers are removed.
"""),
    cfg.StrOpt('metrics_listen',
               default='',
               help="""
``<address>:<base port>`` of the scheduler plugins' Prometheus metrics;
empty (the default): no metrics endpoint.

nova-scheduler forks several worker processes and each has its own live
state cache, claims and counters: each worker serves its own metrics on the
first free port of ``<base port>`` ... ``<base port> + metrics_ports - 1``
(Prometheus scrapes them all and sums). A worker that finds no free port
logs it once and schedules as before, without metrics.

Related options:

* metrics_ports
"""),
    cfg.IntOpt('metrics_ports',
               default=0,
               min=0,
               help="""
How many consecutive ports, from metrics_listen's base port, the scheduler
workers take (one each).

0 (the default): nova-scheduler's ``[scheduler] workers`` where it is set,
else the number of CPUs (nova-scheduler's own default worker count).

Related options:

* metrics_listen
"""),
]


def register_opts(conf):
    """Register the ``[cacheaware_scheduler]`` options on ``conf``."""
    groups.register(conf, scheduler_group, scheduler_opts)


def list_opts():
    """Options for oslo-config-generator."""
    return {scheduler_group: scheduler_opts}
