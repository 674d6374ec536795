"""The agent says at start what its configuration silently disables."""

from unittest import mock

from oslo_config import cfg
from oslo_config import fixture as config_fixture
import testtools

from nova_cacheaware.cachedomain import counters
from nova_cacheaware.cachedomain import memclass
from nova_cacheaware.cmd import agent as agent_cmd
from nova_cacheaware.conf import agent as agent_conf
from nova_cacheaware.conf import balloon as balloon_conf
from nova_cacheaware.conf import nova as nova_conf
from nova_cacheaware.conf import reporting as reporting_conf
from nova_cacheaware import exception


class SilentConfigurationTest(testtools.TestCase):

    def conf(self, balloon=None, nova=None, **agent):
        c = cfg.ConfigOpts()
        agent_conf.register_opts(c)
        balloon_conf.register_opts(c)
        nova_conf.register_opts(c)
        c([], default_config_files=[])
        # The fixture undoes the overrides: the option group is shared.
        fixture = self.useFixture(config_fixture.Config(c))
        fixture.config(group='agent', **agent)
        if balloon:
            fixture.config(group='balloon', **balloon)
        if nova:
            fixture.config(group='nova', **nova)
        return c

    def test_the_default_reads_specs_from_nova(self):
        self.assertEqual('nova', self.conf().agent.spec_source)
        self.assertEqual([], agent_cmd.silent_configuration(self.conf()))

    def test_spec_source_none_warns_once_per_capability(self):
        warnings = agent_cmd.silent_configuration(
            self.conf(spec_source='none',
                      capabilities=['vcpu_sizing', 'numa_balance']))
        self.assertEqual(3, len(warnings))
        self.assertIn('spec_source = none', warnings[0])
        self.assertIn('vcpu_sizing', warnings[1])
        self.assertIn('numa_balance', warnings[2])

    def test_spec_source_none_without_capabilities_warns_once(self):
        self.assertEqual(1, len(agent_cmd.silent_configuration(
            self.conf(spec_source='none'))))

    def test_a_spec_source_silences_it(self):
        for source in ('nova', 'file'):
            self.assertEqual([], agent_cmd.silent_configuration(
                self.conf(spec_source=source, capabilities=['balloon'],
                          balloon={'pool_mib': 512})))

    def test_counters_off_warns_that_auto_is_never_classified(self):
        [warning] = agent_cmd.silent_configuration(self.conf(counters=False))
        self.assertIn('[agent] counters = false', warning)
        self.assertIn('"auto" instances are never classified', warning)

    def test_counter_traces_say_they_replace_the_hardware(self):
        for hardware in (True, False):
            [warning] = agent_cmd.silent_configuration(self.conf(
                counters=hardware, counter_trace_dir='/srv/traces'))
            self.assertEqual(
                '[agent] counter_trace_dir is set: counters are replayed '
                'from the traces in /srv/traces, not read from the '
                'hardware (a test cloud without a PMU); "auto" instances '
                'are classified by those traces', warning)

    def test_counter_source_of_the_configuration(self):
        domain_set = mock.Mock(domains=('L3-0',))
        trace = agent_cmd.build_counter_source(
            self.conf(counter_trace_dir='/srv/traces'), domain_set)
        self.assertIsInstance(trace, counters.TraceDirCounterSource)
        self.assertEqual(('/srv/traces', ('L3-0',)),
                         (trace.directory, trace.domains))
        self.assertIsInstance(agent_cmd.build_counter_source(
            self.conf(), domain_set), counters.PerfCounterSource)
        self.assertIsInstance(agent_cmd.build_counter_source(
            self.conf(counters=False), domain_set),
            counters.NoCounterSource)

    def test_balloon_without_a_pool_warns(self):
        [warning] = agent_cmd.silent_configuration(
            self.conf(capabilities=['balloon']))
        self.assertIn('[balloon] pool_mib = 0', warning)
        self.assertEqual([], agent_cmd.silent_configuration(
            self.conf(capabilities=['balloon'], balloon={'pool_mib': 1})))

    def test_nova_without_credentials_is_a_clear_error(self):
        e = self.assertRaises(exception.InvalidInput,
                              agent_cmd._nova_credentials, self.conf())
        self.assertIn('spec_source = nova (the default) needs the [nova] '
                      'credentials', str(e))

    def test_credentials_or_another_source_pass(self):
        agent_cmd._nova_credentials(self.conf(nova={'auth_type':
                                                    'password'}))
        agent_cmd._nova_credentials(self.conf(spec_source='file'))
        agent_cmd._nova_credentials(self.conf(spec_source='none'))


class ClassifierConfigTest(testtools.TestCase):
    """``[agent] classifier_*``: the counts of the classifier's votes."""

    def conf(self, **agent):
        c = cfg.ConfigOpts()
        agent_conf.register_opts(c)
        reporting_conf.register_opts(c)
        c([], default_config_files=[])
        self.useFixture(config_fixture.Config(c)).config(group='agent',
                                                         **agent)
        return c

    def test_defaults_are_study_000s(self):
        self.assertEqual(memclass.ClassifierConfig(),
                         agent_cmd.classifier_config(self.conf()))

    def test_counts_from_the_configuration(self):
        self.assertEqual(
            memclass.ClassifierConfig(min_samples=4, dwell=2),
            agent_cmd.classifier_config(self.conf(
                classifier_min_samples=4, classifier_dwell=2)))
