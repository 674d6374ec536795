"""Benchmark the rebalance decision (``plan_moves``) on large regions.

Usage, from the repository root::

    PYTHONPATH=. python benchmarks/rebalance_bench.py
        [--hosts 100,1000] [--vms-per-host 200] [--budget 10]
        [--repeat 3] [--json-out benchmarks/results/FILE.json]

Each region is planned with both priorities of the snapshot (rooms for
refused requests first, the default; Clean first), one after the other.

Each region is seeded and random: hosts of 16 cache domains of 16 vCPUs
(two NUMA nodes, 128 pCPUs), each holding about ``--vms-per-host``
servers of 1 or 2 vCPUs (one in ten memory-bound, six cpu-bound, three
not yet classified), pinned by a first-fit that ignores Clean - so that
many domains are Dirty - with a few servers left on Nova's CPUs, a few
storming, a few opted out or in groups, and some refused ``required``
requests. The time is CPU seconds of this process
(``time.process_time``) for one :func:`plan_moves` call, the best and the
median of ``--repeat`` runs: the machine is shared, and wall time would
measure the neighbours as well. The load average is recorded.
"""

import argparse
import dataclasses
import os
import random
import statistics
import sys
import time

from benchmarks import common
from nova_cacheaware.contracts import rebalance_snapshot as rs
from nova_cacheaware.rebalance import policy as rebalance

DOMAINS = 16
DOMAIN_VCPUS = 16


def _server(rng, uuid):
    workload = rng.choices(('memory', 'cpu', 'unknown'), (1, 6, 3))[0]
    return rs.Server(
        uuid=uuid, vcpus=rng.choice((1, 1, 1, 2)), workload=workload,
        cache_clean=rng.choices(('preferred', 'required', 'off'),
                                (8, 1, 1))[0],
        cache_aware=rng.random() < 0.95, opt_out=rng.random() < 0.02,
        group=rng.choice(('anti', 'aff')) if rng.random() < 0.02 else None,
        storm=rng.random() < 0.005)


def random_host(rng, n, vms):
    """Host ``n``: domains filled first-fit, a few servers left over."""
    domains = tuple(rs.Domain('L3-%02d' % d, DOMAIN_VCPUS, d * 2 // DOMAINS)
                    for d in range(DOMAINS))
    free = [DOMAIN_VCPUS] * DOMAINS
    servers = []
    for i in range(rng.randint(vms * 3 // 4, vms)):
        server = _server(rng, 'h%05d-vm%04d' % (n, i))
        start = rng.randrange(DOMAINS)
        domain = None
        if server.cache_aware and rng.random() > 0.01:
            for k in range(DOMAINS):
                d = (start + k) % DOMAINS
                if free[d] >= server.vcpus:
                    free[d] -= server.vcpus
                    domain = domains[d].id
                    break
        servers.append(rs.Server(**dict(server.__dict__, domain=domain)))
    return rs.Host('host-%05d' % n, DOMAINS * DOMAIN_VCPUS // 2, domains,
                   tuple(servers))


def random_region(hosts, vms, seed=1):
    """A seeded region of ``hosts`` hosts."""
    rng = random.Random(seed)
    return rs.Snapshot(
        hosts=tuple(random_host(rng, n, vms) for n in range(hosts)),
        groups=(('aff', 'affinity'), ('anti', 'anti-affinity')),
        pending=tuple(rng.choice((4, 8, 16)) for _ in range(hosts // 20)))


def measure(snapshot, budget, repeat):
    """CPU seconds of ``repeat`` plans, and the last plan."""
    times, plan = [], None
    for _ in range(repeat):
        start = time.process_time()
        plan = rebalance.plan_moves(snapshot, budget)
        times.append(time.process_time() - start)
    return times, plan


def main(argv=None):
    """Run every size, print and optionally write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', default='100,1000')
    parser.add_argument('--vms-per-host', type=int, default=200)
    parser.add_argument('--budget', type=int, default=10)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--json-out')
    args = parser.parse_args(argv)
    rows = []
    for hosts in [int(h) for h in args.hosts.split(',')]:
        region = random_region(hosts, args.vms_per_host)
        # Both priorities on the same region, one after the other.
        for priority in rs.PRIORITIES:
            snapshot = dataclasses.replace(region, priority=priority)
            times, plan = measure(snapshot, args.budget, args.repeat)
            rows.append({
                'hosts': hosts, 'domains': hosts * DOMAINS,
                'servers': sum(len(h.servers) for h in snapshot.hosts),
                'pending': len(snapshot.pending), 'priority': priority,
                'budget': args.budget, 'moves': len(plan.moves),
                'cpu_s': [round(t, 3) for t in times],
                'best_cpu_s': round(min(times), 3),
                'median_cpu_s': round(statistics.median(times), 3),
                'before': plan.before.counts(),
                'after': plan.after.counts()})
            print(rows[-1], flush=True)
    doc = {'benchmark': 'rebalance_bench', 'machine': common.machine(),
           'date': common.now(), 'load_average': os.getloadavg(),
           'python': sys.version.split()[0],
           'vms_per_host': args.vms_per_host, 'rows': rows}
    if args.json_out:
        common.write_json(args.json_out, doc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
