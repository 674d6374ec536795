"""Print the tempest plugin's ``[cacheaware] numa_shapes`` for the devcloud.

One ``host:CPUs per node`` item per compute of the running devcloud
(``devcloud-fake-zen:8+8,devcloud-libvirt:2``): the shape
``nova-cacheaware flavor numa-full`` mirrors on that host (nodes with
memory, the CPUs guests may use). The fake computes' shapes come from their
topology files, the libvirt compute's from this machine's sysfs cut to
``DEVCLOUD_CPU_SHARED_SET`` (default: every online CPU), as the devcloud
configures its ``[compute] cpu_shared_set``.
"""

import json
import os
import re
import sys

import cloud as devcloud

from nova_cacheaware.numa_balance import flavor as numa_flavor
from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import report
from nova_cacheaware.topology import sysfs


def topology_of(host):
    """The ``Topology`` a devcloud compute reports, or None."""
    if host in devcloud.LIBVIRT_HOSTS:
        return sysfs.read_topology()
    name = re.sub(r'-[0-9]+$', '', host.replace('devcloud-', '', 1))
    name = re.sub(r'-plain$', '', name)
    path = os.path.join(devcloud.TOPOLOGIES, name + '.json')
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return report.from_report(json.load(f))


def shape(topology, usable=None):
    """CPUs per mirrored node, joined by '+' (``8+8``)."""
    nodes = numa_flavor.host_nodes_from_topology(topology, usable)
    flavor = numa_flavor.derive(nodes, 1024 * len(nodes))
    return '+'.join(str(len(n.vcpus)) for n in flavor.nodes)


def main():
    """Print ``host:shape,...`` for every devcloud hypervisor."""
    shared = os.environ.get('DEVCLOUD_CPU_SHARED_SET')
    items = []
    for hv in devcloud.Cloud().hypervisors():
        host = hv['service']['host']
        topology = topology_of(host)
        if topology is None:
            continue
        usable = None
        if host in devcloud.LIBVIRT_HOSTS and shared:
            usable = cpulist.parse_cpulist(shared)
        items.append('%s:%s' % (host, shape(topology, usable)))
    print(','.join(sorted(items)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
