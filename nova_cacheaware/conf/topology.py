"""``[topology]``: where the agent reads the host topology from."""

from oslo_config import cfg

from nova_cacheaware.conf import groups

topology_group = cfg.OptGroup(
    'topology',
    title='Host topology discovery',
    help='How nova-cacheaware discovers CPUs, NUMA nodes and cache domains.')

topology_opts = [
    cfg.StrOpt('source',
               default='auto',
               choices=[('auto', 'sysfs, falling back to libvirt when sysfs '
                                 'is not readable'),
                        ('sysfs', 'Linux sysfs only'),
                        ('libvirt', 'libvirt host capabilities only')],
               help='Source of the host topology.'),
    cfg.StrOpt('sysfs_root',
               default='/sys',
               help="""
Directory standing in for /sys.

Possible values:

* /sys (the default) on a compute node
* a copied tree, for debugging another host's topology

Related options:
* source
"""),
    cfg.StrOpt('libvirt_uri',
               default='qemu:///system',
               help='libvirt connection URI for host capabilities.'),
    cfg.StrOpt('cache_level',
               default='auto',
               choices=['auto', '1', '2', '3', '4'],
               help="""
Cache level whose instances form the cache domains.

Possible values:

* auto: the lowest level shared by two or more physical cores (L2 on Intel
  E-core clusters and Core 2, L3/CCX on AMD Zen and most Xeons)
* 1-4: that level; the agent refuses to start if the host has no such cache
"""),
]


def register_opts(conf):
    """Register the ``[topology]`` options on ``conf``."""
    groups.register(conf, topology_group, topology_opts)


def list_opts():
    """Options for oslo-config-generator."""
    return {topology_group: topology_opts}
