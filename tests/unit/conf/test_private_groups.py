"""Option groups with keystoneauth options stay private to each conf."""

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import testtools

from nova_cacheaware.conf import nova as nova_conf
from nova_cacheaware.conf import placement as placement_conf


class PrivateGroupTest(testtools.TestCase):

    def check(self, module, group):
        first = cfg.ConfigOpts()
        module.register_opts(first)
        first([], default_config_files=[])
        first.set_override('auth_type', 'password', group)
        # Registers the password plugin's options, auth_url required.
        self.assertRaises(ks_exc.MissingRequiredOptions,
                          ks_loading.load_auth_from_conf_options,
                          first, group)
        self.assertIn('auth_url', first[group])

        second = cfg.ConfigOpts()
        module.register_opts(second)
        second([], default_config_files=[])  # no RequiredOptError
        self.assertNotIn('auth_url', second[group])

    def test_nova(self):
        self.check(nova_conf, 'nova')

    def test_placement(self):
        self.check(placement_conf, 'placement')
