"""Agent steady state and repin latency.

1. Steady state on libvirt's test:///default driver: ``--domains`` Nova-like
   running domains (a few memory-bound, the rest cpu/io/auto), one reconcile
   to converge, then ``--passes`` steady reconciles (zero repins expected).
   Reports CPU time per reconcile, the extrapolated CPU share of one core at
   a 10 s period, and RSS. Named baseline, same run: a bare libvirt read of
   the same facts (list + persistent XML + vcpuPinInfo per domain, no
   parsing, no planning), i.e. the least any libvirt-observing agent does.
   With ``--reporting`` the same domains are then reconciled by a second
   agent that reports: a real Placement service (MariaDB; provider sync,
   MEMBOUND reserved, each instance's allocation) and
   ``cacheaware.host.state`` notifications on the real RabbitMQ at
   127.0.0.1:5672; its CPU per pass is reported next to the first (the
   baseline of that comparison), Placement's and RabbitMQ's own CPU apart
   (they run in other processes).
2. Repin latency on a real libvirtd + QEMU (TCG) guest (``--qemu``): pin one
   vCPU back and forth between CPUs 0 and 1, through the agent's adapter and
   through raw ``pinVcpuFlags``.

The planner is the test double in tests/fixtures unless ``--planner real``
(``nova_cacheaware.policy.cachedomain``) is given; its cost is reported
apart so the agent's own overhead is visible.

Usage: python benchmarks/agent_steady_state.py [--domains 200] [--passes 20]
       [--qemu] [--planner double|real] [--reporting] [--json]
"""

import argparse
import json
import platform
import resource
import statistics
import sys
import time
import uuid as uuid_mod

import libvirt

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import decide
from nova_cacheaware.agent import hypervisor
from nova_cacheaware.agent import service
from nova_cacheaware.agent import specs
from nova_cacheaware.topology import domains
from tests.fixtures import nova_domains
from tests.fixtures import planner_double

FOUR = domains.DomainSet(level=2, fallback=False, domains=tuple(
    domains.CacheDomain('L2-%d' % i, 2, (2 * i, 2 * i + 1), 2048, (0,))
    for i in range(4)))


def rss_mib():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def reporting_agent(hv, planner, spec, n_domains):
    """An agent reporting to a fresh real Placement and the real RabbitMQ.

    Returns ``(agent, cleanup)``.
    """
    from oslo_config import cfg
    import oslo_messaging

    from nova_cacheaware.agent import notify
    from nova_cacheaware.agent import placement_report
    from tests import placement_fixtures

    service_fixture = placement_fixtures.PlacementService()
    service_fixture.setUp()
    client = service_fixture.client
    root = str(uuid_mod.uuid4())
    name = 'bench-%s' % root[:8]
    client.post('/resource_providers', {'name': name, 'uuid': root})
    client.put_inventories(root, 0, {'VCPU': {
        'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8,
        'step_size': 1, 'allocation_ratio': 16.0}})
    conf = cfg.ConfigOpts()
    conf([])
    transport = oslo_messaging.get_notification_transport(
        conf, url='rabbit://guest:guest@127.0.0.1:5672/')
    topic = 'cacheaware_bench_%s' % root[:8]
    publisher = notify.NotificationStatePublisher(transport, name, topic)
    agent = service.Agent(
        hv, FOUR, planner, actuator.Actuator(hv),
        spec_source=specs.StaticSpecSource(spec),
        placement=placement_report.PlacementSyncReporter(client, name),
        publisher=publisher)

    def cleanup():
        transport.cleanup()
        service_fixture.cleanUp()

    return agent, publisher, cleanup


