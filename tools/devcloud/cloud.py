"""Talk to the running devcloud: wait for computes, sync domains, the demo.

Usage (devcloud venv's Python, ``OS_CLIENT_CONFIG_FILE`` = the devcloud's
``clouds.yaml``, set by the shell scripts)::

    cloud.py wait-computes N [--timeout S]
    cloud.py sync-domains          # cache domain providers, when available
    cloud.py demo [--keep]         # tools/devcloud-demo.sh

Everything goes through Keystone-authenticated sessions (keystoneauth via
openstacksdk's clouds.yaml loader), like any other client of the cloud.
"""

import argparse
from concurrent import futures
import json
import os
import re
import subprocess
import sys
import time

import openstack.config

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGIES = os.path.join(HERE, 'topologies')
COMPUTE_VERSION = '2.95'
PLACEMENT_VERSION = '1.39'
#: Seconds one API request may take.
REQUEST_TIMEOUT = 120
DISK_IMAGE_ID = '5b0c2ea4-2a4b-4e57-9c43-6d3b8a1f0a03'  # image_stub.DISK_ID
LIBVIRT_HOST = 'devcloud-libvirt'
#: The second libvirt compute (DEVCLOUD_LIBVIRT_COMPUTES=2): its agent
#: reports one provider per L2 domain (render_libvirt.py).
LIBVIRT2_HOST = 'devcloud-libvirt2'
LIBVIRT_HOSTS = (LIBVIRT_HOST, LIBVIRT2_HOST)


class Cloud(object):
    """Compute and Placement calls with the devcloud's admin credentials."""

    def __init__(self, cloud='devcloud'):
        region = openstack.config.OpenStackConfig().get_one(cloud)
        self.session = region.get_session()
        # Every request of the demo and the benchmarks ends: a service that
        # hangs is an error, not a wait.
        self.session.timeout = REQUEST_TIMEOUT

    def _call(self, service, version, method, path, body=None, ok=(200,)):
        headers = {'OpenStack-API-Version': '%s %s' % (
            'compute' if service == 'compute' else 'placement', version)}
        if service == 'compute':
            headers['X-OpenStack-Nova-API-Version'] = version
        resp = self.session.request(
            path, method, json=body, headers=headers, raise_exc=False,
            endpoint_filter={'service_type': service, 'interface': 'public'})
        if resp.status_code not in ok:
            raise RuntimeError('%s %s %s -> %s %s' % (
                service, method, path, resp.status_code, resp.text[:400]))
        return resp.json() if resp.content else None

    def nova(self, method, path, body=None, ok=(200, 201, 202, 204),
             version=COMPUTE_VERSION):
        """One compute API request at :data:`COMPUTE_VERSION`."""
        return self._call('compute', version, method, path, body, ok)

    def hypervisors(self):
        """Hypervisors with their service host and provider uuid.

        At 2.87: from 2.88 on, the detail view asks every compute for its
        uptime over RPC, which the fake driver does not implement.
        """
        return self.nova('GET', '/os-hypervisors/detail',
                         version='2.87')['hypervisors']

    def placement(self, method, path, body=None, ok=(200, 201, 204)):
        """One Placement request at :data:`PLACEMENT_VERSION`."""
        return self._call('placement', PLACEMENT_VERSION, method, path, body,
                          ok)


def wait_computes(cloud, count, timeout):
    """Wait until ``count`` computes are up in Nova and in Placement."""
    deadline = time.time() + timeout
    while True:
        try:
            hvs = cloud.hypervisors()
            up = [h for h in hvs if h['state'] == 'up']
            rps = cloud.placement('GET', '/resource_providers')
            roots = [r for r in rps['resource_providers']
                     if r['uuid'] == r['root_provider_uuid']]
        except Exception as e:  # the API may still be starting
            up, roots, last = [], [], e
        else:
            last = None
        if len(up) >= count and len(roots) >= count:
            print('computes up: %s' % ', '.join(
                sorted(h['hypervisor_hostname'] for h in up)))
            return 0
        if time.time() > deadline:
            print('only %d of %d computes up after %ds (%s)'
                  % (len(up), count, timeout, last or ''), file=sys.stderr)
            return 1
        time.sleep(2)


