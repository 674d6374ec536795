"""Scenario tests: OpenStack Watcher with nova-cacheaware's strategy.

Real Watcher (API, decision engine, applier) with the ``cache_isolation``
goal and the ``cache_rebalance`` strategy, real Nova live migration, the
agents' views through nova-cacheaware-api. On ``[cacheaware]
watcher_hosts`` (source first):

* ``test_dirty_host_rebalanced_by_one_live_migration``: two one-vCPU
  memory-bound servers share the source's one cache domain (Dirty): one
  of a flavor that declares it (``cacheaware:workload=memory``, the
  All-share, Clean cache group), one ``auto`` server that the source's
  agent classifies memory-bound at run time from its counters (replayed
  from a memory-bound trace the test writes into ``[cacheaware]
  counter_trace_dir``: only the counts are recorded, the classification
  is the agent's). A ONESHOT audit of the goal with the strategy proposes
  exactly one live ``migrate`` action from the source to the destination;
  the applier runs it, and both servers end Clean, each memory-bound and
  alone in its domain in its agent's view (and, with ``[cacheaware]
  libvirt_uris``, pinned to exactly that domain's CPUs).
* ``test_refused_migration_leaves_the_server_where_it_was``: the same
  Dirty pair and audit; before the plan starts, plain servers take every
  VCPU Placement has left on the destination, so Nova's scheduler
  refuses the live migration: the action and the plan end FAILED, and
  both servers still run on the source, in their Dirty domain.
* ``test_nothing_to_improve_gives_an_empty_plan``: one memory-bound
  server alone in the source's domain (Clean), nothing else: the audit
  SUCCEEDS with one action plan, already SUCCEEDED, without actions
  (Watcher 17's weight planner marks an empty plan SUCCEEDED), and the
  goal's efficacy indicators say no migration for one server.
* ``test_refused_required_request_gets_room``: the source's one cache
  domain holds K vCPUs, the destination's largest Ky < K. A memory-bound
  ``cache_clean=required`` server M (1 vCPU) is Clean on the destination;
  a cache-aware CPU-bound server C (All-share, ``cacheaware:workload=cpu``,
  K - Ky vCPUs) on the source leaves too little room there for a
  ``required`` request R of Ky + 1 vCPUs, which no domain of the
  destination holds: R ends in ERROR with Nova's "No valid host was
  found". The audit reads that refused request from Nova and proposes
  exactly one live migration, C to the destination (M leaving frees no
  domain big enough); the applier runs it, M stays Clean, and R's
  request made again on the source is ACTIVE, alone and Clean in its
  domain. Skipped unless Nova and Placement take servers of Ky + 1 vCPUs
  on the source: in the devcloud only with ``DEVCLOUD_CPU_ALLOCATION_RATIO
  =1.0`` (K = 2, Ky = 1; at Nova's default ratio 4.0, K = 8 and Ky = 4
  but one server has at most 2 vCPUs there, the hosts' CPUs).

Audits are scoped to the two hosts (every other compute host excluded):
the devcloud's fake computes cannot run a libvirt guest, and with
``DEVCLOUD_FAKE_AGENTS=1`` they would have agents and views.
"""

import json
import os
import time

from tempest import config
from tempest.lib.common import rest_client
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from nova_cacheaware_tempest_plugin.tests.scenario import base

CONF = config.CONF
#: Watcher's API microversion of the data model listing.
DATA_MODEL_VERSION = 'infra-optim 1.3'
GOAL = 'cache_isolation'
STRATEGY = 'cache_rebalance'
MEMORY_BOUND = 'memory-bound'
#: Nova's fault of a server its scheduler refused (what the strategy
#: reads, nova_cacheaware.watcher.NO_VALID_HOST).
NO_VALID_HOST = 'No valid host was found'
#: A memory-bound workload's counts per agent pass and vCPU: 14 and 16
#: LLC misses per 1000 instructions (the agent's rule: >= 10 is
#: memory-bound). Instructions and LLC misses only, as a host whose PMU
#: counts no cycles: the MPKI rule alone classifies, no sampling window.
MEMORY_TRACE = {
    'description': 'A memory-bound VM, one vCPU (written by the tempest '
                   'Watcher scenario; not a hardware recording).',
    'events': ['instructions', 'llc_misses'],
    'passes': [{'vm/0': {'instructions': 1000000000,
                         'llc_misses': 14000000}},
               {'vm/0': {'instructions': 1000000000,
                         'llc_misses': 16000000}}],
}


