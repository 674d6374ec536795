"""The agent's reporting and run-time classification options.

They live in ``[agent]`` of the agent's configuration file, next to the
``[placement]`` keystoneauth options and oslo.messaging's own
(``[DEFAULT] transport_url``, ``[oslo_messaging_notifications]``). The
notification topic is the scheduler's option
``[cacheaware_scheduler] host_state_topic`` itself (the same option object,
so both sides read the same name and default).
"""

from oslo_config import cfg

from nova_cacheaware.conf import agent as agent_conf
from nova_cacheaware.conf import groups
from nova_cacheaware.conf import scheduler as scheduler_conf

reporting_opts = [
    cfg.BoolOpt('report_placement',
                default=False,
                help="""
Keep this host's cache domain providers in Placement: create and update them
at start and when the usable CPUs change, set ``reserved`` of
``CUSTOM_CACHE_DOMAIN_MEMBOUND`` where an undeclared VM was found
memory-bound, and read each instance's allocation to pin instances that hold
a domain to it.

Needs the ``[placement]`` credentials (Placement's admin role). When False,
or while Placement is unreachable, the agent still pins.
"""),
    cfg.StrOpt('hypervisor_hostname',
               help="""
Name of this host's compute node resource provider in Placement.

Nova names it after the hypervisor hostname; unset, the agent asks libvirt
(``virConnectGetHostname``), which is what Nova's libvirt driver uses.
"""),
    cfg.IntOpt('membound_slots',
               default=1,
               min=1,
               help="""
``total`` of ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` per cache domain provider: how
many memory-bound VMs a domain takes before Placement refuses more (1: a
domain stays Clean).
"""),
    cfg.FloatOpt('domain_cpu_allocation_ratio',
                 min=0.0001,
                 help="""
Allocation ratio of ``CUSTOM_CACHE_DOMAIN_VCPU``. Unset: the ratio of the
compute node provider's ``VCPU`` inventory (what Nova set).

Leave it unset with ``[placement] provider_model = host`` (the default):
the scheduler sizes each domain's room with Nova's ``cpu_allocation_ratio``
of the host, and the agent chooses domains and writes ``max_unit`` with
this ratio; a different value makes the scheduler's room checks and
predictions disagree with the agent's choice.
"""),
    cfg.BoolOpt('notifications',
                default=False,
                help="""
Emit ``cacheaware.host.state`` for the scheduler's live state after every
pass, on ``[cacheaware_scheduler] host_state_topic`` over the notification
transport (``[oslo_messaging_notifications] transport_url``, else
``[DEFAULT] transport_url``).

A broker outage never blocks the agent: one connection attempt per message,
and the newest state is sent at the next pass.
"""),
    cfg.IntOpt('sampling_passes',
               default=5,
               min=1,
               help="""
Passes a classification sampling window lasts: an ``auto`` instance is put
into the other sharing mode (All-share in an Empty domain, or Partial-share
on Nova's CPUs) for this many passes to sample its CPI there, then restored.
One window at a time per host. Needs hardware counters (``counters``).
"""),
    cfg.FloatOpt('sampling_interval_s',
                 default=600.0,
                 min=0.0,
                 help="""
Least seconds between the end of one sampling window of an instance and the
start of its next.
"""),
    cfg.IntOpt('classifier_min_samples',
               default=8,
               min=2,
               help="""
Samples per vote of the classifier of ``auto`` instances: a vote is taken
when both share modes have this many CPI samples (one per vCPU and pass),
and every this many LLC-miss samples. Fewer classify sooner on weaker
evidence (the CPI test's p-value needs several samples a side).

Related options:

* classifier_dwell: votes in a row that change an instance's class
"""),
    cfg.IntOpt('classifier_dwell',
               default=3,
               min=1,
               help="""
Votes in a row that change an ``auto`` instance's class (hysteresis): with
one LLC-miss sample per pass, a one-vCPU instance is classified after
``classifier_min_samples`` x this passes.
"""),
    cfg.StrOpt('host',
               sample_default='<the host name>',
               help="""
The Nova compute service host name of this node (nova-compute's
``[DEFAULT] host``), which the scheduler looks host states up by. Unset:
this machine's host name, Nova's default too.
"""),
]


def register_opts(conf):
    """Register the reporting options and the shared topic option."""
    groups.register(conf, agent_conf.agent_group, reporting_opts)
    groups.register(conf, scheduler_conf.scheduler_group, [topic_opt()])


def topic_opt():
    """The scheduler's ``host_state_topic`` option (one object, shared)."""
    return next(o for o in scheduler_conf.scheduler_opts
                if o.dest == 'host_state_topic')


def list_opts():
    """Options for oslo-config-generator (the agent's file)."""
    return {agent_conf.agent_group: reporting_opts,
            scheduler_conf.scheduler_group: [topic_opt()]}
