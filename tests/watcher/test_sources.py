"""The strategy's edge: host views over HTTP, server groups from the SDK.

A WSGI app on a loopback port answers what ``nova-cacheaware-api``
answers (a view, an agent that does not answer, a document that does
not check); the source asks it through a real keystoneauth session.
"""

import json
import threading
import types
from wsgiref import simple_server

import fixtures
from keystoneauth1 import session
import testtools

from nova_cacheaware.watcher import snapshot
from nova_cacheaware.watcher import sources
from tests.unit.watcher import views as v

GOOD = {'version': '1.0', 'host': 'a', 'model': 'per-host',
        'generated_at': '2026-11-29T00:00:00Z',
        'agent': {'healthy': True, 'generation': 3},
        'numa_nodes': [{'id': 0, 'cpus': '0-3',
                        'domains': ['L2-0', 'L2-1']}],
        'domains': [{'id': 'L2-0', 'level': 'L2', 'numa_node': 0,
                     'cpus': '0-1', 'state': 'Clean',
                     'servers': [v.UUIDS['m1']]},
                    {'id': 'L2-1', 'level': 'L2', 'numa_node': 0,
                     'cpus': '2-3', 'state': 'Empty', 'servers': []}],
        'servers': [{'uuid': v.UUIDS['m1'], 'class': 'memory-bound',
                     'domain': 'L2-0', 'vcpus': 1}]}
ANSWERS = {
    '/v1/hosts/a': (200, GOOD),
    '/v1/hosts/b': (503, {'error': {'code': 503, 'message':
                                    'the agent of host b did not answer'}}),
    '/v1/hosts/c': (200, dict(GOOD, domains=[])),
}


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def _app(environ, start_response):
    code, doc = ANSWERS.get(environ['PATH_INFO'],
                            (404, {'error': {'message': 'no such host'}}))
    start_response('%d X' % code, [('Content-Type', 'application/json')])
    return [json.dumps(doc).encode()]


class ApiSourceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.watcher.sources'))
        server = simple_server.make_server('127.0.0.1', 0, _app,
                                           handler_class=_Quiet)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.url = 'http://127.0.0.1:%d' % server.server_port

    def test_views_and_why_the_others_are_left_out(self):
        source = sources.ApiSource(session.Session(), nova=None,
                                   endpoint=self.url, timeout=5)
        got = source.host_views(['d', 'c', 'b', 'a'])
        self.assertEqual(['a'], [view.host for view in got.views])
        self.assertEqual([v.UUIDS['m1']],
                         [s.uuid for s in got.views[0].servers])
        self.assertEqual(['b', 'c', 'd'], sorted(got.failed))
        self.assertEqual('nova-cacheaware-api answered HTTP 503: the agent '
                         'of host b did not answer', got.failed['b'])
        self.assertIn('NUMA node 0 lists unknown domain', got.failed['c'])
        self.assertEqual('nova-cacheaware-api answered HTTP 404: no such '
                         'host', got.failed['d'])
        self.assertIn('Cache rebalance audit leaves host b out: '
                      'nova-cacheaware-api answered HTTP 503', self.log.output)

    def test_an_api_that_is_down(self):
        source = sources.ApiSource(session.Session(), nova=None,
                                   endpoint='http://127.0.0.1:9', timeout=5)
        got = source.host_views(['a'])
        self.assertEqual((), got.views)
        self.assertIn('cannot reach nova-cacheaware-api', got.failed['a'])


class GroupsTest(testtools.TestCase):

    def test_server_groups_of_every_project(self):
        asked = []

        def server_groups(**kw):
            asked.append(kw)
            return [types.SimpleNamespace(id='g1', policy='anti-affinity',
                                          member_ids=['u1', 'u2']),
                    # Before microversion 2.64: a list of one policy.
                    types.SimpleNamespace(id='g2', policy=None,
                                          policies=['affinity'],
                                          member_ids=None)]

        nova = types.SimpleNamespace(compute=types.SimpleNamespace(
            server_groups=server_groups))
        source = sources.ApiSource(session.Session(), nova=nova,
                                   endpoint='http://127.0.0.1:9')
        self.assertEqual(
            (snapshot.ServerGroup('g1', 'anti-affinity', ('u1', 'u2')),
             snapshot.ServerGroup('g2', 'affinity', ())),
            source.server_groups())
        self.assertEqual([{'all_projects': True}], asked)
