"""Exact-fit bursts: N concurrent boots for the N free Clean places.

The burst that loses servers if anything does: separate requests, all at
once, for exactly the free places of the region, handled by several
scheduler workers. On the local OpenStack (``tools/devcloud.sh``: Nova API,
conductor, scheduler with ``--workers`` processes, Placement on MariaDB,
RabbitMQ) with fake-driver computes of a real topology (``fake-zen``: four
L3 domains of 8 CPUs each), for each provider model:

* **domain**: per-domain providers written once by ``cloud.py
  sync-domains`` (no agent, no live state: the scheduler works from
  Placement and its own and the other workers' claims and reservations);
* **host**: the per-host model (the default): every fake compute runs the
  real agent code (``DEVCLOUD_FAKE_AGENTS=1``), which keeps the host
  provider's counts and publishes live state.

Each round counts the free Clean places of a ``cache_clean=required``
2-vCPU flavor from Placement's inventories and usages, boots exactly that
many single-server requests at once, waits until each has a host or is
in ERROR, and records every NoValidHost and whether it was spurious
(Placement still had a candidate for the same request right after it).
Then it deletes the servers and waits until the places are free again.

Run with the devcloud's virtualenv (``tools/devcloud.sh up`` creates it)::

    .devcloud/venv/bin/python benchmarks/exact_fit_bursts.py [--rounds 5]

It brings the devcloud down and up itself (once per model) and takes it
down at the end. Results: ``benchmarks/results/exact_fit_bursts.json``.
"""

import argparse
from concurrent import futures
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'tools', 'devcloud'))

import cloud as cloudlib  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks import traffic_e2e  # noqa: E402

from nova_cacheaware.api import flavor_specs  # noqa: E402
from nova_cacheaware.contracts import placement as names  # noqa: E402

OPTIONS = {'cache_share': 'all', 'workload': 'memory',
           'cache_clean': 'required'}
VCPUS = 2


def log(msg):
    print('exact-fit: %s' % msg, file=sys.stderr, flush=True)


def devcloud(action, model, hosts, workers):
    """``tools/devcloud.sh ACTION`` for ``model`` ('domain' or 'host')."""
    env = dict(os.environ, DEVCLOUD_LIBVIRT='0',
               DEVCLOUD_FAKE_COMPUTES=' '.join(hosts),
               DEVCLOUD_SCHEDULER_WORKERS=str(workers),
               DEVCLOUD_FAKE_AGENTS='1' if model == 'host' else '0',
               DEVCLOUD_AGENT_PERIOD='3',
               DEVCLOUD_CPU_ALLOCATION_RATIO='1.0')
    traffic_e2e.run_devcloud(action, env)


def free_places(cloud):
    """Free Clean places of the flavor, counted from Placement.

    A domain provider has one when its memory-bound slot and ``VCPUS`` of
    its vCPUs are free; a host provider has as many as its memory-bound
    slots left (``reserved`` already counts the domains that are no longer
    Clean or have no room).
    """
    count = 0
    for rp in cloud.placement('GET', '/resource_providers')[
            'resource_providers']:
        if not names.is_ours(rp['name']):
            continue
        inv = cloud.placement('GET', '/resource_providers/%s/inventories'
                              % rp['uuid'])['inventories']
        used = cloud.placement('GET', '/resource_providers/%s/usages'
                               % rp['uuid'])['usages']

        def room(rc):
            i = inv.get(rc)
            if i is None:
                return 0
            return int((i['total'] - i['reserved']) * i['allocation_ratio']
                       - used.get(rc, 0))
        slots = room(names.RC_DOMAIN_MEMBOUND)
        if rp['name'].endswith(':cacheaware'):
            count += max(0, slots)
        elif slots >= 1 and room(names.RC_DOMAIN_VCPU) >= VCPUS:
            count += 1
    return count


def wait_free(cloud, want, timeout=120):
    """Wait until ``want`` places are free again (agents' syncs)."""
    deadline = time.monotonic() + timeout
    while True:
        have = free_places(cloud)
        if have >= want or time.monotonic() > deadline:
            return have
        time.sleep(1)


