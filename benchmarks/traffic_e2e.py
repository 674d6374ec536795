"""Cache-domain scheduling under real cloud traffic, end to end.

Runs on the local OpenStack (``tools/devcloud.sh``: real Keystone, Nova API,
conductor, scheduler - with several workers - and Placement on MariaDB and
RabbitMQ) with many fake-driver computes of mixed real topologies, and
boots waves of servers with a realistic flavor mix at several
concurrencies, multi-create batches included, deleting part of them
between waves. It runs three times, in the same invocation:

* **ours**: nova-cacheaware's plugins, per-domain providers
  (``provider_model = domain``) on the hosts that opted in, written once by
  ``cloud.py sync-domains``, no agent: the scheduler works without live
  state, from Placement and its own claims; cache-aware flavors written by
  ``compute_specs`` (what ``nova-cacheaware flavor set`` writes);
* **ours-host**: the same, in the per-host provider model (the default):
  every fake compute that opted in runs the real agent code
  (``tools/devcloud/fake_agents.py``, ``DEVCLOUD_FAKE_AGENTS=1``), which
  creates ``<cn>:cacheaware``, publishes live state, chooses each
  instance's domain and keeps ``max_unit``/``reserved`` current; a
  server's domain is the one its agent chose;
* **nova**: the peer - Nova with its default filters and weighers, no
  domain providers, the same flavors without ``cacheaware:`` keys.

Every configuration runs the same Placement: ``allocation_conflict_retry_count
= 1`` unless ``--placement-conflict-retries`` says otherwise. The setting is
this project's recommendation for any Placement on MySQL/MariaDB, not a
cache-aware feature: with the default 10 server-side retries two claims can
both take a provider's last unit (VCPU as much as a cache domain;
``doc/source/evaluation/placement-claim-race.rst``), so the peer gets it too
and the comparison is about the plugins, flavor keys and agents only.

Per run it reports servers placed vs placeable, spurious NoValidHost
(Placement had a candidate for the same request right after the failure),
409 claim conflicts per server (from the scheduler logs), % All-share, %
of declared memory-bound servers alone in their domain (Clean) against the
best possible for the same arrival sequence, and scheduling latency
(POST until a host is assigned) p50/p95; for ``ours-host`` also the
servers that held host room but for which the agent found no domain with
room (the race the per-host model admits). Results go to
``benchmarks/results/traffic_e2e.json``.

Run with the devcloud's virtualenv (``tools/devcloud.sh up`` creates it)::

    .devcloud/venv/bin/python benchmarks/traffic_e2e.py [--boots 120]

It brings the devcloud down and up itself (once per configuration) and
takes it down at the end.
"""

import argparse
import collections
from concurrent import futures
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'tools', 'devcloud'))

import cloud as cloudlib  # noqa: E402

from benchmarks import common  # noqa: E402

from nova_cacheaware.api import flavor_specs  # noqa: E402
from nova_cacheaware.contracts import placement as names  # noqa: E402

#: Fake computes: 6 Zen (4 CCX L3), 4 E-core-cluster (2 L2), 6 Q6600-like
#: (2 shared L2 pairs), 4 i9-12900K (10 L2), 2 EPYC 7713 (8 CCX), and 2
#: Zen hosts that did not opt in (no domain providers): 100 domains.
HOSTS = (['fake-zen-%02d' % i for i in range(6)]
         + ['fake-ecluster-%02d' % i for i in range(4)]
         + ['fake-q6600-%02d' % i for i in range(6)]
         + ['fake-i9-%02d' % i for i in range(4)]
         + ['fake-epyc-%02d' % i for i in range(2)]
         + ['fake-zen-plain-%02d' % i for i in range(2)])

