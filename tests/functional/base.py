"""Helpers for functional tests that need real local services."""

import os

import testtools


def services_required():
    """True when the test runner started the services (CI, run-tests.sh).

    Then a missing service is a failure, not a skip.
    """
    return os.environ.get('NOVA_CACHEAWARE_CI_SERVICES') == '1'


class FunctionalTestCase(testtools.TestCase):
    """Skips for a missing service on a developer box; fails under CI."""

    def require(self, available, what):
        """Skip (or fail, when services are required) unless available."""
        if available:
            return
        if services_required():
            self.fail('%s is required but not available' % what)
        self.skipTest('%s is not available' % what)
