"""The agent against libvirt's test:///default driver (8 pinnable CPUs)."""

import threading
import time
import uuid as uuid_mod

import fixtures
import libvirt

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import hypervisor
from nova_cacheaware.agent import reporting
from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.virt import domain as port_domain
from tests.fixtures import nova_domains
from tests.functional.agent import base

ALL = tuple(range(8))
# Four L2 clusters of two CPUs (an E-core-like layout on the 8 CPUs the
# test driver lets us pin to).
FOUR = base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))


class ReconcileTest(base.AgentTestCase):

    def test_mixed_host(self):
        m = [self.define(2, cpuset='0-7', workload='memory')
             for _ in range(3)]
        # A cpu-bound VM we had pinned before: its pins go back to Nova's.
        cpu = self.define(1, cpuset='0-7', workload='cpu')
        self.pin_as_agent(cpu, 0, (5,))
        # Pinned by an operator: never undone.
        hand = self.define(1, cpuset='0-7', workload='io')
        self.dom(hand).pinVcpuFlags(0, tuple(i == 4 for i in range(8)), 0)
        narrow = self.define(2, cpuset='0-5', workload='memory')
        narrow_before = self.live_pins(narrow)
        dedicated = self.define(2, pins={0: '6', 1: '7'},
                                extra={'hw:cpu_policy': 'dedicated'})
        numa = self.define(2, pins={0: '0-3', 1: '4-7'}, workload='memory')
        auto = self.define(2, cpuset='0-7')

        one = self.agent(FOUR).reconcile()
        got = {d.uuid: d for d in one.decisions}
        placed = {}
        for uuid in m:
            pins = self.live_pins(uuid)
            self.assertEqual(1, len(set(pins.values())), pins)
            placed[uuid] = pins[0]
            self.assertEqual(repinning.REPIN, got[uuid].action)
        # Three memory-bound VMs, three different domains (all Clean).
        self.assertEqual(3, len(set(placed.values())))
        self.assertTrue(all(len(c) == 2 for c in placed.values()))
        self.assertEqual({0: ALL}, self.live_pins(cpu))
        self.assertEqual(repinning.RESTORE, got[cpu].action)
        self.assertEqual({0: (4,)}, self.live_pins(hand))
        self.assertEqual(repinning.KEEP, got[hand].action)
        # (the test driver reports every CPU for a <vcpu cpuset> guest)
        self.assertEqual(narrow_before, self.live_pins(narrow))
        self.assertEqual(repinning.KEEP, got[narrow].action)
        self.assertEqual('Nova does not allow CPUs 6-7', got[narrow].reason)
        self.assertEqual({0: (6,), 1: (7,)}, self.live_pins(dedicated))
        self.assertEqual(repinning.AUDIT, got[dedicated].action)
        self.assertEqual({0: (0, 1, 2, 3), 1: (4, 5, 6, 7)},
                         self.live_pins(numa))
        self.assertEqual({0: ALL, 1: ALL}, self.live_pins(auto))
        self.assertEqual(7, one.result.repins)
        self.assertEqual([], one.result.failed)
        self.assertEqual([], one.problems)

        # Our metadata records the vCPUs we pinned, for the migration hook.
        meta = self.dom(m[0]).metadata(2, domain_xml.AGENT_NS, 0)
        self.assertEqual(['<vcpu id="0" nova_cpuset=""/>',
                          '<vcpu id="1" nova_cpuset=""/>'],
                         [line.strip() for line in meta.splitlines()[1:-1]])

        # A restarted agent (new connection, new state) changes nothing.
        again = self.agent(FOUR, hv=self.make_hypervisor()).reconcile()
        self.assertEqual(0, again.result.repins)
        self.assertEqual(placed, {u: self.live_pins(u)[0] for u in m})

    def test_many_domains(self):
        uuids = [self.define(1, cpuset='0-7', workload='memory')
                 for _ in range(8)]
        uuids += [self.define(2, cpuset='0-7', workload='io')
                  for _ in range(24)]
        one = self.agent(FOUR).reconcile()
        self.assertEqual(32, len(one.decisions))
        self.assertEqual(8, one.result.repins)
        used = {}
        for uuid in uuids[:8]:
            (cpus,) = set(self.live_pins(uuid).values())
            used[cpus] = used.get(cpus, 0) + 1
        # Capacity two vCPUs per domain: two 1-vCPU VMs in each (Dirty).
        self.assertEqual({(0, 1): 2, (2, 3): 2, (4, 5): 2, (6, 7): 2}, used)
        self.assertEqual(0, self.agent(FOUR).reconcile().result.repins)

    def test_usable_cpus_restrict_domains(self):
        uuid = self.define(1, cpuset='2-5', workload='memory')
        one = self.agent(FOUR, usable=(2, 3, 4, 5)).reconcile()
        self.assertEqual(
            [{'id': 'L2-1', 'cpus': [2, 3]}, {'id': 'L2-2', 'cpus': [4, 5]}],
            cachedomain_model.input_to_dict(one.plan_input)['domains'])
        self.assertEqual({0: (2, 3)}, self.live_pins(uuid))

    def test_dry_run_and_rate_limit(self):
        uuids = [self.define(2, cpuset='0-7', workload='memory')
                 for _ in range(3)]
        dry = self.agent(FOUR, dry_run=True).reconcile()
        self.assertEqual(6, len(dry.result.dry_run))
        self.assertEqual([{0: ALL, 1: ALL}] * 3,
                         [self.live_pins(u) for u in uuids])
        agent = self.agent(FOUR, limit=4)
        first = agent.reconcile()
        self.assertEqual((4, 2), (first.result.repins,
                                  len(first.result.deferred)))
        # The limiter window (60 s) is still full: nothing more now.
        self.assertEqual(0, agent.reconcile().result.repins)
        # A fresh agent (new window) finishes the job.
        self.assertEqual(2, self.agent(FOUR).reconcile().result.repins)

    def test_domain_destroyed_mid_action(self):
        a = self.define(2, cpuset='0-7', workload='memory')
        b = self.define(2, cpuset='0-7', workload='memory')
        agent = self.agent(FOUR)
        snapshot = agent.observe()
        _, _, decisions = agent.decide(snapshot)
        self.dom(a).destroy()
        result = agent.repin.actuator.apply(decisions)
        self.assertEqual([a], sorted({f[0] for f in result.failed}))
        self.assertIn('is gone', result.failed[0][2])
        self.assertEqual(2, result.repins)
        self.assertEqual(1, len(set(self.live_pins(b).values())))

    def test_domain_stopped_while_listing(self):
        # Seen in the devcloud: a server deleted between the listing and
        # the live pin read gives "domain is not running"; the pass goes
        # on with the other domains instead of failing as a whole.
        import libvirt
        a = self.define(2, cpuset='0-7', workload='memory')
        b = self.define(2, cpuset='0-7', workload='memory')
        real = self.hv._instance

        def stopped(dom, host):
            if dom.uuid == a:
                # As the port's live pin read raises it.
                with port_domain.gone_if_missing(a, not_running=True):
                    e = libvirt.libvirtError('Requested operation is not '
                                             'valid: domain is not running')
                    e.err = (libvirt.VIR_ERR_OPERATION_INVALID, 10, str(e),
                             2, None, None, None, 0, 0)
                    raise e
            return real(dom, host)

        self.hv._instance = stopped
        self.assertEqual([b], [i.uuid for i in self.hv.list_instances()])

    def test_stopped_domains_are_ignored(self):
        self.define(2, cpuset='0-7', workload='memory', start=False)
        self.assertEqual([], self.agent(FOUR).reconcile().decisions)

    def test_agent_pins_in_a_migrated_saved_definition(self):
        # After a live migration the saved definition is the source's
        # running XML: the source agent's pin of vCPU 1 and its record.
        uuid = str(uuid_mod.uuid4())
        xml = nova_domains.domain_xml('nca-%s' % uuid[:8], 2, cpuset='0-7',
                                      pins={1: '5'}, uuid=uuid)
        xml = xml.replace('</metadata>', (
            '<pins xmlns="%s"><vcpu id="1" nova_cpuset=""/></pins>'
            '</metadata>') % domain_xml.AGENT_NS)
        self._define_mine(uuid, xml, 'memory', None)
        [instance] = self.hv.list_instances()
        # Nova's CPUs, not the source agent's pin.
        self.assertEqual({0: ALL, 1: ALL}, instance.nova.allowed)
        self.assertFalse(instance.nova.nova_pinned)
        got = {d.uuid: d for d in self.agent(FOUR).reconcile().decisions}
        self.assertEqual(repinning.REPIN, got[uuid].action)
        pins = self.live_pins(uuid)
        self.assertEqual(1, len(set(pins.values())), pins)

    def test_dump_state_is_the_plan_input(self):
        uuid = self.define(2, cpuset='0-7', workload='memory')
        agent = self.agent(FOUR)
        doc = agent.dump_state()
        one = agent.reconcile()
        self.assertEqual({'domains', 'max_vcpus_per_cpu', 'vms', 'agent',
                          'objective'}, set(doc))
        self.assertEqual('contract', doc['objective'])
        self.assertEqual(
            cachedomain_model.input_to_dict(one.plan_input),
            {k: v for k, v in doc.items() if k not in ('agent', 'objective')})
        self.assertEqual(one.plan_input,
                         cachedomain_model.input_from_dict(doc))
        info = doc['agent']['instances'][uuid]
        self.assertEqual({'0': list(ALL), '1': list(ALL)}, info['allowed'])
        self.assertEqual({'cacheaware:workload': 'memory'},
                         info['extra_specs'])
        self.assertEqual('floating', info['movable_reason'])


class EventsTest(base.AgentTestCase):

    def test_started_domain_is_pinned_by_the_event(self):
        agent = self.agent(FOUR)
        thread = threading.Thread(target=agent.run, args=(3600.0,),
                                  daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(agent.stop)
        time.sleep(0.5)  # first (empty) pass done, waiting for 1 h
        uuid = self.define(2, cpuset='0-7', workload='memory')
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pins = self.live_pins(uuid)
            if len(set(pins.values())) == 1 and len(pins[0]) == 2:
                break
            time.sleep(0.05)
        self.assertEqual(1, len(set(pins.values())))
        self.assertEqual(2, len(pins[0]))


class BrokenPlacement(reporting.PlacementReporter):
    """Placement that is down until ``up`` is set."""

    def __init__(self):
        self.up = False
        self.synced = 0

    def sync_domains(self, domain_set, usable_cpus):
        if not self.up:
            raise ConnectionRefusedError('placement is down')
        self.synced += 1

    def set_membound_reserved(self, reserved_by_domain):
        pass


class BrokenBus(reporting.StatePublisher):
    def publish(self, state):
        raise ConnectionRefusedError('rabbitmq is down')


class ReportersDownTest(base.AgentTestCase):

    def test_pinning_goes_on_and_placement_sync_is_retried(self):
        uuid = self.define(2, cpuset='0-7', workload='memory')
        placement = BrokenPlacement()
        agent = self.agent(FOUR)
        agent.placement, agent.publisher = placement, BrokenBus()
        self.assertEqual(2, agent.reconcile().result.repins)
        self.assertEqual(1, len(set(self.live_pins(uuid).values())))
        self.assertEqual(0, placement.synced)
        placement.up = True
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.agent.outage'))
        agent.reconcile()
        agent.reconcile()
        # Reconciled every pass (the reporter makes an unchanged tree one
        # read); the outage's end logged once.
        self.assertEqual(2, placement.synced)
        self.assertRegex(log.output, r'^Placement recovered after \d+ s\n$')


class RealPlannerTest(base.AgentTestCase):
    """The agent with the real planner."""

    def test_reconcile_with_the_real_planner(self):
        planner = repinning.Planner()
        m = [self.define(2, cpuset='0-7', workload='memory')
             for _ in range(3)]
        self.define(1, pins={0: '7'}, extra={'hw:cpu_policy': 'dedicated'})
        self.define(2, cpuset='0-7', workload='io')
        agent = self.agent(FOUR)
        agent.repin.planner = planner
        one = agent.reconcile()
        self.assertEqual([], one.result.failed)
        placed = [self.live_pins(u)[0] for u in m]
        self.assertEqual(3, len(set(placed)))  # three Clean domains
        for u, cpus in zip(m, placed):
            self.assertEqual({0: cpus, 1: cpus}, self.live_pins(u))
            self.assertIn(cpus, [(0, 1), (2, 3), (4, 5), (6, 7)])
        self.assertEqual(0, agent.reconcile().result.repins)


class ReplacedConnectionTest(base.AgentTestCase):

    def test_a_call_whose_connection_another_thread_replaced_completes(self):
        used = []

        def lookup(conn):
            used.append(conn)
            # What the event subscription at the agent's start does
            # from its thread while another is in a call: drop the
            # connection and open a new, live one.
            with self.hv._lock:
                self.hv._drop()
                self.hv.connection()
            # The call goes on on its own connection, closed only after.
            return conn.getURI()

        self.assertEqual(self.uri, self.hv.call(lookup))
        self.assertEqual(1, len(used))
        self.assertIsNot(used[0], self.hv._conn)
        self.assertEqual(self.uri, self.hv.call(lambda c: c.getURI()))
        self.assertRaises((libvirt.libvirtError, AttributeError),
                          used[0].getURI)


class HypervisorDownTest(base.AgentTestCase):

    def test_agent_starts_and_passes_fail_softly_without_libvirtd(self):
        down = hypervisor.LibvirtHypervisor(
            'qemu+unix:///system?socket=/nonexistent/libvirt-sock')
        self.addCleanup(down.stop)
        down.start(lambda uuid, reason: None)  # does not raise
        self.assertRaises(hypervisor.HypervisorUnavailable,
                          down.list_instances)
        agent = self.agent(FOUR, hv=down)
        self.assertIsNone(agent.reconcile_safely())
