#!/usr/bin/env python3
"""Cost per host of CacheDomainFilter + CacheContentionWeigher vs Nova's
NUMATopologyFilter, on the same real ``HostState`` objects in the same run.

Hosts are a mix of three realistic topologies (numa_topology objects as the
libvirt driver reports them):

* ``epyc``: 2 sockets x 64 cores x 2 threads, 2 NUMA cells, 16 CCX domains;
* ``xeon``: 2 sockets x 28 cores x 2 threads, 2 NUMA cells, 2 L3 domains;
* ``hybrid``: 1 socket, 8 P-cores x 2 threads + 16 E-cores, 1 NUMA cell,
  4 E-core L2 clusters + 1 P-core domain (6 domains).

Every host carries the allocation candidates Placement returns for an
All-share request (one per domain with room, at most ``--candidates``,
default 4) and live state for the weigher (a third of the domains hold no
memory-bound VM). The request is the same for all three plugins: 4 vCPUs,
``hw:numa_nodes=1`` and the ``cacheaware:`` keys with the granular group.
The allocation candidates are restored before every timed pass (filters
prune them), outside the timing.

Prints one JSON document; ``--hosts`` and ``--repeats`` keep runs short.
"""

import argparse
import datetime
import json
import platform
import statistics
import time

from oslo_config import cfg

from nova import objects
from nova.scheduler.filters import numa_topology_filter
from nova.scheduler import host_manager
from nova.virt import hardware

from nova_cacheaware.api import flavor_specs
from nova_cacheaware import conf as ca_conf
from nova_cacheaware import names
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import weights

objects.register_all()

# name: (cells, cpus per cell, threads per core, domains, mem MiB per cell)
TOPOLOGIES = {
    'epyc': (2, 128, 2, 16, 256 * 1024),
    'xeon': (2, 56, 2, 2, 192 * 1024),
    'hybrid': (1, 32, 1, 6, 64 * 1024),
}


def numa_topology(cells, cpus_per_cell, threads, mem_mib):
    """A host NUMATopology as the libvirt driver builds it."""
    result = []
    for cell in range(cells):
        first = cell * cpus_per_cell
        cpus = list(range(first, first + cpus_per_cell))
        siblings = [set(cpus[i:i + threads])
                    for i in range(0, len(cpus), threads)]
        result.append(objects.NUMACell(
            id=cell, cpuset=set(cpus), pcpuset=set(), memory=mem_mib,
            cpu_usage=cpus_per_cell // 4, memory_usage=mem_mib // 4,
            pinned_cpus=set(), siblings=siblings, socket=cell,
            mempages=[objects.NUMAPagesTopology(
                size_kb=4, total=mem_mib * 256, used=mem_mib * 64)],
            network_metadata=objects.NetworkMetadata(physnets=set(),
                                                     tunneled=False)))
    return objects.NUMATopology(cells=result)


def candidates(root, domains, limit):
    """Placement's allocation candidates for the All-share request."""
    result = []
    for index in range(min(domains, limit)):
        domain = '%s-d%d' % (root, index)
        result.append({
            'allocations': {
                root: {'resources': {'VCPU': 4, 'MEMORY_MB': 4096,
                                     'DISK_GB': 10}},
                domain: {'resources': {names.RC_DOMAIN_VCPU: 4,
                                       names.RC_DOMAIN_MEMBOUND: 1}}},
            'mappings': {'': [root], '_CACHE': [domain]}})
    return result


def live(name, domains, index):
    now = datetime.datetime.now(datetime.timezone.utc)
    return hs.HostCacheState(
        host=name, timestamp=now, agent_healthy=True,
        domains=tuple(hs.DomainState(
            'L3-%d' % d, hs.domain_state(len(vms)), vms, 8,
            '%s-d%d' % (name, d))
            for d in range(domains)
            for vms in [tuple('vm%d' % v for v in range((index + d) % 3))]))


def build_hosts(count, cache, limit):
    hosts = []
    kinds = sorted(TOPOLOGIES)
    for index in range(count):
        kind = kinds[index % len(kinds)]
        cells, per_cell, threads, domains, mem = TOPOLOGIES[kind]
        name = 'cmp%05d' % index
        state = host_manager.HostState(name, name, 'cell1')
        state.uuid = name
        state.numa_topology = numa_topology(cells, per_cell, threads, mem)
        state.cpu_allocation_ratio = 4.0
        state.ram_allocation_ratio = 1.0
        state.aggregates = []
        cands = candidates(name, domains, limit)
        state.allocation_candidates = list(cands)
        hosts.append((state, cands))
        cache.update(live(name, domains, index))
    return hosts


def request_spec():
    extra = dict(flavor_specs.compute_specs(
        {'cache_share': 'all', 'workload': 'memory',
         'cache_clean': 'required'}, 4).set)
    extra['hw:numa_nodes'] = '1'
    flavor = objects.Flavor(flavorid='bench', vcpus=4, memory_mb=4096,
                            root_gb=10, ephemeral_gb=0, swap=0,
                            extra_specs=extra)
    image = objects.ImageMeta.from_dict({'properties': {}})
    spec = objects.RequestSpec(
        flavor=flavor, image=image, num_instances=1,
        numa_topology=hardware.numa_get_constraints(flavor, image),
        pci_requests=objects.InstancePCIRequests(requests=[]))
    return spec


def time_pass(hosts, work):
    for state, cands in hosts:
        state.allocation_candidates = list(cands)
    start = time.perf_counter()
    work(hosts)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--candidates', type=int, default=4,
                        help='allocation candidates per host (at most one '
                             'per domain)')
    args = parser.parse_args()
    cfg.CONF([], project='nova-cacheaware-bench')
    ca_conf.CONF.set_override('listen_for_host_state', False,
                              group='cacheaware_scheduler')
    cache = live_state.get_cache()

    numa = numa_topology_filter.NUMATopologyFilter()
    ours = filters.CacheDomainFilter()
    weigher = weights.CacheContentionWeigher()
    spec = request_spec()

    def run_numa(hosts):
        for state, _ in hosts:
            numa.host_passes(state, spec)

    def run_ours(hosts):
        passed = [state for state, _ in hosts
                  if ours.host_passes(state, spec)]
        weigher.weigh_objects(
            [host_manager.weights.WeighedHost(h, 0.0) for h in passed],
            spec)

    results = []
    for count in args.hosts:
        cache.clear()
        hosts = build_hosts(count, cache, args.candidates)
        timings = {'numa_topology_filter': [], 'cacheaware': []}
        for _ in range(args.repeats):
            # Alternate so that drift on a shared machine hits both.
            timings['numa_topology_filter'].append(time_pass(hosts, run_numa))
            timings['cacheaware'].append(time_pass(hosts, run_ours))
        passed = sum(1 for state, _ in hosts if ours.host_passes(state, spec))
        per_host = {k: statistics.median(v) / count * 1e6
                    for k, v in timings.items()}
        results.append({
            'hosts': count,
            'repeats': args.repeats,
            'hosts_passing_cacheaware': passed,
            'us_per_host_median': {k: round(v, 2)
                                   for k, v in per_host.items()},
            'ratio_cacheaware_to_numa': round(
                per_host['cacheaware'] / per_host['numa_topology_filter'],
                4),
        })
    print(json.dumps({
        'benchmark': 'scheduler_filter_cost',
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds'),
        'python': platform.python_version(),
        'candidates_per_host_max': args.candidates,
        'results': results}, indent=2))


if __name__ == '__main__':
    main()
