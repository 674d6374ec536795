"""Nova's FakeDriver reporting a host topology read from a JSON file.

The devcloud runs a few of these next to the real libvirt compute so that
hosts with different CPU/NUMA/cache layouts are visible to the scheduler.
The topology file is a ``nova-cacheaware topology`` document (see
``topologies/*.json``); its path comes from ``$DEVCLOUD_TOPOLOGY``. Every
online CPU is reported as a shared (floating) CPU of its NUMA cell with its
SMT siblings; memory is the cells' memory. Guests do not run anywhere: this
is Nova's fake driver, only the inventory and the NUMA fitting are real.
"""

import json
import os

from nova import objects
from nova.virt import fake


def _load(path):
    with open(path) as f:
        return json.load(f)


class TopologyFakeDriver(fake.FakeDriver):
    """FakeDriver whose vCPUs, memory and NUMA cells come from a file."""

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only)
        self._topo = _load(os.environ['DEVCLOUD_TOPOLOGY'])
        self.vcpus = len(self._topo['online_cpus'])
        self.memory_mb = sum(n['memory_mib'] for n in self._topo['numa_nodes'])
        self.local_gb = 100

    def _numa(self):
        siblings = {c['id']: set(c['siblings']) for c in self._topo['cpus']}
        cells = []
        for node in self._topo['numa_nodes']:
            cpus = set(node['cpus'])
            mem = node['memory_mib']
            cells.append(objects.NUMACell(
                id=node['id'], cpuset=cpus, pcpuset=set(),
                memory=mem, cpu_usage=0, memory_usage=0, pinned_cpus=set(),
                siblings=[set(g) for g in sorted(
                    {frozenset(siblings[c] & cpus) for c in cpus}, key=min)],
                mempages=[objects.NUMAPagesTopology(
                    size_kb=4, total=mem * 256, used=0, reserved=0)],
                network_metadata=objects.NetworkMetadata(
                    physnets=set(), tunneled=False),
                socket=0))
        return objects.NUMATopology(cells=cells)

    def get_available_resource(self, nodename):
        """FakeDriver's resources plus the NUMA topology."""
        host_status = super().get_available_resource(nodename)
        if host_status:
            host_status['numa_topology'] = self._numa()._to_json()
        return host_status
