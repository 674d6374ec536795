"""Time to detect and recover from each fault, and the cost of reconciling.

1. Runs the fault tests (real components: real Placement WSGI service on
   MariaDB, real RabbitMQ, real agent processes, private libvirtds) with
   ``NOVA_CACHEAWARE_FAULT_TIMES`` set; each test appends what it measured:
   ``kill -9`` of an agent until the real filter refuses its host, restart
   until it is eligible again, SIGTERM until the trait is off, a 30 s stop
   of the Placement service, a libvirtd kill, providers deleted or edited
   by hand.
2. The price of reconciling Placement every pass, against the named
   baseline measured in the same run: the full read-compare sync of an
   unchanged tree (what a pass would cost without the generation check,
   ``provider_sync.sync_domain_providers``) versus the reporter's pass on
   the same unchanged tree (one ``GET ?in_tree=``), ``--rounds`` each, on
   the real Placement service, with ``--domains`` domain providers.

Usage: python benchmarks/fault_times.py [--rounds 30] [--domains 16]
       [--skip-tests] [--output FILE] [--rst FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid as uuid_mod

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import common  # noqa: E402
from nova_cacheaware.agent import placement_report  # noqa: E402
from nova_cacheaware.placement import client as placement_client  # noqa
from nova_cacheaware.placement import provider_sync  # noqa: E402
from nova_cacheaware.topology import domains  # noqa: E402
from tests import placement_fixtures  # noqa: E402

FAULT_TESTS = ('test_faults|test_liveness|'
               'LibvirtdRestartTest.test_agent_reconnects')


class Counting(placement_client.PlacementClient):
    """The real client, counting requests."""

    def __init__(self, client):
        super().__init__(client._adapter)
        self.requests = 0

    def request(self, *args, **kwargs):
        self.requests += 1
        return super().request(*args, **kwargs)


def fault_tests():
    """Run the fault tests; their measurements, one dict per line."""
    with tempfile.NamedTemporaryFile('r', suffix='.jsonl') as out:
        env = dict(os.environ, NOVA_CACHEAWARE_FAULT_TIMES=out.name)
        cmd = [sys.executable, '-m', 'stestr', '--test-path',
               './tests/functional', 'run', '--concurrency', '1',
               FAULT_TESTS]
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True,
                              text=True)
        tail = proc.stdout.splitlines()[-12:]
        return {'command': ' '.join(['python'] + cmd[1:]),
                'returncode': proc.returncode,
                'summary': [line for line in tail if line.strip()],
                'measurements': [json.loads(line) for line in out]}


def domain_set(n, cpus_per_domain=8):
    """``n`` L3 domains of ``cpus_per_domain`` CPUs."""
    return domains.DomainSet(level=3, fallback=False, domains=tuple(
        domains.CacheDomain('L3-%d' % i, 3, tuple(range(
            i * cpus_per_domain, (i + 1) * cpus_per_domain)), 32768, (0,))
        for i in range(n)))


def reconcile_cost(rounds, n_domains):
    """ms and requests per pass: full compare vs the generation check."""
    service = placement_fixtures.PlacementService()
    service.setUp()
    try:
        client = Counting(service.client)
        root = str(uuid_mod.uuid4())
        name = 'cn-%s' % root[:8]
        client.post('/resource_providers', {'name': name, 'uuid': root})
        dset = domain_set(n_domains)
        usable = range(n_domains * 8)
        reporter = placement_report.PlacementSyncReporter(client, name)
        for _ in range(2):   # create, then the pass that finds it in sync
            reporter.sync_domains(dset, usable)

        def measure(one_pass):
            times, before = [], client.requests
            for _ in range(rounds):
                t = time.perf_counter()
                one_pass()
                times.append(time.perf_counter() - t)
            return (round(statistics.median(times) * 1000, 2),
                    (client.requests - before) / rounds)

        full_ms, full_req = measure(lambda: provider_sync.
                                    sync_domain_providers(
                                        client, root, dset,
                                        cpu_allocation_ratio=1.0,
                                        usable_cpus=list(usable)))
        # The full syncs wrote nothing: the tree is still in sync.
        reporter.sync_domains(dset, usable)
        check_ms, check_req = measure(
            lambda: reporter.sync_domains(dset, usable))
        return {'domains': n_domains, 'rounds': rounds,
                'baseline_full_sync_ms_p50': full_ms,
                'baseline_full_sync_requests': full_req,
                'generation_check_ms_p50': check_ms,
                'generation_check_requests': check_req,
                'speedup': round(full_ms / check_ms, 1)}
    finally:
        service.cleanUp()


def rst(report):
    """The results as the RST table included by the failure-modes page."""
    rows = [('fault', 'figure', 'seconds')]
    for m in report.get('faults', {}).get('measurements', []):
        for key, value in m.items():
            if key != 'fault' and isinstance(value, (int, float)) \
                    and not isinstance(value, bool):
                rows.append((m['fault'], key[:-2].replace('_', ' ')
                             if key.endswith('_s') else key.replace('_', ' '),
                             str(value)))
    cost = report['reconcile_cost']
    rows.append(('unchanged tree, %d domains: full sync (baseline)'
                 % cost['domains'], '%d requests, p50'
                 % cost['baseline_full_sync_requests'],
                 '%.3f' % (cost['baseline_full_sync_ms_p50'] / 1000)))
    rows.append(('unchanged tree, %d domains: generation check'
                 % cost['domains'], '%d request, p50 (%.0fx faster)'
                 % (cost['generation_check_requests'], cost['speedup']),
                 '%.3f' % (cost['generation_check_ms_p50'] / 1000)))
    lines = ['.. Generated by benchmarks/fault_times.py --rst; %s, %s,'
             % (report['machine'], report['date']),
             '   load average %s before, %s after.' % (
                 ' '.join(report['loadavg_before']),
                 ' '.join(report['loadavg_after'])), '',
             '.. list-table:: Measured on %s, %s (load average %s)'
             % (report['machine'], report['date'][:10],
                report['loadavg_before'][0]),
             '   :header-rows: 1', '']
    for row in rows:
        lines.append('   * - %s' % row[0])
        lines.extend('     - %s' % cell for cell in row[1:])
    return '\n'.join(lines) + '\n'


def loadavg():
    """The 1/5/15-minute load averages."""
    with open('/proc/loadavg') as f:
        return f.read().split()[:3]


def main(argv=None):
    """Measure, print JSON (and write it to ``--output``)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=30)
    parser.add_argument('--domains', type=int, default=16)
    parser.add_argument('--skip-tests', action='store_true')
    parser.add_argument('--output')
    parser.add_argument('--rst', help='also write the RST table here')
    args = parser.parse_args(argv)
    report = {'benchmark': 'fault_times',
              'command': 'python benchmarks/fault_times.py %s'
                         % ' '.join(argv if argv is not None
                                    else sys.argv[1:]),
              'machine': common.machine(),
              'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
              'loadavg_before': loadavg()}
    report['reconcile_cost'] = reconcile_cost(args.rounds, args.domains)
    if not args.skip_tests:
        report['faults'] = fault_tests()
    report['loadavg_after'] = loadavg()
    text = json.dumps(report, indent=2) + '\n'
    sys.stdout.write(text)
    if args.output:
        with open(args.output, 'w') as f:
            f.write(text)
    if args.rst:
        with open(args.rst, 'w') as f:
            f.write(rst(report))
    return 0


if __name__ == '__main__':
    sys.exit(main())
