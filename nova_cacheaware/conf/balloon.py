"""``[balloon]``: the agent's hit-ratio memory balancer (capability).

Enabled with ``[agent] capabilities = balloon``; it manages only instances
whose flavor has ``cacheaware:memory_policy=hit_ratio``.  The operator guide
(doc/source/admin/balloon.rst) explains the safety model and tuning.
"""

from oslo_config import cfg

from nova_cacheaware.conf import groups

balloon_group = cfg.OptGroup(
    'balloon',
    title='Hit-ratio memory ballooning',
    help='The agent capability that moves memory between opted-in '
         'instances by their page-cache hit ratio.')

balloon_opts = [
    cfg.FloatOpt('interval_s',
                 default=10.0,
                 min=1.0,
                 help="""
Seconds between two balancer rounds (the study's delta).

The capability keeps its own clock: an agent pass that comes sooner does
nothing for ballooning. Each round collects the guest reports started in
the previous round, decides and applies, then starts the next reports.

Related options:

* ``sample_s`` must be shorter than this.
"""),
    cfg.IntOpt('sample_s',
               default=5,
               min=1,
               max=600,
               help="""
Seconds over which the guest helper measures the hit ratio (its argument).

Must be shorter than ``interval_s`` so the report is ready at the next round.
"""),
    cfg.StrOpt('helper_path',
               default='/usr/sbin/cacheaware-guest-stats',
               help="""
Path of the guest helper inside the guest, run with ``guest-exec``.

The image must carry ``deploy/guest-tools/cacheaware-guest-stats`` there
and run the QEMU guest agent with ``guest-exec`` allowed.
"""),
    cfg.StrOpt('policy',
               default='default',
               choices=[('default', 'working-set estimates, bang-bang '
                                    '(nova_cacheaware.policy.'
                                    'balloon_default)'),
                        ('study_a', "study 002's rule, pool shared by hit "
                                    'ratio'),
                        ('study_b', "study 002's rule, pool shared by miss "
                                    'ratio')],
               help='Which policy decides the memory of opted-in instances.'),
    cfg.FloatOpt('threshold',
                 default=0.99,
                 min=0.0,
                 max=1.0,
                 help='Hit ratio at and above which an instance is '
                      'satisfied (a donor).'),
    cfg.FloatOpt('alpha',
                 default=0.1,
                 min=0.0,
                 max=1.0,
                 help="Study policies: share of a donor's memory given per "
                      'round (grows 10 % per round of streak).'),
    cfg.FloatOpt('beta',
                 default=0.1,
                 min=0.0,
                 max=1.0,
                 help="Study policies: share of every instance's memory put "
                      'in the pool each round.'),
    cfg.IntOpt('pool_mib',
               default=0,
               min=0,
               help="""
MiB the operator set aside for ballooning on this host.

The opted-in instances together are never held more than this below their
flavor RAM (the sum of reductions that can be handed to other instances).
0 disables shrinking: the balancer then only gives memory back.
"""),
    cfg.IntOpt('floor_mib',
               default=256,
               min=128,
               help="""
Least memory of an instance whose flavor has no ``cacheaware:memory_min_mb``.

An instance's floor is ``cacheaware:memory_min_mb`` when set, else this
(never above its flavor RAM).
"""),
    cfg.IntOpt('margin_mib',
               default=64,
               min=0,
               help="""
MiB kept above what the guest uses (balloon statistics ``available -
usable``: memory it cannot reclaim) when shrinking it.
"""),
    cfg.IntOpt('max_step_mib',
               default=256,
               min=1,
               help='Most MiB one instance grows or shrinks in one round.'),
    cfg.IntOpt('max_change_mib_per_period',
               default=4096,
               min=1,
               help='Most MiB moved in all (grown plus shrunk) in any '
                    'window of ``rate_period_s``.'),
    cfg.FloatOpt('rate_period_s',
                 default=60.0,
                 min=1.0,
                 help='Window of ``max_change_mib_per_period``.'),
    cfg.IntOpt('guest_agent_timeout_s',
               default=5,
               min=1,
               help='Seconds to wait for one guest-agent command.'),
    cfg.FloatOpt('report_interval_s',
                 default=0.0,
                 min=0.0,
                 help="""
Study 002's adaptive reporting interval gamma, in seconds (0: off, every
instance's report is used every round).

When set, an instance's next report is used after gamma seconds while its
hit ratio is under ``threshold``, 1.5 gamma while it is over it, and 0.5
gamma once it has been over it three rounds in a row, kept within
``[min_report_interval_s, max_report_interval_s]`` and rounded up to the
next round (``interval_s``, the study's delta). ``--once --dump-state``
shows each instance's ``next_report_in_s``.
"""),
    cfg.FloatOpt('min_report_interval_s',
                 default=5.0,
                 min=1.0,
                 help='Shortest adaptive reporting interval (seconds).'),
    cfg.FloatOpt('max_report_interval_s',
                 default=60.0,
                 min=1.0,
                 help='Longest adaptive reporting interval (seconds).'),
]


def register_opts(conf):
    """Register the ``[balloon]`` options on ``conf``."""
    groups.register(conf, balloon_group, balloon_opts)


def list_opts():
    """Options for oslo-config-generator."""
    return {balloon_group: balloon_opts}
