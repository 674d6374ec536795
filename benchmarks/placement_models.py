"""Candidate Placement provider models for cache domains, side by side.

Issue 13: what each provider model costs Placement for Nova's
``GET /allocation_candidates``, against the region *before*
nova-cacheaware (compute node roots only), in the same run. Real
Placement 16 (``placement.wsgi.api`` on a threaded WSGI server) on scratch
MariaDB databases named ``placement_bench_placemodel_*`` (dropped at the
end), one database and one service per model.

Models (``--models``; each host has ``--domains`` cache domains of
``--cpus-per-domain`` CPUs):

* ``plain``: the region before nova-cacheaware, roots as nova-compute
  leaves them (VCPU, MEMORY_MB, DISK_GB, three traits);
* ``plain_nested_path``: the same roots, plus one child provider under
  one host anywhere in the region (as a PCI, vGPU or bandwidth provider
  would add): Placement then answers every request on its nested-tree
  path;
* ``nested``: today's contract, one child per domain written by
  :func:`sync_domain_providers` (with the two child traits);
* ``nested_lean``: the same without child traits;
* ``optin10``, ``optin50``: ``nested_lean`` under 10 % / 50 % of the
  hosts (every 10th / every 2nd), the others plain;
* ``sharing``: one provider per domain *outside* the compute tree, a root
  with ``MISC_SHARES_VIA_AGGREGATE``, in a per-host aggregate with the
  compute node;
* ``numa``: one child per NUMA node (2 per host), with the vCPUs and the
  memory-bound slots of its domains (max_unit: one domain);
* ``host_child``: one child per host, ``<cn>:cacheaware``, with the
  domain vCPUs of the whole host (max_unit: one domain) and
  ``--domains`` memory-bound slots: per-host counts, the domain is chosen
  by the filter and the agent;
* ``host_child_optin10``: ``host_child`` under every 10th host only;
* ``root_count``: the same counts as inventory of the compute node root
  itself (what Nova's ``provider.yaml`` additional inventories do), no
  child at all; ``root_count_optin10``: on every 10th host only;
* ``root_trait``: no Placement inventory of ours at all, only
  ``CUSTOM_CACHEAWARE_AGENT`` on every root (the filter and the agent do
  everything; the lower bound of any model);
* ``*_isolated`` (``optin10_isolated``, ``host_child_optin10_isolated``):
  the opted-in roots in one aggregate, and the request without cache keys
  carries ``member_of=!in:<aggregate>`` as Nova's
  ``[scheduler] enable_isolated_aggregate_filtering`` adds it for a host
  aggregate with ``trait:CUSTOM_CACHEAWARE_AGENT=required``.

Requests (Nova 34 query strings, 4 vCPU, 4 GiB): ``plain``; ``all_share``
(+ ``required=CUSTOM_CACHEAWARE_AGENT`` and the domain vCPUs in a granular
group, ``group_policy=none``; on ``root_count`` in the unsuffixed group; on
the models the agent's own code builds, ``nested``, ``nested_lean`` and
``host_child``, the trait is on the agent's providers and required in the
group, ``required_CACHE``, as ``flavor set`` writes it);
``clean`` (+ one memory-bound slot in the same group). Rounds interleave
all services and requests. Per request: median wall ms, median Placement
CPU ms (from ``/proc``), candidates, distinct hosts in the candidates
(``hosts``), and the hosts with ``randomize_allocation_candidates`` on
(``--coverage-samples`` requests on a second service of the database) and
with ``max_allocation_candidates=1000`` + ``breadth-first`` (``tuned``).
A request whose repetitions exceed ``--budget-s`` of wall time is not
repeated further (at least once): large sizes get fewer rounds, recorded
per figure as ``n``.

``--hosts`` and ``--domains`` take several values: every combination is
measured (the scale table), each in its own set of databases.

Run: ``python benchmarks/placement_models.py --output FILE`` (defaults:
500 hosts, 16 domains, every model; needs MariaDB at 127.0.0.1:3306).
"""

import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import os_resource_classes as orc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from benchmarks import common  # noqa: E402
from benchmarks import placement_alloc_candidates as pac  # noqa: E402
from nova_cacheaware.contracts import placement as names  # noqa: E402
from nova_cacheaware.placement import host_provider  # noqa: E402
from nova_cacheaware.placement import provider_state  # noqa: E402
from nova_cacheaware.placement import provider_sync  # noqa: E402
from tests import placement_fixtures  # noqa: E402