def steady_state(n_domains, passes, planner, reporting=False):
    uri = 'test:///default'
    hv = hypervisor.LibvirtHypervisor(uri)
    conn = hv.connection()
    spec = {}
    workloads = ['memory'] * 4 + ['cpu', 'io', 'auto'] * n_domains
    for i in range(n_domains):
        uuid = str(uuid_mod.uuid4())
        dom = conn.defineXML(nova_domains.domain_xml(
            'bench-%d' % i, 2, cpuset='0-7', uuid=uuid))
        dom.create()
        spec[uuid] = {'cacheaware:workload': workloads[i]}
    timed = {'planner_s': 0.0}

    def timed_planner(doc):
        t = time.process_time()
        try:
            return planner(doc)
        finally:
            timed['planner_s'] += time.process_time() - t

    agent = service.Agent(hv, FOUR, timed_planner, actuator.Actuator(hv),
                          spec_source=specs.StaticSpecSource(spec))
    first = agent.reconcile()
    cpu, wall = [], []
    timed['planner_s'] = 0.0
    repins = 0
    for _ in range(passes):
        t0, w0 = time.process_time(), time.perf_counter()
        one = agent.reconcile()
        cpu.append(time.process_time() - t0)
        wall.append(time.perf_counter() - w0)
        repins += one.result.repins
    base_cpu = []
    for _ in range(passes):
        t0 = time.process_time()
        for dom in conn.listAllDomains(
                libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
            dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
            dom.vcpuPinInfo(0)
        base_cpu.append(time.process_time() - t0)
    per = statistics.median(cpu)
    base = statistics.median(base_cpu)
    extra = {}
    rss_before = rss_mib()
    if reporting:
        ragent, publisher, cleanup = reporting_agent(hv, planner, spec,
                                                     n_domains)
        try:
            ragent.reconcile()
            rcpu = []
            for _ in range(passes):
                t0 = time.process_time()
                one = ragent.reconcile()
                rcpu.append(time.process_time() - t0)
                repins += one.result.repins
            rper = statistics.median(rcpu)
            extra = {
                'reporting_cpu_ms_per_reconcile': round(rper * 1000, 2),
                'reporting_cpu_pct_one_core_at_10s': round(
                    rper / 10.0 * 100, 3),
                'ratio_reporting_to_not': round(rper / per, 2),
                'notifications_sent': publisher.sent,
                'notifications_failed': publisher.failed,
                'rss_mib_with_reporting': round(rss_mib(), 1),
            }
        finally:
            cleanup()
    return dict(extra, **{
        'domains': n_domains, 'passes': passes,
        'first_pass_repins': first.result.repins,
        'steady_repins': repins,
        'cpu_ms_per_reconcile': round(per * 1000, 2),
        'wall_ms_per_reconcile': round(statistics.median(wall) * 1000, 2),
        'planner_cpu_ms_per_reconcile': round(
            timed['planner_s'] / passes * 1000, 2),
        'cpu_pct_one_core_at_10s': round(per / 10.0 * 100, 3),
        'rss_mib': round(rss_before, 1),
        'max_rss_mib': round(resource.getrusage(
            resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        'baseline_bare_read_cpu_ms': round(base * 1000, 2),
        'ratio_agent_to_bare_read': round(per / base, 2) if base else None,
    })


def repin_latency(rounds):
    uri = 'qemu:///system'
    hv = hypervisor.LibvirtHypervisor(uri)
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

        def ms(xs, q):
            return round(sorted(xs)[int(q * (len(xs) - 1))] * 1000, 2)
        return {'rounds': rounds,
                'adapter_ms_p50': ms(adapter, 0.5),
                'adapter_ms_p95': ms(adapter, 0.95),
                'raw_pinVcpuFlags_ms_p50': ms(raw, 0.5),
                'raw_pinVcpuFlags_ms_p95': ms(raw, 0.95),
                'last_pin_seen_by_kernel': allowed == str((rounds - 1) % 2)}
    finally:
        try:
            dom.destroy()
        except libvirt.libvirtError:
            pass
        dom.undefine()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--domains', type=int, default=200)
    parser.add_argument('--passes', type=int, default=20)
    parser.add_argument('--qemu', action='store_true',
                        help='also measure repin latency on qemu:///system')
    parser.add_argument('--rounds', type=int, default=50)
    parser.add_argument('--planner', choices=['double', 'real'],
                        default='double')
    parser.add_argument('--reporting', action='store_true',
                        help='also measure with Placement and RabbitMQ')
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args(argv)
    libvirt.registerErrorHandler(lambda ctx, err: None, None)
    planner = (decide.default_planner() if args.planner == 'real'
               else planner_double.plan)
    result = {'machine': platform.processor() or platform.machine(),
              'date': time.strftime('%Y-%m-%d', time.gmtime()),
              'planner': args.planner,
              'steady_state': steady_state(args.domains, args.passes,
                                           planner, args.reporting)}
    if args.qemu:
        result['repin_latency'] = repin_latency(args.rounds)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        for section, values in result.items():
            if isinstance(values, dict):
                print(section)
                for k, v in values.items():
                    print('  %-32s %s' % (k, v))
            else:
                print('%-34s %s' % (section, values))
    return 0


if __name__ == '__main__':
    sys.exit(main())
