#!/usr/bin/env python3
"""Cost per host of all four nova-cacheaware scheduler plugins vs Nova's
NUMATopologyFilter, on the same real ``HostState`` objects in the same run.

What production runs, per request: ``CacheDomainFilter`` and
``FullNUMAFilter`` through Nova's ``filter_all`` (so Nova's per-host
``_filter_one`` dispatch is included), then ``CacheContentionWeigher`` and
``PCPUAvailabilityWeigher`` through ``weigh_objects`` over the hosts that
passed. A fresh ``RequestSpec`` per timed pass, as every scheduling request
brings its own, so the once-per-request parse is in the timing. Nova's
weight handler (normalisation, per-host multiplier and its debug-log
f-strings) is timed separately: it runs for any enabled weigher.

Hosts are a mix of three topologies (numa_topology objects as the libvirt
driver reports them):

* ``epyc``: 2 sockets x 64 cores x 2 threads, 2 NUMA cells, 16 CCX domains;
* ``xeon``: 2 sockets x 28 cores x 2 threads, 2 NUMA cells, 2 L3 domains;
* ``hybrid``: 1 socket, 32 CPUs, 1 NUMA cell, 6 cache domains.

Each host has live state with ``vcpu_affinity`` (payload 1.1) for
``--vms`` VMs: 40 % All-share VMs floating inside one cache domain, 45 %
floating over the whole host, 10 % over one NUMA cell, 5 % pinned one vCPU
per pCPU; 1, 2, 4 or 8 vCPUs; a fifth capped at 0.5 by a CFS quota.
``--layouts`` distinct layouts per VM count are drawn and shared round
robin by the hosts (their pCPU-Est is computed once per layout and the
result given to every host's own state object: the estimate of 10 000 x
200 VMs would take minutes and is per-arrival work, measured separately
as ``arrival_ms``: the payload parse, and the derived values when the
VMs changed and when they did not). Every refresh gives every host another
layout. Every host state is its own object, so the per-state
score memo starts empty on every host after a refresh.

Requests: ``cacheaware`` (4 vCPUs, ``hw:numa_nodes=1``, All-share,
memory-bound, Clean required, the granular group; Placement's candidates:
one per domain with room, at most ``--candidates``, in the domain provider
model; one per host, on the host's ``<root>:cacheaware`` provider, with
``--model host``) and ``plain`` (the
same flavor without any ``cacheaware:`` key or group; one candidate per
host). ``warm``: the states have served a request of that shape before;
``first``: every host's state was just replaced (a refresh) and this is
the first request on it. The candidates are restored before every pass,
outside the timing (filters prune them). NUMATopologyFilter and our
plugins alternate so that drift on a shared machine hits both. A full
garbage collection runs before every timed pass, outside the timing:
otherwise the collection that the refresh's allocations trigger lands in
whichever pass comes next (it is the listener's cost, and timeit-style
timing leaves it out too).

``--model host``: the host provider model (one cache provider per host,
payload 1.3 ``host_provider``, domains without providers, each domain 0, 4
or 8 of its 32 vCPUs used): ``CacheDomainFilter`` checks the domains'
room from the live state and its own claims and predicts the agent's
domain (:mod:`nova_cacheaware.scheduler.domain_order`) instead of
ordering candidates.

Prints one JSON document and writes it to ``--output`` when given.
"""

import argparse
import datetime
import gc
import json
import os
import platform
import random
import shlex
import statistics
import sys
import time

from oslo_config import cfg

from nova import objects
from nova.scheduler.filters import numa_topology_filter
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights
from nova.virt import hardware

from nova_cacheaware.api import flavor_specs
from nova_cacheaware import conf as ca_conf
from nova_cacheaware import names
from nova_cacheaware.policy import pcpu_est
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import weights

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import common  # noqa: E402

objects.register_all()

# name: (cells, cpus per cell, threads per core, domains, mem MiB per cell)
TOPOLOGIES = {
    'epyc': (2, 128, 2, 16, 256 * 1024),
    'xeon': (2, 56, 2, 2, 192 * 1024),
    'hybrid': (1, 32, 1, 6, 64 * 1024),
}
KINDS = sorted(TOPOLOGIES)


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


