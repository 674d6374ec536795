"""``[agent]``: the per-compute-node daemon ``nova-cacheaware-agent``."""

from oslo_config import cfg

from nova_cacheaware.conf import groups

agent_group = cfg.OptGroup(
    'agent',
    title='nova-cacheaware-agent',
    help='The compute-node agent that keeps memory-bound instances inside '
         'one cache domain by live-repinning floating vCPUs.')

agent_opts = [
    cfg.StrOpt('libvirt_uri',
               default='qemu:///system',
               help="""
libvirt connection URI of the hypervisor whose domains the agent manages.

Possible values:

* qemu:///system on a Nova libvirt compute node (the default)
* test:///default for a dry run against libvirt's test driver
"""),
    cfg.FloatOpt('period_s',
                 default=10.0,
                 min=1.0,
                 help="""
Seconds between two periodic reconciles.

The agent also reconciles right after every libvirt lifecycle event (start,
resume, migration, reboot), so the period only bounds how long an external
change (a pin changed by hand, a lost event) can last.
"""),
    cfg.StrOpt('state_payload_version',
               default='2.0',
               choices=[('2.0', 'compact state when it changes and at '
                                'state_resync_s, heartbeats between'),
                        ('1.5', 'the whole state at every pass, for '
                                'nova-schedulers whose nova-cacheaware '
                                'reads only 1.x')],
               help="""
The ``cacheaware.host.state`` payload version the agent sends.

Upgrade the nova-schedulers (their nova-cacheaware plugins) first: they read
both. Pin the agents to 1.5 until then, and unpin them once every scheduler
runs the new release (doc/source/admin/live-state.rst).

Related options:

* state_heartbeat_s, state_resync_s
* ``[cacheaware_scheduler] host_state_ttl`` on the schedulers
"""),
    cfg.FloatOpt('state_heartbeat_s',
                 default=60.0,
                 min=1.0,
                 help="""
Seconds at most between two messages to the schedulers (payload 2.0).

Between changes of its state the agent sends a heartbeat (host, health and
the generation of its newest state, a few hundred bytes) when it has sent
nothing for this long. The schedulers' ``host_state_ttl`` must be at least
twice this (three times leaves room for a lost heartbeat): a host whose
agent is not heard for ``host_state_ttl`` is treated as dead.

Related options:

* ``[cacheaware_scheduler] host_state_ttl``
"""),
    cfg.FloatOpt('state_resync_s',
                 default=300.0,
                 min=1.0,
                 help="""
Seconds at most between two full states (payload 2.0).

The full state is sent whenever it changes, and again after this long
without a change: a scheduler that missed a message, or started since,
has the host's state again within this time (until then it knows the
agent is alive and leaves the host to Placement). Each agent draws the
interval anew after every state between 75 % and 100 % of this value, so
that agents restarted together (an upgrade) do not resend their states
together every interval. A scheduler that starts, or notices it missed a
state, asks for it sooner (``state_request_spread_s``).
"""),
    cfg.FloatOpt('state_request_spread_s',
                 default=20.0,
                 min=0.0,
                 help="""
Seconds over which the agents spread their answers to a starting scheduler.

A nova-scheduler worker that starts asks every agent for its full state
(one fanout cast on ``[cacheaware_status] agent_rpc_topic``, answered by the
describe RPC server's ``send_state``): each agent sends it at its first pass
after a delay drawn from 0 to this many seconds, so that a region's states
reach the schedulers within this time plus one ``period_s`` without arriving
all at once. Requests coalesce: schedulers restarting one after the other
within this time get one state per host. A request for one host (a scheduler
missed its update) is answered at the next pass, without delay.

Related options:

* ``[cacheaware_status] agent_rpc`` (off: requests are not heard, and a
  starting scheduler waits for each host's change or resync)
* ``[cacheaware_scheduler] request_host_state`` on the schedulers
"""),
    cfg.IntOpt('max_repins_per_period',
               default=64,
               min=1,
               help="""
Most vCPU repins the agent sends in any window of ``period_s`` seconds.

Changes above the limit are deferred to the next reconcile, so a large
re-plan is spread over several periods instead of disturbing every guest at
once.

Related options:

* period_s
"""),
    cfg.BoolOpt('dry_run',
                default=False,
                help='Decide and log, but never change a pin. The command '
                     'line flag --dry-run sets this too.'),
    cfg.StrOpt('pin_record_dir',
               default='/var/lib/nova-cacheaware/pins',
               help="""
Directory where the agent records, per instance, the CPUs it pinned each
vCPU to (``<instance uuid>.json``).

The agent's pins are live-only: a guest Nova starts again (hard reboot,
stop and start) comes up on Nova's whole CPU set. The libvirt hook
installed by ``nova-cacheaware install-hook`` reads this record when QEMU
has started and puts the new vCPU threads back on the recorded CPUs,
inside the set Nova's XML allows, so a guest restarted while the agent
is down keeps its cache domain. Install the hook with the same directory
(``--pin-record-dir``). Empty: no record.
"""),
    cfg.StrOpt('cpu_shared_set',
               help="""
CPUs that floating (``hw:cpu_policy=shared``) guests may use, as a cpulist.

Cache domains are cut to these CPUs before planning. Leave unset to use
every online CPU; set it to the same value as Nova's ``[compute]
cpu_shared_set`` on hosts that also run dedicated guests.

Possible values:

* unset (the default): every online CPU
* a cpulist such as ``2-15,18-31``
"""),
    cfg.FloatOpt('max_vcpus_per_cpu',
                 default=1.0,
                 min=0.0,
                 help='Memory-bound vCPUs per CPU a cache domain may take '
                      '(capacity = floor(CPUs x this); on oversubscribed '
                      'hosts, the host\'s CPU allocation ratio).'),
    cfg.StrOpt('plan_objective',
               default='contract',
               choices=('contract', 'throughput'),
               help='The planner\'s objective (nova-cacheaware plan '
                    '"objective"): contract (fewest split, then fewest '
                    'Dirty domains) or throughput (on small oversubscribed '
                    'hosts, the best estimated performance under CPU '
                    'time-sharing; the contract elsewhere).'),
    cfg.BoolOpt('counters',
                default=True,
                help="""
Read hardware counters (cycles, instructions, LLC misses) of each vCPU thread
with perf_event_open.

On hosts without a hardware PMU the agent says so once and goes on with the
declared workloads. Reading vCPU thread ids uses a QEMU monitor command,
which libvirt records as a "custom-monitor" taint on the domain.
"""),
    cfg.StrOpt('counter_trace_dir',
               help="""
Directory of recorded counter traces to replay instead of reading hardware
counters, for test clouds without a hardware PMU (nested or TCG guests).

``<directory>/<instance uuid>.json`` is a trace of one VM (the format of
``tests/fixtures/counter_traces``: ``{"passes": [{"<vm>/<vcpu>": {"cycles":
N, "instructions": N, "llc_misses": N}}]}``, or per pass ``{"all": {...},
"partial": {...}}`` for the two share modes): the instance's vCPUs get one
recorded pass per agent pass, from the first again after the last.
Instances without a file get no counts. Only the counts are replayed: the
classification of ``auto`` instances (sampling windows, votes, hysteresis)
and everything after it is the agent's own, as with hardware counters. No
vCPU thread ids are read (no QEMU monitor command). Set, it replaces
``counters`` (said at start). Never set it on a production host: the
classes would be the trace's, not the guests'.

Possible values:

* unset (the default): hardware counters, as ``counters`` says
* a directory path, e.g. ``/var/lib/nova-cacheaware/counter-traces``

Related options:

* counters, sampling_passes, sampling_interval_s
"""),
    cfg.StrOpt('spec_source',
               default='nova',
               choices=[('nova', 'read flavor extra specs from the Nova API '
                                 'with the [nova] credentials (the '
                                 'default: a Nova compute node)'),
                        ('file', 'read them from spec_file'),
                        ('none', 'no Nova API: every instance is "auto" and '
                                 'no flavor opts in to a capability')],
               help="""
Where declared workloads (``cacheaware:workload``), ``hw:cpu_policy`` and
every capability's opt-in extra spec come from.

The default, ``nova``, needs the ``[nova]`` credentials (``auth_type`` and
the options of its plugin); without them the agent stops at start with an
error saying so. ``none`` keeps the agent to repinning by its own
classification: it warns at start once per capability that can then act
on no instance.

Related options:

* ``[nova]`` auth_type, auth_url, ...
* spec_file
"""),
    cfg.StrOpt('spec_file',
               help="""
JSON file ``{"<instance uuid>": {"<extra spec>": "<value>"}}``, re-read when
it changes.

Related options:

* spec_source: must be ``file``
"""),
    cfg.ListOpt('capabilities',
                default=[],
                help="""
Run-time capabilities to run after each repin pass, by entry-point name in
the ``nova_cacheaware.agent.capabilities`` group (for example
``vcpu_sizing``, ``balloon``, ``numa_balance``).

Each acts only on instances whose flavor opted in through its
``cacheaware:`` extra spec; an unknown name stops the agent at start with a
clear error.
"""),
    cfg.StrOpt('metrics_listen',
               default='',
               help="""
``<address>:<port>`` where the agent serves its Prometheus metrics (plain
HTTP, ``/metrics``, from a daemon thread); empty (the default): no metrics
endpoint.

Off by default: a Prometheus server scrapes compute nodes over the network,
so a loopback default would serve nobody and still take a port on every
node. Bind it to the management network's address (``[::]`` for every
IPv6 and IPv4 address) and port 9465 unless that is taken. A port that
cannot be bound is logged and the agent goes on pinning without metrics.
The metrics are listed in doc/source/admin/metrics.rst.

Possible values:

* empty: off
* ``127.0.0.1:9465``, ``192.0.2.10:9465``, ``[::]:9465``
"""),
]


def register_opts(conf):
    """Register the ``[agent]`` options on ``conf``."""
    groups.register(conf, agent_group, agent_opts)


def list_opts():
    """Options for oslo-config-generator."""
    return {agent_group: agent_opts}
