#!/usr/bin/env python3
"""Cost per host of all four nova-cacheaware scheduler plugins vs Nova's
NUMATopologyFilter, on the same real ``HostState`` objects in the same run.

What production runs, per request: ``CacheDomainFilter`` and
``FullNUMAFilter`` through Nova's ``filter_all`` (so Nova's per-host
``_filter_one`` dispatch is included), then ``CacheAwareWeigher`` (both
its parts) through Nova's weight handler over the hosts that passed. A
fresh ``RequestSpec`` per timed pass, as every scheduling request brings
its own, so the once-per-request parse is in the timing. Nova's
weight handler's work for our weigher (normalisation, per-host multiplier
and its debug-log dictionaries) is counted in ours as what enabling it
adds: the handler with Nova's ``RAMWeigher`` and ours minus the handler
with ``RAMWeigher`` alone, in the same pass (``first``/``warm``); the
handler with our weigher alone, which also counts the weighed objects and
the sort any scheduler with a weigher pays, is kept beside it
(``*_inclusive``). ``RAMWeigher`` alone is timed for scale.

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
import statistics
import sys
import time

from oslo_config import cfg

from nova import objects
from nova.scheduler.filters import numa_topology_filter
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights
from nova.scheduler.weights import ram as nova_ram
from nova.virt import hardware
import os_resource_classes as orc

from nova_cacheaware.api import flavor_specs
from nova_cacheaware import conf as ca_conf
from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.scheduler import claims
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

#: The user guide's flavors (doc/source/user/flavor.rst): the options
#: given to ``nova-cacheaware flavor set`` (None: no cacheaware key).
FLAVORS = {
    'plain': None,
    'allshare': {'cache_share': 'all'},
    'clean': {'cache_share': 'all', 'workload': 'memory',
              'cache_clean': 'required'},
}
#: CPU time of this process: the machine is shared, wall clock is not
#: what the scheduler pays.
CLOCK = time.process_time
#: The region whose listener cost ``--region-results`` measured.
REGION_HOSTS = 10000


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


def candidates(root, domains, limit, flavor, model='domain'):
    """Placement's allocation candidates for a request of ``flavor``."""
    host = {orc.VCPU: 4, orc.MEMORY_MB: 4096, orc.DISK_GB: 10}
    if flavor == 'plain':
        return [{'allocations': {root: {'resources': dict(host)}},
                 'mappings': {'': [root]}}]
    cache = {names.RC_DOMAIN_VCPU: 4}
    if flavor == 'clean':
        cache[names.RC_DOMAIN_MEMBOUND] = 1
    if model == 'host':
        providers = [host_provider(root)]
    else:
        providers = ['%s-d%d' % (root, i) for i in range(min(domains, limit))]
    return [{'allocations': {root: {'resources': dict(host)},
                             child: {'resources': dict(cache)}},
             'mappings': {'': [root], '_CACHE': [child]}}
            for child in providers]


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
        return tuple(wire.DomainState(
            'L3-%d' % d, wire.domain_state(len(vms)), vms, 8, None,
            4 * ((index + d) % 3))
            for d in range(domains)
            for vms in [tuple('vm%d' % v for v in range((index + d) % 3))])
    return tuple(wire.DomainState(
        'L3-%d' % d, wire.domain_state(len(vms)), vms, 8, '%s-d%d' % (name, d))
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
        clock = CLOCK
        probe = hs.HostCacheState(host='probe', timestamp=_now(),
                                  agent_healthy=True, vcpu_affinity=affinity)
        payload = wire.to_payload(probe)
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
        state.derived.headroom = headroom
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
            flavor: candidates(name, domains, limit, flavor, model)
            for flavor in FLAVORS}))
    return hosts


def refresh(cache, hosts, layouts):
    layouts.generation += 1
    for state, kind, index, domains, _ in hosts:
        cache.update(layouts.state(state.host, kind, index, domains))


