"""Register an option group on one ``ConfigOpts`` without sharing it.

oslo.config keeps a group's options on the ``OptGroup`` object: a group
object registered on two ``ConfigOpts`` (nova-scheduler's global ``CONF``
and the agent's private one, or two tests' confs) shares its options
between them, so one process's options leak into the other's. Every
module of this package registers a private copy instead.
"""

from oslo_config import cfg


def register(conf, group, opts):
    """Register ``opts`` in a private copy of ``group`` on ``conf``."""
    conf.register_group(cfg.OptGroup(group.name, title=group.title,
                                     help=group.help))
    conf.register_opts(opts, group=group.name)
