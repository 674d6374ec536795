"""GET /allocation_candidates with and without the cache domain group.

Real Placement 16 (``placement.wsgi.api`` on a threaded WSGI server) on a
scratch MariaDB database, on loopback. The cloud: ``--computes`` compute
node trees (default 500) shaped as nova-compute leaves them (VCPU,
MEMORY_MB, DISK_GB and COMPUTE_* traits on the root), each with
``--domains`` cache domain children (default 16 x 8 CPUs) written by
:func:`sync_domain_providers`. Compute 0 is synced through the API; the
other trees are copied from it in SQL (minutes faster), and one copy is
synced again to check that it is exactly what the sync writes (0 writes).

Requests are the query strings Nova 34 sends (``limit=1000``,
``root_required=!COMPUTE_STATUS_DISABLED``) for a 4-vCPU flavor:

* ``baseline``: no cache keys;
* ``all_share``: + ``resources_CACHE=CUSTOM_CACHE_DOMAIN_VCPU:4`` and
  ``group_policy=none``; ``all_share_agent``: + ``required_CACHE=
  CUSTOM_CACHEAWARE_AGENT`` (what ``flavor set --cache-share all`` writes:
  the trait is on the agent's providers);
  ``all_share_membound``: + ``CUSTOM_CACHE_DOMAIN_MEMBOUND:1`` in the group;
* ``all_share_clean``: both (what ``flavor set --cache-share all --workload
  memory --cache-clean required`` writes), also without ``limit``
  (``_nolimit``) and with ``group_policy=isolate`` (``_isolate``);
* ``all_share_unsuffixed``: the domain vCPUs in the unsuffixed group, no
  granular group (an alternative shape);
* ``plain_baseline``: the baseline on a second database with the same roots
  and no domain providers (the region before nova-cacheaware);
* ``tuned_*``: on a service with Placement's ``max_allocation_candidates``
  and ``breadth-first`` (same database);
* ``lean_*`` and ``lean_tuned_*``: on a third database synced with
  ``child_traits=False`` (domain providers without traits); ``--no-lean``
  skips them.

``--queries`` picks the variants (default: baseline, all_share_agent,
all_share_unsuffixed, all_share_clean).

Rounds interleave the variants, so machine noise hits them alike. Reported
per variant: fastest and median wall time, median CPU time of the Placement
process, and ratios to the baseline of the same service and to the plain
region. Prints a JSON document (``--output`` writes it to a file too);
``--profile N`` profiles each request in-process instead (``--lean``: on
the lean model).

Run: ``python benchmarks/placement_alloc_candidates.py`` (needs MariaDB at
127.0.0.1:3306, root without password; about 4 minutes on 2 cores).
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time
import uuid

import os_resource_classes as orc
import os_traits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from benchmarks import common  # noqa: E402
from nova_cacheaware.contracts import placement as names  # noqa: E402
from nova_cacheaware.placement import provider_sync  # noqa: E402
from nova_cacheaware.topology import domains as topo_domains  # noqa: E402
from tests import placement_fixtures  # noqa: E402

ROOT_TRAITS = [os_traits.COMPUTE_NODE, os_traits.HW_CPU_X86_AVX2,
               os_traits.COMPUTE_VOLUME_EXTEND]


def domain_set(count, per_domain):
    """``count`` L3 domains of ``per_domain`` CPUs each."""
    return topo_domains.DomainSet(level=3, fallback=False, domains=tuple(
        topo_domains.CacheDomain(
            id='L3-%d' % i, level=3,
            cpus=tuple(range(i * per_domain, (i + 1) * per_domain)),
            size_kib=32768, numa_nodes=(i * 2 // count,))
        for i in range(count)))


def make_compute(client, index, cpus):
    """A root provider as nova-compute leaves it; returns its uuid."""
    rp_uuid = str(uuid.uuid4())
    client.post('/resource_providers',
                {'name': 'bench-cn-%04d' % index, 'uuid': rp_uuid})
    doc = client.put_inventories(rp_uuid, 0, {
        orc.VCPU: {'total': cpus, 'allocation_ratio': 4.0,
                   'max_unit': cpus},
        orc.MEMORY_MB: {'total': 1024 * 1024, 'reserved': 4096,
                        'max_unit': 1024 * 1024},
        orc.DISK_GB: {'total': 4000, 'max_unit': 4000}})
    client.put_traits(rp_uuid, doc['resource_provider_generation'],
                      ROOT_TRAITS)
    return rp_uuid


def clone_trees(conn, source_root_uuid, copies, first_index):
    """Copy the provider tree of ``source_root_uuid`` ``copies`` times.

    Rows of resource_providers, inventories and resource_provider_traits,
    with new ids, uuids and names (the index replaces the source's).
    Returns the new root uuids.
    """
    cur = conn.cursor()
    cur.execute('SELECT id FROM resource_providers WHERE uuid=%s',
                (source_root_uuid,))
    (root_id,) = cur.fetchone()
    cur.execute('SELECT id, name, parent_provider_id FROM resource_providers '
                'WHERE root_provider_id=%s ORDER BY id', (root_id,))
    tree = cur.fetchall()
    cur.execute('SELECT resource_provider_id, resource_class_id, total, '
                'reserved, min_unit, max_unit, step_size, allocation_ratio '
                'FROM inventories WHERE resource_provider_id IN (%s)'
                % ','.join(str(row[0]) for row in tree))
    inventories = cur.fetchall()
    cur.execute('SELECT resource_provider_id, trait_id FROM '
                'resource_provider_traits WHERE resource_provider_id IN (%s)'
                % ','.join(str(row[0]) for row in tree))
    traits = cur.fetchall()
    cur.execute('SELECT MAX(id) FROM resource_providers')
    (next_id,) = cur.fetchone()
    source_name = tree[0][1]
    providers, inv_rows, trait_rows, roots = [], [], [], []
    for n in range(copies):
        new_name = 'bench-cn-%04d' % (first_index + n)
        id_map = {}
        for old_id, _name, _parent in tree:
            next_id += 1
            id_map[old_id] = next_id
        new_root = id_map[root_id]
        for old_id, name, parent in tree:
            rp_uuid = str(uuid.uuid4())
            if old_id == root_id:
                roots.append(rp_uuid)
            providers.append((id_map[old_id], rp_uuid,
                              name.replace(source_name, new_name, 1), 0,
                              new_root, id_map.get(parent)))
        inv_rows.extend((id_map[row[0]],) + tuple(row[1:])
                        for row in inventories)
        trait_rows.extend((id_map[rp], trait) for rp, trait in traits)
    # Plain %s placeholders only: PyMySQL then sends multi-row INSERTs.
    now = datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0, tzinfo=None)
    cur.executemany(
        'INSERT INTO resource_providers (id, uuid, name, generation, '
        'root_provider_id, parent_provider_id, created_at) VALUES '
        '(%s, %s, %s, %s, %s, %s, %s)', [p + (now,) for p in providers])
    cur.executemany(
        'INSERT INTO inventories (resource_provider_id, resource_class_id, '
        'total, reserved, min_unit, max_unit, step_size, allocation_ratio, '
        'created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)',
        [row + (now,) for row in inv_rows])
    cur.executemany(
        'INSERT INTO resource_provider_traits (resource_provider_id, '
        'trait_id, created_at) VALUES (%s, %s, %s)',
        [row + (now,) for row in trait_rows])
    return roots


def queries(vcpus, ram_mb):
    """name -> query string, as Nova 34 builds them."""
    base = ('limit=1000&resources=VCPU:%d,MEMORY_MB:%d'
            '&root_required=!COMPUTE_STATUS_DISABLED' % (vcpus, ram_mb))
    cache = '&resources_CACHE=%s:%d' % (names.RC_DOMAIN_VCPU, vcpus)
    # As "flavor set" writes it: on the provider of the cache group.
    agent = '&required_CACHE=%s' % names.TRAIT_AGENT
    membound = ',%s:1' % names.RC_DOMAIN_MEMBOUND
    policy = '&group_policy=none'
    # All-share without a granular group: the domain vCPUs in the
    # unsuffixed group (one resource class always comes whole from one
    # provider, so still one domain).
    unsuffixed = base.replace(
        'MEMORY_MB:%d' % ram_mb,
        'MEMORY_MB:%d,%s:%d' % (ram_mb, names.RC_DOMAIN_VCPU, vcpus))
    return {
        'baseline': base,
        'all_share': base + cache + policy,
        'all_share_agent': base + agent + cache + policy,
        'all_share_membound': base + cache + membound + policy,
        'all_share_clean': base + agent + cache + membound + policy,
        'all_share_clean_nolimit': (base.replace('limit=1000&', '') + agent
                                    + cache + membound + policy),
        'all_share_unsuffixed': (unsuffixed + '&required=%s'
                                 % names.TRAIT_AGENT),
        'all_share_clean_isolate': (base + agent + cache + membound
                                    + '&group_policy=isolate'),
    }


#: Queries measured by default on every database and service.
MEASURED = ('baseline', 'all_share_agent', 'all_share_unsuffixed',
            'all_share_clean')


#: Placement functions whose cumulative time the profile lists too.
PROFILE_KEYS = ('(_build_provider_summaries|get_traits_by_provider_tree|'
                'get_usages_by_provider_trees|get_providers_with_resource|'
                '_alloc_candidates_single_provider|_merge_candidates|'
                '_alloc_candidates_multiple_providers|get_trees_matching_all|'
                '_transform_provider_summaries|_transform_allocation_requests|'
                '_provider_ids_from_root_ids|list_allocation_candidates|'
                'limit_results|iterencode|_get_trees_with_traits)')


def process_cpu_seconds(pid):
    """User + system CPU seconds of process ``pid`` (Linux /proc)."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def measure(variants, rounds):
    """Wall and Placement-CPU milliseconds per variant.

    ``variants``: name -> (PlacementService, query). The CPU time of the
    Placement process is what one request costs the service, whatever else
    the (shared, 2-core) machine is doing; wall time includes MariaDB and
    waiting for the CPU.
    """
    times = {key: [] for key in variants}
    cpu = {key: [] for key in variants}
    counts = {}
    for _ in range(rounds):
        for key, (service, query) in variants.items():
            c0 = process_cpu_seconds(service.process.pid)
            t0 = time.perf_counter()
            doc = service.client.get('/allocation_candidates?' + query)
            times[key].append(time.perf_counter() - t0)
            cpu[key].append(process_cpu_seconds(service.process.pid) - c0)
            counts[key] = len(doc['allocation_requests'])
    return {key: {'median_ms': round(1000 * statistics.median(v), 1),
                  'min_ms': round(1000 * min(v), 1),
                  'placement_cpu_ms': round(
                      1000 * statistics.median(cpu[key]), 1),
                  'candidates': counts[key]}
            for key, v in times.items()}


def profile_in_process(service, qs, top, sort='cumulative'):
    """Profile each query once in this process; return text per query.

    Loads ``placement.wsgi.api`` here on the service's configuration and
    database, so cProfile sees Placement's own code (SQL vs Python).
    """
    import cProfile
    import io
    import pstats

    import webob
    os.environ['OS_PLACEMENT_CONFIG_DIR'] = service.confdir
    from placement.wsgi import api
    headers = {'X-Auth-Token': 'admin',
               'OpenStack-API-Version': 'placement 1.39'}
    report = {}
    for name, query in qs.items():
        req = webob.Request.blank('/allocation_candidates?' + query,
                                  headers=headers)
        req.get_response(api.application)  # warm
        prof = cProfile.Profile()
        prof.enable()
        req = webob.Request.blank('/allocation_candidates?' + query,
                                  headers=headers)
        resp = req.get_response(api.application)
        prof.disable()
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out)
        stats.sort_stats(sort).print_stats(top)
        if PROFILE_KEYS:
            stats.sort_stats('cumulative').print_stats(PROFILE_KEYS)
        report[name] = 'status %s, %d bytes\n%s' % (
            resp.status, len(resp.body), out.getvalue())
    return report