def host_provider(root):
    """The host model's one cache provider of host ``root``."""
    return '%s-cacheaware' % root


def candidates(root, domains, limit, cacheaware, model='domain'):
    """Placement's allocation candidates for the request."""
    if not cacheaware:
        return [{'allocations': {root: {'resources': {
            'VCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 10}}},
            'mappings': {'': [root]}}]
    if model == 'host':
        child = host_provider(root)
        return [{
            'allocations': {
                root: {'resources': {'VCPU': 4, 'MEMORY_MB': 4096,
                                     'DISK_GB': 10}},
                child: {'resources': {names.RC_DOMAIN_VCPU: 4,
                                      names.RC_DOMAIN_MEMBOUND: 1}}},
            'mappings': {'': [root], '_CACHE': [child]}}]
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


def layout(kind, vms, rng):
    """A host's VMs as the agent's ``vcpu_affinity`` (pcpu-est input)."""
    cells, per_cell, _threads, domains, _mem = TOPOLOGIES[kind]
    total = cells * per_cell
    per_domain = total // domains
    doc = {}
    for v in range(vms):
        n = rng.choice((1, 2, 4, 8))
        kind_draw = rng.random()
        if kind_draw < 0.40:
            lo = rng.randrange(domains) * per_domain
            cpus = list(range(lo, lo + per_domain))
            affs = {str(i): cpus for i in range(n)}
        elif kind_draw < 0.85:
            affs = {str(i): list(range(total)) for i in range(n)}
        elif kind_draw < 0.95:
            lo = rng.randrange(cells) * per_cell
            affs = {str(i): list(range(lo, lo + per_cell)) for i in range(n)}
        else:
            first = rng.randrange(total)
            affs = {str(i): [(first + i) % total] for i in range(n)}
        vm = {'vcpus': affs}
        if rng.random() < 0.2:
            vm['caps'] = {i: 0.5 for i in affs}
        doc['vm%d' % v] = vm
    return pcpu_est.EstimateRequest.from_dict(
        {'pcpus': list(range(total)), 'vms': doc})


def domain_states(name, domains, index, model='domain'):
    if model == 'host':
        # No provider per domain; 0, 4 or 8 of 32 vCPUs (8 CPUs x 4.0)
        # used, so the room check and the prediction do real work.
        return tuple(hs.DomainState(
            'L3-%d' % d, hs.domain_state(len(vms)), vms, 8, None,
            4 * ((index + d) % 3))
            for d in range(domains)
            for vms in [tuple('vm%d' % v for v in range((index + d) % 3))])
    return tuple(hs.DomainState(
        'L3-%d' % d, hs.domain_state(len(vms)), vms, 8, '%s-d%d' % (name, d))
        for d in range(domains)
        for vms in [tuple('vm%d' % v for v in range((index + d) % 3))])


class Layouts:
    """``--layouts`` distinct VM layouts per topology, prepared once."""

    def __init__(self, vms, count, seed, model='domain'):
        rng = random.Random(seed)
        self.model = model
        self.prepared = {}
        #: Per-arrival listener work (ms): payload parse; derived values
        #: when the VMs changed; when they did not.
        self.arrival_ms = {'parse': [], 'vms_changed': [],
                           'vms_unchanged': []}
        self.generation = 0
        for kind in KINDS:
            self.prepared[kind] = []
            for _ in range(count):
                affinity = layout(kind, vms, rng)
                self.prepared[kind].append(
                    (affinity, self._time_arrival(affinity)))

    def _time_arrival(self, affinity):
        clock = time.perf_counter
        probe = hs.HostCacheState(host='probe', timestamp=_now(),
                                  agent_healthy=True, vcpu_affinity=affinity)
        payload = hs.to_payload(probe)
        start = clock()
        again = hs.from_payload(payload)
        self.arrival_ms['parse'].append((clock() - start) * 1e3)
        start = clock()
        probe.prepare()
        self.arrival_ms['vms_changed'].append((clock() - start) * 1e3)
        start = clock()
        again.prepare(probe)
        self.arrival_ms['vms_unchanged'].append((clock() - start) * 1e3)
        return probe.pcpu_headroom

    def state(self, name, kind, index, domains):
        """A new state object for host ``name`` (as a refresh brings).

        Every refresh gives every host another layout (its VMs changed):
        the first request after it finds no score memoised.
        """
        affinity, headroom = self.prepared[kind][
            (index // len(KINDS) + self.generation)
            % len(self.prepared[kind])]
        state = hs.HostCacheState(
            host=name, timestamp=_now(), agent_healthy=True,
            domains=domain_states(name, domains, index, self.model),
            vcpu_affinity=affinity,
            host_provider=(host_provider(name) if self.model == 'host'
                           else None))
        # The arrival work for this layout was done (and timed) once.
        state.__dict__['pcpu_headroom'] = headroom
        return state.prepare()


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def build_hosts(count, limit, model='domain'):
    hosts = []
    for index in range(count):
        kind = KINDS[index % len(KINDS)]
        cells, per_cell, threads, domains, mem = TOPOLOGIES[kind]
        name = 'cmp%05d' % index
        state = host_manager.HostState(name, name, 'cell1')
        state.uuid = name
        state.numa_topology = numa_topology(cells, per_cell, threads, mem)
        state.cpu_allocation_ratio = 4.0
        state.ram_allocation_ratio = 1.0
        state.aggregates = []
        hosts.append((state, kind, index, domains, {
            True: candidates(name, domains, limit, True, model),
            False: candidates(name, domains, limit, False)}))
    return hosts


def refresh(cache, hosts, layouts):
    layouts.generation += 1
    for state, kind, index, domains, _ in hosts:
        cache.update(layouts.state(state.host, kind, index, domains))


def request_spec(cacheaware):
    """A new RequestSpec, as every scheduling request brings."""
    extra = {}
    if cacheaware:
        extra = dict(flavor_specs.compute_specs(
            {'cache_share': 'all', 'workload': 'memory',
             'cache_clean': 'required'}, 4).set)
    extra['hw:numa_nodes'] = '1'
    flavor = objects.Flavor(flavorid='bench', vcpus=4, memory_mb=4096,
                            root_gb=10, ephemeral_gb=0, swap=0,
                            extra_specs=extra)
    image = objects.ImageMeta.from_dict({'properties': {}})
    return objects.RequestSpec(
        flavor=flavor, image=image, num_instances=1,
        numa_topology=hardware.numa_get_constraints(flavor, image),
        pci_requests=objects.InstancePCIRequests(requests=[]))


class Plugins:
    """The four plugins and Nova's baseline, timed per pass."""

    def __init__(self):
        self.numa = numa_topology_filter.NUMATopologyFilter()
        self.filters = [filters.CacheDomainFilter(), filters.FullNUMAFilter()]
        self.weighers = [weights.CacheContentionWeigher(),
                         weights.PCPUAvailabilityWeigher()]
        self.handler = nova_weights.HostWeightHandler()

    def numa_pass(self, states, spec):
        gc.collect()
        start = time.perf_counter()
        list(self.numa.filter_all(states, spec))
        return time.perf_counter() - start

    def ours_pass(self, states, spec):
        """Seconds of the four plugins (total and each), of Nova's handler.

        Returns ``(total, {plugin: seconds}, handler seconds)``.
        """
        gc.collect()
        each = {}
        passed = states
        clock = time.perf_counter
        start = clock()
        for plugin in self.filters:
            mark = clock()
            passed = list(plugin.filter_all(passed, spec))
            each[type(plugin).__name__] = clock() - mark
        weighed = [nova_weights.WeighedHost(h, 0.0) for h in passed]
        for weigher in self.weighers:
            mark = clock()
            weigher.weigh_objects(weighed, spec)
            each[type(weigher).__name__] = clock() - mark
        ours = clock() - start
        gc.collect()
        start = clock()
        self.handler.get_weighed_objects(self.weighers, passed, spec)
        return ours, each, clock() - start


def restore(hosts, cacheaware):
    for state, _, _, _, cands in hosts:
        state.allocation_candidates = list(cands[cacheaware])


def measure(plugins, hosts, cache, layouts, repeats):
    """Per-host medians for both requests, warm and first-after-refresh."""
    states = [h[0] for h in hosts]
    count = len(states)
    out = {}
    for cacheaware in (True, False):
        numa_t, warm_t, first_t, handler_t = [], [], [], []
        warm_each, first_each = [], []
        restore(hosts, cacheaware)
        plugins.ours_pass(states, request_spec(cacheaware))   # warm-up
        for _ in range(repeats):
            restore(hosts, cacheaware)
            numa_t.append(plugins.numa_pass(states, request_spec(cacheaware)))
            refresh(cache, hosts, layouts)
            restore(hosts, cacheaware)
            ours, each, _ = plugins.ours_pass(states,
                                              request_spec(cacheaware))
            first_t.append(ours)
            first_each.append(each)
            restore(hosts, cacheaware)
            ours, each, handler = plugins.ours_pass(
                states, request_spec(cacheaware))
            warm_t.append(ours)
            warm_each.append(each)
            handler_t.append(handler)
        restore(hosts, cacheaware)
        spec = request_spec(cacheaware)
        passed = len(list(plugins.filters[0].filter_all(states, spec)))
        us = {name: statistics.median(values) / count * 1e6
              for name, values in (('numa_topology_filter', numa_t),
                                   ('plugins_warm', warm_t),
                                   ('plugins_first_after_refresh', first_t),
                                   ('nova_weight_handler', handler_t))}
        base = us['numa_topology_filter']
        out['cacheaware' if cacheaware else 'plain'] = {
            'hosts_passing_cache_domain_filter': passed,
            'us_per_host_median': {k: round(v, 3) for k, v in us.items()},
            'ratio_to_numa_topology_filter': {
                k: round(v / base, 5) for k, v in us.items()
                if k != 'numa_topology_filter'},
            'us_per_host_median_each': {
                'warm': _each(warm_each, count),
                'first_after_refresh': _each(first_each, count)},
        }
    return out


def _each(passes, count):
    return {name: round(statistics.median(p[name] for p in passes)
                        / count * 1e6, 3) for name in passes[0]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--vms', type=int, nargs='+', default=[16, 200])
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--layouts', type=int, default=20,
                        help='distinct VM layouts per topology and VM count')
    parser.add_argument('--candidates', type=int, default=4,
                        help='allocation candidates per host for the '
                             'cache-aware request (at most one per domain)')
    parser.add_argument('--seed', type=int, default=14)
    parser.add_argument('--model', choices=('domain', 'host'),
                        default='domain',
                        help='Placement provider model of the cache-aware '
                             'hosts: one provider per domain, or one per '
                             'host')
    parser.add_argument('--output', help='also write the JSON here')
    args = parser.parse_args()
    cfg.CONF([], project='nova-cacheaware-bench')
    ca_conf.CONF.set_override('listen_for_host_state', False,
                              group='cacheaware_scheduler')
    cache = live_state.get_cache()
    plugins = Plugins()
    load_before = os.getloadavg()
    started = time.monotonic()
    results = []
    for vms in args.vms:
        layouts = Layouts(vms, args.layouts, args.seed, args.model)
        for count in args.hosts:
            cache.clear()
            hosts = build_hosts(count, args.candidates, args.model)
            refresh(cache, hosts, layouts)
            result = {'hosts': count, 'vms_per_host': vms,
                      'repeats': args.repeats,
                      'arrival_ms': {
                          k: {'median': round(statistics.median(v), 3),
                              'max': round(max(v), 3), 'layouts': len(v)}
                          for k, v in layouts.arrival_ms.items()}}
            result.update(measure(plugins, hosts, cache, layouts,
                                  args.repeats))
            results.append(result)
            print(json.dumps(result), file=sys.stderr, flush=True)
    doc = {
        'benchmark': 'scheduler_filter_cost',
        'command': ' '.join(['.venv/bin/python',
                             'benchmarks/scheduler_filter_cost.py']
                            + [shlex.quote(a) for a in sys.argv[1:]]),
        'date': common.now(),
        'machine': common.machine(),
        'python': platform.python_version(),
        'provider_model': args.model,
        'loadavg_before': [round(x, 2) for x in load_before],
        'loadavg_after': [round(x, 2) for x in os.getloadavg()],
        'wall_s': round(time.monotonic() - started, 1),
        'candidates_per_host_max': args.candidates,
        'layouts_per_topology': args.layouts,
        'results': results}
    print(json.dumps(doc, indent=2))
    if args.output:
        common.write_json(args.output, doc)


if __name__ == '__main__':
    main()