def request_spec(flavor, numa_key):
    """A new RequestSpec, as every scheduling request brings.

    ``flavor``: one of :data:`FLAVORS` (the user guide's flavors, keys as
    ``nova-cacheaware flavor set`` writes them); ``numa_key``: the flavor
    also has ``hw:numa_nodes=1``.
    """
    extra = {}
    if FLAVORS[flavor] is not None:
        extra = dict(flavor_specs.compute_specs(FLAVORS[flavor], 4).set)
    if numa_key:
        extra['hw:numa_nodes'] = '1'
    flavor_obj = objects.Flavor(flavorid='bench', vcpus=4, memory_mb=4096,
                                root_gb=10, ephemeral_gb=0, swap=0,
                                extra_specs=extra)
    image = objects.ImageMeta.from_dict({'properties': {}})
    return objects.RequestSpec(
        flavor=flavor_obj, image=image, num_instances=1,
        numa_topology=hardware.numa_get_constraints(flavor_obj, image),
        pci_requests=objects.InstancePCIRequests(requests=[]))


#: Timings of the handler with and without our weigher per pass.
MARGINAL_RUNS = 3


class Plugins:
    """The four plugins and Nova's baseline, timed per pass (CPU time)."""

    def __init__(self):
        self.numa = numa_topology_filter.NUMATopologyFilter()
        self.filters = [filters.CacheDomainFilter(), filters.FullNUMAFilter()]
        self.weighers = [w() for w in weights.all_weighers()]
        self.ram = nova_ram.RAMWeigher()
        self.handler = nova_weights.HostWeightHandler()

    def numa_pass(self, states, spec):
        """CPU seconds of ``NUMATopologyFilter`` over ``states``."""
        gc.collect()
        start = CLOCK()
        list(self.numa.filter_all(states, spec))
        return CLOCK() - start

    def ours_pass(self, states, spec):
        """CPU seconds of what our plugins cost one request.

        Returns ``({part: seconds}, hosts passed)``: each filter through
        Nova's ``filter_all``, then Nova's ``HostWeightHandler`` three
        ways over the hosts that passed: with our weigher alone
        (``weight_handler_with_our_weighers``: its ``weigh_objects`` and
        Nova's normalisation, multipliers and log dictionaries for it,
        plus the handler's own per-request work - one weighed object per
        host and the final sort - that any enabled weigher brings), and
        with Nova's ``RAMWeigher`` with and without ours
        (``weight_handler_marginal``: the difference, what enabling our
        weigher adds to a scheduler that weighs anyway, as every
        nova-scheduler does with its default weighers).
        """
        gc.collect()
        each = {}
        passed = states
        for plugin in self.filters:
            mark = CLOCK()
            passed = list(plugin.filter_all(passed, spec))
            each[type(plugin).__name__] = CLOCK() - mark
        mark = CLOCK()
        self.handler.get_weighed_objects(self.weighers, passed, spec)
        each['weight_handler_with_our_weighers'] = CLOCK() - mark
        times = {'alone': [], 'with': []}
        for _ in range(MARGINAL_RUNS):
            # Alternated, the least of each: the difference is a few
            # microseconds a request on plain requests, below the noise
            # of one timing.
            for key, weighers in (('alone', [self.ram]),
                                  ('with', [self.ram] + self.weighers)):
                mark = CLOCK()
                self.handler.get_weighed_objects(weighers, passed, spec)
                times[key].append(CLOCK() - mark)
        each['weight_handler_marginal'] = min(times['with']) - min(
            times['alone'])
        return each, len(passed)

    def ram_pass(self, states, spec):
        """CPU seconds of Nova's handler with Nova's own RAMWeigher.

        The floor any one enabled weigher costs per host (a reference:
        not counted in ours).
        """
        gc.collect()
        mark = CLOCK()
        self.handler.get_weighed_objects([self.ram], states, spec)
        return CLOCK() - mark


def restore(hosts, flavor):
    """Placement's candidates for ``flavor`` on every host, afresh."""
    for state, _, _, _, cands in hosts:
        state.allocation_candidates = list(cands[flavor])


def measure(plugins, hosts, cache, layouts, repeats, flavor, numa_key,
            listener):
    """Per-host CPU microseconds of one request shape, ``repeats`` times.

    Each repetition: NUMATopologyFilter, a refresh of every host's state,
    our plugins on the first request after it, our plugins warm; Nova's
    handler with RAMWeigher alone. Ratios are paired per repetition.
    """
    states = [h[0] for h in hosts]
    count = len(states)
    rows = {'numa': [], 'first': [], 'warm': [], 'first_inclusive': [],
            'warm_inclusive': [], 'ram_weigher': []}
    each = {'first': [], 'warm': []}
    restore(hosts, flavor)
    plugins.ours_pass(states, request_spec(flavor, numa_key))   # warm-up
    passed = 0
    for _ in range(repeats):
        restore(hosts, flavor)
        rows['numa'].append(plugins.numa_pass(
            states, request_spec(flavor, numa_key)))
        refresh(cache, hosts, layouts)
        for kind in ('first', 'warm'):
            restore(hosts, flavor)
            parts, passed = plugins.ours_pass(
                states, request_spec(flavor, numa_key))
            each[kind].append(parts)
            filtering = sum(v for k, v in parts.items()
                            if not k.startswith('weight_handler'))
            rows[kind].append(filtering + parts['weight_handler_marginal'])
            rows[kind + '_inclusive'].append(
                filtering + parts['weight_handler_with_our_weighers'])
        rows['ram_weigher'].append(plugins.ram_pass(
            states, request_spec(flavor, numa_key)))
    us = {k: [v / count * 1e6 for v in values]
          for k, values in rows.items()}
    ratios = {}
    for kind in ('first', 'warm', 'first_inclusive', 'warm_inclusive'):
        ratios[kind] = _spread([o / n for o, n in zip(us[kind], us['numa'])],
                               5)
        for mode, suffix in (('relayed', ''), ('direct', '_direct')):
            extra = listener[mode]['us']
            ratios['%s_with%s_listener' % (kind, suffix)] = _spread(
                [(o + extra) / n for o, n in zip(us[kind], us['numa'])], 5)
    ratios['ram_weigher'] = _spread(
        [o / n for o, n in zip(us['ram_weigher'], us['numa'])], 5)
    return {
        'flavor': flavor, 'hw_numa_nodes': numa_key,
        'hosts_passing': passed,
        'us_per_host': {k: _spread(v, 3) for k, v in us.items()},
        'us_per_host_each': {
            kind: {part: round(statistics.median(
                p[part] for p in passes) / count * 1e6, 3)
                for part in passes[0]}
            for kind, passes in each.items()},
        'listener_us_per_host_per_request': {
            mode: round(v['us'], 3) for mode, v in listener.items()},
        'ratio_to_numa_topology_filter': ratios,
    }


def _spread(values, digits):
    """Median, mean, min and max of ``values``, rounded."""
    return {'median': round(statistics.median(values), digits),
            'mean': round(statistics.mean(values), digits),
            'min': round(min(values), digits),
            'max': round(max(values), digits), 'n': len(values)}


def listener_share(path, requests_per_s):
    """The listener's CPU per host and request, from a region run.

    ``path``: a ``region_relay.py`` result: the steady-state CPU of a real
    oslo.messaging listener in one scheduler worker (cores) at a
    10 000-host region's arrival rate, through state relays (the
    documented set-up for a large region) and, in the same run, direct.
    Arrivals grow with the region's hosts, so per host the figure is the
    same at any size: spread over ``requests_per_s`` requests a second of
    one worker. Returns ``{mode: {'us': .., 'cores': ..}}`` for
    ``relayed`` and ``direct``, and the source.
    """
    with open(path) as f:
        doc = json.load(f)
    goal = next(g for g in doc['goals']
                if g['goal'] == 'CPU per scheduler worker, cores')
    rabbit = doc['rabbit']
    source = '%s (%d hosts at a %g s period, RabbitMQ)' % (
        os.path.relpath(path, ROOT), rabbit['hosts'], rabbit['period_s'])
    return {mode: {'us': cores / REGION_HOSTS / requests_per_s * 1e6,
                   'cores': cores}
            for mode, cores in (('relayed', goal['figure']),
                                ('direct', goal['direct']))}, source


def _arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--vms', type=int, nargs='+', default=[16, 200])
    parser.add_argument('--flavors', nargs='+', choices=sorted(FLAVORS),
                        default=['plain', 'allshare', 'clean'])
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--layouts', type=int, default=20,
                        help='distinct VM layouts per topology and VM count')
    parser.add_argument('--candidates', type=int, default=4,
                        help='allocation candidates per host for the '
                             'cache-aware request (at most one per domain)')
    parser.add_argument('--seed', type=int, default=14)
    parser.add_argument('--model', choices=('domain', 'host'),
                        default='host',
                        help='Placement provider model of the cache-aware '
                             'hosts: one provider per host (the default '
                             'model) or one per domain')
    parser.add_argument('--region-results', default=os.path.join(
        ROOT, 'benchmarks', 'results', 'region_relay_v3.json'),
        help='region_relay.py result with the listener\'s CPU')
    parser.add_argument('--requests-per-s', type=float, default=1.0,
                        help='requests a second per scheduler worker over '
                             'which the listener\'s CPU is spread')
    parser.add_argument('--output', help='also write the JSON here')
    return parser.parse_args()


def main():
    args = _arguments()
    cfg.CONF([], project='nova-cacheaware-bench')
    ca_conf.CONF.set_override('listen_for_host_state', False,
                              group='cacheaware_scheduler')
    cache = live_state.get_cache()
    plugins = Plugins()
    # As in a scheduler that has made its first claim: Nova's consumption
    # reports every claim (consume_hook), no hand-out is guessed.
    opts = ca_conf.CONF.cacheaware_scheduler
    claims.get_ledger(opts.claim_memory_seconds, opts.claim_settle_seconds,
                      opts.claim_pending_seconds).exact = True
    load_before = os.getloadavg()
    started = time.monotonic()
    cpu_started = CLOCK()
    listener, source = listener_share(args.region_results,
                                      args.requests_per_s)
    results = []
    for vms in args.vms:
        layouts = Layouts(vms, args.layouts, args.seed, args.model)
        for count in args.hosts:
            cache.clear()
            hosts = build_hosts(count, args.candidates, args.model)
            refresh(cache, hosts, layouts)
            for flavor in args.flavors:
                for numa_key in (False, True):
                    result = {'hosts': count, 'vms_per_host': vms}
                    result.update(measure(plugins, hosts, cache, layouts,
                                          args.repeats, flavor, numa_key,
                                          listener))
                    results.append(result)
                    print(json.dumps(result), file=sys.stderr, flush=True)
    doc = {
        'benchmark': 'scheduler_filter_cost',
        'command': common.command('scheduler_filter_cost.py', sys.argv[1:]),
        'date': common.now(),
        'machine': common.machine(),
        'python': platform.python_version(),
        'clock': 'process CPU time (time.process_time)',
        'provider_model': args.model,
        'repeats': args.repeats,
        'loadavg_before': [round(x, 2) for x in load_before],
        'loadavg_after': [round(x, 2) for x in os.getloadavg()],
        'wall_s': round(time.monotonic() - started, 1),
        'cpu_s': round(CLOCK() - cpu_started, 1),
        'candidates_per_host_max': args.candidates,
        'layouts_per_topology': args.layouts,
        'listener': {
            'cores_per_worker': {
                mode: v['cores'] for mode, v in listener.items()},
            'source': source,
            'requests_per_s_per_worker': args.requests_per_s},
        'arrival_ms': {
            k: {'median': round(statistics.median(v), 3),
                'max': round(max(v), 3), 'layouts': len(v)}
            for k, v in layouts.arrival_ms.items()},
        'results': results}
    print(json.dumps(doc, indent=2))
    if args.output:
        common.write_json(args.output, doc)


if __name__ == '__main__':
    main()
