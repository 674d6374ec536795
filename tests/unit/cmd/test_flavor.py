"""``nova-cacheaware flavor show-specs`` and the argument checks of ``set``."""

import io
from unittest import mock

import fixtures
import testtools

from tests.unit.cmd import base


class TestShowSpecs(base.CLITestCase):

    def test_properties(self):
        code, out, err = self.cli(
            ['flavor', 'show-specs', '--vcpus', '6', '--cache-share', 'all',
             '--workload', 'memory', '--cache-clean', 'required'])
        self.assertEqual((0, ''), (code, err))
        self.assertEqual([
            '--property cacheaware:cache_clean=required',
            '--property cacheaware:cache_share=all',
            '--property cacheaware:workload=memory',
            '--property group_policy=none',
            '--property resources_CACHE:CUSTOM_CACHE_DOMAIN_MEMBOUND=1',
            '--property resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU=6',
            '--property trait_CACHE:CUSTOM_CACHEAWARE_AGENT=required'],
            out.splitlines())

    def test_json(self):
        self.assertEqual(
            {'cacheaware:numa': 'full', 'cacheaware:memory_min_mb': '256',
             'cacheaware:memory_policy': 'hit_ratio'},
            self.cli_json(['flavor', 'show-specs', '--vcpus', '2', '--numa',
                           'full', '--memory-min-mb', '256',
                           '--memory-policy', 'hit_ratio', '--format',
                           'json']))

    def test_warning_goes_to_stderr(self):
        code, out, err = self.cli(
            ['flavor', 'show-specs', '--vcpus', '2', '--cache-share', 'all',
             '--workload', 'memory'])
        self.assertEqual(0, code)
        self.assertIn('resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU=2', out)
        self.assertTrue(err.startswith('warning: workload=memory'))

    def test_refused_combination(self):
        self.assertOneLineError(
            ['flavor', 'show-specs', '--vcpus', '2', '--workload', 'memory',
             '--cache-clean', 'required'], 'needs cache_share=all')

    def test_memory_min_above_ram(self):
        self.assertOneLineError(
            ['flavor', 'show-specs', '--vcpus', '2', '--ram-mb', '1024',
             '--memory-min-mb', '2048'], "above the flavor's RAM")

    def test_bad_choice_is_a_usage_error(self):
        code, out, err = self.cli(['flavor', 'show-specs', '--vcpus', '2',
                                   '--cache-share', 'some'])
        self.assertEqual((2, ''), (code, out))
        self.assertIn('invalid choice', err)

    def test_vcpus_is_required(self):
        code, _out, err = self.cli(['flavor', 'show-specs'])
        self.assertEqual(2, code)
        self.assertIn('--vcpus', err)


class TestSetArguments(base.CLITestCase):

    def test_set_needs_an_option(self):
        self.assertOneLineError(['flavor', 'set', 'm1.small'],
                                'give at least one option')

    def test_set_without_credentials(self):
        # No OS_* variables and no usable clouds.yaml: one clear line, no
        # traceback (the exact reason depends on the machine's clouds.yaml).
        for name in ('OS_CLOUD', 'OS_AUTH_URL', 'OS_AUTH_TYPE', 'OS_TOKEN',
                     'OS_USERNAME', 'OS_PASSWORD'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', '/nonexistent/clouds.yaml'))
        self.assertOneLineError(['flavor', 'set', 'm1.small',
                                 '--cache-share', 'all'],
                                'nova-cacheaware flavor set: error: ')

    def test_check_without_credentials(self):
        for name in ('OS_CLOUD', 'OS_AUTH_URL', 'OS_AUTH_TYPE', 'OS_TOKEN',
                     'OS_USERNAME', 'OS_PASSWORD'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', '/nonexistent/clouds.yaml'))
        self.assertOneLineError(['flavor', 'check'],
                                'nova-cacheaware flavor check: error: ')

    def test_usage_errors_have_the_same_prefix(self):
        # argparse's own errors and ours name the action the same way.
        err = self.assertOneLineError(['flavor', 'set'],
                                      'nova-cacheaware flavor set: error: ')
        self.assertIn('FLAVOR', err)
        self.assertOneLineError(['flavor', 'set', 'm1.small'],
                                'nova-cacheaware flavor set: error: '
                                'invalid input: give at least one option')


class TestCloudErrors(base.CLITestCase):
    """novaclient/keystoneauth failures become one CloudRequestFailed."""

    def _raise_in(self, exc):
        from nova_cacheaware.cmd.commands import flavor
        with flavor.cloud_errors('m1.small'):
            raise exc

    def test_each_client_error_is_mapped(self):
        from keystoneauth1 import exceptions as ks_exc
        from novaclient import exceptions as nova_exc

        from nova_cacheaware.cmd.commands import flavor
        for exc, text in (
                (nova_exc.BadRequest(400, 'bad spec'), 'bad spec'),
                (nova_exc.CommandError('No flavor with a name or ID of '
                                       "'m1.small' exists."), 'No flavor'),
                (ks_exc.ConnectFailure('refused'), 'refused')):
            e = self.assertRaises(flavor.CloudRequestFailed,
                                  self._raise_in, exc)
            self.assertTrue(str(e).startswith('flavor m1.small: '), str(e))
            self.assertIn(text, str(e))

    def test_other_errors_pass_through(self):
        self.assertRaises(KeyError, self._raise_in, KeyError('x'))

    def test_writable_flavor_set_keys(self):
        from novaclient import exceptions as nova_exc

        from nova_cacheaware.cmd.commands import flavor

        class Refusing:
            vcpus, ram = 2, 256

            def set_keys(self, specs):
                raise nova_exc.BadRequest(400, 'Validation failed')

        e = self.assertRaises(flavor.CloudRequestFailed,
                              flavor._WritableFlavor(Refusing(), 'f1')
                              .set_keys, {'cacheaware:workload': 'x'})
        self.assertEqual('flavor f1: Validation failed (HTTP 400)', str(e))


class TestCheckReport(testtools.TestCase):
    """``flavor check``'s report and exit code, flavors injected."""

    class Flavor:
        def __init__(self, name, vcpus=2, ram=512):
            self.name, self.id, self.vcpus, self.ram = name, name, vcpus, ram

    def _run(self, flavors):
        from nova_cacheaware.cmd.commands import flavor_check
        out = io.StringIO()
        with mock.patch('sys.stdout', out):
            code = flavor_check.run(None, lambda args: iter(flavors))
        return code, out.getvalue().splitlines()

    def test_clean_and_wrong(self):
        plain = (self.Flavor('plain'), {})
        bad = (self.Flavor('bad'), {
            'cacheaware:memory_min_mb': '1024',
            'cacheaware:workload': 'memory',
            'cacheaware:cache_clean': 'required'})
        self.assertEqual((0, ['1 flavor(s) checked, 0 with problems']),
                         self._run([plain]))
        code, lines = self._run([plain, bad])
        self.assertEqual(1, code)
        self.assertEqual(
            ["flavor bad (bad): cacheaware:memory_min_mb=1024 is above the "
             "flavor's RAM (512 MB): the balloon floor must be at most the "
             'RAM',
             'flavor bad (bad): cacheaware:cache_clean=required with '
             'workload=memory needs cache_share=all (it has any): Placement '
             'can keep a domain Clean only for a VM that lives in one domain',
             '2 flavor(s) checked, 1 with problems'], lines)
