"""The host topology from the ``[topology]`` source (sysfs or libvirt)."""

from nova_cacheaware import exception
from nova_cacheaware.topology import libvirt_caps
from nova_cacheaware.topology import sysfs


def read_topology(conf):
    """The host topology from ``[topology]``."""
    source = conf.topology.source
    if source == 'libvirt':
        return libvirt_caps.read_topology(conf.topology.libvirt_uri)
    try:
        return sysfs.read_topology(conf.topology.sysfs_root)
    except exception.TopologyError:
        if source == 'sysfs':
            raise
        return libvirt_caps.read_topology(conf.topology.libvirt_uri)
