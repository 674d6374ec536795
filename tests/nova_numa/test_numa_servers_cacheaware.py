"""``nova.tests.functional.libvirt.test_numa_servers`` with our plugins.

Every test class of Nova's module is re-exported here as a subclass that
adds ``CacheDomainFilter`` to the enabled filters (next to Nova's defaults
and the class's own ``ADDITIONAL_FILTERS``) and ``CacheAwareWeigher`` to
the weighers, and checks that the scheduler really loaded both. Nova's
tests use no ``cacheaware:`` keys, so they must pass unchanged: that is the
contract "requests without cacheaware keys schedule as with Nova's
defaults", checked against Nova's own expectations.
"""

import inspect
import unittest

from nova.tests.functional.libvirt import test_numa_servers as upstream

from tests.functional.nova import base as ca_base


class CacheAwarePluginsMixin:
    """Enable our filter and weigher before Nova's services start."""

    def setUp(self):
        # Nova's default enabled_filters stay; the class adds its own
        # ADDITIONAL_FILTERS (and now ours) in _setup_scheduler_service.
        ca_base.enable_plugins(self, enabled_filters=None)
        self.ADDITIONAL_FILTERS = (list(self.ADDITIONAL_FILTERS)
                                   + [ca_base.FILTER])
        super().setUp()
        ca_base.ignore_nova_sqlalchemy_warning()
        manager = self.scheduler.manager.host_manager
        assert ca_base.FILTER in manager.filter_cls_map, (
            'CacheDomainFilter not loaded')
        assert 'CacheAwareWeigher' in [
            type(w).__name__ for w in manager.weighers], (
            'CacheAwareWeigher not loaded')


def _wrapped_classes():
    for name, cls in inspect.getmembers(upstream, inspect.isclass):
        if (cls.__module__ == upstream.__name__
                and issubclass(cls, unittest.TestCase)):
            yield name, type(name, (CacheAwarePluginsMixin, cls),
                             {'__module__': __name__})


globals().update(dict(_wrapped_classes()))
