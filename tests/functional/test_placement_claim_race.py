"""Concurrent claims of a provider's last unit, on a real Placement.

Placement 16 retries a conflicting allocation write inside the same
database transaction and then accepts claims beyond capacity (measured in
``benchmarks/placement_claim_race.py``; doc/source/evaluation/
placement-claim-race.rst). With this project's recommended
``[placement] allocation_conflict_retry_count = 1`` the write is refused
instead (HTTP 409 ``placement.concurrent_update``, which Nova's scheduler
retries itself): two services racing for one Clean slot never both get it.
"""

from benchmarks import placement_claim_race as race
from tests.functional import base
from tests import placement_fixtures

TRIALS = 15


class ClaimRaceTest(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.require(placement_fixtures.mariadb_available(),
                     'MariaDB on 127.0.0.1:3306')

    def test_recommended_settings_never_exceed_capacity(self):
        first = self.useFixture(placement_fixtures.PlacementService())
        second = self.useFixture(placement_fixtures.PlacementService(
            database=first.database))
        self.assertEqual(placement_fixtures.RECOMMENDED_OPTS,
                         first.placement_opts)
        endpoints = [first.endpoint, second.endpoint]
        rp = race.setup_provider(endpoints[0])
        for _ in range(TRIALS):
            codes, usage = race.trial(endpoints, rp)
            self.assertEqual([204, 409], codes)
            self.assertEqual(1, usage)