#: kind -> (cacheaware options or None for a plain flavor, weight)
KINDS = {
    'mem-required': ({'cache_share': 'all', 'workload': 'memory',
                      'cache_clean': 'required'}, 15),
    'mem-preferred': ({'cache_share': 'all', 'workload': 'memory',
                       'cache_clean': 'preferred'}, 15),
    'cpu-off': ({'cache_share': 'all', 'workload': 'cpu',
                 'cache_clean': 'off'}, 15),
    'cpu-preferred': ({'cache_share': 'all', 'workload': 'cpu',
                       'cache_clean': 'preferred'}, 10),
    'auto': ({'cache_share': 'all', 'workload': 'auto'}, 20),
    'plain': (None, 25),
}
VCPUS = ((1, 3), (2, 4), (4, 2), (8, 1))
MEMORY_KINDS = ('mem-required', 'mem-preferred')
POLL = 0.2
#: Configurations with cache-aware flavors and plugins.
AWARE = ('ours', 'ours-host')
#: Cache domains of the hosts that opted in (HOSTS): the Clean places of a
#: tight burst (``--tight``), for every configuration alike.
TIGHT_PLACES = 6 * 4 + 4 * 2 + 6 * 2 + 4 * 10 + 2 * 8


def log(msg):
    print('traffic: %s' % msg, file=sys.stderr, flush=True)


def use_devcloud():
    """Point this process at the devcloud's directory and credentials."""
    dc = os.environ.get('DEVCLOUD_DIR', os.path.join(ROOT, '.devcloud'))
    os.environ.setdefault('OS_CLIENT_CONFIG_FILE',
                          os.path.join(dc, 'clouds.yaml'))
    os.environ['DEVCLOUD_DIR'] = dc
    return dc


def agent_hosts():
    """Service hosts of the fake computes that run an agent (ours-host)."""
    return ['devcloud-' + h for h in HOSTS if '-plain' not in h]


def runs_agents(config, nova_agents):
    """Whether the fake computes run the agent code in ``config``.

    ``nova_agents``: the peer carries the same agents (their CPU load on
    the shared machine), so that latencies compare; they publish live
    state no plugin reads and write providers no request asks for.
    """
    return config == 'ours-host' or (config == 'nova' and nova_agents)


def devcloud(action, config, workers, agent_period=3.0, nova_agents=True,
             conflict_retries=1):
    """``tools/devcloud.sh ACTION`` with this run's computes and plugins.

    ``conflict_retries``: Placement's ``allocation_conflict_retry_count``,
    the same for every configuration.
    """
    agents = runs_agents(config, nova_agents)
    env = dict(os.environ, DEVCLOUD_LIBVIRT='0',
               DEVCLOUD_PLACEMENT_CONFLICT_RETRIES=str(conflict_retries),
               DEVCLOUD_FAKE_COMPUTES=' '.join(HOSTS),
               DEVCLOUD_SCHEDULER_WORKERS=str(workers),
               DEVCLOUD_FAKE_AGENTS='1' if agents else '0',
               DEVCLOUD_AGENT_PERIOD=str(agent_period),
               # Each recorded claim with its domain: in the host model
               # the scheduler's prediction of the agent's choice.
               DEVCLOUD_DEBUG_LOGGERS='nova_cacheaware.scheduler.claims')
    if agents:
        # The agents follow Nova's ratio: 1.0, as the per-domain providers
        # of 'ours' (and the peer's hosts the same size as ours-host's).
        env['DEVCLOUD_CPU_ALLOCATION_RATIO'] = '1.0'
    if config == 'nova':
        # The region before nova-cacheaware: Nova's default filters and
        # weighers (Placement as for every configuration, above).
        env.update(DEVCLOUD_AVAILABLE_FILTERS='none',
                   DEVCLOUD_ENABLED_FILTERS='none', DEVCLOUD_WEIGHERS='none')
    run_devcloud(action, env)


