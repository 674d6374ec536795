"""The agent reporting to a real Placement and a real RabbitMQ.

libvirt's test:///default driver, the real Placement WSGI service on the
machine's MariaDB, and RabbitMQ on 127.0.0.1:5672 (plus a closed port for
the outage).
"""

import contextlib
import io
import json
from unittest import mock
import uuid as uuid_mod

import fixtures
import kombu
from oslo_config import cfg
import oslo_messaging

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import placement_report
from nova_cacheaware.cmd import agent as agent_cmd
from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import placement as names
from nova_cacheaware import notifications
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import domain_order
from nova_cacheaware.scheduler import state_cache
from tests.functional.agent import base
from tests.functional import test_host_state_bus as bus
from tests import placement_fixtures

FOUR = base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))
VCPU = names.RC_DOMAIN_VCPU
MEMBOUND = names.RC_DOMAIN_MEMBOUND
CLOSED_RABBIT = 'rabbit://guest:guest@127.0.0.1:9/'


class FoundMemoryBound(object):
    """A classifier double: 'auto' VMs found memory-bound, or not."""

    def __init__(self):
        self.found = set()
        self.other = set()

    def observe(self, snapshot):
        pass

    def window(self, snapshot, plan_input, plan, decisions):
        return None  # no sampling window

    def memory_bound(self):
        return set(self.found)

    def not_memory_bound(self):
        return set(self.other)


