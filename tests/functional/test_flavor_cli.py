"""``nova-cacheaware flavor set`` through python-novaclient to a real Nova API.

Nova's own API application (``nova.tests.fixtures.OSAPIFixture``: the real
osapi_compute WSGI app, database and policy; Keystone's middleware stubbed,
identity from X-Auth-* headers) behind wsgi-intercept. The CLI is run as a
user runs it; only the cloud connection (clouds.yaml / OS_* lookup) is
replaced by a session that carries the fixture's identity headers. At
microversion 2.86 Nova validates every extra spec we write with its own
validators (``resources_CACHE:``, ``trait:``, ``group_policy``).
"""

import io
import os
import sys
import warnings

import fixtures
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from nova import objects
from nova import test
from nova.tests import fixtures as nova_fixtures
from nova.virt import hardware
from sqlalchemy import exc as sqla_exc

from nova_cacheaware.cmd import cli
from nova_cacheaware.cmd.commands import flavor as flavor_cmd
from tests.fixtures import machines
from tests.fixtures import sysfs_tree


class TestFlavorSetThroughNovaAPI(test.TestCase):

    def setUp(self):
        self.flags(api_paste_config=os.path.join(
            sys.prefix, 'etc', 'nova', 'api-paste.ini'), group='wsgi')
        super().setUp()
        warnings.filterwarnings(
            'ignore', message=r'The noload\(\) option is deprecated',
            category=sqla_exc.SADeprecationWarning)
        # Nova 31's server side under newer oslo.versionedobjects (no
        # 2025.1 upper-constraints here); the CLI itself must stay quiet.
        warnings.filterwarnings(
            'ignore', message=r'Passing item_cls to obj_make_list\(\)',
            category=DeprecationWarning)
        api_fixture = self.useFixture(
            nova_fixtures.OSAPIFixture(api_version='v2.1'))
        self.admin_api = api_fixture.admin_api
        self.admin_api.microversion = '2.86'
        session = ks_session.Session(
            auth=token_endpoint.Token(api_fixture.base_url, 'unused'),
            additional_headers={
                'X-Auth-User': 'admin',
                'X-Auth-Project-Id': api_fixture.project_id,
                'X-Roles': 'admin,reader,member'})
        self.useFixture(fixtures.MockPatchObject(
            flavor_cmd, 'session_from_args', return_value=(session, {})))
        self.flavor = self.admin_api.post_flavor({'flavor': {
            'name': 'm1.cache', 'ram': 2048, 'vcpus': 4, 'disk': 0,
            'id': 'cache-4'}})

    def run_cli(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with fixtures.MonkeyPatch('sys.stdout', out), \
                fixtures.MonkeyPatch('sys.stderr', err):
            rc = cli.main(list(argv))
        return rc, out.getvalue(), err.getvalue()

    def extra_specs(self):
        return self.admin_api.get_flavor('cache-4')['extra_specs']

    def test_set_writes_namespace_and_placement_keys(self):
        rc, out, err = self.run_cli(
            'flavor', 'set', 'm1.cache', '--cache-share', 'all',
            '--workload', 'memory', '--cache-clean', 'required')
        self.assertEqual((0, ''), (rc, err))
        expected = {
            'cacheaware:cache_share': 'all',
            'cacheaware:workload': 'memory',
            'cacheaware:cache_clean': 'required',
            'resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU': '4',
            'resources_CACHE:CUSTOM_CACHE_DOMAIN_MEMBOUND': '1',
            'trait_CACHE:CUSTOM_CACHEAWARE_AGENT': 'required',
            'group_policy': 'none'}
        self.assertEqual(expected, self.extra_specs())
        self.assertEqual(sorted('set %s=%s' % kv for kv in expected.items()),
                         out.splitlines())
        # Again: nothing to do.
        rc, out, _err = self.run_cli(
            'flavor', 'set', 'cache-4', '--cache-share', 'all')
        self.assertEqual(0, rc)
        self.assertEqual('flavor cache-4 already has these specs\n', out)

    def test_back_to_any_unsets_placement_keys(self):
        self.run_cli('flavor', 'set', 'm1.cache', '--cache-share', 'all')
        rc, out, _err = self.run_cli('flavor', 'set', 'm1.cache',
                                     '--cache-share', 'any')
        self.assertEqual(0, rc)
        self.assertEqual({'cacheaware:cache_share': 'any',
                          'group_policy': 'none'}, self.extra_specs())
        self.assertIn('unset resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU', out)

    def test_dry_run_writes_nothing(self):
        rc, out, _err = self.run_cli('flavor', 'set', 'm1.cache',
                                     '--cache-share', 'all', '--dry-run')
        self.assertEqual(0, rc)
        self.assertIn('would set resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU=4',
                      out)
        self.assertEqual({}, self.extra_specs())

    def test_memory_min_above_flavor_ram_is_refused(self):
        rc, out, err = self.run_cli('flavor', 'set', 'm1.cache',
                                    '--memory-min-mb', '4096')
        self.assertEqual(2, rc)
        self.assertEqual('', out)
        self.assertIn("memory_min_mb=4096 is above the flavor's RAM", err)
        self.assertEqual({}, self.extra_specs())

    def test_unknown_flavor(self):
        rc, out, err = self.run_cli('flavor', 'set', 'no-such-flavor',
                                    '--cache-share', 'all')
        self.assertEqual(2, rc)
        self.assertEqual('', out)
        self.assertIn('flavor no-such-flavor:', err)


class TestNumaFullThroughNovaAPI(TestFlavorSetThroughNovaAPI):
    """``flavor numa-full --write``: Nova accepts and understands the shape."""

    def setUp(self):
        super().setUp()
        # Nova's base points TMPDIR at a per-test directory: write the
        # (tiny) tree per test rather than caching it per process.
        self.root = sysfs_tree.write_tree(
            self.useFixture(fixtures.TempDir()).path,
            machines.kvm_guest_two_sockets_no_cache())

    def test_write_mirrors_the_host_and_nova_builds_the_topology(self):
        self.admin_api.post_flavor({'flavor': {
            'name': 'm1.numa', 'ram': 1024, 'vcpus': 4, 'disk': 0,
            'id': 'numa-4'}})
        rc, out, err = self.run_cli('flavor', 'numa-full', '--sysfs-root',
                                    self.root, '--write', 'm1.numa')
        self.assertEqual((0, ''), (rc, err))
        expected = {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1',
                    'hw:numa_cpus.1': '2-3', 'hw:numa_mem.0': '512',
                    'hw:numa_mem.1': '512', 'cacheaware:numa': 'full'}
        specs = self.admin_api.get_flavor('numa-4')['extra_specs']
        self.assertEqual(expected, specs)
        self.assertEqual(sorted('set %s=%s' % kv for kv in expected.items()),
                         out.splitlines())
        # Nova's own parser turns the specs into the mirrored guest shape.
        flavor = objects.Flavor(vcpus=4, memory_mb=1024, extra_specs=specs)
        topology = hardware.numa_get_constraints(
            flavor, objects.ImageMeta.from_dict({}))
        self.assertEqual([({0, 1}, 512), ({2, 3}, 512)],
                         [(c.cpuset, c.memory) for c in topology.cells])

    def test_vcpu_mismatch_is_refused_and_nothing_written(self):
        rc, out, err = self.run_cli('flavor', 'numa-full', '--sysfs-root',
                                    self.root, '--write', 'm1.cache',
                                    '--ram-mb', '2048', '--usable-cpus', '0')
        self.assertEqual((2, ''), (rc, out))
        self.assertIn('flavor m1.cache has 4 vCPUs; this host shape needs 1',
                      err)
        self.assertEqual({}, self.extra_specs())

    def test_dry_run(self):
        rc, out, _err = self.run_cli('flavor', 'numa-full', '--sysfs-root',
                                     self.root, '--write', 'cache-4',
                                     '--dry-run')
        self.assertEqual(0, rc)
        self.assertIn('would set hw:numa_mem.0=1024', out.splitlines())
        self.assertEqual({}, self.extra_specs())