SHARES = 'MISC_SHARES_VIA_AGGREGATE'
NUMA_NODES = 2
TUNED = {'max_allocation_candidates': 1000,
         'allocation_candidates_generation_strategy': 'breadth-first'}
RANDOM = {'randomize_allocation_candidates': True}


class BenchPlacement(placement_fixtures.PlacementService):
    """A Placement service on a database named ``placement_bench_*``."""

    def __init__(self, database=None, placement_opts=None):
        """``database`` None: create, sync and finally drop our own."""
        super().__init__(database=database, placement_opts=placement_opts)
        self.owns = database is None

    def _setUp(self):
        if self.owns:
            self.database = 'placement_bench_placemodel_%s' % (
                uuid.uuid4().hex[:8])
            conn = placement_fixtures._connect()
            with conn.cursor() as cur:
                cur.execute('CREATE DATABASE %s CHARACTER SET utf8'
                            % self.database)
            conn.close()
            self.addCleanup(self._drop_database)
            with tempfile.NamedTemporaryFile('w', suffix='.conf') as conf:
                conf.write('[placement_database]\nconnection = %s\n'
                           % self.db_url)
                conf.flush()
                subprocess.run(
                    [sys.executable, '-c',
                     'import sys; from placement.cmd.manage import main; '
                     'sys.exit(main())', '--config-file', conf.name, 'db',
                     'sync'], check=True, capture_output=True, timeout=300)
        super()._setUp()


# -- the templates: host 0 (and host 1 where some hosts stay plain) -------

def _child(client, name, parent, inventories, traits=()):
    rp = str(uuid.uuid4())
    doc = client.post('/resource_providers', {
        'name': name, 'uuid': rp, 'parent_provider_uuid': parent})
    gen = doc['generation']
    if inventories:
        gen = client.put_inventories(
            rp, gen, inventories)['resource_provider_generation']
    if traits:
        client.put_traits(rp, gen, sorted(traits))
    return rp


def _counts(vcpus, max_unit, membound):
    """Domain vCPU + memory-bound slot inventory (ratio 4 as the roots)."""
    inv = provider_state.desired_inventories(vcpus, 4.0, membound, 0)
    inv[names.RC_DOMAIN_VCPU]['max_unit'] = max_unit
    return inv


def _agent_trait(client, root):
    doc = client.get_traits(root)
    client.put_traits(root, doc['resource_provider_generation'],
                      sorted(set(doc['traits']) | {names.TRAIT_AGENT}))