def _domain_set_for(host):
    """The cache domains of a devcloud compute (None: unknown host)."""
    from nova_cacheaware.topology import domains
    from nova_cacheaware.topology import report
    from nova_cacheaware.topology import sysfs
    if host in LIBVIRT_HOSTS:
        return domains.cache_domains(
            sysfs.read_topology(), 2 if host == LIBVIRT2_HOST else 'auto')
    name = re.sub(r'-[0-9]+$', '', host.replace('devcloud-', '', 1))
    if name.endswith('-plain'):
        # A host that did not opt in: no cache-domain providers.
        return None
    path = os.path.join(TOPOLOGIES, name + '.json')
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return domains.cache_domains(report.from_report(json.load(f)))


def _wait_for_agent_sync(placement, cn_uuid, domain_set, timeout=120,
                         host=LIBVIRT_HOST):
    """Wait until the agent created a libvirt compute's cache providers.

    One per host (``[placement] provider_model = host``, the default) or
    one per domain (``domain``).
    """
    deadline = time.time() + timeout
    want = len(domain_set.domains)
    while True:
        kids = [p['name'] for p in placement.providers_in_tree(cn_uuid)
                if p['uuid'] != cn_uuid]
        if len(kids) >= want or any(k.endswith(':cacheaware') for k in kids):
            print('cache providers of %s synced by the agent: %s'
                  % (host, ', '.join(sorted(kids))))
            return
        if time.time() > deadline:
            raise SystemExit('the agent did not sync the domain providers of '
                             '%s in %ds (see .devcloud/logs/agent*.log)'
                             % (host, timeout))
        time.sleep(1)


#: The zone of the fake-driver computes; each libvirt compute has its own
#: (named after it): a cold move between the two libvirt computes needs
#: ssh and shared storage, which one machine does not have.
FAKE_ZONE = 'devcloud-fake'


def zones_of(computes):
    """``{zone: [compute host, ...]}`` for the devcloud's computes.

    ``computes``: the ``DEVCLOUD_COMPUTES`` documents (``name``,
    ``driver``). A server created in a zone is pinned to it (Nova 34), so
    a resize or cold migration stays among computes that can carry it:
    a fake server never lands on a libvirt compute, nor a real guest on a
    fake one.
    """
    zones = {}
    for c in computes:
        zone = c['name'] if c['driver'] == 'libvirt' else FAKE_ZONE
        zones.setdefault(zone, []).append(c['name'])
    return zones


def pin_to_zone(cloud, server):
    """Pin an ACTIVE ``server`` to the zone it landed in (Nova 2.104).

    A server created without a zone may otherwise be resized or migrated
    into any zone; pinned, its moves stay among computes of the kind it
    runs on. Returns the zone, or None when the server has none.
    """
    zone = server.get('OS-EXT-AZ:availability_zone')
    if server.get('status') != 'ACTIVE' or not zone:
        return None
    cloud.nova('PUT', '/servers/' + server['id'], {'server': {
        'pinned_availability_zone': zone}}, version='2.104')
    return zone


def ensure_zones(cloud, zones):
    """One aggregate per zone, with its ``availability_zone`` and hosts.

    Idempotent: an aggregate already there keeps its id; missing hosts
    are added.
    """
    have = {a['name']: a for a in cloud.nova(
        'GET', '/os-aggregates')['aggregates']}
    for zone, hosts in sorted(zones.items()):
        agg = have.get(zone) or cloud.nova('POST', '/os-aggregates', {
            'aggregate': {'name': zone, 'availability_zone': zone}})[
            'aggregate']
        for host in hosts:
            if host not in (agg.get('hosts') or []):
                cloud.nova('POST', '/os-aggregates/%s/action' % agg['id'],
                           {'add_host': {'host': host}})
        print('zone %s: %s' % (zone, ', '.join(hosts)))
    return 0


def _computes():
    """The ``DEVCLOUD_COMPUTES`` documents devcloud.sh exports."""
    return json.loads(os.environ.get('DEVCLOUD_COMPUTES', '[]'))