def main(argv=None):
    """Seed, measure, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--computes', type=int, default=500)
    parser.add_argument('--domains', type=int, default=16)
    parser.add_argument('--cpus-per-domain', type=int, default=8)
    parser.add_argument('--rounds', type=int, default=9)
    parser.add_argument('--output', help='also write the JSON here')
    parser.add_argument('--profile', type=int, metavar='N', default=0,
                        help='instead of timing, profile each query once '
                             'in-process and print the top N functions')
    parser.add_argument('--queries', nargs='+', default=list(MEASURED),
                        help='query variants to measure (default: %s; '
                             'also: all_share, all_share_membound, '
                             'all_share_clean_nolimit, '
                             'all_share_clean_isolate)' % ' '.join(MEASURED))
    parser.add_argument('--lean', action='store_true',
                        help='with --profile: the lean model')
    parser.add_argument('--no-lean', action='store_true',
                        help='skip the lean model (domain providers '
                             'without traits, child_traits=False)')
    parser.add_argument('--profile-sort', default='cumulative',
                        choices=['cumulative', 'tottime'])
    args = parser.parse_args(argv)

    t_start = time.time()
    cpus = args.domains * args.cpus_per_domain
    dset = domain_set(args.domains, args.cpus_per_domain)
    services = []

    def start(**kwargs):
        svc = placement_fixtures.PlacementService(**kwargs)
        svc.setUp()
        services.append(svc)
        return svc

    def seed(svc, domains, child_traits=True):
        """The region on ``svc``'s database; returns the first sync."""
        first = make_compute(svc.client, 0, cpus)
        sync = None
        if domains:
            sync = provider_sync.sync_domain_providers(
                svc.client, first, dset, cpu_allocation_ratio=4.0,
                child_traits=child_traits)
        conn = svc.connect_db()
        roots = [first] + clone_trees(conn, first, args.computes - 1, 1)
        conn.close()
        if domains:
            check = provider_sync.sync_domain_providers(
                svc.client, roots[-1], dset, cpu_allocation_ratio=4.0,
                child_traits=child_traits)
            if check.writes or len(check.unchanged) != args.domains:
                raise RuntimeError('cloned tree differs from a synced '
                                   'one: %s' % check.to_dict())
        return sync

    tuned_opts = {'max_allocation_candidates': 1000,
                  'allocation_candidates_generation_strategy':
                      'breadth-first'}
    try:
        service = start()
        sync = seed(service, True, child_traits=not args.lean)
        total = len(service.client.get(
            '/resource_providers')['resource_providers'])
        seeded_s = time.time() - t_start
        qs = queries(4, 4096)
        if args.profile:
            report = profile_in_process(
                service, {k: qs[k] for k in args.queries},
                args.profile, args.profile_sort)
            for name, text in report.items():
                print('=== %s\n%s' % (name, text))
            return 0
        # The same region before nova-cacheaware: roots only.
        plain = start()
        seed(plain, False)
        # The same region with the lean model: no traits on the children.
        lean = start()
        seed(lean, True, child_traits=False)
        setups = {'': service, 'tuned_': start(
            database=service.database, placement_opts=tuned_opts)}
        if not args.no_lean:
            setups['lean_'] = lean
            setups['lean_tuned_'] = start(database=lean.database,
                                          placement_opts=tuned_opts)
        variants = {'plain_baseline': (plain, qs['baseline'])}
        for prefix, svc in setups.items():
            for name in args.queries:
                variants[prefix + name] = (svc, qs[name])
        # Warm every service (first requests load caches).
        measure(variants, 1)
        results = measure(variants, args.rounds)
    finally:
        for svc in reversed(services):
            svc.cleanUp()
    prefixes = sorted(setups, key=len, reverse=True)
    for key, value in results.items():
        prefix = next((p for p in prefixes if key.startswith(p)), '')
        base = results.get(prefix + 'baseline', results['plain_baseline'])
        plain_base = results['plain_baseline']
        for metric in ('median_ms', 'min_ms', 'placement_cpu_ms'):
            value['%s_ratio' % metric[:-3]] = round(
                value[metric] / max(base[metric], 1e-3), 2)
            value['%s_ratio_to_plain' % metric[:-3]] = round(
                value[metric] / max(plain_base[metric], 1e-3), 2)
    doc = {
        'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
        'machine': common.machine(),
        'placement': 'openstack-placement 16.0.0, MariaDB, noauth2, '
                     'threaded wsgiref server',
        'computes': args.computes, 'domains_per_compute': args.domains,
        'providers': total, 'rounds': args.rounds,
        'first_sync': {'writes': sync.writes, 'created': len(sync.created)},
        'services': sorted(setups),
        'seed_seconds': round(seeded_s, 1),
        'queries': qs,
        'results': results,
    }
    text = json.dumps(doc, indent=2, sort_keys=True)
    print(text)
    if args.output:
        with open(args.output, 'w') as f:
            f.write(text + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