class JsonClient(rest_client.RestClient):
    """A JSON REST client of one catalog service (admin credentials)."""

    def __init__(self, auth_provider, service):
        super().__init__(auth_provider, service, CONF.identity.region,
                         endpoint_type='publicURL')

    def get_json(self, url, headers=None):
        """GET ``url``; the decoded body (200 expected)."""
        resp, body = self.get(url, headers=headers, extra_headers=True)
        self.expected_success(200, resp.status)
        return json.loads(body)

    def post_json(self, url, doc, expected=201):
        """POST ``doc`` to ``url``; the decoded body."""
        resp, body = self.post(url, json.dumps(doc))
        self.expected_success(expected, resp.status)
        return json.loads(body)

    def delete_url(self, url):
        """DELETE ``url`` (204 expected)."""
        resp, _ = self.delete(url)
        self.expected_success(204, resp.status)


class WatcherRebalanceTest(base.CacheAwareScenarioTest):
    """Watcher audits with the cache_rebalance strategy, applied by Watcher."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.cacheaware.watcher:
            raise cls.skipException(
                '[cacheaware] watcher is False: OpenStack Watcher is not in '
                'the cloud (the devcloud: DEVCLOUD_WATCHER=1)')
        cls.skip_without_live_migration('watcher_hosts')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        auth = cls.os_admin.auth_provider
        cls.watcher = JsonClient(auth, 'infra-optim')
        cls.cacheaware = JsonClient(auth, 'cache-aware')

    def setUp(self):
        super().setUp()
        self.source, self.dest = CONF.cacheaware.watcher_hosts
        self.timeout = CONF.cacheaware.watcher_timeout
        goals = [g['name'] for g in
                 self.watcher.get_json('v1/goals')['goals']]
        self.assertIn(GOAL, goals, 'Watcher\'s decision engine did not '
                      'load nova-cacheaware\'s goal')

    # -- helpers -----------------------------------------------------------
    def view(self, host):
        """The host's view from its agent (nova-cacheaware-api)."""
        return self.cacheaware.get_json('v1/hosts/%s' % host)

    def wait_for(self, what, check):
        """Poll ``check()`` until it returns a true value; return it."""
        deadline = time.monotonic() + self.timeout
        while True:
            got = check()
            if got:
                return got
            if time.monotonic() > deadline:
                self.fail('%s: not within %d s' % (what, self.timeout))
            time.sleep(3)

    def clean_domain(self, host, server_id):
        """The domain of the host's view where the server is alone, Clean.

        The server is classified memory-bound and is the only
        memory-bound server of its domain, which is Clean; None until
        then.
        """
        try:
            view = self.view(host)
        except lib_exc.NotFound:
            return None
        servers = {s['uuid']: s for s in view['servers']}
        me = servers.get(server_id)
        if not me or me['class'] != MEMORY_BOUND or not me['domain']:
            return None
        domain = [d for d in view['domains'] if d['id'] == me['domain']][0]
        membound = [u for u in domain['servers']
                    if servers.get(u, {}).get('class') == MEMORY_BOUND]
        if membound != [server_id] or domain['state'].lower() != 'clean':
            return None
        return domain

    def dirty_domain(self, host, server_ids):
        """The host's domain holding all ``server_ids``, memory-bound, Dirty.

        None until the agent's view shows it.
        """
        view = self.view(host)
        servers = {s['uuid']: s for s in view['servers']}
        if not all(servers.get(u, {}).get('class') == MEMORY_BOUND
                   for u in server_ids):
            return None
        for domain in view['domains']:
            if (set(server_ids) <= set(domain['servers'])
                    and domain['state'].lower() == 'dirty'):
                return domain
        return None

    def in_watcher_model(self, host, server_ids):
        """True once Watcher's compute model has the servers on ``host``."""
        model = self.watcher.get_json(
            'v1/data_model?data_model_type=compute',
            headers={'OpenStack-API-Version': DATA_MODEL_VERSION})
        where = {row.get('server_uuid'): row.get('node_hostname')
                 for row in model.get('context', [])}
        return all(where.get(u) == host for u in server_ids)

    def scope(self):
        """The audit scope: every compute host but the two excluded."""
        hosts = {h['service']['host'] for h in
                 self.os_admin.hypervisor_client.list_hypervisors(
                     detail=True)['hypervisors']}
        others = sorted(hosts - {self.source, self.dest})
        if not others:
            return []
        return [{'compute': [{'exclude': [{'compute_nodes': [
            {'name': h} for h in others]}]}]}]

    def audit(self):
        """Run a ONESHOT audit of the goal with the strategy; SUCCEEDED.

        Returns ``(audit, [action plans of the audit])``.
        """
        template = self.watcher.post_json('v1/audit_templates', {
            'name': data_utils.rand_name('cacheaware-watcher'),
            'goal': GOAL, 'strategy': STRATEGY, 'scope': self.scope()})
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.watcher.delete_url,
                        'v1/audit_templates/%s' % template['uuid'])
        audit = self.watcher.post_json('v1/audits', {
            'audit_template_uuid': template['uuid'],
            'audit_type': 'ONESHOT'})
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.watcher.delete_url, 'v1/audits/%s'
                        % audit['uuid'])

        def done():
            now = self.watcher.get_json('v1/audits/%s' % audit['uuid'])
            return now if now['state'] in ('SUCCEEDED', 'FAILED',
                                           'CANCELLED') else None
        audit = self.wait_for('audit %s' % audit['uuid'], done)
        self.assertEqual('SUCCEEDED', audit['state'],
                         'audit %s: see watcher-decision-engine\'s log'
                         % audit['uuid'])
        plans = self.watcher.get_json(
            'v1/action_plans/detail?audit_uuid=%s'
            % audit['uuid'])['action_plans']
        for plan in plans:
            self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                            self.watcher.delete_url,
                            'v1/action_plans/%s' % plan['uuid'])
        return audit, plans

    def actions(self, plan):
        """The actions of an action plan, with their parameters."""
        return self.watcher.get_json('v1/actions/detail?action_plan_uuid=%s'
                                     % plan['uuid'])['actions']

    def run_plan(self, plan, expected='SUCCEEDED'):
        """Start the action plan; once it ended in ``expected``: return it."""
        self.watcher.post_json('v1/action_plans/%s/start' % plan['uuid'],
                               {}, expected=200)

        def finished():
            now = self.watcher.get_json('v1/action_plans/%s' % plan['uuid'])
            return now if now['state'] in ('SUCCEEDED', 'FAILED',
                                           'CANCELLED') else None
        plan = self.wait_for('action plan %s' % plan['uuid'], finished)
        self.assertEqual(expected, plan['state'], self.actions(plan))
        return plan

    def efficacy(self, plan):
        """``{indicator name: value}`` of an action plan."""
        return {i['name']: i['value'] for i in plan['efficacy_indicators']}

    def write_trace(self, server_id):
        """A memory-bound counter trace for the server, removed at cleanup."""
        path = os.path.join(CONF.cacheaware.counter_trace_dir,
                            '%s.json' % server_id)
        with open(path, 'w') as f:
            json.dump(MEMORY_TRACE, f)
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        os.unlink, path)

    def assert_pinned_into(self, host, server_id, domain):
        """With libvirt_uris: every vCPU pinned to the domain's CPUs."""
        view = self.libvirt_view(host)
        if view is None:
            return
        cpus = tuple(_cpulist(domain['cpus']))
        self.wait_for('%s pinned to %s on %s' % (server_id, cpus, host),
                      lambda: set(view.pins(server_id).values()) == {cpus})

    def capacities(self, host):
        """``{domain id: vCPUs it holds}`` of the host's agent's view.

        Each domain's CPUs (the view) at the allocation ratio of the
        host's ``domain_resource_class`` inventory in Placement (what
        Placement and the audit count).
        """
        try:
            view = self.view(host)
        except lib_exc.NotFound:
            raise self.skipException('no view of %s from nova-cacheaware-'
                                     'api: no agent there' % host)
        rc = CONF.cacheaware.domain_resource_class
        ratios = {inv[rc]['allocation_ratio']
                  for inv in self.cache_inventories(host).values()}
        if len(ratios) != 1:
            raise self.skipException(
                '%s: its cache providers have %s allocation ratios of %s '
                'in Placement (one wanted)' % (host, sorted(ratios) or 'no',
                                               rc))
        ratio = ratios.pop()
        return {d['id']: int(len(_cpulist(d['cpus'])) * ratio)
                for d in view['domains']}

    def roots(self, host):
        """The compute node provider uuids of ``host``."""
        return [h['id'] for h in
                self.os_admin.hypervisor_client.list_hypervisors(
                    detail=True)['hypervisors']
                if h['service']['host'] == host]

    def largest_server(self, host):
        """The most vCPUs of one All-share server Placement puts on host.

        Nova's ``VCPU`` ``max_unit`` of the host (its CPUs) and the
        largest ``max_unit`` of its cache providers' domain vCPUs.
        """
        rc = CONF.cacheaware.domain_resource_class
        units = [inv[rc]['max_unit'] for inv in
                 self.cache_inventories(host).values()]
        for root in self.roots(host):
            inv = self.rp_client.list_resource_provider_inventories(root)[
                'inventories'].get('VCPU')
            if inv:
                units = [min(u, inv['max_unit']) for u in units]
        return max(units or [0])

    def cache_inventories(self, host):
        """``{rp uuid: inventories}`` of the host's cache providers.

        Those with the domain vCPU class: the host's one cache provider
        (per-host model) or its domain providers (per-domain model).
        """
        out = {}
        for root in self.roots(host):
            for rp in self.rp_client.list_resource_providers(
                    in_tree=root)['resource_providers']:
                inv = self.rp_client.list_resource_provider_inventories(
                    rp['uuid'])['inventories']
                if CONF.cacheaware.domain_resource_class in inv:
                    out[rp['uuid']] = inv
        return out

    def room_for_required(self, host, vcpus):
        """True when Placement has room for a ``required`` request.

        One of the host's cache providers has ``vcpus`` free, within its
        ``max_unit``, and a free memory-bound slot.
        """
        rc = CONF.cacheaware.domain_resource_class
        membound = CONF.cacheaware.domain_membound_class
        for rp, inv in self.cache_inventories(host).items():
            used = self.rp_client.list_resource_provider_usages(rp)['usages']

            def free(name):
                if name not in inv:
                    return 0
                i = inv[name]
                return ((i['total'] - i['reserved']) * i['allocation_ratio']
                        - used.get(name, 0))
            if (free(rc) >= vcpus and inv[rc]['max_unit'] >= vcpus
                    and free(membound) >= 1):
                return True
        return False

    def server_in_domain(self, host, server_id, workload_class):
        """The server's entry in the host's view, or None.

        None until the agent has it of ``workload_class`` and in one
        domain (All-share).
        """
        try:
            view = self.view(host)
        except lib_exc.NotFound:
            return None
        for server in view['servers']:
            if (server['uuid'] == server_id and server['domain']
                    and server['class'] == workload_class):
                return server
        return None

    def no_servers(self, hosts):
        """True when no host's view lists a server (earlier tests gone)."""
        return all(not self.view(h)['servers'] for h in hosts)

    def domain_count(self, host):
        """How many cache domains the host's agent reports."""
        try:
            return len(self.view(host)['domains'])
        except lib_exc.NotFound:
            raise self.skipException('no view of %s from nova-cacheaware-'
                                     'api: no agent there' % host)

    def dirty_pair_planned(self):
        """A Dirty pair on the source and the audit's one migration.

        Two one-vCPU memory-bound servers share the source's one domain:
        a declared ``required`` one and an ``auto`` one its agent
        classifies from a counter trace. Returns ``(pair, moved, plan)``:
        both uuids, the ``auto`` one the plan's one action live-migrates
        to the destination, and the RECOMMENDED action plan.
        """
        if not CONF.cacheaware.counter_trace_dir:
            raise self.skipException(
                '[cacheaware] counter_trace_dir is empty: no way to make an '
                '"auto" server memory-bound on a host without a PMU')
        if self.domain_count(self.source) != 1:
            raise self.skipException(
                'the source %s must have one cache domain (two memory-bound '
                'servers then share it)' % self.source)
        if self.domain_count(self.dest) < 1:
            raise self.skipException('the destination has no domain')
        specs = self.allshare_specs(domain_model=False)
        specs['resources_CACHE:' + CONF.cacheaware.domain_resource_class] = '1'
        image = CONF.cacheaware.guest_image_ref or None
        declared = self.boot(self.create_flavor(specs, vcpus=1),
                             host=self.source, image=image)
        auto = self.boot(self.create_flavor({'cacheaware:workload': 'auto'},
                                            vcpus=1),
                         host=self.source, image=image)
        # Only the counts are recorded; the agent classifies.
        self.write_trace(auto['id'])
        pair = [declared['id'], auto['id']]
        dirty = self.wait_for(
            'both servers memory-bound in one Dirty domain of %s'
            % self.source, lambda: self.dirty_domain(self.source, pair))
        self.assertEqual(sorted(pair), sorted(
            u for u in dirty['servers'] if u in pair))
        self.wait_for('Watcher\'s compute model has both servers',
                      lambda: self.in_watcher_model(self.source, pair))

        audit, plans = self.audit()
        self.assertEqual(1, len(plans), plans)
        plan = plans[0]
        self.assertEqual('RECOMMENDED', plan['state'])
        actions = self.actions(plan)
        self.assertEqual(1, len(actions), actions)
        params = actions[0]['input_parameters']
        # The auto server moves: the declared one holds the domain's
        # Clean slot (cache_clean=required) and stays.
        moved = auto['id']
        self.assertEqual(
            ('migrate', 'live', moved, self.source, self.dest),
            (actions[0]['action_type'], params['migration_type'],
             params['resource_id'], params['source_node'],
             params['destination_node']))
        efficacy = self.efficacy(plan)
        self.assertEqual((1, 2), (efficacy['instance_migrations_count'],
                                  efficacy['instances_count']))
        return pair, moved, plan

    def free_vcpus(self, host):
        """The VCPUs Placement has left on ``host`` (its compute nodes)."""
        free = 0
        for root in self.roots(host):
            inv = self.rp_client.list_resource_provider_inventories(root)[
                'inventories']['VCPU']
            used = self.rp_client.list_resource_provider_usages(root)[
                'usages'].get('VCPU', 0)
            free += int((inv['total'] - inv['reserved'])
                        * inv['allocation_ratio']) - used
        return free

    def largest_plain_server(self, host):
        """The most VCPUs of one server Placement puts on ``host``."""
        return max(self.rp_client.list_resource_provider_inventories(root)[
            'inventories']['VCPU']['max_unit'] for root in self.roots(host))

    def server_hosts(self, server_ids):
        """``{uuid: compute host}`` of the servers, from Nova."""
        return {u: self.admin_servers_client.show_server(u)['server'][
            'OS-EXT-SRV-ATTR:host'] for u in server_ids}

    # -- tests ---------------------------------------------------------------
    @decorators.idempotent_id('8c1d3e6a-4b7f-4f0e-9a2d-6e5b7c8d9f01')
    def test_dirty_host_rebalanced_by_one_live_migration(self):
        """Dirty -> one live migration by Watcher's applier -> both Clean."""
        pair, moved, plan = self.dirty_pair_planned()
        plan = self.run_plan(plan)
        self.assertEqual(['SUCCEEDED'],
                         [a['state'] for a in self.actions(plan)])

        stays = [u for u in pair if u != moved][0]
        self.assertEqual({moved: self.dest, stays: self.source},
                         self.server_hosts(pair))
        for host, server_id in ((self.source, stays), (self.dest, moved)):
            domain = self.wait_for(
                '%s memory-bound and alone in a Clean domain of %s'
                % (server_id, host),
                lambda: self.clean_domain(host, server_id))
            self.assert_pinned_into(host, server_id, domain)

    @decorators.idempotent_id('0b6f4a1e-7c3d-4e59-8a2b-5d9c1e7f3a64')
    def test_refused_migration_leaves_the_server_where_it_was(self):
        """The destination filled after the audit: FAILED, nothing moved.

        Between the audit and the plan's start plain servers take every
        VCPU Placement has left on the destination: Nova's scheduler
        refuses the live migration, Watcher's applier marks the action
        and the plan FAILED, and both servers still run on the source,
        Dirty, as before.
        """
        pair, _moved, plan = self.dirty_pair_planned()
        image = CONF.cacheaware.guest_image_ref or None
        free = self.free_vcpus(self.dest)
        largest = self.largest_plain_server(self.dest)
        while free > 0:
            vcpus = min(free, largest)
            self.boot(self.create_flavor(vcpus=vcpus), host=self.dest,
                      image=image)
            free -= vcpus
        self.assertEqual(0, self.free_vcpus(self.dest))

        plan = self.run_plan(plan, expected='FAILED')
        self.assertEqual(['FAILED'],
                         [a['state'] for a in self.actions(plan)])
        self.assertEqual({u: self.source for u in pair},
                         self.server_hosts(pair))
        for server_id in pair:
            self.assertEqual('ACTIVE', self.admin_servers_client.show_server(
                server_id)['server']['status'])
        self.wait_for('both servers still in one Dirty domain of %s'
                      % self.source,
                      lambda: self.dirty_domain(self.source, pair))

    @decorators.idempotent_id('8c1d3e6a-4b7f-4f0e-9a2d-6e5b7c8d9f02')
    def test_nothing_to_improve_gives_an_empty_plan(self):
        """A Clean server alone: the audit proposes nothing."""
        specs = self.allshare_specs(domain_model=False)
        specs['resources_CACHE:' + CONF.cacheaware.domain_resource_class] = '1'
        server = self.boot(self.create_flavor(specs, vcpus=1),
                           host=self.source,
                           image=CONF.cacheaware.guest_image_ref or None)
        self.wait_for('%s alone in a Clean domain' % server['id'],
                      lambda: self.clean_domain(self.source, server['id']))
        self.wait_for('Watcher\'s compute model has the server',
                      lambda: self.in_watcher_model(self.source,
                                                    [server['id']]))

        audit, plans = self.audit()
        self.assertEqual(1, len(plans), plans)
        plan = plans[0]
        self.assertEqual(('SUCCEEDED', []),
                         (plan['state'], self.actions(plan)))
        self.assertEqual(
            {'instance_migrations_count': 0, 'instances_count': 1,
             'clean_servers_gained': 0, 'all_share_servers_gained': 0},
            self.efficacy(plan))
        self.assertEqual(
            self.source, self.admin_servers_client.show_server(
                server['id'])['server']['OS-EXT-SRV-ATTR:host'])

    @decorators.idempotent_id('c7935774-19d6-4778-980a-9ae2ddd266e5')
    def test_refused_required_request_gets_room(self):
        """A refused required request: one live migration frees a domain.

        The source's one domain holds K vCPUs, the destination's largest
        Ky < K. M (``required`` memory-bound, 1 vCPU) is Clean on the
        destination; C (CPU-bound, All-share, K - Ky vCPUs) on the source
        leaves too little room there for R (``required``, Ky + 1 vCPUs,
        more than any domain of the destination holds): Nova refuses R.
        The audit moves C to the destination, the one move that frees a
        domain with room for R (M's moving frees none that is big
        enough), and R's request made again is ACTIVE, alone and Clean in
        the source's domain.

        Why R is bigger than every domain of the destination: were M's
        domain big enough for R once M left (both hosts with one domain
        of K >= 3, C of K - 1 vCPUs), M moving to the source would free
        it too, and the audit prefers that cheaper move (1 vCPU against
        K - 1; with K = 2 the smaller uuid decides).
        """
        full, other = self.source, self.dest
        domains = self.capacities(full)
        if len(domains) != 1:
            raise self.skipException(
                'the source %s must have one cache domain (C fills it, R '
                'waits for it), not %d' % (full, len(domains)))
        (domain_id, kx), = domains.items()
        there = self.capacities(other)
        ky = max(there.values() or [0])
        refused_vcpus, blocker_vcpus = ky + 1, kx - ky
        # C and M fit the destination's domains, C beside M or in
        # another one.
        room_there = sorted(there.values())
        room_there[-1] -= 1
        if (blocker_vcpus < 1 or refused_vcpus > kx
                or max(room_there) < blocker_vcpus):
            raise self.skipException(
                'the source\'s domain holds %d vCPUs, the destination\'s '
                '%s: the scenario needs one of K vCPUs on the source and '
                'room for 1 + (K - Ky) vCPUs on the destination, Ky < K '
                'its largest domain' % (kx, sorted(there.values())))
        # Placement's max_unit of a per-host provider follows its load.
        self.wait_for('no server left on %s and %s in their agents\' views'
                      % (full, other),
                      lambda: self.no_servers((full, other)))
        too_big = [(host, vcpus, self.largest_server(host))
                   for host, vcpus in ((full, refused_vcpus),
                                       (other, blocker_vcpus))
                   if vcpus > self.largest_server(host)]
        if too_big:
            raise self.skipException(
                'the source\'s domain holds %d vCPUs, the destination\'s '
                'largest %d: a server of %s vCPUs on %s, more than Nova and '
                'Placement place in one server there (max_unit %s; the '
                'devcloud: DEVCLOUD_CPU_ALLOCATION_RATIO=1.0)'
                % (kx, ky, too_big[0][1], too_big[0][0], too_big[0][2]))
        image = CONF.cacheaware.guest_image_ref or None
        rc = CONF.cacheaware.domain_resource_class
        specs = self.allshare_specs(domain_model=False)
        specs['resources_CACHE:' + rc] = '1'
        clean = self.boot(self.create_flavor(specs, vcpus=1), host=other,
                          image=image)
        self.wait_for('%s alone in a Clean domain of %s'
                      % (clean['id'], other),
                      lambda: self.clean_domain(other, clean['id']))
        blocker = self.boot(self.create_flavor({
            'cacheaware:cache_share': 'all',
            'cacheaware:workload': 'cpu',
            'resources_CACHE:' + rc: str(blocker_vcpus),
            'group_policy': 'none'}, vcpus=blocker_vcpus),
            host=full, image=image)
        self.wait_for('%s cpu-bound in a domain of %s'
                      % (blocker['id'], full),
                      lambda: self.server_in_domain(full, blocker['id'],
                                                    'cpu-bound'))
        specs = self.allshare_specs(domain_model=False)
        specs['resources_CACHE:' + rc] = str(refused_vcpus)
        required = self.create_flavor(specs, vcpus=refused_vcpus)
        refused = self.boot(required, host=full, image=image,
                            status='ERROR')
        self.assertIn(NO_VALID_HOST,
                      (refused.get('fault') or {}).get('message', ''),
                      refused)
        self.assertIsNone(refused.get('OS-EXT-SRV-ATTR:host'))
        self.wait_for('Watcher\'s compute model has %s and %s'
                      % (clean['id'], blocker['id']),
                      lambda: self.in_watcher_model(full, [blocker['id']])
                      and self.in_watcher_model(other, [clean['id']]))

        audit, plans = self.audit()
        self.assertEqual(1, len(plans), plans)
        plan = plans[0]
        self.assertEqual('RECOMMENDED', plan['state'])
        actions = self.actions(plan)
        self.assertEqual(1, len(actions), actions)
        params = actions[0]['input_parameters']
        self.assertEqual(
            ('migrate', 'live', blocker['id'], full, other),
            (actions[0]['action_type'], params['migration_type'],
             params['resource_id'], params['source_node'],
             params['destination_node']))
        self.assertEqual(
            {'instance_migrations_count': 1, 'instances_count': 2,
             'clean_servers_gained': 0, 'all_share_servers_gained': 0},
            self.efficacy(plan))

        plan = self.run_plan(plan)
        self.assertEqual(['SUCCEEDED'],
                         [a['state'] for a in self.actions(plan)])
        hosts = {u: self.admin_servers_client.show_server(u)['server'][
            'OS-EXT-SRV-ATTR:host'] for u in (blocker['id'], clean['id'])}
        self.assertEqual({blocker['id']: other, clean['id']: other}, hosts)
        self.wait_for('%s cpu-bound in a domain of %s'
                      % (blocker['id'], other),
                      lambda: self.server_in_domain(other, blocker['id'],
                                                    'cpu-bound'))
        self.wait_for('%s still alone in a Clean domain of %s'
                      % (clean['id'], other),
                      lambda: self.clean_domain(other, clean['id']))

        # The source's agent gives Placement the domain's room back.
        self.wait_for('room for %d vCPUs and a Clean slot on %s in '
                      'Placement' % (refused_vcpus, full),
                      lambda: self.room_for_required(full, refused_vcpus))
        again = self.boot(required, host=full, image=image)
        domain = self.wait_for(
            '%s memory-bound and alone in a Clean domain of %s'
            % (again['id'], full),
            lambda: self.clean_domain(full, again['id']))
        self.assertEqual((domain_id, [again['id']]),
                         (domain['id'], domain['servers']))
        self.assert_pinned_into(full, again['id'], domain)


def _cpulist(text):
    """The CPUs of a cpulist string (``0-2,5``)."""
    cpus = []
    for part in str(text).split(','):
        low, _, high = part.partition('-')
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus
