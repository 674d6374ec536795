"""The strategy's edge: host views over HTTP, server groups from the SDK.

A WSGI app on a loopback port answers what ``nova-cacheaware-api``
answers (a view, an agent that does not answer, a document that does
not check); the source asks it through a real keystoneauth session.
"""

import datetime
import json
import threading
import types
from wsgiref import simple_server

import fixtures
from keystoneauth1 import session
from openstack.compute.v2 import server as sdk_server
from openstack import exceptions as sdk_exc
import testtools

from nova_cacheaware.api import flavor_specs
from nova_cacheaware.watcher import snapshot
from nova_cacheaware.watcher import sources
from tests.unit.watcher import views as v

GOOD = {'version': '1.0', 'host': 'a', 'model': 'per-host',
        'generated_at': '2026-11-29T00:00:00Z',
        'agent': {'healthy': True, 'generation': 3},
        'numa_nodes': [{'id': 0, 'cpus': '0-3',
                        'domains': ['L2-0', 'L2-1']}],
        'domains': [{'id': 'L2-0', 'level': 'L2', 'numa_node': 0,
                     'cpus': '0-1', 'state': 'Clean',
                     'servers': [v.UUIDS['m1']]},
                    {'id': 'L2-1', 'level': 'L2', 'numa_node': 0,
                     'cpus': '2-3', 'state': 'Empty', 'servers': []}],
        'servers': [{'uuid': v.UUIDS['m1'], 'class': 'memory-bound',
                     'domain': 'L2-0', 'vcpus': 1}]}
ANSWERS = {
    '/v1/hosts/a': (200, GOOD),
    '/v1/hosts/b': (503, {'error': {'code': 503, 'message':
                                    'the agent of host b did not answer'}}),
    '/v1/hosts/c': (200, dict(GOOD, domains=[])),
}


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def _app(environ, start_response):
    code, doc = ANSWERS.get(environ['PATH_INFO'],
                            (404, {'error': {'message': 'no such host'}}))
    start_response('%d X' % code, [('Content-Type', 'application/json')])
    return [json.dumps(doc).encode()]


class ApiSourceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.watcher.sources'))
        server = simple_server.make_server('127.0.0.1', 0, _app,
                                           handler_class=_Quiet)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.url = 'http://127.0.0.1:%d' % server.server_port

    def test_views_and_why_the_others_are_left_out(self):
        source = sources.ApiSource(session.Session(), nova=None,
                                   endpoint=self.url, timeout=5)
        got = source.host_views(['d', 'c', 'b', 'a'])
        self.assertEqual(['a'], [view.host for view in got.views])
        self.assertEqual([v.UUIDS['m1']],
                         [s.uuid for s in got.views[0].servers])
        self.assertEqual(['b', 'c', 'd'], sorted(got.failed))
        self.assertEqual('nova-cacheaware-api answered HTTP 503: the agent '
                         'of host b did not answer', got.failed['b'])
        self.assertIn('NUMA node 0 lists unknown domain', got.failed['c'])
        self.assertEqual('nova-cacheaware-api answered HTTP 404: no such '
                         'host', got.failed['d'])
        self.assertIn('Cache rebalance audit leaves host b out: '
                      'nova-cacheaware-api answered HTTP 503', self.log.output)

    def test_an_api_that_is_down(self):
        source = sources.ApiSource(session.Session(), nova=None,
                                   endpoint='http://127.0.0.1:9', timeout=5)
        got = source.host_views(['a'])
        self.assertEqual((), got.views)
        self.assertIn('cannot reach nova-cacheaware-api', got.failed['a'])


class GroupsTest(testtools.TestCase):

    def test_server_groups_of_every_project(self):
        asked = []

        def server_groups(**kw):
            asked.append(kw)
            return [types.SimpleNamespace(id='g1', policy='anti-affinity',
                                          member_ids=['u1', 'u2']),
                    # Before microversion 2.64: a list of one policy.
                    types.SimpleNamespace(id='g2', policy=None,
                                          policies=['affinity'],
                                          member_ids=None)]

        nova = types.SimpleNamespace(compute=types.SimpleNamespace(
            server_groups=server_groups))
        source = sources.ApiSource(session.Session(), nova=nova,
                                   endpoint='http://127.0.0.1:9')
        self.assertEqual(
            (snapshot.ServerGroup('g1', 'anti-affinity', ('u1', 'u2')),
             snapshot.ServerGroup('g2', 'affinity', ())),
            source.server_groups())
        self.assertEqual([{'all_projects': True}], asked)


