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
* ``test_nothing_to_improve_gives_an_empty_plan``: one memory-bound
  server alone in the source's domain (Clean), nothing else: the audit
  SUCCEEDS with one action plan, already SUCCEEDED, without actions
  (Watcher 17's weight planner marks an empty plan SUCCEEDED), and the
  goal's efficacy indicators say no migration for one server.

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

    def domain_count(self, host):
        """How many cache domains the host's agent reports."""
        try:
            return len(self.view(host)['domains'])
        except lib_exc.NotFound:
            raise self.skipException('no view of %s from nova-cacheaware-'
                                     'api: no agent there' % host)

    # -- tests ---------------------------------------------------------------
    @decorators.idempotent_id('8c1d3e6a-4b7f-4f0e-9a2d-6e5b7c8d9f01')
    def test_dirty_host_rebalanced_by_one_live_migration(self):
        """Dirty -> one live migration by Watcher's applier -> both Clean."""
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

        self.watcher.post_json('v1/action_plans/%s/start' % plan['uuid'],
                               {}, expected=200)

        def finished():
            now = self.watcher.get_json('v1/action_plans/%s' % plan['uuid'])
            return now if now['state'] in ('SUCCEEDED', 'FAILED',
                                           'CANCELLED') else None
        plan = self.wait_for('action plan %s' % plan['uuid'], finished)
        self.assertEqual('SUCCEEDED', plan['state'],
                         self.actions(plan))
        self.assertEqual(['SUCCEEDED'],
                         [a['state'] for a in self.actions(plan)])

        stays = [u for u in pair if u != moved][0]
        hosts = {u: self.admin_servers_client.show_server(u)['server'][
            'OS-EXT-SRV-ATTR:host'] for u in pair}
        self.assertEqual({moved: self.dest, stays: self.source}, hosts)
        for host, server_id in ((self.source, stays), (self.dest, moved)):
            domain = self.wait_for(
                '%s memory-bound and alone in a Clean domain of %s'
                % (server_id, host),
                lambda: self.clean_domain(host, server_id))
            self.assert_pinned_into(host, server_id, domain)

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


def _cpulist(text):
    """The CPUs of a cpulist string (``0-2,5``)."""
    cpus = []
    for part in str(text).split(','):
        low, _, high = part.partition('-')
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus
