"""``[vcpu_sizing]``: the agent's pCPU-Est vCPU sizing capability.

Read by nova-cacheaware-agent when ``[agent] capabilities`` names
``vcpu_sizing``.
"""

from oslo_config import cfg

from nova_cacheaware.conf import groups

vcpu_sizing_group = cfg.OptGroup(
    'vcpu_sizing',
    title='pCPU-Est vCPU sizing (agent capability vcpu_sizing)',
    help='Estimates the pCPUs each instance really gets, publishes them, '
         'and for instances with cacheaware:vcpu_sizing=recommend or apply '
         'tells the guest (and for apply, onlines that many vCPUs).')

vcpu_sizing_opts = [
    cfg.FloatOpt('hysteresis',
                 default=0.25,
                 min=0.0,
                 help="""
Band, in pCPUs, around the online vCPU count within which ``apply`` changes
nothing.

With ``k`` vCPUs online, the count stays while the estimate lies in
``(k - 1 - hysteresis, k + hysteresis]``; outside it the count becomes the
recommendation.

Related options:

* ``stable_passes``
"""),
    cfg.IntOpt('stable_passes',
               default=2,
               min=1,
               help="""
Passes in a row a new vCPU count must be recommended before ``apply``
onlines or offlines vCPUs (1: act at once).
"""),
    cfg.IntOpt('guest_agent_timeout_s',
               default=5,
               min=1,
               help="""
Seconds to wait for an instance's QEMU guest agent to answer one command.
A guest that does not answer is left as it is and retried next pass.
"""),
    cfg.StrOpt('guest_file',
               default='/run/cacheaware/pcpus',
               help="""
File inside the guest, written through the QEMU guest agent, that holds the
recommended thread count on its first line (``recommend`` and ``apply``).
The guest helper ``cacheaware-pcpus`` prints it.
"""),
    cfg.IntOpt('guest_refresh_s',
               default=300,
               min=0,
               help="""
Rewrite the guest file at least this often even when nothing changed (a
rebooted guest loses ``/run``). 0: only on change.
"""),
    cfg.BoolOpt('kvm_exit_tracepoint',
                default=True,
                help="""
Count KVM exits (all, and pause-loop exits) per vCPU thread through the
``kvm:kvm_exit`` tracepoint with ``perf_event_open``. Needs tracefs and the
kvm module; where either is missing the agent says so once and goes on
without it. Reading vCPU thread ids is a QEMU monitor command, which libvirt
marks as ``custom-monitor`` taint.
"""),
    cfg.StrOpt('apply_when',
               default='storm',
               choices=[('storm', 'offline vCPUs down to the pCPU-Est '
                                  'recommendation only while a spin storm '
                                  'lasts, every vCPU online after it'),
                        ('always', 'keep the recommended number online at '
                                   'every pass (hysteresis, stable_passes)')],
               help="""
When ``cacheaware:vcpu_sizing=apply`` changes the number of online vCPUs.

Related options:

* ``storm_*``: the spin-storm detector
* ``hysteresis``, ``stable_passes``: ``always`` only
"""),
    cfg.FloatOpt('storm_enter_delay',
                 default=0.50, min=0.0, max=1.0,
                 help="""
Mean run delay (share of the period the instance's online vCPUs waited
runnable for a pCPU) at and above which a period votes "spin storm".
Calibrated with ``benchmarks/storm_bench.py`` (doc: admin/vcpu-sizing).

Related options:

* ``storm_leave_delay`` must be lower.
"""),
    cfg.FloatOpt('storm_leave_delay',
                 default=0.20, min=0.0, max=1.0,
                 help='Mean run delay at and below which a period votes '
                      '"quiet".'),
    cfg.FloatOpt('storm_enter_pause_exits',
                 default=1000.0, min=0.0,
                 help="""
Where pause-loop exits are counted (``kvm_exit_tracepoint``): mean pause
exits per second per online vCPU a storm vote needs as well (run delay
without spinning is plain CPU contention).
"""),
    cfg.FloatOpt('storm_leave_pause_exits',
                 default=100.0, min=0.0,
                 help='Pause exits per second per vCPU at and below which '
                      'a period votes "quiet".'),
    cfg.IntOpt('storm_enter_periods',
               default=2, min=1,
               help='Storm votes in a row (agent periods) before a storm '
                    'starts.'),
    cfg.IntOpt('storm_leave_periods',
               default=3, min=1,
               help="""
Quiet votes in a row before a storm ends. Doubled, up to
``storm_max_leave_periods``, each time a storm comes back within twice
that many periods of the last one's end (the reaction itself removes the
run delay: a cap that stays must not make the instance flap).
"""),
    cfg.IntOpt('storm_max_leave_periods',
               default=48, min=1,
               help='Most quiet periods a storm may need to end (the '
                    'back-off limit).'),
]


def register_opts(conf):
    """Register the ``[vcpu_sizing]`` options on ``conf``."""
    groups.register(conf, vcpu_sizing_group, vcpu_sizing_opts)


def list_opts():
    """Options for oslo-config-generator."""
    return {vcpu_sizing_group: vcpu_sizing_opts}
