"""The agent says at start what its configuration silently disables."""

from oslo_config import cfg
from oslo_config import fixture as config_fixture
import testtools

from nova_cacheaware.cmd import agent as agent_cmd
from nova_cacheaware.conf import agent as agent_conf


class SilentConfigurationTest(testtools.TestCase):

    def conf(self, **agent):
        c = cfg.ConfigOpts()
        agent_conf.register_opts(c)
        c([], default_config_files=[])
        # The fixture undoes the overrides: the option group is shared.
        self.useFixture(config_fixture.Config(c)).config(group='agent',
                                                         **agent)
        return c

    def test_spec_source_none_warns_once_per_capability(self):
        warnings = agent_cmd.silent_configuration(
            self.conf(capabilities=['vcpu_sizing', 'balloon']))
        self.assertEqual(3, len(warnings))
        self.assertIn('spec_source = none', warnings[0])
        self.assertIn('vcpu_sizing', warnings[1])
        self.assertIn('balloon', warnings[2])

    def test_spec_source_none_without_capabilities_warns_once(self):
        self.assertEqual(1, len(agent_cmd.silent_configuration(self.conf())))

    def test_a_spec_source_silences_it(self):
        for source in ('nova', 'file'):
            self.assertEqual([], agent_cmd.silent_configuration(
                self.conf(spec_source=source, capabilities=['balloon'])))
