"""Flavor extra specs from the Nova API (parsing, caching, client set-up)."""

import os

import fixtures
from novaclient.v2 import servers
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
    """Stands in for the HTTP call only.

    Returns novaclient's own ``Server`` resource built from a 2.47 body.
    """

    def __init__(self, body):
        self.body = body
        self.calls = 0

    def get(self, uuid):
        self.calls += 1
        if isinstance(self.body, Exception):
            raise self.body
        return servers.Server(None, dict(self.body, id=uuid), loaded=True)


class StubClient:
    def __init__(self, body):
        self.servers = StubServers(body)


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
        client = StubClient(SERVER_247)
        source = specs.NovaSpecSource(lambda: client)
        self.assertEqual('memory',
                         source.extra_specs(UUID)['cacheaware:workload'])
        source.extra_specs(UUID)
        self.assertEqual(1, client.servers.calls)
        source.forget(UUID)
        source.extra_specs(UUID)
        self.assertEqual(2, client.servers.calls)

    def test_api_errors_are_typed_and_not_cached(self):
        client = StubClient(RuntimeError('503 Service Unavailable'))
        source = specs.NovaSpecSource(lambda: client)
        e = self.assertRaises(specs.SpecLookupFailed, source.extra_specs,
                              UUID)
        self.assertIn('503', str(e))
        client.servers.body = SERVER_247
        self.assertEqual('shared', source.extra_specs(UUID)['hw:cpu_policy'])

    def test_no_io_until_first_use(self):
        made = []
        specs.NovaSpecSource(lambda: made.append(1))
        self.assertEqual([], made)

    def test_client_from_conf_builds_a_247_novaclient(self):
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
        client = specs.client_from_conf(conf)()
        self.assertEqual('2.47', client.api_version.get_string())
        self.assertEqual('RegionTwo', client.client.region_name)
        self.assertEqual('internal', client.client.interface)


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
