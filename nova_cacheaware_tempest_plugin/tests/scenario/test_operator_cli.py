"""Scenario: the operator's ``openstack cacheaware`` commands.

After booting a server on a host with an agent, an admin runs the real
``openstack`` command (the plugin's entry points, Keystone, the catalog's
``cache-aware`` endpoint, nova-cacheaware-api, the bus, the agent's
describe RPC) and finds the server where the agent put it.
"""

import json
import os
import subprocess
import time

from tempest import config
from tempest.lib import decorators

from nova_cacheaware_tempest_plugin.tests.scenario import base

CONF = config.CONF
#: Seconds for the host's live state to list the new server (one agent
#: period plus the bus).
WAIT_S = 90


class OperatorCliTest(base.CacheAwareScenarioTest):
    """``openstack cacheaware host list|show`` and ``server show``."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not (CONF.cacheaware.openstack_cli and
                CONF.cacheaware.status_hosts):
            raise cls.skipException(
                '[cacheaware] openstack_cli and status_hosts are not set: '
                'no nova-cacheaware-api to ask')

    def openstack(self, *args, json_output=True):
        """The JSON output of ``openstack cacheaware ARGS -f json``."""
        env = dict(os.environ,
                   OS_AUTH_URL=CONF.identity.uri_v3,
                   OS_USERNAME=CONF.auth.admin_username,
                   OS_PASSWORD=CONF.auth.admin_password,
                   OS_PROJECT_NAME=CONF.auth.admin_project_name,
                   OS_USER_DOMAIN_NAME=CONF.auth.admin_domain_name,
                   OS_PROJECT_DOMAIN_NAME=CONF.auth.admin_domain_name,
                   OS_REGION_NAME=CONF.identity.region,
                   OS_IDENTITY_API_VERSION='3')
        env.pop('OS_CLOUD', None)
        done = subprocess.run(
            [CONF.cacheaware.openstack_cli, 'cacheaware'] + list(args)
            + (['-f', 'json'] if json_output else []), env=env,
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, done.returncode,
                         'openstack cacheaware %s: %s' % (' '.join(args),
                                                          done.stderr))
        return json.loads(done.stdout) if json_output else done.stdout

    def wait_listed(self, host, server_id):
        """The host's ``host list`` row once its view lists the server."""
        deadline = time.monotonic() + WAIT_S
        while True:
            rows = {r['Host']: r for r in self.openstack('host', 'list')}
            view = (self.openstack('host', 'show', host)
                    if host in rows else {'servers': []})
            if any(s['uuid'] == server_id for s in view['servers']):
                return rows[host], view
            if time.monotonic() > deadline:
                self.fail('host %s did not list server %s within %d s '
                          '(hosts: %s)' % (host, server_id, WAIT_S,
                                           sorted(rows)))
            time.sleep(3)

    @decorators.idempotent_id('5d0b7a8e-2f37-4c52-9d8b-7e0f3c5a9b61')
    def test_host_list_show_and_server_show(self):
        """The new server is on its host's view, in one of its domains."""
        host = CONF.cacheaware.status_hosts[0]
        server = self.boot(self.create_flavor(
            {'cacheaware:workload': 'memory'}), host=host)
        row, view = self.wait_listed(host, server['id'])
        self.assertTrue(row['Agent Alive'])
        self.assertGreaterEqual(row['Servers'], 1)
        self.assertEqual(row['Domains'], len(view['domains']))
        self.assertEqual('1.0', view['version'])
        entry = [s for s in view['servers'] if s['uuid'] == server['id']][0]
        self.assertEqual('memory-bound', entry['class'])
        domains = {d['id']: d for d in view['domains']}
        if entry['domain'] is not None:
            self.assertIn(server['id'], domains[entry['domain']]['servers'])
        # The server is in the test's own project: by name, an admin
        # finds it with --all-projects.
        shown = self.openstack('server', 'show', '--all-projects',
                               server['name'])
        self.assertEqual((server['id'], host, 'memory-bound',
                          entry['domain'], entry['pins']),
                         (shown['uuid'], shown['host'], shown['class'],
                          shown['domain'], shown['pins']))
        svg = self.openstack('host', 'map', host, '--output', '-',
                             json_output=False)
        self.assertTrue(svg.startswith('<svg '), svg[:200])
        self.assertIn(server['id'], svg)
