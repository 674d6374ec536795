"""The compute agent as production runs it: steady state, an arrival, repin.

Every agent row is one ``nova-cacheaware-agent`` built by
:func:`nova_cacheaware.cmd.agent.build_agent` from a configuration file, in
a worker process of its own (so its RSS and ``sys.modules`` are an agent's,
not the benchmark's), with:

* the real planner (:class:`nova_cacheaware.cachedomain.repinning.Planner`);
* ``[agent] counters = true`` (:class:`~nova_cacheaware.cachedomain.counters.
  PerfCounterSource`; on a host without a PMU it switches itself off on its
  first probe, as in production, and the agent classifies by declared
  workloads);
* ``[agent] capabilities = vcpu_sizing,balloon,numa_balance``, with flavors
  that opt in for a share of the instances (20 % ``vcpu_sizing=recommend``,
  10 % ``memory_policy=hit_ratio``, 1 % ``numa=full``);
* ``[agent] spec_source = nova``: the agent's real ``NovaSpecSource``
  (python-novaclient, keystoneauth) against ``nova_servers_stub.py``, an
  HTTP server in its own process answering ``GET /servers/<uuid>`` with
  Nova's 2.47 body (a real Nova API needs Keystone, two databases, a
  conductor and a compute owning the instances);
* ``[agent] report_placement = true`` against a real Placement 16 WSGI
  service on the machine's MariaDB (``tests/placement_fixtures.
  PlacementService``), ``[placement] provider_model = host`` (the default,
  ``HostPlacementReporter``) and, as a second row, ``domain``
  (``PlacementSyncReporter``); 12 % of the instances hold All-share room
  (allocations written beforehand, as the scheduler would);
* ``[agent] notifications = true`` on the machine's RabbitMQ
  (127.0.0.1:5672, a topic and exchange of this run, deleted afterwards).

The host is libvirt's ``test:///default`` (it pins to 8 CPUs) with
``--domains`` Nova-like running domains (``tests/fixtures/nova_domains.py``,
2 vCPUs, ``<vcpu cpuset='0-7'>``); its caches are those of an AMD
Threadripper 2990WX read from a sysfs tree (``tests/fixtures/machines.py``)
and cut to those CPUs with ``cpu_shared_set = 0-7``: two L3 domains of 4
CPUs.
Passes are timed back to back in CPU time of the worker
(``time.process_time``); the capabilities', the classifier's and the
repin limiter's clocks advance by ``period_s`` (10 s) per pass, so that
time-based work (a balloon round every 10 s) happens as often per pass as
at a 10 s period.

Rows: ``bare`` (the same agent with counters, capabilities and reporting
off and a file spec source: its own cost), ``host`` and ``domain``.
Named baseline in each worker: a bare libvirt read of the same facts (list
+ persistent XML + ``vcpuPinInfo`` per domain, no parsing, no planning).
Each row also times an arrival: one new All-share instance (Placement
allocation and Nova record present) starts, the agent gets its lifecycle
event and reconciles.

``--qemu`` adds a ``host`` row on the real libvirtd (``qemu:///system``)
with ``--qemu-guests`` TCG guests and this machine's own sysfs, and the
repin latency of one guest (agent adapter vs raw ``pinVcpuFlags``).

Usage: python benchmarks/agent_steady_state.py [--domains 200]
       [--passes 20] [--rows bare,host,domain] [--qemu] [--json FILE]
"""

import argparse
import contextlib
import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid as uuid_mod

import os_resource_classes as orc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

RABBIT_URL = 'rabbit://guest:guest@127.0.0.1:5672/'
KOMBU_URL = 'amqp://guest:guest@127.0.0.1:5672//'
RESULTS = os.path.join('benchmarks', 'results', 'agent_steady_state.json')
PERIOD_S = 10.0
#: Domain vCPU allocation ratio (All-share room: 2 domains x 4 CPUs x 8).
DOMAIN_RATIO = 8.0
CAPABILITIES = 'vcpu_sizing,balloon,numa_balance'


def rss_mib(field='VmRSS'):
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


# -- the instances and their flavors -----------------------------------------

