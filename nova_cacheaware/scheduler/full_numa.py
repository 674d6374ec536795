"""``FullNUMAFilter``: full-NUMA requests land only on hosts they mirror.

A flavor with ``cacheaware:numa=full`` (written by ``nova-cacheaware flavor
numa-full``) gives the guest a copy of a host's NUMA shape: as many guest
nodes as the host has nodes with CPUs and memory, each with that node's CPU
count. Nova's ``NUMATopologyFilter`` only checks that the guest *fits*; this
filter checks that the host has *that* shape, so that the guest's NUMA view
is true and the agent can hand CPUs and memory between such guests node by
node. Requests without ``cacheaware:numa=full`` pass every host untouched.
"""

from oslo_log import log as logging

from nova.scheduler import filters

from nova_cacheaware.numa_balance import flavor as numa_flavor
from nova_cacheaware.scheduler import request

LOG = logging.getLogger(__name__)


def host_nodes(numa_topology, dedicated):
    """:class:`numa_flavor.HostNode` values from a host's NUMATopology."""
    result = []
    for cell in numa_topology.cells:
        cpus = cell.pcpuset if dedicated else cell.cpuset
        result.append(numa_flavor.HostNode(
            id=cell.id, cpus=tuple(sorted(cpus)), memory_mib=cell.memory))
    return result


class FullNUMAFilter(filters.BaseHostFilter):
    """Pass only hosts whose NUMA shape a full-NUMA request mirrors."""

    # Rebuild keeps the host: its shape was checked when the server landed.
    RUN_ON_REBUILD = False

    def filter_all(self, filter_obj_list, spec_obj):
        """Every host for other requests (no per-host call), else filter."""
        if not request.of(spec_obj).full_numa:
            return filter_obj_list
        return super().filter_all(filter_obj_list, spec_obj)

    def host_passes(self, host_state, spec_obj):
        """True unless a full-NUMA request does not mirror this host."""
        if not request.of(spec_obj).full_numa:
            return True
        guest = spec_obj.numa_topology
        host = host_state.numa_topology
        if host is None:
            return self._reject(host_state, 'the host reports no NUMA '
                                            'topology')
        cells = [] if guest is None else guest.cells
        dedicated = any(cell.pcpuset for cell in cells)
        reason = numa_flavor.mirror_mismatch(
            [(len(cell.cpuset | cell.pcpuset), cell.memory)
             for cell in cells],
            host_nodes(host, dedicated))
        if reason:
            return self._reject(host_state, reason)
        return True

    @staticmethod
    def _reject(host_state, reason):
        LOG.info('FullNUMAFilter rejects host %s (node %s): %s',
                 host_state.host, host_state.nodename, reason)
        return False
