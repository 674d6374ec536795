"""Placement tells the truth under faults (issue 15, items 1-4).

Real components only: libvirt's ``test:///default`` driver under the agent,
the real Placement WSGI service on the machine's MariaDB (stopped for real
for the outage), and for liveness real ``nova-cacheaware-agent`` processes
publishing over the machine's RabbitMQ to a real listener that feeds the
real ``CacheDomainFilter``.

Measured times are appended, one JSON object a line, to the file named by
``NOVA_CACHEAWARE_FAULT_TIMES`` when it is set
(``benchmarks/fault_times.py`` runs this module that way).
"""

import json
import os
import threading
import time
import uuid as uuid_mod

import fixtures

from nova_cacheaware.agent import placement_report
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.placement import client as placement_client
from nova_cacheaware.topology import domains
from tests.functional.agent import base
from tests.functional.agent import test_reporting
from tests import placement_fixtures

FOUR = test_reporting.FOUR
VCPU = names.RC_DOMAIN_VCPU
MEMBOUND = names.RC_DOMAIN_MEMBOUND
CLEAN = {'cacheaware:cache_share': 'all', 'cacheaware:workload': 'memory',
         'cacheaware:cache_clean': 'required'}
#: The same eight CPUs as two L3 domains (the agent's cache level changed).
TWO_L3 = domains.DomainSet(level=3, fallback=False, domains=tuple(
    domains.CacheDomain('L3-%d' % i, 3, tuple(cpus), 16384, (0,))
    for i, cpus in enumerate(((0, 1, 2, 3), (4, 5, 6, 7)))))


def agent_trait_everywhere(client, root):
    """True when each of our providers under ``root`` has the agent trait.

    False when there is none.
    """
    ours = [p['uuid'] for p in client.providers_in_tree(root)
            if p.get('parent_provider_uuid') == root
            and names.is_ours(p['name'])]
    return bool(ours) and all(
        names.TRAIT_AGENT in client.get_traits(uuid)['traits']
        for uuid in ours)


def agent_trait_anywhere(client, root):
    """True when any provider in ``root``'s tree carries the trait."""
    return any(names.TRAIT_AGENT in client.get_traits(p['uuid'])['traits']
               for p in client.providers_in_tree(root))


def record(fault, **figures):
    """Append one measurement for benchmarks/fault_times.py."""
    path = os.environ.get('NOVA_CACHEAWARE_FAULT_TIMES')
    if path:
        with open(path, 'a') as f:
            f.write(json.dumps(dict(fault=fault, **figures)) + '\n')


def wait_until(predicate, timeout, step=0.05):
    """Poll ``predicate``; the seconds it took, or None on timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(step)
    return None


class CountingClient(placement_client.PlacementClient):
    """The real client, remembering each request's method and path."""

    def __init__(self, client):
        super().__init__(client._adapter)
        self.calls = []

    def request(self, method, url, body=None, expected=(200,)):
        self.calls.append((method, url.split('?')[0]))
        return super().request(method, url, body=body, expected=expected)