def flavor_of(i, n):
    """``(flavor name, extra specs, holds All-share room)`` of VM ``i``.

    Shares of ``n``: 12 % All-share (one in twelve of them memory-bound
    with Clean required), 20 % ``vcpu_sizing=recommend``, 10 %
    ``memory_policy=hit_ratio``, 1 % ``numa=full``; the rest declare
    cpu, io or auto.
    """
    from nova_cacheaware.api import flavor_specs
    allshare = max(1, n * 12 // 100)
    sizing = n * 20 // 100
    balloon = n * 10 // 100
    numa = max(1, n // 100)
    if i < allshare:
        memory = i % 12 == 0
        opts = ({'cache_share': 'all', 'workload': 'memory',
                 'cache_clean': 'required'} if memory else
                {'cache_share': 'all', 'workload': 'cpu',
                 'cache_clean': 'off'})
        name = 'ca.allshare.mem' if memory else 'ca.allshare.cpu'
        held = True
    elif i < allshare + sizing:
        opts, name, held = {'vcpu_sizing': 'recommend'}, 'ca.sizing', False
    elif i < allshare + sizing + balloon:
        opts, name, held = ({'memory_policy': 'hit_ratio'}, 'ca.balloon',
                            False)
    elif i < allshare + sizing + balloon + numa:
        opts, name, held = {'numa': 'full'}, 'ca.numafull', False
    else:
        workload = ('cpu', 'io', 'auto')[i % 3]
        opts, name, held = ({'workload': workload}, 'ca.%s' % workload,
                            False)
    specs = flavor_specs.compute_specs(opts, 2).set
    specs.update({'hw:cpu_policy': 'shared'})
    return name, specs, held


def make_instances(n, prefix):
    out = []
    for i in range(n):
        name, specs, held = flavor_of(i, n)
        out.append({'uuid': str(uuid_mod.uuid4()), 'name': '%s-%d' % (
            prefix, i), 'vcpus': 2, 'flavor': name, 'specs': specs,
            'held': held,
            'memory': specs.get('cacheaware:workload') == 'memory'})
    return out


def arrival_instance(prefix):
    from nova_cacheaware.api import flavor_specs
    specs = flavor_specs.compute_specs(
        {'cache_share': 'all', 'workload': 'cpu', 'cache_clean': 'off'},
        2).set
    return {'uuid': str(uuid_mod.uuid4()), 'name': '%s-arrival' % prefix,
            'vcpus': 2, 'flavor': 'ca.allshare.cpu', 'specs': specs,
            'held': True, 'memory': False}


# -- the worker: one agent row ------------------------------------------------

class Timers:
    """CPU time of wrapped callables, outermost call only."""

    def __init__(self):
        self.total = {}
        self._depth = {}

    def wrap(self, obj, attr, key):
        real = getattr(obj, attr)

        def timed(*args, **kwargs):
            depth = self._depth.get(key, 0)
            self._depth[key] = depth + 1
            t = time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                self._depth[key] = depth
                if depth == 0:
                    self.total[key] = (self.total.get(key, 0.0)
                                       + time.process_time() - t)
        setattr(obj, attr, timed)
        return timed

    def take(self):
        out, self.total = self.total, {}
        return out


class SimClock:
    """Monotonic time that also jumps ``period_s`` per pass."""

    def __init__(self):
        self.offset = 0.0

    def __call__(self):
        return time.monotonic() + self.offset

    def advance(self, seconds):
        self.offset += seconds


class WarningCounter(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0
        self.messages = []

    def emit(self, record):
        self.count += 1
        msg = record.getMessage().splitlines()[0][:200]
        if msg not in self.messages and len(self.messages) < 8:
            self.messages.append(msg)


class ImportWatch:
    """Records who first imports numpy or scipy (a ``sys.meta_path`` hook)."""

    def __init__(self):
        self.first = None

    def find_spec(self, name, path=None, target=None):
        if self.first is None and name.split('.')[0] in ('numpy', 'scipy'):
            stack = [f for f in traceback.extract_stack()
                     if 'nova_cacheaware' in f.filename]
            self.first = {'module': name, 'from': [
                '%s:%d %s' % (os.path.relpath(f.filename, REPO), f.lineno,
                              f.name) for f in stack[-6:]]}
        return None


def define(conn, inst, kind, cpuset):
    from tests.fixtures import nova_domains
    dom = conn.defineXML(nova_domains.domain_xml(
        inst['name'], inst['vcpus'], cpuset=cpuset, uuid=inst['uuid'],
        kind=kind, flavor=inst['flavor']))
    dom.create()
    return dom


def bare_read(conn):
    import libvirt
    t0 = time.process_time()
    for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
        dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
        dom.vcpuPinInfo(0)
    return time.process_time() - t0


def ms(seconds):
    return round(seconds * 1000, 2)


def run_worker(spec):
    """One agent row; returns its figures (a dict)."""
    watch = ImportWatch()
    sys.meta_path.insert(0, watch)
    import libvirt
    from oslo_log import log as oslo_logging

    from nova_cacheaware.cachedomain import repinning
    from nova_cacheaware.cmd import agent as agent_cmd

    libvirt.registerErrorHandler(lambda ctx, err: None, None)
    conf = agent_cmd.make_conf(['--config-file', spec['conf']])
    oslo_logging.setup(conf, 'nova-cacheaware-agent')
    warnings = WarningCounter()
    logging.getLogger().addHandler(warnings)
    conn = libvirt.open(spec['uri'])
    rss_start = rss_mib()
    doms = [define(conn, inst, spec['kind'], spec['cpuset'])
            for inst in spec['instances']]
    rss_domains = rss_mib()
    timers = Timers()
    planner = timers.wrap(
        type('P', (), {'plan': staticmethod(repinning.Planner())}),
        'plan', 'planner')
    agent = agent_cmd.build_agent(conf, planner=planner)
    clock = SimClock()
    agent.repin.actuator.rate_limiter._clock = clock
    for obj in list(agent.capabilities) + [agent.repin.classifier]:
        for attr in ('clock', '_clock'):
            if obj is not None and hasattr(obj, attr):
                setattr(obj, attr, clock)
    timers.wrap(agent, 'observe', 'observe')
    timers.wrap(agent.spec_source, 'extra_specs', 'spec_source')
    timers.wrap(agent, '_run_capabilities', 'capabilities')
    for cap in agent.capabilities:
        timers.wrap(cap, 'reconcile', 'capability.' + cap.name)
    for attr in ('sync_domains', 'held_domains', 'set_host_load',
                 'set_membound_reserved', 'membound_holders',
                 'domain_capacity', 'provider_uuids', 'host_provider_uuid'):
        if hasattr(agent.placement, attr):
            timers.wrap(agent.placement, attr, 'placement')
    timers.wrap(agent.publisher, 'publish', 'publish')
    timers.wrap(agent.placement_side, '_choose_domains', 'choose_domains')

    def one_pass():
        clock.advance(PERIOD_S)
        t0 = time.process_time()
        one = agent.reconcile()
        return one, time.process_time() - t0

    usable = set(agent.usable_cpus) & set(agent.hypervisor.host_cpus())
    out = {'uri': spec['uri'], 'domains': len(doms),
           'counters_available': agent.repin.counter_source.available(),
           'counters_unsupported': getattr(agent.repin.counter_source,
                                           'unsupported', None),
           'counter_source': type(agent.repin.counter_source).__name__,
           'spec_source': type(agent.spec_source).__name__,
           'placement_reporter': type(agent.placement).__name__,
           'publisher': type(agent.publisher).__name__,
           'capabilities': [c.name for c in agent.capabilities],
           'classifier': type(agent.repin.classifier).__name__
           if agent.repin.classifier is not None else None,
           'cache_domains': {d['id']: len(d['cpus'])
                             for d in repinning.usable_domains(
                                 agent.domain_set, usable)}}
    timers.take()
    first, first_cpu = one_pass()
    out['first_pass'] = {'cpu_ms': ms(first_cpu),
                         'repins': first.result.repins,
                         'parts_ms': {k: ms(v) for k, v in
                                      sorted(timers.take().items())}}
    converge = 0
    last = first
    while (last.result.repins or last.result.deferred) and converge < 10:
        last, _ = one_pass()
        converge += 1
    out['converge_passes'] = converge
    timers.take()
    warnings.count, warnings.messages = 0, []
    cpu, parts, repins, failed = [], {}, 0, 0
    for _ in range(spec['passes']):
        one, used = one_pass()
        cpu.append(used)
        repins += one.result.repins
        failed += len(one.result.failed)
        for k, v in timers.take().items():
            parts.setdefault(k, []).append(v)
    base = [bare_read(conn) for _ in range(spec['passes'])]
    per = statistics.median(cpu)
    out.update({
        'passes': spec['passes'],
        'cpu_ms_per_pass': ms(per),
        'cpu_ms_per_pass_mean': ms(statistics.mean(cpu)),
        'cpu_ms_per_pass_max': ms(max(cpu)),
        'cpu_pct_one_core_at_10s': round(per / PERIOD_S * 100, 3),
        'parts_ms_mean': {k: ms(sum(v) / spec['passes'])
                          for k, v in sorted(parts.items())},
        'steady_repins': repins, 'steady_failed_repins': failed,
        'warnings_in_steady_passes': warnings.count,
        'warning_samples': warnings.messages,
        'baseline_bare_read_cpu_ms': ms(statistics.median(base)),
        'ratio_to_bare_read': round(per / statistics.median(base), 2),
        'rss_mib_before_defining_domains': round(rss_start, 1),
        'rss_mib_after_defining_domains': round(rss_domains, 1),
        'rss_mib': round(rss_mib(), 1),
        'max_rss_mib': round(resource.getrusage(
            resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        'numpy_or_scipy_imported': sorted(
            m for m in sys.modules if m in ('numpy', 'scipy')),
        'numpy_first_imported_by': watch.first,
        'capability_reports': summarize_caps(one.capabilities),
    })
    if getattr(agent.publisher, 'sent', None) is not None:
        out['notifications_sent'] = agent.publisher.sent
        out['notifications_failed'] = agent.publisher.failed
    arrival = spec.get('arrival')
    if arrival:
        define(conn, arrival, spec['kind'], spec['cpuset'])
        agent.handle_events([(arrival['uuid'], 'started')])
        one, used = one_pass()
        parts_of_arrival = {k: ms(v) for k, v in
                            sorted(timers.take().items())}
        after, after_cpu = one_pass()
        out['arrival'] = {
            'cpu_ms': ms(used), 'repins': one.result.repins,
            'held_domain': agent.last_held.get(arrival['uuid']),
            'parts_ms': parts_of_arrival,
            'next_pass_cpu_ms': ms(after_cpu)}
        doms.append(conn.lookupByUUIDString(arrival['uuid']))
    agent.release_capabilities()
    close = getattr(agent.publisher, 'close', None)
    if close:
        close()
    if spec['kind'] != 'test':
        for dom in doms:
            try:
                dom.destroy()
            except libvirt.libvirtError:
                pass
            dom.undefine()
    return out


def summarize_caps(reports):
    out = {}
    for name, report in sorted(reports.items()):
        if 'error' in report:
            out[name] = {'error': report['error']}
            continue
        vms = report.get('vms') or report.get('instances') or {}
        out[name] = {'keys': sorted(report)[:12],
                     'instances': len(vms) if hasattr(vms, '__len__')
                     else None}
    return out


# -- the parent: services, Placement state, rows ----------------------------

class Services:
    """Placement (WSGI + MariaDB), the Nova stub, RabbitMQ names."""

    def __init__(self, tmp):
        from tests import placement_fixtures
        self.tmp = tmp
        self.run = uuid_mod.uuid4().hex[:10]
        self.placement = placement_fixtures.PlacementService()
        self.placement.setUp()
        self.client = self.placement.client
        self.servers_file = os.path.join(tmp, 'servers.json')
        self.servers = {}
        self.write_servers()
        self.nova = subprocess.Popen(
            [sys.executable, os.path.join(REPO, 'benchmarks',
                                          'nova_servers_stub.py'),
             self.servers_file], stdout=subprocess.PIPE, text=True)
        line = self.nova.stdout.readline()
        if not line.startswith('serving '):
            raise RuntimeError('nova stub did not start: %r' % line)
        self.nova_endpoint = 'http://127.0.0.1:%s/v2.1' % line.split()[1]
        self.topic = 'cacheaware_bench_%s' % self.run
        self.exchange = 'cacheaware-bench-%s' % self.run

    def write_servers(self):
        path = self.servers_file + '.new'
        with open(path, 'w') as f:
            json.dump(self.servers, f)
        os.replace(path, self.servers_file)

    def add_servers(self, instances):
        from benchmarks import nova_servers_stub
        for inst in instances:
            self.servers[inst['uuid']] = nova_servers_stub.server_body(
                inst['uuid'], inst['name'], inst['flavor'], inst['vcpus'],
                64, inst['specs'])
        self.write_servers()

    def compute_node(self, name, total=16, ratio=32.0):
        root = str(uuid_mod.uuid4())
        self.client.post('/resource_providers', {'name': name,
                                                 'uuid': root})
        self.client.put_inventories(root, 0, {orc.VCPU: {
            'total': total, 'reserved': 0, 'min_unit': 1, 'max_unit': total,
            'step_size': 1, 'allocation_ratio': ratio}})
        return root

    def allocate(self, consumer, allocations):
        self.client.put('/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': r}
                            for rp, r in allocations.items()},
            'project_id': 'b0c3d1e0f6f94c4c9d1b0e1f2a3b4c5d',
            'user_id': '1f2e3d4c5b6a47989a8b7c6d5e4f3a2b',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            expected=(204,))

    def free(self, instances):
        for inst in instances:
            self.client.delete('/allocations/%s' % inst['uuid'],
                               expected=(204, 404))

    def close(self):
        if self.nova.poll() is None:
            self.nova.terminate()
            self.nova.wait(timeout=10)
        self.nova.stdout.close()
        self.placement.cleanUp()
        try:
            import kombu
            with kombu.Connection(KOMBU_URL, connect_timeout=5) as conn:
                channel = conn.channel()
                channel.queue_delete('%s.info' % self.topic)
                channel.exchange_delete(self.exchange)
        except Exception as e:
            print('could not delete the bench queue: %s' % e,
                  file=sys.stderr)


def domain_set_of(sysfs_root, usable):
    from nova_cacheaware.topology import domains
    from nova_cacheaware.topology import sysfs
    topology = sysfs.read_topology(sysfs_root) if sysfs_root else \
        sysfs.read_topology()
    return domains.cache_domains(topology, 'auto'), tuple(
        usable if usable is not None else topology.online_cpus())


def place_allocations(services, model, root, instances, domain_set, usable):
    """Allocations as the scheduler leaves them, for the row's model."""
    from nova_cacheaware.contracts import placement as names
    from nova_cacheaware.placement import host_provider
    from nova_cacheaware.placement import provider_sync
    held = [i for i in instances if i['held']]
    if model == 'host':
        result = host_provider.sync_host_provider(
            services.client, root, domain_set,
            cpu_allocation_ratio=DOMAIN_RATIO, usable_cpus=list(usable))
        targets = {i['uuid']: result.provider_uuid for i in held}
    elif model == 'domain':
        result = provider_sync.sync_domain_providers(
            services.client, root, domain_set,
            cpu_allocation_ratio=DOMAIN_RATIO, usable_cpus=list(usable))
        providers = [p for _, p in sorted(result.providers.items())]
        # Memory-bound ones on distinct domains (one Clean slot each).
        memory = [i for i in held if i['memory']]
        order = memory + [i for i in held if not i['memory']]
        targets = [providers[k % len(providers)] for k in range(len(held))]
        targets = dict(zip((i['uuid'] for i in order), targets))
    else:
        targets = {}
    for inst in instances:
        allocations = {root: {orc.VCPU: inst['vcpus']}}
        if inst['held'] and targets:
            rp = targets[inst['uuid']]
            allocations[rp] = {names.RC_DOMAIN_VCPU: inst['vcpus']}
            if inst['memory']:
                allocations[rp][names.RC_DOMAIN_MEMBOUND] = 1
        services.allocate(inst['uuid'], allocations)


def write_conf(path, services, row, hostname, uri, sysfs_root, shared,
               spec_file):
    reporting = row != 'bare'
    lines = [
        '[DEFAULT]', 'transport_url = %s' % RABBIT_URL,
        'control_exchange = %s' % services.exchange,
        '[agent]', 'libvirt_uri = %s' % uri, 'period_s = %s' % PERIOD_S,
        'counters = %s' % str(reporting).lower(),
        'spec_source = %s' % ('nova' if reporting else 'file'),
        'spec_file = %s' % spec_file,
        'capabilities = %s' % (CAPABILITIES if reporting else ''),
        'report_placement = %s' % str(reporting).lower(),
        'notifications = %s' % str(reporting).lower(),
        'hypervisor_hostname = %s' % hostname, 'host = %s' % hostname,
        'domain_cpu_allocation_ratio = %s' % DOMAIN_RATIO,
        '[placement]', 'auth_type = admin_token',
        'endpoint = %s' % services.placement.endpoint, 'token = admin',
        'provider_model = %s' % (row if row in ('host', 'domain')
                                 else 'host'),
        '[nova]', 'auth_type = none', 'endpoint = %s' % services.nova_endpoint,
        '[cacheaware_scheduler]', 'host_state_topic = %s' % services.topic,
        '[topology]', 'source = sysfs']
    if sysfs_root:
        lines.append('sysfs_root = %s' % sysfs_root)
    if shared:
        lines.insert(lines.index('[placement]'), 'cpu_shared_set = %s'
                     % shared)
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def prepare_row(services, tmp, row, n, uri='test:///default', kind='test',
                sysfs_root=None, shared='0-7', cpuset='0-7'):
    """Nova's records, Placement's allocations and the agent's config.

    Returns ``(worker spec, cleanup)``: ``cleanup()`` frees the
    allocations.
    """
    from nova_cacheaware.topology import cpulist
    prefix = '%s-%s' % (row, services.run[:6])
    instances = make_instances(n, prefix)
    arrival = arrival_instance(prefix)
    if kind != 'test':
        for inst in instances + [arrival]:
            inst['vcpus'] = 1
    services.add_servers(instances + [arrival])
    spec_file = os.path.join(tmp, '%s-specs.json' % row)
    with open(spec_file, 'w') as f:
        json.dump({i['uuid']: i['specs'] for i in instances + [arrival]}, f)
    hostname = 'cn-%s-%s.bench' % (row, services.run[:6])
    root = services.compute_node(hostname)
    domain_set, usable = domain_set_of(
        sysfs_root, cpulist.parse_cpulist(shared) if shared else None)
    model = row.split('-')[0]
    place_allocations(services, model, root, instances + [arrival],
                      domain_set, usable)
    conf = os.path.join(tmp, '%s.conf' % row)
    write_conf(conf, services, model, hostname, uri, sysfs_root, shared,
               spec_file)
    spec = {'conf': conf, 'uri': uri, 'kind': kind, 'cpuset': cpuset,
            'instances': instances, 'arrival': arrival}
    return spec, lambda: services.free(instances + [arrival])


def run_worker_process(script, tmp, row, spec, timeout=540):
    """Run ``script --worker`` on ``spec`` in a process of its own.

    Returns the worker's JSON result with ``row`` added.
    """
    spec_path = os.path.join(tmp, '%s-worker.json' % row)
    with open(spec_path, 'w') as f:
        json.dump(spec, f)
    log = os.path.join(tmp, '%s-worker.log' % row)
    with open(log, 'w') as err:
        proc = subprocess.run(
            [sys.executable, os.path.abspath(script), '--worker',
             spec_path], cwd=REPO, stdout=subprocess.PIPE, stderr=err,
            text=True, timeout=timeout)
    if proc.returncode:
        with open(log) as f:
            raise RuntimeError('worker %s failed:\n%s'
                               % (row, f.read()[-3000:]))
    result = json.loads(proc.stdout)
    result['row'] = row
    return result


def run_row(services, tmp, row, n, passes, uri='test:///default',
            kind='test', sysfs_root=None, shared='0-7', cpuset='0-7'):
    """Set up Placement for ``row``, run its worker, free its allocations."""
    spec, cleanup = prepare_row(services, tmp, row, n, uri, kind,
                                sysfs_root, shared, cpuset)
    spec['passes'] = passes
    try:
        return run_worker_process(__file__, tmp, row, spec)
    finally:
        cleanup()


def repin_latency(rounds):
    """Pin one vCPU of a TCG guest back and forth (adapter vs raw)."""
    import libvirt

    from nova_cacheaware.agent import hypervisor
    from tests.fixtures import nova_domains
    hv = hypervisor.LibvirtHypervisor('qemu:///system')
    conn = hv.connection()
    uuid = str(uuid_mod.uuid4())
    dom = conn.defineXML(nova_domains.domain_xml(
        'nca-bench-%s' % uuid[:8], 1, cpuset='0-1', uuid=uuid, kind='qemu'))
    try:
        dom.create()
        adapter, raw = [], []
        for i in range(rounds):
            t = time.perf_counter()
            hv.pin_vcpu(uuid, 0, (i % 2,))
            adapter.append(time.perf_counter() - t)
        for i in range(rounds):
            cpumap = tuple(j == i % 2 for j in range(2))
            t = time.perf_counter()
            dom.pinVcpuFlags(0, cpumap, libvirt.VIR_DOMAIN_AFFECT_LIVE)
            raw.append(time.perf_counter() - t)
        tid = hv.vcpu_threads(uuid)[0]
        with open('/proc/%d/status' % tid) as f:
            allowed = [line.split()[1] for line in f
                       if line.startswith('Cpus_allowed_list')][0]

        def q(xs, p):
            return round(sorted(xs)[int(p * (len(xs) - 1))] * 1000, 2)
        return {'rounds': rounds,
                'adapter_ms_p50': q(adapter, 0.5),
                'adapter_ms_p95': q(adapter, 0.95),
                'raw_pinVcpuFlags_ms_p50': q(raw, 0.5),
                'raw_pinVcpuFlags_ms_p95': q(raw, 0.95),
                'last_pin_seen_by_kernel': allowed == str((rounds - 1) % 2)}
    finally:
        try:
            dom.destroy()
        except libvirt.libvirtError:
            pass
        dom.undefine()


def qemu_reachable():
    import libvirt
    libvirt.registerErrorHandler(lambda ctx, err: None, None)
    try:
        libvirt.open('qemu:///system').close()
        return True
    except libvirt.libvirtError:
        return False


@contextlib.contextmanager
def bench_services(prefix):
    """``(services, scratch folder, sysfs tree)``, all removed afterwards.

    The sysfs tree is an AMD Threadripper 2990WX's (two L3 domains of 4
    CPUs under ``cpu_shared_set = 0-7``); :class:`Services` are Placement,
    the Nova stub and a RabbitMQ exchange of this run.
    """
    from tests.fixtures import machines
    from tests.fixtures import sysfs_tree
    tmp = tempfile.mkdtemp(prefix=prefix)
    services = None
    try:
        tree = sysfs_tree.write_tree(os.path.join(tmp, 'sys'),
                                     machines.threadripper_2990wx())
        services = Services(tmp)
        yield services, tmp, tree
    finally:
        if services is not None:
            services.close()
        shutil.rmtree(tmp, ignore_errors=True)


def report(path, doc):
    """Write ``doc`` to ``path`` (``-``: nowhere) and print it; exit 0."""
    from benchmarks import common
    if path != '-':
        common.write_json(path, doc)
    json.dump(doc, sys.stdout, indent=1)
    print()
    return 0


def worker_main(spec_path, run):
    """``--worker``: run ``run(spec)`` and print its JSON result."""
    with open(spec_path) as f:
        spec = json.load(f)
    json.dump(run(spec), sys.stdout)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--domains', type=int, default=200)
    parser.add_argument('--passes', type=int, default=20)
    parser.add_argument('--rows', default='bare,host,domain')
    parser.add_argument('--qemu', action='store_true',
                        help='also a host row and repin latency on '
                             'qemu:///system')
    parser.add_argument('--qemu-guests', type=int, default=4)
    parser.add_argument('--rounds', type=int, default=50)
    parser.add_argument('--json', metavar='FILE', default=RESULTS,
                        help='results file ("-": stdout only)')
    parser.add_argument('--worker', metavar='SPEC', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args.worker, run_worker)
    from benchmarks import common
    load_before = os.getloadavg()
    started = time.time()
    rows = {}
    with bench_services('agent-bench-') as (services, tmp, tree):
        for row in [r for r in args.rows.split(',') if r]:
            rows[row] = run_row(services, tmp, row, args.domains,
                                args.passes, sysfs_root=tree)
            print('%s: %.2f ms/pass, %.1f MiB' % (
                row, rows[row]['cpu_ms_per_pass'], rows[row]['rss_mib']),
                file=sys.stderr)
        qemu = None
        if args.qemu:
            if qemu_reachable():
                rows['host-qemu'] = run_row(
                    services, tmp, 'host-qemu', args.qemu_guests,
                    args.passes, uri='qemu:///system', kind='qemu',
                    sysfs_root=None, shared=None, cpuset='0-1')
                qemu = repin_latency(args.rounds)
            else:
                qemu = 'qemu:///system not reachable'
    doc = {'benchmark': 'agent_steady_state',
           'command': 'python benchmarks/agent_steady_state.py %s'
                      % ' '.join(argv if argv is not None else sys.argv[1:]),
           'machine': common.machine(), 'date': common.now(),
           'load_average_before': [round(x, 2) for x in load_before],
           'load_average_after': [round(x, 2) for x in os.getloadavg()],
           'wall_s': round(time.time() - started, 1),
           'period_s': PERIOD_S, 'domains': args.domains,
           'passes': args.passes, 'rows': rows}
    if qemu is not None:
        doc['repin_latency'] = qemu
    return report(args.json, doc)


if __name__ == '__main__':
    sys.exit(main())
