"""The openstack cacheaware commands (cliff commands, fake clients)."""

from unittest import mock

import fixtures
from osc_lib import exceptions
import testtools

from nova_cacheaware.osc import client as osc_client
from nova_cacheaware.osc import plugin
from nova_cacheaware.osc.v1 import flavor
from nova_cacheaware.osc.v1 import host
from nova_cacheaware.osc.v1 import server
from nova_cacheaware.status import host_map

UUID = '00000000-0000-4000-8000-00000000000a'
VIEW = {'version': '1.0', 'host': 'cmp-1', 'model': 'per-host',
        'generated_at': '2026-11-28T01:02:03Z',
        'agent': {'healthy': True, 'generation': 9},
        'numa_nodes': [{'id': 0, 'cpus': '0-7',
                        'domains': ['L3-0', 'L3-1']}],
        'domains': [{'id': 'L3-0', 'level': 'L3', 'numa_node': 0,
                     'cpus': '0-3', 'state': 'Clean', 'spin_storm': True,
                     'servers': [UUID]},
                    {'id': 'L3-1', 'level': 'L3', 'numa_node': 0,
                     'cpus': '4-7', 'state': 'Empty', 'spin_storm': False,
                     'servers': []}],
        'servers': [{'uuid': UUID, 'class': 'memory-bound',
                     'isolation': 'required', 'domain': 'L3-0',
                     'pins': '0-3', 'vcpus': 4, 'spin_storm': True,
                     'pcpu_estimate': 2.5, 'sizing': None,
                     'balloon': None}]}


def command(cls, **client):
    app = mock.Mock()
    app.client_manager.cacheaware = mock.Mock(**client)
    return cls(app, None), app


class HostCommandsTest(testtools.TestCase):

    def test_list(self):
        row = {'host': 'cmp-1', 'model': 'per-host', 'domains': 2,
               'empty': 1, 'clean': 1, 'dirty': 0, 'servers': 1,
               'agent_alive': True, 'agent_healthy': True,
               'state_age_s': 4.2, 'generation': 9}
        cmd, _ = command(host.ListHost,
                         **{'hosts.return_value': [row]})
        columns, rows = cmd.take_action(cmd.get_parser('x').parse_args([]))
        self.assertEqual(['Host', 'Model', 'Domains', 'Empty', 'Clean',
                          'Dirty', 'Servers', 'Agent Alive',
                          'Agent Healthy', 'State Age (s)', 'Generation'],
                         columns)
        self.assertEqual([('cmp-1', 'per-host', 2, 1, 1, 0, 1, True, True,
                           4.2, 9)], rows)

    def test_show(self):
        cmd, app = command(host.ShowHost, **{'host.return_value': VIEW})
        fields, values = cmd.take_action(
            cmd.get_parser('x').parse_args(['cmp-1']))
        app.client_manager.cacheaware.host.assert_called_once_with('cmp-1')
        shown = dict(zip(fields, values))
        self.assertEqual(('version', 'host', 'model', 'generated_at', 'agent',
                          'numa_nodes', 'domains', 'servers'), fields)
        self.assertEqual(('1.0', 'cmp-1', 'per-host'), values[:3])
        self.assertEqual(
            'L3-0 [L3] NUMA 0 CPUs 0-3: Clean SPIN STORM, servers %s\n'
            'L3-1 [L3] NUMA 0 CPUs 4-7: Empty' % UUID,
            shown['domains'].human_readable())
        self.assertEqual(VIEW['domains'], shown['domains'].machine_readable())
        self.assertEqual('%s memory-bound in L3-0 pins 0-3 4 vCPUs isolation '
                         'required SPIN STORM' % UUID,
                         shown['servers'].human_readable())
        self.assertEqual('node 0: CPUs 0-7, domains L3-0 L3-1',
                         shown['numa_nodes'].human_readable())
        self.assertEqual('generation=9, healthy=True',
                         shown['agent'].human_readable())