class HandEditsTest(test_reporting.PlacementService, base.AgentTestCase):

    def root_traits(self, root):
        return set(self.client.get_traits(root)['traits'])

    def test_hand_edits_are_undone_within_one_pass(self):
        root, name = self.compute_node()
        self.define(1, cpuset='0-7', workload='cpu')
        client = CountingClient(self.client)
        reporter = placement_report.PlacementSyncReporter(client, name)
        agent = self.agent(FOUR)
        agent.placement = reporter
        agent.reconcile()
        agent.reconcile()   # the pass after writes compares in full
        client.calls.clear()
        agent.reconcile()
        # An unchanged tree: one read, nothing else.
        self.assertEqual([('GET', '/resource_providers')], client.calls)

        rps = reporter.provider_uuids()
        self.client.delete_provider(rps['L2-1'])
        doc = self.client.get_inventories(rps['L2-2'])
        inv = dict(doc['inventories'])
        inv[VCPU] = dict(inv[VCPU], total=99, max_unit=99)
        self.client.put_inventories(rps['L2-2'],
                                    doc['resource_provider_generation'], inv)
        doc = self.client.get_traits(rps['L2-3'])
        self.client.put_traits(rps['L2-3'],
                               doc['resource_provider_generation'], [])
        root_traits = self.root_traits(root)
        start = time.monotonic()
        agent.reconcile()
        took = time.monotonic() - start
        record('provider deleted / edited by hand', pass_s=round(took, 3))

        self.assertEqual(rps, reporter.provider_uuids())
        self.assertEqual(['L2-1'], reporter.last_sync.created)
        for domain in sorted(rps):
            self.assertEqual(2, self.inventory(rps[domain], VCPU)['total'])
        self.assertEqual(
            {names.TRAIT_DOMAIN, 'CUSTOM_CACHE_L2', names.TRAIT_AGENT},
            set(self.client.get_traits(rps['L2-3'])['traits']))
        # The root is Nova's: the agent never writes it.
        self.assertEqual(root_traits, self.root_traits(root))

    def test_a_compute_node_registered_again_is_followed(self):
        root, name = self.compute_node()
        reporter = placement_report.PlacementSyncReporter(self.client, name)
        reporter.sync_domains(FOUR, range(8))
        # The compute service is deleted and registered again: Nova's
        # provider (and our children with it) gone, a new uuid, same name.
        for rp in reporter.provider_uuids().values():
            self.client.delete_provider(rp)
        self.client.delete_provider(root)
        new_root = str(uuid_mod.uuid4())
        self.client.post('/resource_providers', {'name': name,
                                                 'uuid': new_root})
        result = reporter.sync_domains(FOUR, range(8))
        self.assertEqual((new_root, ['L2-0', 'L2-1', 'L2-2', 'L2-3']),
                         (reporter.root_uuid, result.created))
        self.assertEqual(
            sorted(reporter.provider_uuids().values()),
            sorted(p['uuid'] for p in self.client.providers_in_tree(new_root)
                   if p['uuid'] != new_root))

    def test_a_total_never_falls_below_what_is_allocated(self):
        root, name = self.compute_node(ratio=4.0)
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.placement.provider_sync'))
        reporter = placement_report.PlacementSyncReporter(self.client, name)
        reporter.sync_domains(FOUR, range(8))
        rp = reporter.provider_uuids()['L2-3']
        consumers = [str(uuid_mod.uuid4()) for _ in range(3)]
        for consumer in consumers:   # max_unit 2
            self.allocate(consumer, rp, {VCPU: 2})
        # CPU 7 leaves the shared set: L2-3 would be 1 CPU, capacity 4 < 6.
        result = reporter.sync_domains(FOUR, range(7))
        self.assertEqual(['%s:%s' % (rp, VCPU)], result.floored)
        self.assertEqual(
            {'total': 2, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
             'step_size': 1, 'allocation_ratio': 4.0},
            self.inventory(rp, VCPU))
        self.assertIn('%s total 1 would fall below what allocations use '
                      '(6); kept at 2' % VCPU, log.output)
        # The allocation goes: the total follows the CPUs.
        for consumer in consumers:
            self.client.delete('/allocations/%s' % consumer)
        reporter.sync_domains(FOUR, range(7))
        self.assertEqual(1, self.inventory(rp, VCPU)['total'])

    def test_clean_holds_across_a_domain_set_change(self):
        root, name = self.compute_node()
        first = placement_report.PlacementSyncReporter(self.client, name)
        first.sync_domains(FOUR, range(8))
        old = first.provider_uuids()
        # A Clean server as Nova placed it: its allocation holds L2-0's
        # memory-bound slot; the agent pins it there.
        m1 = self.define(2, cpuset='0-7', extra=CLEAN)
        self.allocate(m1, old['L2-0'], {VCPU: 2, MEMBOUND: 1})
        agent = self.agent(FOUR)
        agent.placement = first
        agent.reconcile()
        self.assertEqual({0: (0, 1), 1: (0, 1)}, self.live_pins(m1))
        self.assertEqual({}, agent.placement_side.membound_reserved(
            agent.reconcile().decisions, agent.repin.classifier))

        # The cache level changes (L2 -> L3) and the agent restarts.
        second = placement_report.PlacementSyncReporter(self.client, name)
        agent = self.agent(TWO_L3)
        agent.placement = second
        agent.reconcile()
        new = second.provider_uuids()
        self.assertEqual(['L2-0'], second.last_sync.kept_with_allocations)
        self.assertEqual({0: (0, 1, 2, 3), 1: (0, 1, 2, 3)},
                         self.live_pins(m1))
        # m1 now runs in L3-0 and takes its slot although its allocation
        # names the retired L2-0.
        self.assertEqual(1, self.inventory(new['L3-0'], MEMBOUND)['reserved'])
        self.assertEqual(0, self.inventory(new['L3-1'], MEMBOUND)['reserved'])

        # The next cache_clean=required server: Placement offers only L3-1.
        doc = self.client.get(
            '/allocation_candidates?resources_CACHE=%s:2,%s:1&in_tree_CACHE=%s'
            % (VCPU, MEMBOUND, root))
        offered = {rp for req in doc['allocation_requests']
                   for rp in req['allocations']}
        self.assertEqual({new['L3-1']}, offered)
        m2 = self.define(2, cpuset='0-7', extra=CLEAN)
        self.allocate(m2, new['L3-1'], {VCPU: 2, MEMBOUND: 1})
        agent.handle_events([(m2, 'started')])
        agent.reconcile()
        self.assertEqual({0: (4, 5, 6, 7), 1: (4, 5, 6, 7)},
                         self.live_pins(m2))
        self.assertEqual([], self.client.get(
            '/allocation_candidates?resources_CACHE=%s:2,%s:1&in_tree_CACHE=%s'
            % (VCPU, MEMBOUND, root))['allocation_requests'])

    def test_a_clean_stop_withdraws_the_trait_and_a_start_restores_it(self):
        root, name = self.compute_node()
        doc = self.client.get_traits(root)
        self.client.ensure_trait('CUSTOM_OPERATOR_MARK')
        self.client.put_traits(root, doc['resource_provider_generation'],
                               ['CUSTOM_OPERATOR_MARK'])
        times = {}
        for round_ in ('first', 'restart'):
            agent = self.agent(FOUR)
            agent.placement = placement_report.PlacementSyncReporter(
                self.client, name)
            t = threading.Thread(target=agent.run, args=(1.0,))
            start = time.monotonic()
            t.start()
            times[round_] = wait_until(
                lambda: agent_trait_everywhere(self.client, root), 30)
            self.assertIsNotNone(times[round_])
            start = time.monotonic()
            agent.stop()
            t.join(30)
            self.assertFalse(t.is_alive())
            times[round_ + ' stop'] = time.monotonic() - start
            self.assertEqual({'CUSTOM_OPERATOR_MARK'},
                             self.root_traits(root))
            self.assertFalse(agent_trait_anywhere(self.client, root))
        record('clean stop (in process)',
               trait_removed_within_s=round(times['first stop'], 3),
               trait_back_after_start_s=round(times['restart'], 3))


