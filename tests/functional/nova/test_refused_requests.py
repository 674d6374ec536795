"""Refused ``cache_clean=required`` requests as the rebalance audit reads them.

Nova's own API and scheduler with this project's filters refuse a
``required`` request when no cache domain is Clean and has room; the
Watcher strategy's edge (:func:`nova_cacheaware.watcher.sources.
refused_required`) reads those servers from ``GET /servers/detail`` at
Watcher's microversion (2.56) through openstacksdk's ``Server``, as the
audit does, and counts only them.
"""

import datetime

from openstack.compute.v2 import server as sdk_server

from nova_cacheaware.watcher import sources
from tests.functional.nova import base
from tests.functional.nova import test_cache_domain_scheduling as scheduling

#: Watcher 17's ``[nova] api_version`` default.
WATCHER_MICROVERSION = '2.56'


class RefusedRequestsTest(base.CacheAwareTestBase):

    def _boot(self, specs, vcpu, state):
        flavor = self._create_flavor(vcpu=vcpu, memory_mb=512,
                                     extra_spec=specs)
        return self._create_server(flavor_id=flavor, networks='none',
                                   expected_state=state)

    def _error_servers(self, since):
        self.admin_api.microversion = WATCHER_MICROVERSION
        try:
            found = self.admin_api.get_servers(detail=True, search_opts={
                'status': 'ERROR', 'all_tenants': 1,
                'changes-since': since.strftime('%Y-%m-%dT%H:%M:%SZ')})
        finally:
            self.admin_api.microversion = self.microversion
        return [sdk_server.Server.existing(**body) for body in found]

    def test_only_the_refused_required_requests_count(self):
        # One domain of four CPUs.
        self.start_host('compute1', cores=2, threads=2, domain_cpus=4)
        since = (datetime.datetime.now(datetime.timezone.utc)
                 - datetime.timedelta(minutes=5))
        required = scheduling.all_share_specs(2, clean='required')
        self._boot(required, 2, 'ACTIVE')
        # The domain holds a memory-bound server: no Clean place left.
        refused = self._boot(required, 2, 'ERROR')
        self.assertIn('No valid host was found', refused['fault']['message'])
        # Refused too, but Dirty was allowed: no room to make for it.
        wide = self._boot(scheduling.all_share_specs(6, clean='preferred'),
                          6, 'ERROR')
        self.assertIn('No valid host was found', wide['fault']['message'])

        servers = self._error_servers(since)
        self.assertEqual(sorted([refused['id'], wide['id']]),
                         sorted(s.id for s in servers))
        self.assertEqual((2,), sources.refused_required(servers))
        # Nova's changes-since bounds what an audit reads.
        later = datetime.datetime.now(
            datetime.timezone.utc) + datetime.timedelta(minutes=5)
        self.assertEqual([], self._error_servers(later))
