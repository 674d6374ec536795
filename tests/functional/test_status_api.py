"""nova-cacheaware-api over the machine's real RabbitMQ and a real agent.

A real agent pass (libvirt's test:/// driver) publishes its state with
the real publisher and answers describe_host on its real RPC server; the
API service's real listener and RPC client serve the WSGI routes (auth
off: the keystonemiddleware answer is checked in the unit tests and in
:class:`AuthTest`).
"""

import os
import textwrap
import uuid as uuid_mod

import fixtures
import kombu
import testtools
import webob

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import rpc as agent_rpc
from nova_cacheaware.cmd import agent as agent_cmd
from nova_cacheaware.contracts import host_view
from nova_cacheaware import notifications
from nova_cacheaware.status import app as status_app
from tests.functional.agent import base as agent_base
from tests.functional import test_host_state_bus as bus

HOST = 'cmp-status'
FOUR = agent_base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))
ADMIN = {'X-Roles': 'admin,member'}


def conf_file(test, text):
    """A configuration file of ``text`` that lives as long as ``test``."""
    path = os.path.join(test.useFixture(fixtures.TempDir()).path,
                        'test.conf')
    with open(path, 'w') as f:
        f.write(textwrap.dedent(text))
    return path


@testtools.skipUnless(bus.rabbit_reachable() or
                      os.environ.get('NOVA_CACHEAWARE_CI_SERVICES'),
                      'RabbitMQ not reachable on 127.0.0.1:5672')
class StatusApiBusTest(agent_base.AgentTestCase):

    def setUp(self):
        super().setUp()
        run = uuid_mod.uuid4().hex[:12]
        self.exchange = 'cacheaware-test-%s' % run
        self.topic = 'cacheaware_test_%s' % run
        self.rpc_topic = 'cacheaware-agent-test-%s' % run
        self.pool_prefix = 'cacheaware-test-%s' % run
        common = """
            [DEFAULT]
            transport_url = %s
            control_exchange = %s
            [cacheaware_scheduler]
            host_state_topic = %s
            [cacheaware_status]
            agent_rpc_topic = %s
            listener_pool_prefix = %s
            rpc_timeout = 2
            """ % (bus.RABBIT_URL, self.exchange, self.topic,
                   self.rpc_topic, self.pool_prefix)
        self.addCleanup(self._delete_rabbit_objects)
        self.agent_conf = agent_cmd.make_conf(['--config-file', conf_file(
            self, common + """
            [agent]
            notifications = true
            host = %s
            """ % HOST)])
        self.api = status_app.Service(status_app.make_conf(
            ['--config-file', conf_file(self, common + """
            [cacheaware_api]
            auth_strategy = noauth
            """)]))
        self.addCleanup(self.api.stop)

    def _delete_rabbit_objects(self):
        with kombu.Connection(bus.KOMBU_URL) as conn:
            channel = conn.channel()
            for name in (self.rpc_topic, '%s.%s' % (self.rpc_topic, HOST)):
                channel.queue_delete(name)
            # The API service's listener queue (one per process).
            channel.queue_delete(notifications.process_pool_name(
                self.pool_prefix))
            channel.exchange_delete(self.exchange)

    def get(self, path, headers=ADMIN):
        resp = webob.Request.blank(path, headers=headers).get_response(
            self.api.wrapped())
        return resp.status_int, resp.json

    def running_agent(self):
        """An agent that published one pass and answers describe RPC."""
        agent = self.agent(FOUR)
        agent.publisher = notify.NotificationStatePublisher(
            notify.notification_transport(self.agent_conf), HOST, self.topic)
        self.addCleanup(agent.publisher.close)
        self.assertIsNotNone(agent.reconcile_safely())
        server = agent_rpc.serve(self.agent_conf, agent, HOST)
        self.assertIsNotNone(server)
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        self.assertTrue(bus.wait_for(lambda: self.api.cache.knows(HOST)))
        return agent, server

    def test_host_list_show_and_server_show(self):
        memory = [self.define(2, cpuset='0-7', workload='memory')
                  for _ in range(2)]
        cpu = self.define(1, cpuset='0-7', workload='cpu')
        agent, _ = self.running_agent()
        code, doc = self.get('/v1/hosts')
        self.assertEqual(200, code)
        row = dict(doc['hosts'][0])
        self.assertLess(row.pop('state_age_s'), 15)
        # No Placement reporting here: no provider, no model in force.
        self.assertEqual({'host': HOST, 'model': None,
                          'domains': 4, 'empty': 2, 'clean': 2, 'dirty': 0,
                          'servers': 3, 'agent_alive': True,
                          'agent_healthy': True,
                          'generation': agent.publisher.last.generation},
                         row)
        code, view = self.get('/v1/hosts/%s' % HOST)
        self.assertEqual(200, code)
        self.assertEqual(('1.0', HOST, 'per-host'),
                         (view['version'], view['host'], view['model']))
        # The shape the host map draws.
        self.assertEqual(HOST, host_view.from_document(view).host)
        self.assertEqual([{'id': 0, 'cpus': '0-7',
                           'domains': ['L2-0', 'L2-1', 'L2-2', 'L2-3']}],
                         view['numa_nodes'])
        self.assertEqual(['Clean', 'Clean', 'Empty', 'Empty'],
                         sorted(d['state'] for d in view['domains']))
        by_uuid = {s['uuid']: s for s in view['servers']}
        self.assertEqual(sorted(memory + [cpu]), sorted(by_uuid))
        for uuid in memory:
            self.assertEqual(('memory-bound', 'preferred', 2),
                             (by_uuid[uuid]['class'],
                              by_uuid[uuid]['isolation'],
                              by_uuid[uuid]['vcpus']))
            domain = by_uuid[uuid]['domain']
            members = [d['servers'] for d in view['domains']
                       if d['id'] == domain][0]
            # Clean: the one memory-bound server (cpu-bound ones may
            # share the domain).
            self.assertEqual([uuid], [m for m in members
                                      if by_uuid[m]['class']
                                      == 'memory-bound'])
        code, server = self.get('/v1/servers/%s' % cpu)
        self.assertEqual(200, code)
        self.assertEqual(dict(by_uuid[cpu], host=HOST), server)
        self.assertEqual('cpu-bound', server['class'])

    def test_errors(self):
        _, server = self.running_agent()
        code, doc = self.get('/v1/hosts/nowhere')
        self.assertEqual((404, 'no live state from host nowhere: no agent '
                               'publishes under that name'),
                         (code, doc['error']['message']))
        code, doc = self.get('/v1/hosts', headers={'X-Roles': 'member'})
        self.assertEqual(403, code)
        unknown = str(uuid_mod.uuid4())
        code, doc = self.get('/v1/servers/%s' % unknown)
        self.assertEqual(404, code)
        server.stop()
        server.wait()
        code, doc = self.get('/v1/hosts/%s' % HOST)
        self.assertEqual(503, code)
        self.assertIn('the agent of host %s did not answer within 2 s'
                      % HOST, doc['error']['message'])
