"""Cross-key rules through the real Nova API, scheduler and ``flavor check``.

Nova's extra-spec validators (ours included) see one key at a time, so a
flavor whose keys contradict each other is accepted by the API (2.86).
The scheduler's ``CacheDomainFilter`` refuses it on every host, with the
reason logged, and ``nova-cacheaware flavor check`` reports it, through
python-novaclient against the same API.
"""

import io

import fixtures
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from nova_cacheaware.api import flavor_specs
from nova_cacheaware.cmd import cli
from nova_cacheaware.cmd.commands import flavor as flavor_cmd
from tests.functional.nova import base

CLEAN = {'cache_share': 'all', 'workload': 'memory',
         'cache_clean': 'required'}


class FlavorRulesTest(base.CacheAwareTestBase):

    def setUp(self):
        super().setUp()
        session = ks_session.Session(
            auth=token_endpoint.Token(self.api_fixture.base_url, 'unused'),
            additional_headers={
                'X-Auth-User': 'admin',
                'X-Auth-Project-Id': self.api_fixture.project_id,
                'X-Roles': 'admin,reader,member'})
        self.useFixture(fixtures.MockPatchObject(
            flavor_cmd, 'session_from_args', return_value=(session, {})))
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4)

    def _flavor(self, name, extra_specs):
        return self._create_flavor(name=name, vcpu=2, memory_mb=512,
                                   extra_spec=extra_specs)

    def check(self):
        out, err = io.StringIO(), io.StringIO()
        with fixtures.MonkeyPatch('sys.stdout', out), \
                fixtures.MonkeyPatch('sys.stderr', err):
            code = cli.main(['flavor', 'check'])
        return code, out.getvalue().splitlines(), err.getvalue()

    def test_contradicting_flavors_fail_to_boot_and_are_reported(self):
        good_specs = flavor_specs.compute_specs(CLEAN, 2).set
        # Each key passes Nova's (and our) one-key validators.
        min_above_ram = self._flavor('min-above-ram', dict(
            good_specs, **{'cacheaware:memory_min_mb': '1024'}))
        clean_any = self._flavor('clean-any', {
            'cacheaware:cache_share': 'any',
            'cacheaware:workload': 'memory',
            'cacheaware:cache_clean': 'required'})
        good = self._flavor('good', good_specs)

        for flavor in (min_above_ram, clean_any):
            server = self._create_server(flavor_id=flavor, networks='none',
                                         expected_state='ERROR')
            self.assertIn('No valid host was found',
                          server['fault']['message'])
        self._create_server(flavor_id=good, networks='none',
                            expected_state='ACTIVE')
        log = self.stdlog.logger.output
        self.assertIn(
            'CacheDomainFilter rejects host compute1 (node compute1): '
            "flavor %s has contradicting extra specs: cacheaware:"
            "memory_min_mb=1024 is above the flavor's RAM (512 MB)"
            % min_above_ram, log)
        self.assertIn(
            'flavor %s has contradicting extra specs: cacheaware:'
            'cache_clean=required with workload=memory needs '
            'cache_share=all (it has any)' % clean_any, log)

        code, lines, err = self.check()
        self.assertEqual((1, ''), (code, err))
        self.assertEqual([
            "flavor min-above-ram (%s): cacheaware:memory_min_mb=1024 is "
            "above the flavor's RAM (512 MB): the balloon floor must be at "
            'most the RAM' % min_above_ram,
            'flavor clean-any (%s): cacheaware:cache_clean=required with '
            'workload=memory needs cache_share=all (it has any): Placement '
            'can keep a domain Clean only for a VM that lives in one domain'
            % clean_any],
            sorted(lines[:-1], reverse=True))
        flavors = self.api_fixture.admin_api.get_flavors()
        self.assertEqual('%d flavor(s) checked, 2 with problems'
                         % len(flavors), lines[-1])

    def test_clean_cloud_exits_0_and_hand_written_keys_are_reported(self):
        self._flavor('good', flavor_specs.compute_specs(CLEAN, 2).set)
        code, lines, _ = self.check()
        self.assertEqual(0, code)
        self.assertTrue(lines[-1].endswith('checked, 0 with problems'),
                        lines)
        # All-share written by hand, without the Placement group.
        bare = self._flavor('bare', {'cacheaware:cache_share': 'all'})
        code, lines, _ = self.check()
        self.assertEqual(1, code)
        self.assertIn('flavor bare (%s): needs resources_CACHE:'
                      'CUSTOM_CACHE_DOMAIN_VCPU=2 (missing): rewrite it '
                      'with "nova-cacheaware flavor set"' % bare, lines)
