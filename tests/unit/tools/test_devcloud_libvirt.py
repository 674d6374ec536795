"""The devcloud's two libvirt computes: migration settings and agents."""

import configparser
import importlib.util
import os
import sys

import fixtures
import testtools

TOOLS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                     'devcloud')


def _load(name):
    spec = importlib.util.spec_from_file_location(
        'devcloud_' + name, os.path.join(TOOLS, name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render_libvirt = _load('render_libvirt')

V = {'debug': False, 'transport': 'rabbit://g:g@127.0.0.1:5672/v',
     'libvirt_uri': 'qemu+unix:///system?socket=/d/libvirt/sock/libvirt-sock',
     'agent_period': '3', 'cpu_shared_set': '0-1',
     'keystone': 'http://127.0.0.1:15000/v3', 'service_password': 'pw',
     'venv': '/d/venv', 'dc': '/d'}
ONE = {'name': 'devcloud-libvirt', 'driver': 'libvirt',
       'libvirt_uri': 'qemu+unix:///system?socket=/d/libvirt/sock/'
                      'libvirt-sock'}
TWO = {'name': 'devcloud-libvirt2', 'driver': 'libvirt',
       'libvirt_uri': 'qemu+unix:///system?socket=/d/libvirt2/sock/'
                      'libvirt-sock'}


def _libvirt_section(text):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read_string(text)
    return parser['libvirt'], parser['DEFAULT']


class ComputeConfTest(testtools.TestCase):
    """Each libvirt compute migrates to the other one's private daemon."""

    def test_uri_names_the_other_daemon_after_novas_formatting(self):
        libvirt, default = _libvirt_section(render_libvirt.compute_conf(
            V, ONE, [ONE, TWO], '/d/etc/nova/compute-devcloud-libvirt.conf'))
        # What nova.virt.libvirt.driver._live_migration_uri does with it.
        self.assertEqual(TWO['libvirt_uri'],
                         libvirt['live_migration_uri'] % '127.0.0.1')
        self.assertEqual(ONE['libvirt_uri'], libvirt['connection_uri'])
        self.assertEqual('127.0.0.1',
                         libvirt['live_migration_inbound_addr'])
        self.assertEqual('/d/nova/libvirt-instances',
                         default['instances_path'])
        back, _ = _libvirt_section(render_libvirt.compute_conf(
            V, TWO, [ONE, TWO], '/d/etc/nova/compute-devcloud-libvirt2.conf'))
        self.assertEqual(ONE['libvirt_uri'],
                         back['live_migration_uri'] % '127.0.0.1')

    def test_alone_no_migration_settings(self):
        libvirt, _ = _libvirt_section(render_libvirt.compute_conf(
            V, ONE, [ONE], '/d/c.conf'))
        self.assertNotIn('live_migration_uri', libvirt)
        self.assertNotIn('live_migration_inbound_addr', libvirt)


class AgentFilesTest(testtools.TestCase):
    """The second agent: per-domain providers at L2, read by the agent."""

    def _conf(self, text):
        from nova_cacheaware.cmd import agent as agent_cmd
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'agent.conf')
        with open(path, 'w') as f:
            f.write(text)
        return agent_cmd.make_conf(['--config-file', path])

    def test_two_agents(self):
        self.useFixture(fixtures.MonkeyPatch('sys.path',
                                             [TOOLS] + sys.path))
        files = render_libvirt.agent_files(V, [ONE, TWO])
        self.assertEqual(['agent-devcloud-libvirt2.conf', 'agent.conf'],
                         sorted(files))
        first = self._conf(files['agent.conf'])
        second = self._conf(files['agent-devcloud-libvirt2.conf'])
        self.assertEqual(
            ('devcloud-libvirt', ONE['libvirt_uri'], 'host', 'auto'),
            (first.agent.host, first.agent.libvirt_uri,
             first.placement.provider_model, first.topology.cache_level))
        self.assertEqual(
            ('devcloud-libvirt2', TWO['libvirt_uri'], TWO['libvirt_uri'],
             'domain', '2'),
            (second.agent.host, second.agent.libvirt_uri,
             second.topology.libvirt_uri, second.placement.provider_model,
             second.topology.cache_level))
        self.assertEqual('public', second.placement.valid_interfaces[0])
        # No PMU: counts replayed from per-instance traces, short windows.
        for conf in (first, second):
            self.assertEqual(
                (False, '%s/counter-traces' % V['dc'], 2, 30.0, 4, 2),
                (conf.agent.counters, conf.agent.counter_trace_dir,
                 conf.agent.sampling_passes, conf.agent.sampling_interval_s,
                 conf.agent.classifier_min_samples,
                 conf.agent.classifier_dwell))