class HostMapTest(testtools.TestCase):

    def test_writes_the_picture(self):
        path = self.useFixture(fixtures.TempDir()).path + '/cmp-1.svg'
        cmd, _ = command(host.MapHost, **{'host.return_value': VIEW})
        cmd.take_action(cmd.get_parser('x').parse_args(
            ['cmp-1', '--output', path]))
        with open(path) as f:
            svg = f.read()
        self.assertEqual(host_map.render_svg(VIEW), svg)
        self.assertIn('<title>Host cmp-1</title>', svg)

    def test_a_bad_document_is_one_line(self):
        bad = dict(VIEW, model='sideways')
        cmd, _ = command(host.MapHost, **{'host.return_value': bad})
        e = self.assertRaises(exceptions.CommandError, cmd.take_action,
                              cmd.get_parser('x').parse_args(
                                  ['cmp-1', '--output', '-']))
        self.assertIn('"model"', str(e))


class ServerShowTest(testtools.TestCase):

    def test_host_from_nova(self):
        entry = dict(VIEW['servers'][0], host='cmp-1')
        cmd, app = command(server.ShowServer,
                           **{'server.return_value': entry})
        app.client_manager.compute.find_server.return_value = mock.Mock(
            id=UUID, compute_host='cmp-1')
        fields, values = cmd.take_action(
            cmd.get_parser('x').parse_args(['web-1']))
        app.client_manager.compute.find_server.assert_called_once_with(
            'web-1', ignore_missing=False, all_projects=False)
        app.client_manager.cacheaware.server.assert_called_once_with(
            UUID, host='cmp-1')
        self.assertEqual(('uuid', 'host', 'class', 'isolation', 'domain',
                          'pins', 'vcpus', 'spin_storm', 'pcpu_estimate',
                          'sizing', 'balloon'), fields)
        self.assertEqual((UUID, 'cmp-1', 'memory-bound', 'required', 'L3-0',
                          '0-3', 4, True, 2.5), values[:9])

    def test_host_option_wins(self):
        cmd, app = command(server.ShowServer,
                           **{'server.return_value': {}})
        app.client_manager.compute.find_server.return_value = mock.Mock(
            id=UUID, compute_host=None)
        cmd.take_action(cmd.get_parser('x').parse_args(
            [UUID, '--host', 'cmp-7']))
        app.client_manager.cacheaware.server.assert_called_once_with(
            UUID, host='cmp-7')


class FlavorSetTest(testtools.TestCase):

    def test_set_writes_through_nova(self):
        nova_flavor = mock.Mock(vcpus=4, ram=4096)
        nova_flavor.get_keys.return_value = {}
        cmd, app = command(flavor.SetFlavor)
        with mock.patch.object(flavor, 'nova', autospec=True) as nova, \
                mock.patch('novaclient.utils.find_resource', autospec=True,
                           return_value=nova_flavor):
            columns, rows = cmd.take_action(cmd.get_parser('x').parse_args(
                ['m1.cache', '--cache-share', 'all']))
        nova.assert_called_once_with(app.client_manager)
        written = nova_flavor.set_keys.call_args[0][0]
        self.assertEqual(('Action', 'Key', 'Value'), columns)
        self.assertEqual([('set', k, v) for k, v in sorted(written.items())],
                         rows)
        self.assertEqual('all', written['cacheaware:cache_share'])

    def test_set_needs_an_option(self):
        cmd, _ = command(flavor.SetFlavor)
        self.assertRaises(exceptions.CommandError, cmd.take_action,
                          cmd.get_parser('x').parse_args(['m1.cache']))


class PluginTest(testtools.TestCase):

    def test_url_override_and_errors(self):
        instance = mock.Mock(_api_version={'cacheaware': '1'},
                             region_name='R1', interface='public')
        instance.get_configuration.return_value = {
            'cacheaware_url': 'http://127.0.0.1:8797'}
        client = plugin.make_client(instance)
        self.assertIsInstance(client, osc_client.Client)
        self.assertEqual(('http://127.0.0.1:8797', 'cache-aware', 'R1'),
                         (client.api.endpoint_override,
                          client.api.service_type, client.api.region_name))
        resp = mock.Mock(status_code=503)
        resp.json.return_value = {'error': {'message': 'agent down'}}
        with mock.patch.object(client.api, 'get', autospec=True,
                               return_value=resp):
            e = self.assertRaises(exceptions.CommandError, client.host, 'h')
        self.assertEqual('agent down (HTTP 503)', str(e))
