"""The DevStack plugin's phases, run outside DevStack (devstack/tests).

DevStack itself cannot run here; ``devstack/tests/harness.sh`` sources the
real ``settings`` and ``plugin.sh`` with stand-ins for DevStack's helper
functions, and the resulting files are read back with oslo.config.
"""

import os
import shutil
import stat
import subprocess
import sys

import fixtures
from oslo_config import cfg

from nova_cacheaware.agent import hook_install
from tests.functional import base

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HARNESS = os.path.join(REPO, 'devstack', 'tests', 'harness.sh')
ALL = 'n-api,n-sch,n-cond,n-cpu,placement-api'


def scheduler_conf(path):
    """Load [filter_scheduler] with the types nova declares for it."""
    conf = cfg.ConfigOpts()
    conf.register_opts([cfg.MultiStrOpt('available_filters', default=[]),
                        cfg.ListOpt('enabled_filters', default=[]),
                        cfg.ListOpt('weight_classes', default=[])],
                       group='filter_scheduler')
    conf(args=[], default_config_files=[path])
    return conf.filter_scheduler


def service_conf(register_opts, path):
    """Load ``path`` with a service's own option definitions."""
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(args=[], default_config_files=[path])
    return conf


class DevstackPluginTest(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.scratch = self.useFixture(fixtures.TempDir()).path
        self.nova_conf = os.path.join(self.scratch, 'nova.conf')
        self.agent_conf = os.path.join(self.scratch, 'etc', 'nova-cacheaware',
                                       'agent.conf')
        self.placement_conf = os.path.join(self.scratch, 'placement.conf')
        self.hooks = os.path.join(self.scratch, 'etc', 'libvirt', 'hooks')
        self.state = os.path.join(self.scratch, 'var', 'lib',
                                  'nova-cacheaware')

    def phase(self, services, *args, disabled=''):
        env = dict(os.environ, HARNESS_PYTHON=sys.executable,
                   DISABLED_SERVICES=disabled)
        proc = subprocess.run(['bash', HARNESS, self.scratch, services]
                              + list(args), capture_output=True, text=True,
                              env=env)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stdout

    def calls(self):
        with open(os.path.join(self.scratch, 'calls.log')) as f:
            return f.read().splitlines()

    def test_scheduler_keeps_existing_filters_and_is_idempotent(self):
        with open(self.nova_conf, 'w') as f:
            f.write('[filter_scheduler]\n'
                    'enabled_filters = ComputeFilter,NUMATopologyFilter\n')
        self.phase(ALL, 'stack', 'post-config')
        self.phase(ALL, 'stack', 'post-config')
        sched = scheduler_conf(self.nova_conf)
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'nova_cacheaware.scheduler.filters.all_filters'],
                         sched.available_filters)
        self.assertEqual(['ComputeFilter', 'NUMATopologyFilter',
                          'CacheDomainFilter', 'FullNUMAFilter'],
                         sched.enabled_filters)
        self.assertEqual(['nova.scheduler.weights.all_weighers',
                          'nova_cacheaware.scheduler.weights.all_weighers'],
                         sched.weight_classes)

    def test_scheduler_defaults_to_novas_filters(self):
        self.phase('n-sch', 'stack', 'post-config')
        sched = scheduler_conf(self.nova_conf)
        self.assertEqual(['ComputeFilter', 'ComputeCapabilitiesFilter',
                          'ImagePropertiesFilter',
                          'ServerGroupAntiAffinityFilter',
                          'ServerGroupAffinityFilter', 'CacheDomainFilter',
                          'FullNUMAFilter'],
                         sched.enabled_filters)
        self.assertFalse(os.path.exists(self.agent_conf))

    def test_compute_node_gets_agent_config_and_process(self):
        self.phase('n-cpu', 'stack', 'install')
        self.phase('n-cpu', 'stack', 'post-config')
        self.phase('n-cpu', 'stack', 'extra')
        self.assertFalse(os.path.exists(self.nova_conf))
        # Read with the agent's own option parser.
        from nova_cacheaware.cmd import agent as agent_cmd
        conf = agent_cmd.make_conf(['--config-file', self.agent_conf])
        self.assertEqual(
            ('qemu:///system', 'nova', True, True,
             ['vcpu_sizing', 'balloon', 'numa_balance'], 'host'),
            (conf.agent.libvirt_uri, conf.agent.spec_source,
             conf.agent.report_placement, conf.agent.notifications,
             conf.agent.capabilities, conf.placement.provider_model))
        from nova_cacheaware.agent import capability
        self.assertLessEqual(set(conf.agent.capabilities),
                             set(capability.available()))
        # The state goes to DevStack's notification bus (where
        # nova-scheduler listens), never to the compute's cell bus.
        from nova_cacheaware.agent import notify
        notify.notification_transport(conf).cleanup()   # registers options
        self.assertEqual('rabbit://stackrabbit:secretpw@127.0.0.1:5672/',
                         conf.oslo_messaging_notifications.transport_url)
        # No [DEFAULT] transport_url: the agent makes no RPC call.
        self.assertEqual(cfg.Locations.opt_default,
                         conf.get_location('transport_url').location)
        from keystoneauth1 import loading as ks_loading
        for group in ('nova', 'placement'):
            self.assertEqual('Password', type(
                ks_loading.load_auth_from_conf_options(conf, group)).__name__)
            self.assertEqual(('password', 'nova'),
                             (conf[group].auth_type, conf[group].username))
        # The privsep daemon is the agent's virtualenv's helper, through
        # sudo, with the agent's configuration; pin records in a directory
        # of the agent's user.
        self.assertEqual('sudo %s/bin/privsep-helper --config-file %s'
                         % (self.scratch, self.agent_conf),
                         conf.nova_cacheaware_privileged.helper_command)
        self.assertEqual(os.path.join(self.state, 'pins'),
                         conf.agent.pin_record_dir)
        self.assertEqual(os.getuid(), os.stat(self.state).st_uid)
        calls = self.calls()
        self.assertIn('setup_develop %s/opt/nova-cacheaware' % self.scratch,
                      calls)
        # Unprivileged, in libvirt's group, as nova-compute.
        self.assertIn('run_process cacheaware-agent %s/bin/nova-cacheaware-'
                      'agent --config-file %s libvirt'
                      % (self.scratch, self.agent_conf), calls)
        # No n-api here: no flavors.
        self.assertFalse([c for c in calls if c.startswith('openstack')])

    def assertHookInstalled(self, path):
        with open(path, 'rb') as f:
            self.assertEqual(hook_install.hook_source(
                os.path.join(self.state, 'pins')), f.read())
        self.assertEqual(0o755, stat.S_IMODE(os.stat(path).st_mode))
        self.assertTrue(os.access(path, os.X_OK))

    def test_compute_node_gets_the_hook_and_libvirtd_restarts_once(self):
        self.phase('n-cpu', 'stack', 'post-config')
        self.assertHookInstalled(os.path.join(self.hooks, 'qemu'))
        self.phase('n-cpu', 'stack', 'post-config')
        calls = self.calls()
        self.assertIn('sudo %s/bin/nova-cacheaware install-hook --hooks-dir '
                      '%s --pin-record-dir %s/pins'
                      % (self.scratch, self.hooks, self.state), calls)
        # The second run finds the hook in place: no second restart.
        self.assertEqual(['restart_service libvirtd'],
                         [c for c in calls if c.startswith('restart')])

    def test_foreign_hook_is_kept_and_ours_chained(self):
        os.makedirs(self.hooks)
        foreign = os.path.join(self.hooks, 'qemu')
        with open(foreign, 'w') as f:
            f.write('#!/bin/sh\nexit 0\n')
        self.phase('n-cpu', 'stack', 'post-config')
        with open(foreign) as f:
            self.assertEqual('#!/bin/sh\nexit 0\n', f.read())
        self.assertHookInstalled(
            os.path.join(self.hooks, 'qemu.d', 'nova-cacheaware'))

    def test_no_hook_without_the_agent(self):
        self.phase('n-cpu', 'stack', 'post-config',
                   disabled='cacheaware-agent')
        self.assertFalse(os.path.exists(self.hooks))
        self.assertFalse(os.path.exists(self.agent_conf))

    def test_recommended_placement_and_scheduler_settings(self):
        self.phase('placement-api,n-sch', 'stack', 'post-config')
        from placement.conf import placement as placement_conf
        placement = service_conf(placement_conf.register_opts,
                                 self.placement_conf).placement
        self.assertEqual((1000, 'breadth-first', 1),
                         (placement.max_allocation_candidates,
                          placement.allocation_candidates_generation_strategy,
                          placement.allocation_conflict_retry_count))
        from nova.conf import scheduler as nova_scheduler
        nova = service_conf(nova_scheduler.register_opts, self.nova_conf)
        self.assertEqual(1000, nova.scheduler.max_placement_results)
        # Placement's cap must not hide hosts from Nova's limit.
        self.assertGreaterEqual(placement.max_allocation_candidates,
                                nova.scheduler.max_placement_results)

    def test_rabbit_policies_where_rabbitmq_runs(self):
        self.phase('n-sch,rabbit', 'stack', 'post-config')
        script = os.path.join(self.scratch, 'opt', 'nova-cacheaware',
                              'deploy', 'rabbitmq', 'cacheaware-policies.sh')
        self.assertIn('sudo bash %s -p /' % script, self.calls())
        self.phase('n-cpu', 'stack', 'post-config')
        self.assertEqual(1, sum('cacheaware-policies' in c
                                for c in self.calls()))

    def test_placement_settings_only_where_placement_runs(self):
        self.phase('n-cpu', 'stack', 'post-config')
        self.assertFalse(os.path.exists(self.placement_conf))
        self.assertFalse(os.path.exists(self.nova_conf))

    def test_flavors_created_once_and_set_with_our_tool(self):
        self.phase('n-api', 'stack', 'extra')
        calls = self.calls()
        self.assertIn('openstack flavor create --vcpus 2 --ram 512 --disk 1 '
                      'cacheaware.mem.small', calls)
        self.assertIn('nova-cacheaware flavor set cacheaware.mem.medium '
                      '--cache-share all --workload memory --cache-clean '
                      'preferred', calls)

    def test_unstack_and_clean(self):
        self.phase('n-cpu', 'stack', 'post-config')
        self.phase('n-cpu', 'unstack')
        self.phase('n-cpu', 'clean')
        self.assertIn('stop_process cacheaware-agent', self.calls())
        self.assertFalse(os.path.exists(os.path.dirname(self.agent_conf)))
        self.assertFalse(os.path.exists(self.state))

    def test_disabled_plugin_does_nothing(self):
        self.phase('key,g-api', 'stack', 'post-config')
        self.assertFalse(os.path.exists(self.nova_conf))


class ShellcheckTest(base.FunctionalTestCase):

    def test_shell_scripts_are_shellcheck_clean(self):
        exe = shutil.which('shellcheck')
        self.require(exe, 'shellcheck')
        scripts = ['devstack/plugin.sh', 'devstack/settings',
                   'devstack/tests/harness.sh', '.ci/run',
                   'deploy/rabbitmq/cacheaware-policies.sh'] + [
            os.path.join('tools', n) for n in os.listdir(
                os.path.join(REPO, 'tools')) if n.endswith('.sh')]
        proc = subprocess.run([exe, '-x'] + scripts, cwd=REPO,
                              capture_output=True, text=True)
        self.assertEqual(0, proc.returncode, proc.stdout)