def nova_server(uuid, status='ERROR', fault='No valid host was found. ',
                host=None, vcpus=2, specs=None,
                updated='2026-11-29T10:00:00Z'):
    """An openstacksdk ``Server`` as ``GET /servers/detail`` (2.56) gives."""
    body = {'id': uuid, 'status': status, 'OS-EXT-SRV-ATTR:host': host,
            'updated': updated,
            'flavor': {'vcpus': vcpus, 'ram': 512, 'disk': 1,
                       'original_name': 'f', 'extra_specs': (
                           REQUIRED if specs is None else specs)}}
    if fault is not None:
        body['fault'] = {'code': 500, 'message': fault}
    return sdk_server.Server.existing(**body)


#: The ``required`` flavor's extra specs as ``nova-cacheaware flavor set``
#: writes them (2 vCPUs).
REQUIRED = flavor_specs.compute_specs(
    {'cache_share': 'all', 'workload': 'memory', 'cache_clean': 'required'},
    2).set


class RefusedRequestsTest(testtools.TestCase):

    def test_only_required_requests_no_host_took(self):
        table = [
            # (server, counted)
            (nova_server('r1'), True),
            (nova_server('r2', vcpus=4, specs=flavor_specs.compute_specs(
                {'cache_share': 'all', 'workload': 'memory',
                 'cache_clean': 'required'}, 4).set), True),
            # Clean preferred, or no cache-aware flavor: not a room request.
            (nova_server('p1', specs=flavor_specs.compute_specs(
                {'cache_share': 'all', 'workload': 'memory',
                 'cache_clean': 'preferred'}, 2).set), False),
            (nova_server('n1', specs={}), False),
            # ERROR for another reason, or on a host: not refused.
            (nova_server('e1', fault='Build of instance aborted'), False),
            (nova_server('e2', fault=None), False),
            (nova_server('e3', host='compute1'), False),
            (nova_server('a1', status='ACTIVE', fault=None), False),
            # A flavor that does not check, or no vCPUs: left out.
            (nova_server('b1', specs={'cacheaware:cache_clean': 'maybe'}),
             False),
            (nova_server('b2', vcpus=0), False),
            (nova_server('b3', vcpus=10 ** 9), False),
        ]
        for server, counted in table:
            self.assertEqual(
                (server.flavor.vcpus,) if counted else (),
                sources.refused_required([server]), server.id)
        self.assertEqual((2, 4), sources.refused_required(
            [s for s, _c in reversed(table)]))

    def test_at_most_the_newest_max_pending(self):
        many = [nova_server('r%d' % i, vcpus=1 + (i >= 2),
                            updated='2026-11-29T10:00:%02dZ' % i)
                for i in range(4)]
        self.useFixture(fixtures.MockPatchObject(
            sources.rebalance_snapshot, 'MAX_PENDING', 2))
        self.assertEqual((2, 2), sources.refused_required(many))

    def test_asks_nova_for_error_servers_since(self):
        asked = []

        def servers(**kw):
            asked.append(kw)
            return [nova_server('r1')]

        nova = types.SimpleNamespace(compute=types.SimpleNamespace(
            servers=servers))
        source = sources.ApiSource(session.Session(), nova=nova,
                                   endpoint='http://127.0.0.1:9')
        since = datetime.datetime(2026, 11, 29, 8, 0,
                                  tzinfo=datetime.timezone.utc)
        self.assertEqual((2,), source.refused_requests(since))
        self.assertEqual([{'details': True, 'all_projects': True,
                           'status': 'ERROR',
                           'changes_since': '2026-11-29T08:00:00Z'}], asked)

    def test_nova_down_is_one_error(self):
        def servers(**kw):
            raise sdk_exc.HttpException('Service Unavailable (HTTP 503)')

        nova = types.SimpleNamespace(compute=types.SimpleNamespace(
            servers=servers))
        source = sources.ApiSource(session.Session(), nova=nova,
                                   endpoint='http://127.0.0.1:9')
        error = self.assertRaises(
            sources.NovaUnreadable, source.refused_requests,
            datetime.datetime.now(datetime.timezone.utc))
        self.assertIn('cannot list the ERROR servers from Nova: ',
                      str(error))