class PlacementOutageTest(base.AgentTestCase):
    """The Placement WSGI service stopped for real for 30 s."""

    OUTAGE_S = 30.0

    def setUp(self):
        super().setUp()
        self.require(placement_fixtures.mariadb_available(),
                     'MariaDB for Placement')
        self.service = self.useFixture(placement_fixtures.PlacementService())
        self.client = self.service.client

    def test_agent_keeps_pinning_recovers_and_says_so(self):
        rp_uuid = str(uuid_mod.uuid4())
        name = 'cn-%s' % rp_uuid[:8]
        self.client.post('/resource_providers', {'name': name,
                                                 'uuid': rp_uuid})
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.agent.outage'))
        self.define(2, cpuset='0-7', workload='memory')
        reporter = placement_report.PlacementSyncReporter(self.client, name)
        agent = self.agent(FOUR)
        agent.placement = reporter
        t = threading.Thread(target=agent.run, args=(1.0,))
        t.start()
        self.addCleanup(t.join, 30)
        self.addCleanup(agent.stop)
        self.assertIsNotNone(wait_until(
            lambda: len(reporter.provider_uuids()) == 4, 30))

        stopped = time.monotonic()
        self.service.stop_service()
        self.assertIsNotNone(wait_until(
            lambda: 'Placement is unreachable' in log.output, 10))
        detect = time.monotonic() - stopped
        # Pinning goes on: a memory-bound VM started during the outage is
        # put All-share in a domain.
        late = self.define(2, cpuset='0-7', workload='memory')
        self.assertIsNotNone(wait_until(
            lambda: len(set(self.live_pins(late).values())) == 1
            and len(self.live_pins(late)[0]) == 2, 10))
        time.sleep(max(0.0, self.OUTAGE_S - (time.monotonic() - stopped)))
        self.assertEqual(1, log.output.count('Placement is unreachable'))
        self.service.start_service()
        recover = wait_until(lambda: 'Placement recovered after' in
                             log.output, 15)
        self.assertIsNotNone(recover)
        outage = time.monotonic() - stopped
        self.assertRegex(log.output, r'Placement recovered after \d+ s')
        # Back in sync: both memory-bound VMs hold their domains' slots.
        domain = {c: d for d, rp in reporter.provider_uuids().items()
                  for c in range(8) for dom in FOUR.domains
                  if dom.id == d and c in dom.cpus}
        late_domain = domain[self.live_pins(late)[0][0]]
        self.assertIsNotNone(wait_until(
            lambda: self.client.get_inventories(
                reporter.provider_uuids()[late_domain])['inventories'][
                MEMBOUND]['reserved'] == 1, 10))
        record('Placement WSGI service stopped',
               outage_s=round(outage, 1), detected_after_s=round(detect, 2),
               recovered_after_restart_s=round(recover, 2),
               agent_period_s=1.0)
