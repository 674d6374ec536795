"""What the rebalance audit reads from real Nova and Placement.

Nova's own API and scheduler with this project's filters refuse a
``required`` request when no cache domain is Clean and has room; the
Watcher strategy's edge (:func:`nova_cacheaware.watcher.sources.
refused_required`) reads those servers from ``GET /servers/detail`` at
Watcher's microversion (2.56) through openstacksdk's ``Server``, as the
audit does, and counts only them. Placement's per-server limits
(``max_unit`` of the compute node's VCPU, written by Nova's libvirt
driver, and of the per-domain providers, written by the agent's code)
are read by :meth:`~nova_cacheaware.watcher.sources.ApiSource.
placement_limits` through an openstacksdk connection, as the audit does.
"""

import datetime
import types

from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from openstack.compute.v2 import server as sdk_server
from openstack import connection
from openstack.placement.v1 import _proxy as placement_proxy

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


class PlacementLimitsTest(base.CacheAwareTestBase):

    def placement_connection(self):
        """An openstacksdk connection to the in-process Placement.

        Its Placement proxy built as openstacksdk builds it: Nova's test
        base stubs openstacksdk's proxy factory for Placement with a bare
        REST adapter (Nova's own code only needs that).
        """
        endpoint = self.placement.fixture.endpoint
        conn = connection.Connection(
            session=ks_session.Session(
                auth=token_endpoint.Token(endpoint, 'admin')),
            placement_endpoint_override=endpoint)
        proxy = conn.config.get_session_client(
            'placement', constructor=placement_proxy.Proxy)
        proxy._connection = conn  # what openstacksdk's own factory sets
        return types.SimpleNamespace(placement=proxy)

    def test_max_units_whatever_the_allocation_ratio(self):
        # Ratio 4.0: each 2-CPU domain holds 8 vCPUs and each host four
        # times its CPUs, but Placement gives one server at most the
        # host's CPUs (Nova's VCPU max_unit) and, with per-domain
        # providers, the domain's.
        self.flags(cpu_allocation_ratio=4.0,
                   initial_cpu_allocation_ratio=4.0)
        self.start_host('compute1', cores=2, threads=2, domain_cpus=2,
                        cpu_allocation_ratio=4.0)
        self.start_host('compute2', cores=4, threads=2, domain_cpus=4,
                        model='host', cpu_allocation_ratio=4.0)
        vcpu = {}
        for host in ('compute1', 'compute2'):
            inventory = self.placement.get(
                '/resource_providers/%s/inventories'
                % self.compute_rp_uuids[host]).body['inventories']['VCPU']
            # Nova's libvirt driver: max_unit the host's CPUs (what the
            # fake libvirt reports), whatever the ratio.
            self.assertEqual((inventory['total'], 4.0), (
                inventory['max_unit'], inventory['allocation_ratio']))
            vcpu[host] = inventory['max_unit']
        source = sources.ApiSource(
            ks_session.Session(), nova=None, endpoint='http://127.0.0.1:9',
            placement=self.placement_connection())
        got = source.placement_limits(
            {h: self.compute_rp_uuids[h] for h in ('compute1', 'compute2')})
        self.assertEqual(
            {'compute1': sources.Limits(vcpu['compute1'],
                                        {'L3-0': 2, 'L3-1': 2}),
             'compute2': sources.Limits(vcpu['compute2'], {})}, got)