def one_round(cloud, flavors, places, round_):
    """Boot ``places`` requests at once; the per-server records."""
    with futures.ThreadPoolExecutor(max_workers=places) as pool:
        batches = list(pool.map(
            lambda n: traffic_e2e.boot(cloud, flavors, 'mem-required',
                                       VCPUS, 1, 'fit-%d-%d' % (round_, n)),
            range(places)))
    return [r for batch in batches for r in batch]


def delete_all(cloud, servers, timeout=180):
    for s in servers:
        cloud.nova('DELETE', '/servers/' + s['id'], ok=(204, 404))
    deadline = time.monotonic() + timeout
    for s in servers:
        while (time.monotonic() < deadline and cloud.nova(
                'GET', '/servers/' + s['id'], ok=(200, 404))):
            time.sleep(0.5)


def run_model(model, args):
    hosts = ['fake-zen-%02d' % i for i in range(args.hosts)]
    devcloud('down', model, hosts, args.workers)
    devcloud('up', model, hosts, args.workers)
    cloud = cloudlib.Cloud()
    if model == 'domain':
        cloudlib.sync_domains(cloud)
    else:
        traffic_e2e.wait_host_providers(
            cloud, hosts=['devcloud-' + h for h in hosts])
    flavor = cloud.nova('POST', '/flavors', {'flavor': {
        'name': 'exact-fit.mem.%d' % VCPUS, 'vcpus': VCPUS, 'ram': 256,
        'disk': 1}})['flavor']
    specs = flavor_specs.compute_specs(OPTIONS, VCPUS).set
    cloud.nova('POST', '/flavors/%s/os-extra_specs' % flavor['id'],
               {'extra_specs': specs})
    flavors = {('mem-required', VCPUS): (flavor['id'], specs)}
    rounds = []
    places = wait_free(cloud, 4 * args.hosts)
    for round_ in range(args.rounds):
        t0 = time.monotonic()
        records = one_round(cloud, flavors, places, round_)
        # A host assigned: the claim held (the fake driver builds it).
        placed = sum(1 for r in records if r['host'])
        novalid = sum(1 for r in records if r['novalidhost'])
        spurious = sum(1 for r in records if r['spurious'])
        rounds.append({'places': places, 'placed': placed,
                       'novalidhost': novalid, 'spurious': spurious,
                       'latency_max_s': round(max(r['latency']
                                                  for r in records), 2),
                       'seconds': round(time.monotonic() - t0, 1)})
        log('%s round %d: %d places, %d placed, %d NoValidHost (%d '
            'spurious)' % (model, round_, places, placed, novalid,
                           spurious))
        delete_all(cloud, records)
        places = wait_free(cloud, places)
    devcloud('down', model, hosts, args.workers)
    return rounds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--hosts', type=int, default=3)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--models', default='domain,host')
    parser.add_argument('--out', default=os.path.join(
        ROOT, 'benchmarks', 'results', 'exact_fit_bursts.json'))
    args = parser.parse_args(argv)
    traffic_e2e.use_devcloud()
    results = {}
    for model in args.models.split(','):
        results[model] = run_model(model, args)
    common.write_json(args.out, {
        'command': 'benchmarks/exact_fit_bursts.py %s'
                   % ' '.join(argv if argv is not None else sys.argv[1:]),
        'machine': common.machine(), 'date': common.now(),
        'hosts': '%d x fake-zen (4 L3 domains of 8 CPUs)' % args.hosts,
        'scheduler_workers': args.workers, 'flavor': dict(OPTIONS,
                                                          vcpus=VCPUS),
        'rounds': results,
        'summary': {m: {'places': sum(r['places'] for r in rs),
                        'placed': sum(r['placed'] for r in rs),
                        'spurious_novalidhost': sum(r['spurious']
                                                    for r in rs)}
                    for m, rs in results.items()}})
    return 0


if __name__ == '__main__':
    sys.exit(main())