def run_devcloud(action, env):
    """``tools/devcloud.sh ACTION`` with ``env``; SystemExit if it fails."""
    done = subprocess.run(['bash', os.path.join(ROOT, 'tools',
                                                'devcloud.sh'), action],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit('devcloud %s failed: %s' % (action,
                                                     done.stderr[-2000:]))


def bring_up(config, args):
    """A fresh devcloud for ``config``; one more try if ``up`` fails.

    On a loaded 2-CPU machine one of 24 computes can miss the 240 s start
    window; that says nothing of the configuration under test.
    """
    for attempt in (1, 2):
        devcloud('down', config, args.workers)
        try:
            devcloud('up', config, args.workers, args.agent_period,
                     args.nova_agents, args.placement_conflict_retries)
            return
        except SystemExit as e:
            if attempt == 2:
                raise
            log('devcloud up failed, trying once more: %s'
                % str(e).strip().splitlines()[-1])


def make_plan(boots, waves, seed):
    """The arrival sequence: per wave, boot operations ``(kind, vcpus, n)``.

    A quarter of the operations are multi-creates of 2-4 servers.
    """
    rng = random.Random(seed)
    kinds = list(KINDS)
    weights = [KINDS[k][1] for k in kinds]
    plan = []
    for _ in range(waves):
        ops, count = [], 0
        while count < boots // waves:
            kind = rng.choices(kinds, weights)[0]
            vcpus = rng.choices([v for v, _ in VCPUS],
                                [w for _, w in VCPUS])[0]
            n = rng.randint(2, 4) if rng.random() < 0.25 else 1
            ops.append((kind, vcpus, n))
            count += n
        plan.append(ops)
    return plan


def make_flavors(cloud, config):
    """One flavor per (kind, vCPUs); cache-aware keys for ``ours`` only."""
    existing = {f['name']: f['id'] for f in cloud.nova(
        'GET', '/flavors?is_public=None')['flavors']}
    flavors = {}
    for kind, (options, _) in KINDS.items():
        for vcpus, _ in VCPUS:
            name = 'traffic.%s.%d' % (kind, vcpus)
            if name in existing:
                cloud.nova('DELETE', '/flavors/' + existing[name])
            flavor = cloud.nova('POST', '/flavors', {'flavor': {
                'name': name, 'vcpus': vcpus, 'ram': 256, 'disk': 1}})[
                'flavor']
            specs = {}
            if options and config in AWARE:
                specs = flavor_specs.compute_specs(options, vcpus).set
                cloud.nova('POST', '/flavors/%s/os-extra_specs'
                           % flavor['id'], {'extra_specs': specs})
            flavors[(kind, vcpus)] = (flavor['id'], specs)
    return flavors


def candidates_exist(cloud, vcpus, specs):
    """Whether Placement has a candidate for this request right now.

    None when Placement could not answer (the run goes on; the failure is
    not counted spurious).
    """
    query = ['resources=VCPU:%d,MEMORY_MB:256,DISK_GB:1' % vcpus,
             'limit=1']
    groups = collections.defaultdict(list)
    traits = collections.defaultdict(list)
    for key, value in specs.items():
        if key.startswith('resources') and ':' in key:
            group, rc = key.split(':', 1)
            groups[group[len('resources'):]].append('%s:%s' % (rc, value))
        elif key.startswith('trait') and ':' in key and value == 'required':
            group, trait = key.split(':', 1)
            traits[group[len('trait'):]].append(trait)
    for suffix, resources in groups.items():
        query.append('resources%s=%s' % (suffix, ','.join(resources)))
    for suffix, names_ in traits.items():
        query.append('required%s=%s' % (suffix, ','.join(names_)))
    if groups:
        query.append('group_policy=%s' % specs.get('group_policy', 'none'))
    try:
        found = cloud.placement('GET', '/allocation_candidates?' +
                                '&'.join(query))
    except RuntimeError as e:
        log('could not ask Placement whether a NoValidHost was spurious: '
            '%s' % str(e)[:200])
        return None
    return bool(found['allocation_requests'])


def boot(cloud, flavors, kind, vcpus, count, name):
    """One boot request; returns per-server records once scheduled."""
    flavor_id, specs = flavors[(kind, vcpus)]
    body = {'name': name, 'imageRef': cloudlib.DISK_IMAGE_ID,
            'flavorRef': flavor_id, 'networks': 'none'}
    if count > 1:
        body.update(min_count=count, max_count=count,
                    return_reservation_id=True)
    t0 = time.monotonic()
    reply = cloud.nova('POST', '/servers', {'server': body})
    if count > 1:
        ids = [s['id'] for s in cloud.nova(
            'GET', '/servers?reservation_id=%s' % reply['reservation_id'])[
            'servers']]
    else:
        ids = [reply['server']['id']]
    records = {}
    while len(records) < len(ids):
        for sid in ids:
            if sid in records:
                continue
            server = cloud.nova('GET', '/servers/' + sid)['server']
            host = server.get('OS-EXT-SRV-ATTR:host')
            if host or server['status'] == 'ERROR':
                fault = (server.get('fault') or {}).get('message', '')
                spurious = None
                if 'No valid host' in fault:
                    spurious = candidates_exist(cloud, vcpus, specs)
                records[sid] = {'id': sid, 'kind': kind, 'vcpus': vcpus,
                                'batch': count, 'host': host,
                                'status': server['status'],
                                'latency': time.monotonic() - t0,
                                'novalidhost': 'No valid host' in fault,
                                'spurious': spurious}
        if time.monotonic() - t0 > 300:
            raise RuntimeError('servers %s not scheduled after 300 s' % ids)
        time.sleep(POLL)
    return list(records.values())


def warm_up(cloud, flavors, workers, settle_s):
    """Each scheduler worker schedules a few servers first, then they go.

    A worker starts its live-state listener at its first request and asks
    the agents for their states then (``request_host_state``): what a
    region's schedulers have been doing long before any burst. Two
    requests per worker (RabbitMQ hands them out in turn), every
    configuration alike; ``settle_s``: the agents' answers arrive.
    """
    with futures.ThreadPoolExecutor(2 * workers) as pool:
        booted = list(pool.map(
            lambda n: boot(cloud, flavors, 'cpu-off', 1, 1,
                           'warm-up-%d' % n), range(2 * workers)))
    for server in (s for one in booted for s in one):
        cloud.nova('DELETE', '/servers/' + server['id'], ok=(204, 404))
    time.sleep(settle_s)


def log_count(path, needle, offset):
    """Occurrences of ``needle`` in ``path`` after byte ``offset``."""
    try:
        with open(path, 'rb') as f:
            f.seek(offset)
            return f.read().decode(errors='replace').count(needle)
    except OSError:
        return 0


CLAIM_LINE = re.compile(r'claim recorded on host ([0-9a-f-]+): instance '
                        r'([0-9a-f-]+), domain ([^,\s]+)')


def predicted_domains(path, offset):
    """Claims in the scheduler's log after ``offset``, with their domain.

    ``{(compute node uuid, instance uuid): domain}``, the last one per
    pair. A worker may record an instance on a host it did not land on (its
    ledger's conservative error, see ``scheduler/claims.py``): compare on
    the host the server is on.
    """
    try:
        with open(path, 'rb') as f:
            f.seek(offset)
            text = f.read().decode(errors='replace')
    except OSError:
        return {}
    return {(host, uuid): domain
            for host, uuid, domain in CLAIM_LINE.findall(text)}


def log_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def domain_usage(cloud, servers):
    """``{server id: domain provider or None}`` from Placement."""
    out = {}
    for s in servers:
        allocs = cloud.placement('GET', '/allocations/' + s['id'])[
            'allocations']
        domains = [rp for rp, a in allocs.items()
                   if names.RC_DOMAIN_VCPU in a['resources']]
        out[s['id']] = domains[0] if len(domains) == 1 else None
    return out


def agents_state(dc):
    """The emulated agents' choices (``fake_agents.py --state``)."""
    try:
        with open(os.path.join(dc, 'run', 'fake-agents.json')) as f:
            return json.load(f)['hosts']
    except (OSError, ValueError, KeyError):
        return {}


def wait_host_providers(cloud, timeout=180, hosts=None):
    """Wait until every agent created its host's ``<cn>:cacheaware``.

    ``hosts``: the agents' service hosts (default: :func:`agent_hosts`).
    """
    want = {names.host_provider_name(h) for h in hosts or agent_hosts()}
    deadline = time.monotonic() + timeout
    while True:
        have = {rp['name'] for rp in cloud.placement(
            'GET', '/resource_providers')['resource_providers']}
        if want <= have:
            return
        if time.monotonic() > deadline:
            raise SystemExit('agents did not create %s in %ds (see '
                             '.devcloud/logs/fake-agents.log)'
                             % (', '.join(sorted(want - have)), timeout))
        time.sleep(2)


def agent_domains(dc, servers, timeout=90):
    """``{server id: entry}`` once the agents decided for ``servers``.

    An entry is the agent's record (``domain``, ``first_domain``,
    ``holds_host_room``, ``unplaced_passes``); servers on a host without
    an agent are left out; one its agent never saw has no ``domain``
    (``unseen``).
    """
    mine = set(agent_hosts())
    want = {s['id']: s['host'] for s in servers if s['host'] in mine}
    deadline = time.monotonic() + timeout
    while True:
        hosts = agents_state(dc)
        found = {}
        for sid, host in want.items():
            entry = hosts.get(host, {}).get('instances', {}).get(sid)
            if entry is not None and entry.get('holds_host_room'):
                found[sid] = entry
        if len(found) == len(want) or time.monotonic() > deadline:
            for sid in set(want) - set(found):
                found[sid] = {'domain': None, 'first_domain': None,
                              'unseen': True}
            return found
        time.sleep(1)


def _memory_sharing(alive, domains_of):
    """``[(server, domain or None, memory-bound servers in it)]``."""
    memory = [s for s in alive if s['kind'] in MEMORY_KINDS]
    per_domain = collections.Counter(
        domains_of[s['id']] for s in memory if domains_of.get(s['id']))
    return [(s, domains_of.get(s['id']),
             per_domain[domains_of[s['id']]] if domains_of.get(s['id'])
             else 0) for s in memory]


def clean_figures(alive, domains_of, domain_count):
    """Declared memory-bound servers alone in their domain, and the best."""
    sharing = _memory_sharing(alive, domains_of)
    return (sum(1 for _, _, n in sharing if n == 1),
            min(len(sharing), domain_count))


def clean_misses(wave, alive, domains_of, agent_seen):
    """The declared memory-bound servers not alone in a domain, and why.

    One record each: the wave, kind, vCPUs, host, domain (None: none at
    the end of the wave), how many memory-bound servers share it, and the
    agent's first choice for it (``-`` where no agent decides).
    """
    out = []
    for s, domain, n in _memory_sharing(alive, domains_of):
        if n == 1:
            continue
        entry = agent_seen.get(s['id'], {})
        out.append({'wave': wave, 'kind': s['kind'], 'vcpus': s['vcpus'],
                    'host': s['host'], 'domain': domain, 'sharing': n,
                    'first_domain': entry.get('first_domain', '-'),
                    'unseen': bool(entry.get('unseen'))})
    return out


def run(cloud, config, concurrency, plan, flavors, seed, dc, deletes=True):
    """Every wave of ``plan`` at ``concurrency``; the run's figures.

    ``deletes``: a third of the live servers go after each wave.
    """
    rng = random.Random(seed)
    sched_log = os.path.join(dc, 'logs', 'scheduler.log')
    start = log_size(sched_log)
    alive, records, clean, best, misses = [], [], 0, 0, []
    slots_held = slots_asked = 0
    share_ok = share_all = 0
    agent_seen = {}
    domain_count = region_domains(cloud, config, dc)
    for w, ops in enumerate(plan):
        with futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
            jobs = [pool.submit(boot, cloud, flavors, kind, vcpus, n,
                                'tr-%s-c%d-w%d-%d' % (config, concurrency,
                                                      w, i))
                    for i, (kind, vcpus, n) in enumerate(ops)]
            wave = [r for j in jobs for r in j.result()]
        records += wave
        alive += [r for r in wave if r['status'] != 'ERROR']
        if config in AWARE:
            if config == 'ours':
                domains_of = domain_usage(cloud, alive)
            else:
                aware = [s for s in alive if KINDS[s['kind']][0]]
                entries = agent_domains(dc, aware)
                agent_seen.update(entries)
                # A domain id names a domain of its host only.
                domains_of = {}
                for s in aware:
                    domain = entries.get(s['id'], {}).get('domain')
                    if domain:
                        domains_of[s['id']] = '%s/%s' % (s['host'], domain)
            c, b = clean_figures(alive, domains_of, domain_count)
            clean += c
            best += b
            misses += clean_misses(w, alive, domains_of, agent_seen)
            aware = [s for s in alive if KINDS[s['kind']][0]]
            share_all += len(aware)
            share_ok += sum(1 for s in aware if domains_of.get(s['id']))
            if config == 'ours-host':
                held, asked = slot_holders(cloud, wave)
                slots_held += held
                slots_asked += asked
        # Deletes in between: a third of the live servers go.
        gone = rng.sample(alive, len(alive) // 3) if deletes else []
        for s in gone:
            cloud.nova('DELETE', '/servers/' + s['id'], ok=(204, 404))
        alive = [s for s in alive if s not in gone]
        wait_deleted(cloud, [s['id'] for s in gone])
    conflicts = log_count(sched_log, 'Got HTTP 409', start)
    for s in alive:
        cloud.nova('DELETE', '/servers/' + s['id'], ok=(204, 404))
    wait_deleted(cloud, [s['id'] for s in alive])
    latencies = [r['latency'] for r in records if r['host']]
    agent = {}
    if config == 'ours-host':
        agent = {
            # Held host room, but no domain had room at the agent's first
            # decision (two claims between two agent syncs): not All-share.
            'agent_unplaced_first': sum(
                1 for e in agent_seen.values()
                if not e.get('unseen') and e.get('first_domain') is None),
            # ... and still without a domain at the end of its wave.
            'agent_unplaced_end': sum(
                1 for e in agent_seen.values()
                if not e.get('unseen') and e.get('domain') is None),
            'agent_unseen': sum(1 for e in agent_seen.values()
                                if e.get('unseen')),
            'agent_servers': len(agent_seen),
        }
        # The agent's first choice against the scheduler's prediction
        # (scheduler debug log; instances whose claim it recorded).
        predicted = predicted_domains(sched_log, start)
        node = {hv['service']['host']: hv['id']
                for hv in cloud.hypervisors()}
        host_of = {r['id']: r['host'] for r in records}
        compared = {sid: predicted[(node.get(host_of[sid]), sid)]
                    for sid, e in agent_seen.items()
                    if (node.get(host_of[sid]), sid) in predicted
                    and not e.get('unseen')}
        agent['predictions_compared'] = len(compared)
        agent['predictions_differing'] = sum(
            1 for sid, domain in compared.items()
            if agent_seen[sid].get('first_domain') != domain)
    return dict(agent, **{
        'config': config, 'concurrency': concurrency,
        'servers': len(records),
        'placed': sum(1 for r in records if r['host']),
        'placeable': sum(1 for r in records
                         if r['host'] or r['spurious']),
        'novalidhost': sum(1 for r in records if r['novalidhost']),
        'spurious_novalidhost': sum(1 for r in records if r['spurious']),
        # NoValidHost for which Placement could not be asked afterwards.
        'novalidhost_unchecked': sum(1 for r in records
                                     if r['novalidhost']
                                     and r['spurious'] is None),
        'conflicts_409': conflicts,
        'conflicts_per_server': round(conflicts / len(records), 3),
        # Cache-aware servers holding exactly one domain, summed over the
        # live servers at the end of each wave (0 for the peer: no domains).
        'all_share_pct': (round(100.0 * share_ok / share_all, 1)
                          if share_all else 0.0),
        'clean_vs_best': (round(clean / best, 3)
                          if best else None),
        'clean_servers': clean, 'clean_best': best,
        # ours-host: placed mem-preferred servers whose allocation holds a
        # Clean slot (claimed at claim time), and how many were placed.
        'preferred_with_slot': slots_held,
        'preferred_placed': slots_asked,
        'clean_misses': misses,
        'latency_p50_s': round(statistics.median(latencies), 3),
        'latency_p95_s': round(_p95(latencies), 3),
    })


def tight_plan(places, seed):
    """An exact-fit burst: one single-server request per free Clean place.

    ``places``: the region's cache domains (each Empty, so each one Clean
    place); half ``required``, half ``preferred`` memory-bound servers of 1
    or 2 vCPUs (every domain holds 2), in an order the seed draws: the
    arrival sequence.
    """
    rng = random.Random(seed)
    ops = [('mem-required' if i % 2 == 0 else 'mem-preferred',
            rng.choice((1, 2)), 1) for i in range(places)]
    rng.shuffle(ops)
    return [ops]


def region_domains(cloud, config, dc):
    """The cache domains of the hosts that opted in (the Clean places)."""
    if config == 'ours-host':
        return sum(h['domains'] for h in agents_state(dc).values())
    return sum(1 for rp in cloud.placement(
        'GET', '/resource_providers')['resource_providers']
        if ':cacheaware:' in rp['name'])


def slot_holders(cloud, wave):
    """``(held, placed)`` for the mem-preferred servers ``wave`` placed.

    ``held``: those whose Placement allocation holds a
    ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` slot.
    """
    placed = [r for r in wave
              if r['kind'] == 'mem-preferred' and r['host']]
    held = 0
    for r in placed:
        allocs = cloud.placement('GET', '/allocations/' + r['id'])[
            'allocations']
        held += any(a['resources'].get(names.RC_DOMAIN_MEMBOUND)
                    for a in allocs.values())
    return held, len(placed)


def _p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def agents_cpu_s(dc):
    """CPU seconds (user + system) of the fake agents' process, or None."""
    try:
        with open(os.path.join(dc, 'run', 'fake-agents.pid')) as f:
            pid = int(f.read().strip())
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except (OSError, ValueError):
        return None
    # utime and stime: fields 14 and 15 of stat, 12 and 13 after ')'.
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def wait_deleted(cloud, ids, timeout=180):
    """Wait until Nova answers 404 for every server of ``ids``."""
    deadline = time.monotonic() + timeout
    while ids and time.monotonic() < deadline:
        ids = [i for i in ids if 'server' in (cloud.nova(
            'GET', '/servers/' + i, ok=(200, 404)) or {})]
        time.sleep(0.5)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--boots', type=int, default=120,
                        help='servers booted per run (over all waves)')
    parser.add_argument('--waves', type=int, default=3)
    parser.add_argument('--concurrency', default='1,8,32')
    parser.add_argument('--workers', type=int, default=2,
                        help='nova-scheduler worker processes')
    parser.add_argument('--configs', default='ours,ours-host,nova')
    parser.add_argument('--agent-period', type=float, default=3.0,
                        help="the emulated agents' period (ours-host)")
    parser.add_argument('--no-nova-agents', dest='nova_agents',
                        action='store_false',
                        help='run the Nova peer without the emulated '
                             'agents (default: with them, for a fair '
                             'latency comparison on a shared machine)')
    parser.add_argument('--placement-conflict-retries', type=int, default=1,
                        help="Placement's allocation_conflict_retry_count, "
                             'for every configuration (default 1: the '
                             "project's recommendation; Placement's own "
                             'default is 10)')
    parser.add_argument('--repeats', type=int, default=1,
                        help='run every configuration this many times (the '
                             'same seed); the configurations alternate per '
                             'repetition, each on a fresh devcloud, and the '
                             'results carry a summary (mean, min, max)')
    parser.add_argument('--tight', action='store_true',
                        help='instead of the waves: one exact-fit burst of '
                             'single-server requests, one per cache domain '
                             'of the region (every free Clean place), half '
                             'required, half preferred memory-bound; the '
                             "peer boots the same servers (Nova's defaults)")
    parser.add_argument('--seed', type=int, default=12)
    parser.add_argument('--out', default=os.path.join(
        ROOT, 'benchmarks', 'results', 'traffic_e2e.json'))
    args = parser.parse_args(argv)
    dc = use_devcloud()
    plan = (tight_plan(TIGHT_PLACES, args.seed) if args.tight
            else make_plan(args.boots, args.waves, args.seed))
    results, load = [], []
    started = common.now()
    for rep in range(args.repeats):
        for config in args.configs.split(','):
            log('%s (repetition %d): devcloud with %d computes, %d scheduler '
                'workers' % (config, rep + 1, len(HOSTS), args.workers))
            bring_up(config, args)
            cloud = cloudlib.Cloud()
            if config == 'ours':
                cloudlib.sync_domains(cloud)
            elif config == 'ours-host':
                wait_host_providers(cloud)
            flavors = make_flavors(cloud, config)
            warm_up(cloud, flavors, args.workers,
                    max(10.0, 3 * args.agent_period))
            for n, c in enumerate(int(x) for x in
                                  args.concurrency.split(',')):
                if args.tight and n:
                    # The last burst's servers are deleted: let the
                    # agents' live state show every domain Empty again.
                    time.sleep(max(10.0, 3 * args.agent_period))
                load.append(os.getloadavg()[0])
                t0 = time.monotonic()
                cpu0 = agents_cpu_s(dc)
                if args.tight:
                    # One wave, nothing deleted: every Clean place taken
                    # at once. The peer boots the same servers.
                    result = run(cloud, config, c, plan, flavors,
                                 args.seed, dc, deletes=False)
                    result['mode'] = 'tight'
                    result['region_domains'] = (
                        region_domains(cloud, config, dc)
                        if config in AWARE else None)
                else:
                    result = run(cloud, config, c, plan, flavors,
                                 args.seed, dc)
                result['repetition'] = rep + 1
                result['load_avg_at_start'] = round(load[-1], 2)
                result['wall_s'] = round(time.monotonic() - t0, 1)
                result['agents'] = runs_agents(config, args.nova_agents)
                if cpu0 is not None and agents_cpu_s(dc) is not None:
                    # CPU seconds the emulated agents took during the run.
                    result['agents_cpu_s'] = round(
                        agents_cpu_s(dc) - cpu0, 1)
                log(json.dumps(result))
                results.append(result)
                # After every run, so that a cut-off invocation keeps what
                # it measured.
                write_results(args, argv, plan, started, load, results)
            devcloud('down', config, args.workers)
    for r in results:
        print(json.dumps(r))
    return 0


def add_ratios(results):
    """Latency ratios against the Nova peer (same concurrency, repetition)."""
    by = {(r['config'], r['concurrency'], r.get('repetition', 1)): r
          for r in results}
    for r in results:
        peer = by.get(('nova', r['concurrency'], r.get('repetition', 1)))
        if r['config'] in AWARE and peer:
            r['latency_p50_vs_nova'] = round(
                r['latency_p50_s'] / peer['latency_p50_s'], 2)
            r['latency_p95_vs_nova'] = round(
                r['latency_p95_s'] / peer['latency_p95_s'], 2)


#: Figures the summary gives mean, min and max of, per configuration and
#: concurrency.
SUMMARY_KEYS = ('clean_vs_best', 'conflicts_per_server', 'all_share_pct',
                'spurious_novalidhost', 'latency_p50_s', 'latency_p95_s',
                'latency_p50_vs_nova', 'latency_p95_vs_nova',
                'predictions_differing', 'agent_unplaced_first',
                'agent_unplaced_end')


def summarize(results):
    """Per (configuration, concurrency): mean, min, max of each figure."""
    groups = collections.defaultdict(list)
    for r in results:
        groups[(r['config'], r['concurrency'])].append(r)
    summary = []
    for (config, c), runs in sorted(groups.items()):
        row = {'config': config, 'concurrency': c, 'runs': len(runs)}
        for key in SUMMARY_KEYS:
            values = [r[key] for r in runs if r.get(key) is not None]
            if values:
                row[key] = {'mean': round(statistics.mean(values), 3),
                            'min': min(values), 'max': max(values),
                            'values': values}
        summary.append(row)
    return summary


def write_results(args, argv, plan, started, load, results):
    """The results document so far (written after every run)."""
    add_ratios(results)
    doc = {
        'benchmark': 'traffic_e2e',
        'command': ' '.join(['benchmarks/traffic_e2e.py']
                            + (argv if argv is not None else sys.argv[1:])),
        'date': common.now(), 'started': started,
        'machine': common.machine(),
        'load_avg_at_start_of_runs': [round(x, 2) for x in load],
        'hosts': HOSTS, 'scheduler_workers': args.workers,
        'nova_peer_with_agents': args.nova_agents,
        'placement_conflict_retry_count': args.placement_conflict_retries,
        'repeats': args.repeats,
        'agent_hosts': agent_hosts(), 'agent_period_s': args.agent_period,
        'plan': [[list(op) for op in wave] for wave in plan],
        'summary': summarize(results),
        'results': results,
    }
    common.write_json(args.out, doc)


if __name__ == '__main__':
    sys.exit(main())