def build_template(client, model, index, shape):
    """Host ``index`` of ``model`` through the API; returns its root."""
    ndom, per = shape
    cpus = ndom * per
    root = pac.make_compute(client, index, cpus)
    name = 'bench-cn-%04d' % index
    if model in ('plain', 'plain_nested_path'):
        return root
    for rc in (names.RC_DOMAIN_VCPU, names.RC_DOMAIN_MEMBOUND):
        client.ensure_resource_class(rc)
    client.ensure_trait(names.TRAIT_AGENT)
    if model in ('nested', 'nested_lean'):
        provider_sync.sync_domain_providers(
            client, root, pac.domain_set(ndom, per),
            cpu_allocation_ratio=4.0, child_traits=model == 'nested')
        return root
    if model != 'host_child':
        # The agent's own code puts the trait on its providers; the other
        # models are not shipped: the trait on the root, as first designed.
        _agent_trait(client, root)
    if model == 'sharing':
        agg = str(uuid.uuid4())
        members = [root]
        for d in range(ndom):
            rp = str(uuid.uuid4())
            client.post('/resource_providers', {
                'name': names.domain_provider_name(name, 'L3-%d' % d),
                'uuid': rp})
            gen = client.put_inventories(rp, 0, _counts(per, per, 1))[
                'resource_provider_generation']
            client.put_traits(rp, gen, [SHARES])
            members.append(rp)
        for rp in members:
            gen = client.get_provider(rp)['generation']
            client.put('/resource_providers/%s/aggregates' % rp,
                       {'aggregates': [agg], 'resource_provider_generation':
                        gen})
    elif model == 'numa':
        for n in range(NUMA_NODES):
            _child(client, '%s:cacheaware:numa-%d' % (name, n), root,
                   _counts(cpus // NUMA_NODES, per, ndom // NUMA_NODES))
    elif model == 'host_child':
        # The agent's own code (provider_model = host): what is shipped.
        host_provider.sync_host_provider(
            client, root, pac.domain_set(ndom, per),
            cpu_allocation_ratio=4.0)
    elif model == 'root_trait':
        pass
    elif model == 'root_count':
        doc = client.get_inventories(root)
        inv = dict(doc['inventories'])
        inv.update(_counts(cpus, per, ndom))
        client.put_inventories(root, doc['resource_provider_generation'],
                               inv)
    else:
        raise ValueError('unknown model %s' % model)
    return root


#: model -> (template model of opted-in hosts, every n-th host opts in).
OPT_IN = {'optin10': ('nested_lean', 10), 'optin50': ('nested_lean', 2),
          'host_child_optin10': ('host_child', 10),
          'root_count_optin10': ('root_count', 10),
          'optin10_isolated': ('nested_lean', 10),
          'host_child_optin10_isolated': ('host_child', 10)}
#: Models built by the agent's own code (the trait on our providers).
SHIPPED = ('nested', 'nested_lean', 'host_child')
MODELS = ('plain', 'plain_nested_path', 'nested', 'nested_lean', 'optin10',
          'optin50', 'sharing', 'numa', 'host_child', 'host_child_optin10',
          'root_count', 'root_count_optin10', 'root_trait',
          'optin10_isolated', 'host_child_optin10_isolated')


def clone_hosts(conn, template_name, indices):
    """Copy every provider of host ``template_name`` once per index.

    A host's providers are its root and every provider named
    ``<root name>:...`` (children, and sharing providers that are roots of
    their own), with their inventories, traits and aggregates (a new
    aggregate per copy). Row-level copy in SQL: minutes faster than the
    API at 2 000 hosts.
    """
    cur = conn.cursor()
    cur.execute('SELECT id, name, root_provider_id, parent_provider_id '
                'FROM resource_providers WHERE name=%s OR name LIKE %s '
                'ORDER BY id', (template_name, template_name + ':%'))
    tree = cur.fetchall()
    ids = ','.join(str(row[0]) for row in tree)

    def rows(sql):
        cur.execute(sql % ids)
        return cur.fetchall()

    inventories = rows(
        'SELECT resource_provider_id, resource_class_id, total, reserved, '
        'min_unit, max_unit, step_size, allocation_ratio FROM inventories '
        'WHERE resource_provider_id IN (%s)')
    traits = rows('SELECT resource_provider_id, trait_id FROM '
                  'resource_provider_traits WHERE resource_provider_id '
                  'IN (%s)')
    aggs = rows('SELECT resource_provider_id, aggregate_id FROM '
                'resource_provider_aggregates WHERE resource_provider_id '
                'IN (%s)')
    cur.execute('SELECT COALESCE(MAX(id), 0) FROM resource_providers')
    (next_id,) = cur.fetchone()
    cur.execute('SELECT COALESCE(MAX(id), 0) FROM placement_aggregates')
    (next_agg,) = cur.fetchone()
    now = datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0, tzinfo=None)
    providers, inv_rows, trait_rows, agg_rows, new_aggs = [], [], [], [], []
    for index in indices:
        new_name = 'bench-cn-%04d' % index
        id_map = {}
        for row in tree:
            next_id += 1
            id_map[row[0]] = next_id
        agg_map = {}
        for _rp, agg in aggs:
            if agg not in agg_map:
                next_agg += 1
                agg_map[agg] = next_agg
                new_aggs.append((next_agg, str(uuid.uuid4()), now))
        for old_id, name, root, parent in tree:
            providers.append((
                id_map[old_id], str(uuid.uuid4()),
                new_name + name[len(template_name):], 0, id_map[root],
                id_map.get(parent), now))
        inv_rows.extend((id_map[r[0]],) + tuple(r[1:]) + (now,)
                        for r in inventories)
        trait_rows.extend((id_map[rp], t, now) for rp, t in traits)
        agg_rows.extend((id_map[rp], agg_map[a], now) for rp, a in aggs)
    # Plain %s placeholders only: PyMySQL then sends multi-row INSERTs.
    cur.executemany(
        'INSERT INTO resource_providers (id, uuid, name, generation, '
        'root_provider_id, parent_provider_id, created_at) VALUES '
        '(%s, %s, %s, %s, %s, %s, %s)', providers)
    cur.executemany(
        'INSERT INTO inventories (resource_provider_id, resource_class_id, '
        'total, reserved, min_unit, max_unit, step_size, allocation_ratio, '
        'created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)', inv_rows)
    cur.executemany(
        'INSERT INTO resource_provider_traits (resource_provider_id, '
        'trait_id, created_at) VALUES (%s, %s, %s)', trait_rows)
    if new_aggs:
        cur.executemany('INSERT INTO placement_aggregates (id, uuid, '
                        'created_at) VALUES (%s, %s, %s)', new_aggs)
        cur.executemany(
            'INSERT INTO resource_provider_aggregates (resource_provider_id, '
            'aggregate_id, created_at) VALUES (%s, %s, %s)', agg_rows)


def seed(svc, model, hosts, shape):
    """The region of ``model`` on ``svc``'s database; returns providers."""
    opted, every = OPT_IN.get(model, (model, 1))
    build_template(svc.client, opted, 0, shape)
    plain_indices = [i for i in range(1, hosts) if i % every]
    if plain_indices:
        build_template(svc.client, 'plain', plain_indices[0], shape)
    conn = svc.connect_db()
    clone_hosts(conn, 'bench-cn-0000',
                [i for i in range(1, hosts) if not i % every])
    if len(plain_indices) > 1:
        clone_hosts(conn, 'bench-cn-%04d' % plain_indices[0],
                    plain_indices[1:])
    cur = conn.cursor()
    isolate = None
    if model.endswith('_isolated'):
        isolate = _aggregate_opted_in(cur)
    if model == 'plain_nested_path':
        # One child somewhere (a PCI/vGPU/bandwidth provider would do).
        cur.execute("SELECT uuid FROM resource_providers WHERE name="
                    "'bench-cn-%04d'" % (hosts // 2))
        _child(svc.client, 'bench-cn-%04d_pci_0000_81_00_0' % (hosts // 2),
               cur.fetchone()[0], {})
    cur.execute('SELECT COUNT(*) FROM resource_providers')
    (count,) = cur.fetchone()
    conn.close()
    return count, isolate


def _aggregate_opted_in(cur):
    """One aggregate with every root that has our trait; its uuid."""
    agg = str(uuid.uuid4())
    now = datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0, tzinfo=None)
    cur.execute('INSERT INTO placement_aggregates (uuid, created_at) '
                'VALUES (%s, %s)', (agg, now))
    # The roots of every tree where our trait is (on the root or, as the
    # agent puts it, on one of our providers).
    cur.execute(
        'INSERT INTO resource_provider_aggregates (resource_provider_id, '
        'aggregate_id, created_at) SELECT DISTINCT rp.root_provider_id, '
        'a.id, %s FROM resource_provider_traits rpt JOIN traits t ON '
        't.id = rpt.trait_id JOIN resource_providers rp ON rp.id = '
        'rpt.resource_provider_id, placement_aggregates a WHERE t.name = %s '
        'AND a.uuid = %s', (now, names.TRAIT_AGENT, agg))
    return agg


def queries(model, isolate=None):
    """Request name -> query string on ``model`` (Nova 34's shape).

    ``isolate``: the aggregate a request without cache keys excludes.
    """
    base = ('limit=1000&resources=VCPU:4,MEMORY_MB:4096'
            '&root_required=!COMPUTE_STATUS_DISABLED')
    out = {'plain': base}
    if isolate:
        out['plain'] = base + '&member_of=!in:' + isolate
    if model in ('plain', 'plain_nested_path'):
        return out
    agent = '&required=%s' % names.TRAIT_AGENT
    if OPT_IN.get(model, (model,))[0] in SHIPPED:
        # What a flavor written by "flavor set" asks: the trait on the
        # provider that satisfies the cache group.
        agent = '&required_CACHE=%s' % names.TRAIT_AGENT
    if model == 'root_trait':
        out['all_share'] = out['clean'] = base + agent
        return out
    vcpu = '%s:4' % names.RC_DOMAIN_VCPU
    slot = ',%s:1' % names.RC_DOMAIN_MEMBOUND
    if model.startswith('root_count'):
        out['all_share'] = base.replace('MEMORY_MB:4096', 'MEMORY_MB:4096,'
                                        + vcpu) + agent
        out['clean'] = out['all_share'].replace(vcpu, vcpu + slot)
        return out
    group = '&resources_CACHE=' + vcpu
    out['all_share'] = base + agent + group + '&group_policy=none'
    out['clean'] = base + agent + group + slot + '&group_policy=none'
    return out


def hosts_in(doc):
    """Distinct hosts (providers of the VCPU) in an answer."""
    return len({rp for areq in doc['allocation_requests']
                for rp, alloc in areq['allocations'].items()
                if orc.VCPU in alloc['resources']})


def measure(variants, rounds, budget_s):
    """Interleaved rounds; a variant past ``budget_s`` of wall stops."""
    wall = {key: [] for key in variants}
    cpu = {key: [] for key in variants}
    found = {}
    for _ in range(rounds):
        for key, (svc, query) in variants.items():
            if wall[key] and sum(wall[key]) > budget_s:
                continue
            c0 = pac.process_cpu_seconds(svc.process.pid)
            t0 = time.perf_counter()
            doc = svc.client.get('/allocation_candidates?' + query)
            wall[key].append(time.perf_counter() - t0)
            cpu[key].append(pac.process_cpu_seconds(svc.process.pid) - c0)
            found[key] = (len(doc['allocation_requests']), hosts_in(doc),
                          len(doc['provider_summaries']))
    return {key: {'median_ms': round(1000 * statistics.median(wall[key]), 1),
                  'min_ms': round(1000 * min(wall[key]), 1),
                  'placement_cpu_ms': round(
                      1000 * statistics.median(cpu[key]), 1),
                  # /proc counts 10 ms ticks: the mean resolves cheap
                  # requests better than the median.
                  'placement_cpu_mean_ms': round(
                      1000 * statistics.mean(cpu[key]), 1),
                  'n': len(wall[key]), 'candidates': found[key][0],
                  'hosts': found[key][1], 'summaries': found[key][2]}
            for key in variants}


def coverage(svc, query, samples):
    """Mean distinct hosts over ``samples`` answers of ``svc``."""
    if not samples:
        return None
    seen = [hosts_in(svc.client.get('/allocation_candidates?' + query))
            for _ in range(samples)]
    return round(statistics.mean(seen), 1)


def run_size(models, hosts, shape, args, start):
    """Seed every model at one size, measure, return the figures."""
    svcs, variants, counts, aggs, t0 = {}, {}, {}, {}, time.time()
    for model in models:
        svcs[model] = start()
        counts[model], aggs[model] = seed(svcs[model], model, hosts, shape)
        for req, query in queries(model, aggs[model]).items():
            variants['%s/%s' % (model, req)] = (svcs[model], query)
    seed_s = time.time() - t0
    measure(variants, 1, 0)  # warm every service and request
    results = measure(variants, args.rounds, args.budget_s)
    base = results['plain/plain'] if 'plain/plain' in results else None
    for key, value in results.items():
        model, req = key.split('/')
        value['providers'] = counts[model]
        if base:
            for metric in ('median_ms', 'placement_cpu_ms',
                           'placement_cpu_mean_ms'):
                value[metric[:-3] + '_vs_before'] = round(
                    value[metric] / max(base[metric], 1e-3), 2)
            value['hosts_vs_before'] = round(
                value['hosts'] / max(base['hosts'], 1), 2)
    for model in args.coverage_models:
        if model not in svcs:
            continue
        for opts, label in ((RANDOM, 'hosts_randomized'),
                            (TUNED, 'hosts_tuned')):
            svc = BenchPlacement(database=svcs[model].database,
                                 placement_opts=opts)
            svc.setUp()
            try:
                for req, query in queries(model, aggs[model]).items():
                    results['%s/%s' % (model, req)][label] = coverage(
                        svc, query, args.coverage_samples if opts is RANDOM
                        else 1)
            finally:
                svc.cleanUp()
    return {'hosts': hosts, 'domains': shape[0],
            'cpus_per_domain': shape[1], 'seed_seconds': round(seed_s, 1),
            'load_after': os.getloadavg()[0], 'results': results,
            'isolated_aggregates': {m: a for m, a in aggs.items() if a}}


def rst_table(doc):
    """The results of a JSON document as reStructuredText tables."""
    head = ('model / request', 'cands', 'hosts', 'random', 'tuned',
            'CPU ms', 'CPU x', 'wall ms', 'wall x', 'n')
    out = []
    for size in doc['sizes']:
        rows = []
        for key, v in sorted(size['results'].items()):
            cpu = v.get('placement_cpu_mean_ms', v['placement_cpu_ms'])
            ratio = v.get('placement_cpu_mean_vs_before',
                          v.get('placement_cpu_vs_before'))
            rows.append((key, v['candidates'], v['hosts'],
                         v.get('hosts_randomized', '--'),
                         v.get('hosts_tuned', '--'), cpu, ratio,
                         v['median_ms'], v.get('median_vs_before'), v['n']))
        widths = [max(len(str(c)) for c in col) for col in zip(head, *rows)]
        rule = ' '.join('=' * w for w in widths)
        out.append('%d hosts x %d domains (load after: %.1f)\n' % (
            size['hosts'], size['domains'], size['load_after']))
        out.append(rule)
        for row in [head, None] + rows:
            if row is None:
                out.append(rule)
                continue
            out.append(' '.join(str(c).ljust(w) if i == 0 else
                                str(c).rjust(w)
                                for i, (c, w) in enumerate(zip(row, widths))))
        out.append(rule + '\n')
    return '\n'.join(out)


def main(argv=None):
    """Seed, measure, print and write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[500])
    parser.add_argument('--domains', type=int, nargs='+', default=[16])
    parser.add_argument('--cpus-per-domain', type=int, default=8)
    parser.add_argument('--models', nargs='+', default=list(MODELS),
                        choices=MODELS)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--budget-s', type=float, default=60.0,
                        help='stop repeating a request past this many '
                             'seconds of wall time (default 60)')
    parser.add_argument('--coverage-models', nargs='*', default=list(MODELS),
                        help='models whose hosts are also counted with '
                             'randomize_allocation_candidates and tuned')
    parser.add_argument('--coverage-samples', type=int, default=3)
    parser.add_argument('--output', help='also write the JSON here')
    parser.add_argument('--table', metavar='JSON',
                        help='only print the tables of a results file')
    args = parser.parse_args(argv)
    if args.table:
        with open(args.table) as f:
            print(rst_table(json.load(f)))
        return 0

    # SIGTERM runs the clean-ups too: services stopped, databases dropped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t_start = time.time()
    load_before = os.getloadavg()
    sizes = []
    for hosts in args.hosts:
        for ndom in args.domains:
            services = []

            def start(**kwargs):
                svc = BenchPlacement(**kwargs)
                svc.setUp()
                services.append(svc)
                return svc
            try:
                sizes.append(run_size(args.models, hosts,
                                      (ndom, args.cpus_per_domain), args,
                                      start))
            finally:
                for svc in reversed(services):
                    svc.cleanUp()
            print('done: %d hosts x %d domains (%.0f s)' % (
                hosts, ndom, time.time() - t_start), file=sys.stderr)
            # Every size as it finishes: a long run stopped early keeps
            # what it measured.
            write_doc(args, argv, t_start, load_before, sizes)
    return 0


def write_doc(args, argv, t_start, load_before, sizes):
    """The JSON document of the run so far: stdout, ``--output``."""
    doc = {
        'benchmark': 'placement_models',
        'command': 'python benchmarks/placement_models.py ' + ' '.join(
            argv if argv is not None else sys.argv[1:]),
        'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t_start)),
        'machine': common.machine(), 'nproc': os.cpu_count(),
        'load_before': [round(x, 2) for x in load_before],
        'load_after': [round(x, 2) for x in os.getloadavg()],
        'placement': 'openstack-placement 16.0.0, MariaDB, noauth2, '
                     'threaded wsgiref server, default options unless '
                     'hosts_tuned/hosts_randomized',
        'rounds': args.rounds, 'budget_s': args.budget_s,
        'queries': {m: queries(m, '<aggregate>' if m.endswith('_isolated')
                               else None) for m in args.models},
        'elapsed_s': round(time.time() - t_start, 1),
        'sizes': sizes,
    }
    text = json.dumps(doc, indent=2, sort_keys=True)
    if args.output:
        with open(args.output, 'w') as f:
            f.write(text + '\n')
    else:
        print(text)


if __name__ == '__main__':
    sys.exit(main())
