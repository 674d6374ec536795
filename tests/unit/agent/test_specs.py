"""Flavor extra specs from the Nova API (parsing, caching, client set-up)."""

import os

import fixtures
from oslo_config import cfg
import testtools

from nova_cacheaware.agent import specs
from nova_cacheaware.conf import nova as nova_conf

UUID = '6f1c1a2e-0000-4000-8000-000000000001'
# A server body as Nova returns it at microversion 2.47 (trimmed).
SERVER_247 = {
    'id': UUID, 'name': 'vm', 'status': 'ACTIVE',
    'flavor': {'original_name': 'm1.mem', 'vcpus': 2, 'ram': 2048,
               'disk': 20, 'ephemeral': 0, 'swap': 0,
               'extra_specs': {'cacheaware:workload': 'memory',
                               'hw:cpu_policy': 'shared'}},
}


class StubServers:
    """Stands in for the HTTP call only: returns a 2.47 server body."""

    def __init__(self, body):
        self.body = body
        self.calls = 0

    def get(self, uuid):
        self.calls += 1
        if isinstance(self.body, Exception):
            raise self.body
        return dict(self.body, id=uuid)


class StubResponse:
    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body


class StubAdapter:
    """Records the path and microversion keystoneauth would be asked for."""

    def __init__(self, body):
        self.body = body
        self.asked = []

    def get(self, path, microversion=None):
        self.asked.append((path, microversion))
        return StubResponse(self.body)


class SpecsFromServerTest(testtools.TestCase):

    def test_parses_embedded_flavor(self):
        self.assertEqual({'cacheaware:workload': 'memory',
                          'hw:cpu_policy': 'shared'},
                         specs.specs_from_server(SERVER_247))

    def test_flavor_without_extra_specs(self):
        body = dict(SERVER_247, flavor={'original_name': 'm1', 'vcpus': 1})
        self.assertEqual({}, specs.specs_from_server(body))

    def test_old_microversion_is_a_clear_error(self):
        body = dict(SERVER_247, flavor={'id': '1', 'links': []})
        e = self.assertRaises(specs.SpecLookupFailed,
                              specs.specs_from_server, body)
        self.assertIn('microversion 2.47', str(e))


class NovaSpecSourceTest(testtools.TestCase):

    def test_cached_per_instance_until_forgotten(self):
        client = StubServers(SERVER_247)
        source = specs.NovaSpecSource(lambda: client)
        self.assertEqual('memory',
                         source.extra_specs(UUID)['cacheaware:workload'])
        source.extra_specs(UUID)
        self.assertEqual(1, client.calls)
        source.forget(UUID)
        source.extra_specs(UUID)
        self.assertEqual(2, client.calls)

    def test_api_errors_are_typed_and_not_cached(self):
        client = StubServers(RuntimeError('503 Service Unavailable'))
        source = specs.NovaSpecSource(lambda: client)
        e = self.assertRaises(specs.SpecLookupFailed, source.extra_specs,
                              UUID)
        self.assertIn('503', str(e))
        client.body = SERVER_247
        self.assertEqual('shared', source.extra_specs(UUID)['hw:cpu_policy'])

    def test_no_io_until_first_use(self):
        made = []
        specs.NovaSpecSource(lambda: made.append(1))
        self.assertEqual([], made)

    def test_servers_get_asks_for_247_and_unwraps_the_body(self):
        adapter = StubAdapter({'server': SERVER_247})
        self.assertEqual(SERVER_247, specs.NovaServers(adapter).get(UUID))
        self.assertEqual([('/servers/%s' % UUID, '2.47')], adapter.asked)

    def test_servers_get_refuses_a_body_without_server(self):
        for body in ({}, [], {'server': 'x'}):
            e = self.assertRaises(specs.SpecLookupFailed,
                                  specs.NovaServers(StubAdapter(body)).get,
                                  UUID)
            self.assertIn('no "server" object', str(e))

    def test_client_from_conf_builds_a_247_compute_adapter(self):
        path = self.useFixture(fixtures.TempDir()).join('agent.conf')
        with open(path, 'w') as f:
            f.write('[nova]\nauth_type = password\n'
                    'auth_url = http://127.0.0.1:1/identity\n'
                    'username = agent\npassword = x\n'
                    'user_domain_name = Default\n'
                    'project_name = service\n'
                    'project_domain_name = Default\n'
                    'region_name = RegionTwo\n')
        conf = cfg.ConfigOpts()
        nova_conf.register_opts(conf)
        conf(['--config-file', path], default_config_files=[])
        adapter = specs.client_from_conf(conf)().adapter
        self.assertEqual('compute', adapter.service_type)
        self.assertEqual('2.47', adapter.default_microversion)
        self.assertEqual('RegionTwo', adapter.region_name)
        self.assertEqual('internal', adapter.interface)


class FileSpecSourceTest(testtools.TestCase):

    def test_reads_and_rereads_on_change(self):
        path = self.useFixture(fixtures.TempDir()).join('specs.json')
        with open(path, 'w') as f:
            f.write('{"%s": {"cacheaware:workload": "memory"}}' % UUID)
        source = specs.FileSpecSource(path)
        self.assertEqual({'cacheaware:workload': 'memory'},
                         source.extra_specs(UUID))
        self.assertEqual({}, source.extra_specs('other'))
        with open(path, 'w') as f:
            f.write('{"%s": {"cacheaware:workload": "cpu"}}' % UUID)
        os.utime(path, ns=(1, 10 ** 18))
        self.assertEqual('cpu', source.extra_specs(UUID)[
            'cacheaware:workload'])

    def test_errors_name_the_file(self):
        path = self.useFixture(fixtures.TempDir()).join('specs.json')
        source = specs.FileSpecSource(path)
        e = self.assertRaises(specs.SpecLookupFailed, source.extra_specs,
                              UUID)
        self.assertIn(path, str(e))
        with open(path, 'w') as f:
            f.write('[1]')
        e = self.assertRaises(specs.SpecLookupFailed, source.extra_specs,
                              UUID)
        self.assertIn('expected {uuid: {key: value}}', str(e))
