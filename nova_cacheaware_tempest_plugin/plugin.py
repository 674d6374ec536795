"""The tempest plugin entry point (``tempest.test_plugins``)."""

import os

from tempest.test_discover import plugins

from nova_cacheaware_tempest_plugin import config as project_config


class CacheAwareTempestPlugin(plugins.TempestPlugin):
    """Registers the ``[cacheaware]`` options and the scenario tests."""

    def load_tests(self):
        """Return (test directory, top level directory)."""
        base_path = os.path.split(os.path.dirname(
            os.path.abspath(__file__)))[0]
        test_dir = 'nova_cacheaware_tempest_plugin/tests'
        full_test_dir = os.path.join(base_path, test_dir)
        return full_test_dir, base_path

    def register_opts(self, conf):
        """Register the ``[cacheaware]`` group on tempest's CONF."""
        conf.register_group(project_config.cacheaware_group)
        conf.register_opts(project_config.CacheAwareGroup,
                           group=project_config.cacheaware_group.name)

    def get_opt_lists(self):
        """Options for ``tempest`` sample config generation."""
        return [(project_config.cacheaware_group.name,
                 project_config.CacheAwareGroup)]
