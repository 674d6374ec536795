"""``[numa_balance]``: the agent's full-NUMA hand-off capability."""

from oslo_config import cfg

from nova_cacheaware.conf import groups

numa_balance_group = cfg.OptGroup(
    'numa_balance',
    title='Full-NUMA CPU and memory hand-off',
    help='Options of the numa_balance agent capability (enable it with '
         '``[agent] capabilities = numa_balance``); it acts on instances '
         'whose flavor has cacheaware:numa=full.')

numa_balance_opts = [
    cfg.FloatOpt('busy_threshold',
                 default=0.9, min=0.01, max=1.0,
                 help="""
CPU use per held CPU of a guest node at or over which a VM takes one more CPU
of that host node (from a VM that stays under it after giving one).

Possible values:

* 0.9 (default): busy as in study 003
"""),
    cfg.IntOpt('max_cpu_moves',
               default=1, min=0,
               help="""
Most CPUs handed over per host node and pass (study 003 moves one). With
the agent's period of at least a second, a higher value lets a busy VM reach
its share sooner.
"""),
    cfg.IntOpt('low_free_mib',
               default=400, min=0,
               help="""
Guest free memory (MiB, from the balloon statistics) under which a VM takes
``step_mib`` from a VM that keeps at least ``low_free_mib + step_mib`` free.

Related options:

* ``step_mib``
"""),
    cfg.IntOpt('step_mib',
               default=400, min=2,
               help='MiB moved per memory hand-off (one per pass).'),
    cfg.IntOpt('min_memory_mib',
               default=256, min=0,
               help="""
Memory floor of a VM in MiB below which it never gives memory; a flavor's
``cacheaware:memory_min_mb`` raises it for that VM.
"""),
    cfg.BoolOpt('per_node_floor',
                default=True,
                help="""
Keep one CPU on every guest node that has memory (study 003's floor). False
keeps one CPU per VM only on the node of vCPU 0: for hosts with fewer CPUs
per NUMA node than full-NUMA VMs, at the price of guest nodes running with
every vCPU offline.
"""),
    cfg.StrOpt('host_nodes',
               default='',
               help="""
Host NUMA nodes and their CPUs the VMs divide, as ``node:cpulist`` pairs
separated by ``;`` (for example ``0:0-7;1:8-15``).

Possible values:

* empty (default): the host topology's NUMA nodes, cut to ``[agent]
  cpu_shared_set`` when that is set
"""),
    cfg.FloatOpt('guest_agent_timeout_s',
                 default=2.0, min=0.5,
                 help="""
Seconds to wait for a guest's QEMU guest agent. A VM whose agent does not
answer leaves the scheme: its full CPU set is restored.
"""),
]


def register_opts(conf):
    """Register the ``[numa_balance]`` options on ``conf``."""
    groups.register(conf, numa_balance_group, numa_balance_opts)


def list_opts():
    """Options for oslo-config-generator."""
    return {numa_balance_group: numa_balance_opts}