def provider(uuid, name):
    """An openstacksdk ``ResourceProvider`` as Placement lists it."""
    return types.SimpleNamespace(id=uuid, name=name)


def inventory(resource_class, total, max_unit, reserved=0):
    """An openstacksdk ``ResourceProviderInventory``."""
    return types.SimpleNamespace(resource_class=resource_class, total=total,
                                 max_unit=max_unit, reserved=reserved)


class FakePlacement:
    """Placement's provider trees and inventories, as openstacksdk's."""

    def __init__(self, trees, inventories):
        self.trees = trees
        self.inventories = inventories
        self.asked = []

    def resource_providers(self, **query):
        self.asked.append(('providers', query))
        if query['in_tree'] not in self.trees:
            raise sdk_exc.HttpException('Service Unavailable (HTTP 503)')
        return iter(self.trees[query['in_tree']])

    def resource_provider_inventories(self, uuid):
        self.asked.append(('inventories', uuid))
        return iter(self.inventories.get(uuid, ()))


class PlacementLimitsTest(testtools.TestCase):

    def test_max_units_of_root_and_domain_providers(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.watcher.sources'))
        placement = FakePlacement(
            trees={
                # Per-domain providers, one of them fully reserved (the
                # host being switched to the per-host model).
                'r1': [provider('r1', 'cn1'),
                       provider('d0', 'cn1:cacheaware:L3-0'),
                       provider('d1', 'cn1:cacheaware:L3-1'),
                       provider('d2', 'cn1:cacheaware:L3-2'),
                       provider('p1', 'cn1_pci_0000')],
                # The per-host provider model: the root's limit only.
                'r2': [provider('r2', 'cn2'),
                       provider('h2', 'cn2:cacheaware')]},
            inventories={
                'r1': [inventory('VCPU', 16, 16),
                       inventory('MEMORY_MB', 4096, 4096)],
                'd0': [inventory('CUSTOM_CACHE_DOMAIN_VCPU', 8, 8),
                       inventory('CUSTOM_CACHE_DOMAIN_MEMBOUND', 1, 1)],
                'd1': [inventory('CUSTOM_CACHE_DOMAIN_VCPU', 4, 4)],
                'd2': [inventory('CUSTOM_CACHE_DOMAIN_VCPU', 8, 8,
                                 reserved=8)],
                'r2': [inventory('VCPU', 8, 8)],
                'h2': [inventory('CUSTOM_CACHE_DOMAIN_VCPU', 16, 5)]})
        source = sources.ApiSource(
            session.Session(), nova=None, endpoint='http://127.0.0.1:9',
            placement=types.SimpleNamespace(placement=placement))
        got = source.placement_limits({'a': 'r1', 'b': 'r2', 'c': 'r3'})
        self.assertEqual({'a': sources.Limits(16, {'L3-0': 8, 'L3-1': 4}),
                          'b': sources.Limits(8, {})}, got)
        self.assertIn('Cache rebalance audit plans host c without '
                      'Placement\'s max_unit: ', log.output)
        # One listing and the inventories of the root and of each
        # domain provider per host.
        self.assertEqual(
            [('providers', {'in_tree': 'r1'}), ('inventories', 'r1'),
             ('inventories', 'd0'), ('inventories', 'd1'),
             ('inventories', 'd2'), ('providers', {'in_tree': 'r2'}),
             ('inventories', 'r2'), ('providers', {'in_tree': 'r3'})],
            placement.asked)

    def test_no_vcpu_inventory_no_root_limit(self):
        placement = FakePlacement({'r1': [provider('r1', 'cn1')]}, {})
        source = sources.ApiSource(
            session.Session(), nova=None, endpoint='http://127.0.0.1:9',
            placement=types.SimpleNamespace(placement=placement))
        self.assertEqual({'a': sources.Limits(None, {})},
                         source.placement_limits({'a': 'r1'}))