def format_table(rows):
    """Lines of ``rows`` (tuples of str), columns as wide as their widest."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ['  '.join(c.ljust(w) for c, w in zip(r, widths)) + '  ' + r[-1]
            for r in rows]


def sync_domains(cloud):
    """Create/refresh the cache domain providers of every devcloud compute.

    :returns: a note when the provider-sync code is not installed (nothing
        is written then), else None.
    """
    try:
        from keystoneauth1 import adapter
        from nova_cacheaware.placement import client as pclient
        from nova_cacheaware.placement import provider_sync
    except ImportError as e:
        return ('cache domain providers not created: '
                'nova_cacheaware.placement.provider_sync is not installed '
                '(%s)' % e)
    placement = pclient.PlacementClient(adapter.Adapter(
        cloud.session, service_type='placement', interface='public'))
    for hv in cloud.hypervisors():
        # From 2.53 on the hypervisor id is the compute node's provider.
        host = hv['service']['host']
        domain_set = _domain_set_for(host)
        if domain_set is None:
            continue
        if host in LIBVIRT_HOSTS:
            # The agent next to a libvirt compute owns its providers
            # (and their MEMBOUND reserved): wait for its sync, never
            # write over it.
            _wait_for_agent_sync(placement, hv['id'], domain_set,
                                 host=host)
            continue
        provider_sync.sync_domain_providers(placement, hv['id'], domain_set)
        print('domain providers synced for %s: %d domains (L%s)' % (
            host, len(domain_set.domains), domain_set.level))
    return None


DEMO_FLAVORS = (
    # name, vcpus, ram, cache-aware
    ('devcloud.mem.2', 2, 256, True),
    ('devcloud.mem.4', 4, 256, True),
    ('devcloud.plain.2', 2, 256, False),
)
DEMO_SERVERS = (
    # name, flavor, forced host (None: the scheduler decides), count.
    # Booted the way users do: the forced one first (once it holds its
    # host: a forced request has no other host, and a concurrent request
    # may take that host's last Clean place), then everything else at
    # once - a multi-create (count > 1, Nova names them NAME-1..N) and
    # concurrent single boots.
    ('demo-mem-lv', 'devcloud.mem.2', LIBVIRT_HOST, 1),
    ('demo-mem-multi', 'devcloud.mem.4', None, 2),
    ('demo-mem-3', 'devcloud.mem.2', None, 1),
    ('demo-mem-4', 'devcloud.mem.2', None, 1),
    ('demo-plain-1', 'devcloud.plain.2', None, 1),
)


def _literal_specs(vcpus, with_placement):
    specs = {'cacheaware:cache_share': 'all', 'cacheaware:workload': 'memory',
             'cacheaware:cache_clean': 'required'}
    if with_placement:
        specs.update({'resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU': str(vcpus),
                      'resources_CACHE:CUSTOM_CACHE_DOMAIN_MEMBOUND': '1',
                      'group_policy': 'none'})
    return specs


def _set_flavor_specs(cloud, flavor, vcpus, with_placement, notes):
    """``nova-cacheaware flavor set`` when installed, else literal keys."""
    tool = os.path.join(os.path.dirname(sys.executable), 'nova-cacheaware')
    if with_placement and subprocess.run(
            [tool, 'flavor', '--help'], capture_output=True).returncode == 0:
        done = subprocess.run([tool, 'flavor', 'set', flavor['id'],
                               '--cache-share', 'all', '--workload', 'memory',
                               '--cache-clean', 'required',
                               '--os-cloud', 'devcloud'],
                              capture_output=True, text=True)
        if done.returncode == 0:
            return
        notes['flavor-tool'] = ('nova-cacheaware flavor set failed (%s): '
                                'wrote the literal extra specs'
                                % done.stderr.strip().splitlines()[-1:])
    if with_placement and 'flavor-tool' not in notes:
        notes['flavor-tool'] = ('nova-cacheaware flavor set not installed: '
                                'wrote the literal extra specs')
    cloud.nova('POST', '/flavors/%s/os-extra_specs' % flavor['id'],
               {'extra_specs': _literal_specs(vcpus, with_placement)})


def _boot(cloud, flavors, name, flavor, host, count):
    """Boot ``count`` servers in one request; their ids (or the error)."""
    body = {'name': name, 'imageRef': DISK_IMAGE_ID,
            'flavorRef': flavors[flavor]['id'], 'networks': 'none'}
    if host:
        body['host'] = host
    if count > 1:
        body.update(min_count=count, max_count=count,
                    return_reservation_id=True)
    try:
        reply = cloud.nova('POST', '/servers', {'server': body})
    except RuntimeError as e:
        return e
    if count == 1:
        return [reply['server']['id']]
    listed = cloud.nova('GET', '/servers?reservation_id=%s'
                        % reply['reservation_id'])['servers']
    return [s['id'] for s in listed]


def _wait_servers(cloud, ids, timeout=240, done=None):
    """The servers once each is ACTIVE or ERROR (or ``done(server)``).

    Returns them as they are when ``timeout`` seconds have passed.
    """
    done = done or (lambda s: s['status'] in ('ACTIVE', 'ERROR'))
    deadline = time.time() + timeout
    while True:
        servers = [cloud.nova('GET', '/servers/' + i)['server'] for i in ids]
        if all(done(s) for s in servers) or time.time() > deadline:
            return servers
        time.sleep(1)


def _scheduled(server):
    """The server holds a host, or will never (ERROR)."""
    return bool(server.get('OS-EXT-SRV-ATTR:host')) or \
        server['status'] == 'ERROR'


def over_capacity(cloud, names):
    """Notes for every domain provider whose usage exceeds its capacity.

    Placement refuses such claims, but accepts an inventory update that
    leaves existing allocations above the new capacity; this shows it.
    """
    out = []
    for rp, name in sorted(names.items(), key=lambda x: x[1]):
        if ':cacheaware' not in name:
            continue
        invs = cloud.placement('GET', '/resource_providers/%s/inventories'
                               % rp)['inventories']
        usages = cloud.placement('GET', '/resource_providers/%s/usages'
                                 % rp)['usages']
        for rc, inv in sorted(invs.items()):
            capacity = (inv['total'] - inv['reserved']) * inv[
                'allocation_ratio']
            if usages.get(rc, 0) > capacity:
                out.append('%s: %s used %d > capacity %g (inventory %s)'
                           % (name, rc, usages[rc], capacity, inv))
    return out


def _pinning(server):
    """``virsh vcpupin`` of a server on the libvirt compute, as text."""
    uri = ('qemu+unix:///system?socket=%s/libvirt/sock/libvirt-sock'
           % os.environ['DEVCLOUD_DIR'])
    out = subprocess.run(['virsh', '-c', uri, 'vcpupin',
                          server['OS-EXT-SRV-ATTR:instance_name']],
                         capture_output=True, text=True)
    rows = re.findall(r'^\s*(\d+)\s+(\S+)\s*$', out.stdout, re.M)
    return ' '.join('%s->%s' % r for r in rows) or out.stderr.strip()


def agent_view(timeout=45):
    """The agent's decisions ``{uuid: {...}}``, read-only, once settled.

    ``nova-cacheaware-agent --dump-state -`` with the daemon's own config:
    it observes and plans but never pins, syncs or publishes, so it runs
    safely next to the daemon. Waits until no instance has a pending
    repin (the daemon pinned them) or ``timeout`` passes.

    :returns: ``(decisions, note)``; note is None or why it is missing.
    """
    conf = os.path.join(os.environ['DEVCLOUD_DIR'], 'etc',
                        'nova-cacheaware', 'agent.conf')
    if not os.path.exists(conf):
        return {}, ("the agent's view is not shown: no agent in this "
                    'devcloud (DEVCLOUD_LIBVIRT=0)')
    tool = os.path.join(os.path.dirname(sys.executable),
                        'nova-cacheaware-agent')
    deadline = time.time() + timeout
    while True:
        done = subprocess.run([tool, '--config-file', conf, '--dump-state',
                               '-'], capture_output=True, text=True)
        if done.returncode != 0:
            return {}, ("the agent's view failed: %s" % ' '.join(
                done.stderr.strip().splitlines()[-1:]))
        agent = json.loads(done.stdout)['agent']
        if 'decisions' not in agent:
            return {}, "the agent's view: %s" % agent.get('decisions_error')
        decisions = agent['decisions']
        pending = [d for d in decisions.values() if d['action'] in (
            'repin', 'restore')]
        if not pending or time.time() > deadline:
            note = None
            if pending:
                note = ('the agent had not applied its plan after %ds: %s'
                        % (timeout, ', '.join(d['name'] for d in pending)))
            return decisions, note
        time.sleep(2)


def _agent_column(decision):
    if not decision:
        return '-'
    return '%s %s %s' % (decision['workload'], decision['action'],
                         ','.join(decision['domains']) or '-')


def demo(cloud, keep=False):
    """Cache-aware flavors, a set of servers, where each landed; teardown."""
    notes = {}
    t0 = time.time()
    note = sync_domains(cloud)
    have_domains = note is None
    if note:
        notes['domains'] = note
    flavors = {}
    existing = {f['name']: f for f in
                cloud.nova('GET', '/flavors?is_public=None')['flavors']}
    for name, vcpus, ram, aware in DEMO_FLAVORS:
        if name in existing:
            cloud.nova('DELETE', '/flavors/' + existing[name]['id'])
        flavor = cloud.nova('POST', '/flavors', {'flavor': {
            'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': 1}})['flavor']
        if aware:
            _set_flavor_specs(cloud, flavor, vcpus, have_domains, notes)
        flavors[name] = flavor
    forced = [b for b in DEMO_SERVERS if b[2]]
    burst = [b for b in DEMO_SERVERS if not b[2]]
    ids = []
    for batch in (forced, burst):
        with futures.ThreadPoolExecutor(max_workers=len(batch)) as pool:
            for name, result in zip(
                    [b[0] for b in batch],
                    pool.map(lambda b: _boot(cloud, flavors, *b), batch)):
                if isinstance(result, Exception):
                    notes['boot-' + name] = str(result)
                else:
                    ids.extend(result)
        if batch is forced:
            _wait_servers(cloud, ids, timeout=120, done=_scheduled)
    servers = _wait_servers(cloud, ids)
    for server in servers:
        pin_to_zone(cloud, server)
    on_libvirt = [s for s in servers if s['status'] == 'ACTIVE' and
                  s.get('OS-EXT-SRV-ATTR:host') == LIBVIRT_HOST]
    decisions, note = agent_view() if on_libvirt else ({}, None)
    if note:
        notes['agent'] = note
    rows = [('SERVER', 'STATUS', 'HOST', 'ALLOCATION (provider: resources)',
             "AGENT'S VIEW", 'PINNING (libvirt)')]
    faults = {}
    names = {r['uuid']: r['name'] for r in cloud.placement(
        'GET', '/resource_providers')['resource_providers']}
    for s in servers:
        allocs = cloud.placement('GET', '/allocations/' + s['id'])[
            'allocations']
        parts = []
        for rp, a in sorted(allocs.items(), key=lambda x: names.get(x[0], '')):
            label = names.get(rp, rp)
            if ':cacheaware:' in label:
                label = 'domain ' + label.split(':cacheaware:', 1)[1]
            elif label.endswith(':cacheaware'):
                # Per-host model: the agent chose the domain (its view).
                label = 'host cache'
            else:
                label = 'root'
            parts.append('%s: %s' % (label, ','.join(
                '%s=%s' % (k.replace('CUSTOM_CACHE_DOMAIN_', 'D_'), v)
                for k, v in sorted(a['resources'].items()))))
        host = s.get('OS-EXT-SRV-ATTR:host') or '-'
        live = host == LIBVIRT_HOST and s['status'] == 'ACTIVE'
        pin = _pinning(s) if live else ''
        view = _agent_column(decisions.get(s['id'])) if live else ''
        rows.append((s['name'], s['status'], host, '; '.join(parts) or '-',
                     view, pin))
        if s['status'] == 'ERROR':
            faults[s['name']] = (s.get('fault') or {}).get('message')
    for line in format_table(rows):
        print(line)
    for name, message in sorted(faults.items()):
        print('fault of %s: %s' % (name, message))
    for problem in over_capacity(cloud, names):
        print('WARNING: over capacity: ' + problem)
    for key in sorted(notes):
        print('note: ' + notes[key])
    print('booted %d servers in %.1f s' % (len(servers), time.time() - t0))
    operator_ok = operator_view(LIBVIRT_HOST) if on_libvirt else True
    if keep:
        return 0 if operator_ok else 1
    for i in ids:
        cloud.nova('DELETE', '/servers/' + i, ok=(204, 404))
    deadline = time.time() + 120
    while time.time() < deadline:
        left = [i for i in ids if cloud.nova(
            'GET', '/servers/' + i, ok=(200, 404)) is not None and
            cloud.nova('GET', '/servers/' + i, ok=(200, 404)).get('server')]
        if not left:
            break
        time.sleep(1)
    for flavor in flavors.values():
        cloud.nova('DELETE', '/flavors/' + flavor['id'], ok=(202, 404))
    print('torn down: servers and demo flavors deleted')
    failed = [s for s in servers if s['status'] != 'ACTIVE']
    return 1 if failed or not operator_ok else 0


def operator_view(host):
    """What an operator sees of ``host``: ``openstack cacheaware``.

    Prints ``host show`` (each cache domain, its servers and state, from
    the host's agent through nova-cacheaware-api) and writes ``host map``'s
    picture to the devcloud's directory. False when a command failed.
    """
    tool = os.path.join(os.path.dirname(sys.executable), 'openstack')
    picture = os.path.join(os.environ['DEVCLOUD_DIR'], 'demo-host-map.svg')
    ok = True
    for args in (['host', 'show', host],
                 ['host', 'map', host, '--output', picture]):
        command = [tool, '--os-cloud', 'devcloud', 'cacheaware'] + args
        print('$ openstack cacheaware %s' % ' '.join(args))
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            print('failed: %s' % e)
            ok = False
            continue
        print((done.stdout or done.stderr).rstrip())
        ok = ok and done.returncode == 0
    if ok:
        print('host map of %s: %s' % (host, picture))
    return ok


def ensure_flavor(cloud, name, vcpus, ram, disk):
    """A plain public flavor ``name`` (created once); print its id."""
    for flavor in cloud.nova('GET', '/flavors?is_public=None')['flavors']:
        if flavor['name'] == name:
            print(flavor['id'])
            return 0
    flavor = cloud.nova('POST', '/flavors', {'flavor': {
        'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': disk}})['flavor']
    print(flavor['id'])
    return 0


def main(argv=None):
    """Parse the subcommand and run it."""
    parser = argparse.ArgumentParser(prog='cloud.py')
    sub = parser.add_subparsers(dest='cmd', required=True)
    wait = sub.add_parser('wait-computes')
    wait.add_argument('count', type=int)
    wait.add_argument('--timeout', type=int, default=180)
    sub.add_parser('sync-domains')
    sub.add_parser('zones', help='one availability zone per libvirt '
                                 'compute, one for the fake computes')
    fl = sub.add_parser('ensure-flavor')
    fl.add_argument('name')
    fl.add_argument('vcpus', type=int)
    fl.add_argument('ram', type=int)
    fl.add_argument('disk', type=int)
    d = sub.add_parser('demo')
    d.add_argument('--keep', action='store_true',
                   help='leave the servers and flavors in place')
    args = parser.parse_args(argv)
    cloud = Cloud()
    if args.cmd == 'wait-computes':
        return wait_computes(cloud, args.count, args.timeout)
    if args.cmd == 'sync-domains':
        note = sync_domains(cloud)
        if note:
            print('note: ' + note)
        return 0
    if args.cmd == 'zones':
        return ensure_zones(cloud, zones_of(_computes()))
    if args.cmd == 'ensure-flavor':
        return ensure_flavor(cloud, args.name, args.vcpus, args.ram,
                             args.disk)
    return demo(cloud, args.keep)


if __name__ == '__main__':
    sys.exit(main())