class PlacementService(object):
    """One real Placement service for the class (it takes seconds)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.service = None
        if placement_fixtures.mariadb_available():
            cls.service = placement_fixtures.PlacementService()
            cls.service.setUp()

    @classmethod
    def tearDownClass(cls):
        if cls.service is not None:
            cls.service.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.require(self.service is not None, 'MariaDB for Placement')
        self.client = self.service.client

    def compute_node(self, ratio=4.0):
        """A compute node provider as nova-compute leaves it."""
        rp_uuid = str(uuid_mod.uuid4())
        name = 'cn-%s.example.org' % rp_uuid[:8]
        self.client.post('/resource_providers', {'name': name,
                                                 'uuid': rp_uuid})
        self.client.put_inventories(rp_uuid, 0, {'VCPU': {
            'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8,
            'step_size': 1, 'allocation_ratio': ratio}})
        return rp_uuid, name

    def allocate(self, consumer, rp_uuid, resources):
        self.client.put('/allocations/%s' % consumer, {
            'allocations': {rp_uuid: {'resources': resources}},
            'project_id': str(uuid_mod.uuid4()),
            'user_id': str(uuid_mod.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            expected=(204,))

    def inventory(self, rp_uuid, rc):
        return self.client.get_inventories(rp_uuid)['inventories'][rc]


class PlacementReportingTest(PlacementService, base.AgentTestCase):

    def test_sync_reserved_held_and_outage(self):
        root, name = self.compute_node()
        held = self.define(2, cpuset='0-7', workload='cpu')
        auto_a = self.define(2, cpuset='0-7')
        auto_b = self.define(2, cpuset='0-7')
        classifier = FoundMemoryBound()
        classifier.found.add(auto_a)
        reporter = placement_report.PlacementSyncReporter(
            self.client, lambda: name)
        agent = self.agent(FOUR)
        agent.placement = reporter
        agent.repin.classifier = classifier

        agent.reconcile()
        # Pass 1: one provider per domain, the root's VCPU ratio, and the
        # classified VM put in L2-0 reserves its MEMBOUND slot.
        self.assertEqual(root, reporter.root_uuid)
        rps = reporter.provider_uuids()
        self.assertEqual(['L2-0', 'L2-1', 'L2-2', 'L2-3'], sorted(rps))
        for rp in rps.values():
            self.assertEqual(
                {'total': 2, 'reserved': 0, 'min_unit': 1, 'max_unit': 2,
                 'step_size': 1, 'allocation_ratio': 4.0},
                self.inventory(rp, VCPU))
        self.assertEqual({0: (0, 1), 1: (0, 1)}, self.live_pins(auto_a))
        self.assertEqual(
            [1, 0, 0, 0], [self.inventory(rps[d], MEMBOUND)['reserved']
                           for d in sorted(rps)])

        # The 'held' instance gets an allocation in L2-2 (a resize, say),
        # and someone's memory-bound VM takes L2-1's only MEMBOUND slot.
        self.allocate(held, rps['L2-2'], {VCPU: 2})
        self.allocate(str(uuid_mod.uuid4()), rps['L2-1'],
                      {VCPU: 2, MEMBOUND: 1})
        classifier.found.add(auto_b)
        # (its vCPUs sit in L2-1 already, so the planner keeps it there)
        for vcpu in (0, 1):
            self.hv.pin_vcpu(auto_b, vcpu, (2, 3))
        agent.handle_events([(held, 'started')])
        one = agent.reconcile()
        got = {d.uuid: d for d in one.decisions}
        self.assertEqual({0: (4, 5), 1: (4, 5)}, self.live_pins(held))
        self.assertEqual('holds L2-2 in Placement', got[held].reason)
        self.assertEqual({held: 'L2-2'}, agent.last_held)
        # auto_b is memory-bound in L2-1, whose slot an allocation uses:
        # reserved stays 0 there, never over capacity.
        self.assertEqual({0: (2, 3), 1: (2, 3)}, self.live_pins(auto_b))
        self.assertEqual({'L2-0': 1, 'L2-1': 1},
                         agent.placement_side.membound_reserved(
                             one.decisions, agent.repin.classifier))
        self.assertEqual(
            [1, 0, 0, 0], [self.inventory(rps[d], MEMBOUND)['reserved']
                           for d in sorted(rps)])

        # Placement down: the held instance keeps its domain, pins stay.
        reporter.client = placement_fixtures.client_for_endpoint(
            'http://127.0.0.1:9')
        agent.handle_events([(held, 'rebooted')])
        self.pin_as_agent(held, 0, (7,))
        again = agent.reconcile()
        self.assertEqual({held: 'L2-2'}, agent.last_held)
        self.assertEqual({0: (4, 5), 1: (4, 5)}, self.live_pins(held))
        self.assertEqual([(held, 0, (4, 5))], again.result.succeeded)

    def test_required_instances_close_their_domains(self):
        # Per-domain model: Placement names each instance's domain; the
        # agent publishes which hold a cache_clean=required instance
        # (payload 1.5) and the scheduler keeps a preferred request out.
        _root, name = self.compute_node(ratio=1.0)
        reporter = placement_report.PlacementSyncReporter(
            self.client, lambda: name)
        agent = self.agent(FOUR)
        agent.placement = reporter
        sent = []
        agent.publisher = mock.Mock(publish=sent.append)
        agent.reconcile()
        rps = reporter.provider_uuids()
        spec = {'cacheaware:workload': 'memory',
                'cacheaware:cache_share': 'all'}
        required = self.define(2, cpuset='0-7', extra=dict(
            spec, **{'cacheaware:cache_clean': 'required'}))
        preferred = self.define(2, cpuset='0-7', extra=dict(
            spec, **{'cacheaware:cache_clean': 'preferred'}))
        self.allocate(required, rps['L2-1'], {VCPU: 2, MEMBOUND: 1})
        self.allocate(preferred, rps['L2-2'], {VCPU: 2})
        agent.handle_events([(u, 'started') for u in (required, preferred)])
        agent.reconcile()
        state = notify.to_host_cache_state(sent[-1], name)
        self.assertEqual({'L2-0': 0, 'L2-1': 1, 'L2-2': 0, 'L2-3': 0},
                         {d.id: d.required_holders for d in state.domains})
        self.assertEqual(frozenset({'L2-1'}), state.required_domains)
        ledger = claims.ClaimLedger(600, 60)
        host = mock.Mock(uuid=_root, num_instances=2,
                         cpu_allocation_ratio=1.0)
        cands = [{'allocations': {rps[d]: {'resources': {VCPU: 1}}}}
                 for d in ('L2-1', 'L2-3')]
        ordered = domain_order.order_candidates(
            host, cands, 1, True, str(uuid_mod.uuid4()), state, 0.0, ledger)
        self.assertEqual([rps['L2-3']],
                         [domain_order.candidate_provider(c)
                          for c in ordered])

    def test_placement_accepts_inventory_below_usage(self):
        # Why the reporter clamps: Placement takes a write that leaves a
        # provider's usage above its capacity (it only logs a warning), so
        # a careless sync could over-commit a domain.
        root, name = self.compute_node()
        reporter = placement_report.PlacementSyncReporter(
            self.client, name, membound_total=1)
        reporter.sync_domains(FOUR, range(8))
        rp = reporter.provider_uuids()['L2-3']
        self.allocate(str(uuid_mod.uuid4()), rp, {MEMBOUND: 1})
        # The reporter does not write such a value ...
        self.assertEqual({'L2-0': 1, 'L2-1': 0, 'L2-2': 0, 'L2-3': 0},
                         reporter.set_membound_reserved({'L2-0': 1,
                                                         'L2-3': 1}))
        self.assertEqual(0, self.inventory(rp, MEMBOUND)['reserved'])
        # ... which Placement would accept: used 1, capacity 0.
        doc = self.client.get_inventories(rp)
        inv = dict(doc['inventories'])
        inv[MEMBOUND] = dict(inv[MEMBOUND], reserved=1)
        self.client.put_inventories(rp, doc['resource_provider_generation'],
                                    inv)
        self.assertEqual(1, self.inventory(rp, MEMBOUND)['reserved'])
        self.assertEqual({MEMBOUND: 1, VCPU: 0}, self.client.get(
            '/resource_providers/%s/usages' % rp)['usages'])

    def test_topology_change_resyncs(self):
        root, name = self.compute_node()
        self.define(2, cpuset='0-7', workload='memory')
        reporter = placement_report.PlacementSyncReporter(self.client, name)
        agent = self.agent(FOUR)
        agent.placement = reporter
        created = []
        real_full_sync = reporter._full_sync

        def full_sync(*args):
            result = real_full_sync(*args)
            created.extend(result.created)
            return result
        reporter._full_sync = full_sync
        agent.reconcile()
        # The first pass syncs before it decides (to know the providers);
        # the pass after one that wrote compares in full (no write); from
        # then on an unchanged tree is one read and no sync.
        self.assertEqual(['L2-0', 'L2-1', 'L2-2', 'L2-3'], created)
        agent.reconcile()
        second = reporter.last_sync
        self.assertEqual((0, ['L2-0', 'L2-1', 'L2-2', 'L2-3']),
                         (second.writes, second.unchanged))
        agent.reconcile()
        self.assertIs(second, reporter.last_sync)
        # CPUs 6-7 leave the shared set: L2-3 has no usable CPU left.
        agent.usable_cpus = tuple(range(6))
        agent.reconcile()
        self.assertEqual(['L2-3'], reporter.last_sync.deleted)
        self.assertEqual(['L2-0', 'L2-1', 'L2-2'],
                         sorted(reporter.provider_uuids()))

    def test_compute_node_not_found(self):
        reporter = placement_report.PlacementSyncReporter(
            self.client, 'no-such-%s' % uuid_mod.uuid4().hex[:8])
        e = self.assertRaises(placement_report.ComputeNodeNotFound,
                              reporter.sync_domains, FOUR, range(8))
        self.assertIn('no resource provider named no-such-', str(e))

    # build_agent wires both reporters from the configuration file.
    def test_once_syncs_and_publishes(self):
        root, name = self.compute_node(ratio=2.0)
        m = self.define(2, cpuset='0-7', workload='memory')
        tmp = self.useFixture(fixtures.TempDir())
        with open(tmp.join('specs.json'), 'w') as f:
            json.dump(self.specs, f)
        conf = tmp.join('agent.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\n'
                    '[agent]\nlibvirt_uri = test:///default\n'
                    'spec_source = file\nspec_file = %s\n'
                    'report_placement = true\nhypervisor_hostname = %s\n'
                    'notifications = true\nhost = compute-y\n'
                    '[placement]\nauth_type = admin_token\n'
                    'endpoint = %s\ntoken = admin\n'
                    '[topology]\nsource = libvirt\n'
                    'libvirt_uri = test:///default\n'
                    % (CLOSED_RABBIT, tmp.join('specs.json'), name,
                       self.service.endpoint))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent_cmd.main(['--config-file', conf, '--once'],
                                hv=self.hv)
        self.assertEqual(0, rc, err.getvalue())
        kids = [p for p in self.client.providers_in_tree(root)
                if p['uuid'] != root]
        # The default provider model: one host provider.
        self.assertEqual([name + ':cacheaware'],
                         [p['name'] for p in kids])
        self.assertEqual(2.0, self.inventory(kids[0]['uuid'],
                                             VCPU)['allocation_ratio'])
        # The bus (a closed port) failed and said so; the agent went on.
        self.assertIn('cannot send cacheaware.host.state on topic '
                      'cacheaware_host_state', err.getvalue())
        self.assertIn(m[:8], out.getvalue())


class BusReportingTest(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.require(bus.rabbit_reachable(), 'RabbitMQ on 127.0.0.1:5672')
        run = uuid_mod.uuid4().hex[:12]
        self.exchange = 'cacheaware-test-%s' % run
        self.topic = 'cacheaware_test_%s' % run
        self.pool = 'cacheaware-test-%s' % run
        self.conf = cfg.ConfigOpts()
        self.conf([], project='cacheaware-test')
        oslo_messaging.get_notification_transport(
            self.conf, url=bus.RABBIT_URL).cleanup()
        self.conf.set_override('control_exchange', self.exchange)

    def _delete_rabbit_objects(self):
        with kombu.Connection(bus.KOMBU_URL) as conn:
            channel = conn.channel()
            channel.queue_delete(self.pool)
            channel.exchange_delete(self.exchange)

    def transport(self, url):
        transport = oslo_messaging.get_notification_transport(self.conf,
                                                              url=url)
        self.addCleanup(transport.cleanup)
        return transport

    def test_bus_down_then_up(self):
        mem = self.define(2, cpuset='0-7', workload='memory')
        cpu = self.define(1, cpuset='0-7', workload='cpu')
        agent = self.agent(FOUR)
        down = notify.NotificationStatePublisher(
            self.transport(CLOSED_RABBIT), 'compute-x', self.topic)
        agent.publisher = down
        one = agent.reconcile()
        # RabbitMQ down: pinned all the same, the state kept for later.
        self.assertEqual({0: (0, 1), 1: (0, 1)}, self.live_pins(mem))
        self.assertEqual(2, one.result.repins)
        self.assertEqual((1, 0), (down.failed, down.sent))
        self.assertEqual('compute-x', down.pending.host)

        # The real RabbitMQ and a scheduler-side listener.
        transport = self.transport(bus.RABBIT_URL)
        self.addCleanup(self._delete_rabbit_objects)
        cache = state_cache.HostStateCache(ttl=60)
        listener = notifications.start_host_state_listener(
            transport, cache, self.topic, self.pool)
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        up = notify.NotificationStatePublisher(transport, 'compute-x',
                                               self.topic)
        agent.publisher = up
        agent.reconcile()
        self.assertEqual((0, 1), (up.failed, up.sent))
        self.assertTrue(bus.wait_for(lambda: cache.get('compute-x')))
        got = cache.get('compute-x')
        self.assertEqual(
            # Payload 1.2: the memory-bound VM's 2 vCPUs are kept in L2-0;
            # the CPU-bound one floats over several domains (not counted).
            (host_state.DomainState('L2-0', 'clean', (mem,), 2, None, 2),
             host_state.DomainState('L2-1', 'empty', (), 2, None, 0),
             host_state.DomainState('L2-2', 'empty', (), 2, None, 0),
             host_state.DomainState('L2-3', 'empty', (), 2, None, 0)),
            got.domains)
        # Payload 2.0: the instances, no per-VM records.
        self.assertEqual(({mem, cpu}, (), '2.0'),
                         (got.instance_uuids, got.vms, got.version))
        self.assertTrue(got.agent_healthy)
