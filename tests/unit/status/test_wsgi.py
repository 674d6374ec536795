"""nova-cacheaware-api's routes, policy and errors (no bus)."""

import fixtures
import testtools
import webob

from nova_cacheaware.status import agents
from nova_cacheaware.status import app as status_app
from nova_cacheaware.status import policy
from nova_cacheaware.status import wsgi

SERVER = '00000000-0000-4000-8000-00000000000a'
ADMIN = {'X-Roles': 'admin'}


class FakeCache:
    def rows(self):
        return [{'host': 'cmp-1', 'domains': 2}]

    def knows(self, host):
        return host in ('cmp-1', 'cmp-dead')

    def host_of(self, uuid):
        return 'cmp-1' if uuid == SERVER else None


class FakeAgents:
    def __init__(self):
        self.calls = []

    def describe_host(self, host):
        self.calls.append(('describe_host', host))
        if host == 'cmp-dead':
            raise agents.AgentUnavailable('the agent of host cmp-dead did '
                                          'not answer within 10 s')
        return {'version': '1.0', 'host': host}

    def describe_server(self, host, uuid):
        self.calls.append(('describe_server', host, uuid))
        return {'uuid': uuid, 'host': host} if host == 'cmp-1' else None


class StatusAppTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        conf = status_app.make_conf(config_files=[])
        self.agents = FakeAgents()
        self.app = wsgi.StatusApp(FakeCache(), self.agents,
                                  policy.enforcer(conf))

    def get(self, path, headers=ADMIN, method='GET'):
        resp = webob.Request.blank(path, headers=headers,
                                   method=method).get_response(self.app)
        return resp.status_int, resp.json

    def test_routes(self):
        self.assertEqual((200, {'hosts': [{'host': 'cmp-1', 'domains': 2}]}),
                         self.get('/v1/hosts'))
        self.assertEqual((200, {'version': '1.0', 'host': 'cmp-1'}),
                         self.get('/v1/hosts/cmp-1'))
        self.assertEqual((200, {'uuid': SERVER, 'host': 'cmp-1'}),
                         self.get('/v1/servers/%s' % SERVER))
        self.assertEqual(
            (200, {'versions': [{'id': 'v1', 'status': 'CURRENT'}]}),
            self.get('/'))

    def test_server_host_from_query_before_live_state(self):
        self.assertEqual(404, self.get('/v1/servers/%s?host=cmp-2'
                                       % SERVER)[0])
        self.assertEqual(('describe_server', 'cmp-2', SERVER),
                         self.agents.calls[-1])

    def test_errors(self):
        def error(code, message):
            return code, {'error': {'code': code,
                                    'title': wsgi._TITLES[code],
                                    'message': message}}
        self.assertEqual(error(404, 'no live state from host cmp-9: no '
                                    'agent publishes under that name'),
                         self.get('/v1/hosts/cmp-9'))
        self.assertEqual(error(503, 'the agent of host cmp-dead did not '
                                    'answer within 10 s'),
                         self.get('/v1/hosts/cmp-dead'))
        self.assertEqual(error(400, 'nope is not a server uuid'),
                         self.get('/v1/servers/nope'))
        other = '00000000-0000-4000-8000-0000000000ff'
        self.assertEqual(error(404, 'server %s is on no host of the live '
                                    'state (pass ?host=HOST if its agent '
                                    'is down)' % other),
                         self.get('/v1/servers/%s' % other))
        self.assertEqual(error(405, 'only GET is served'),
                         self.get('/v1/hosts', method='POST'))
        self.assertEqual(error(404, 'no such resource: /v2/x'),
                         self.get('/v2/x'))

    def test_admin_only_by_default(self):
        for path in ('/v1/hosts', '/v1/hosts/cmp-1',
                     '/v1/servers/%s' % SERVER):
            for headers in ({}, {'X-Roles': 'member,reader'}):
                code, doc = self.get(path, headers=headers)
                self.assertEqual(403, code, path)
        self.assertEqual([], self.agents.calls)
        self.assertEqual('policy does not allow cacheaware_api:hosts:list '
                         '(admin only by default)',
                         self.get('/v1/hosts', headers={})[1]['error'][
                             'message'])

    def test_policy_file_widens_a_rule(self):
        path = self.useFixture(fixtures.TempDir()).path + '/policy.yaml'
        with open(path, 'w') as f:
            f.write('"cacheaware_api:hosts:list": "role:reader"\n')
        conf = status_app.make_conf(config_files=[])
        conf.set_override('policy_file', path, group='oslo_policy')
        app = wsgi.StatusApp(FakeCache(), self.agents, policy.enforcer(conf))
        resp = webob.Request.blank('/v1/hosts', headers={
            'X-Roles': 'reader'}).get_response(app)
        self.assertEqual(200, resp.status_int)


class PolicyTest(testtools.TestCase):

    def test_defaults(self):
        self.assertEqual(
            [('cacheaware_api:hosts:list', 'role:admin', '/v1/hosts'),
             ('cacheaware_api:hosts:show', 'role:admin', '/v1/hosts/{host}'),
             ('cacheaware_api:servers:show', 'role:admin',
              '/v1/servers/{server_id}')],
            [(r.name, r.check_str, r.operations[0]['path'])
             for r in policy.list_rules()])

    def test_credentials(self):
        self.assertEqual({'roles': ['admin', 'member'], 'project_id': 'p',
                          'user_id': None},
                         policy.credentials({'HTTP_X_ROLES': 'Admin, member',
                                             'HTTP_X_PROJECT_ID': 'p'}))


class AuthTest(testtools.TestCase):
    """keystonemiddleware in front: no token, no answer."""

    def test_unauthenticated_request_gets_401(self):
        path = self.useFixture(fixtures.TempDir()).path + '/api.conf'
        with open(path, 'w') as f:
            # Nothing listens there: a request without a token is refused
            # before keystone would be asked anything.
            f.write('[keystone_authtoken]\n'
                    'www_authenticate_uri = http://127.0.0.1:9/identity\n'
                    'auth_type = password\n'
                    'auth_url = http://127.0.0.1:9/identity\n')
        conf = status_app.make_conf(config_files=[path])
        service = status_app.Service(conf, listen=False)
        self.addCleanup(service.stop)
        app = service.wrapped()
        self.assertNotIsInstance(app, wsgi.StatusApp)
        resp = webob.Request.blank('/v1/hosts', headers=ADMIN).get_response(
            app)
        self.assertEqual(
            (401, 'Keystone uri="http://127.0.0.1:9/identity"'),
            (resp.status_int, resp.headers['WWW-Authenticate']))
