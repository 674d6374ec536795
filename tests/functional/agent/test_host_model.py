"""The agent in the per-host provider model, on a real Placement.

libvirt's test:///default driver and the Placement WSGI service on MariaDB.
The agent chooses the domain of every instance that holds room of the
host, pins it there, and keeps ``max_unit`` and ``reserved`` of the host
provider in line; switching from the per-domain model moves running
instances' allocations without moving the instances.
"""

import logging
import uuid as uuid_mod

import fixtures

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import placement_host_report
from nova_cacheaware.agent import placement_report
from nova_cacheaware.agent import reporting
from nova_cacheaware.cachedomain import assignment as domain_assignment
from nova_cacheaware.cachedomain import choice_doc as domain_choice_doc
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.scheduler import domain_order
from tests.functional.agent import base
from tests.functional.agent import test_reporting

FOUR = test_reporting.FOUR
VCPU = names.RC_DOMAIN_VCPU
MEMBOUND = names.RC_DOMAIN_MEMBOUND
MEMORY = {'cacheaware:workload': 'memory', 'cacheaware:cache_share': 'all',
          'cacheaware:cache_clean': 'required'}
CPU = {'cacheaware:workload': 'cpu', 'cacheaware:cache_share': 'all',
       'cacheaware:cache_clean': 'off'}
#: The CPUs of the two 4-CPU domains some tests use.
FOUR_CPUS = {'L2-0': (0, 1, 2, 3), 'L2-1': (4, 5, 6, 7)}
AUTO = {'cacheaware:workload': 'auto', 'cacheaware:cache_share': 'all',
        'cacheaware:cache_clean': 'preferred'}


class Bus(reporting.StatePublisher):
    """Keeps every state the agent publishes."""

    def __init__(self):
        self.sent = []

    def publish(self, state):
        """Keep ``state``."""
        self.sent.append(state)


class HostModelTest(test_reporting.PlacementService, base.AgentTestCase):

    def host_agent(self, name, ratio=None):
        reporter = placement_host_report.HostPlacementReporter(
            self.client, lambda: name, cpu_allocation_ratio=ratio)
        agent = self.agent(FOUR)
        agent.placement = reporter
        return agent, reporter

    def two_domains(self):
        """A host of two 4-CPU domains, its agent after a first pass.

        ``(root, name, host provider, agent, classifier double, bus)``.
        """
        root, name = self.compute_node(ratio=1.0)
        agent, reporter = self.host_agent(name)
        agent.domain_set = base.domain_set((0, 1, 2, 3), (4, 5, 6, 7))
        classifier = agent.repin.classifier = test_reporting.FoundMemoryBound()
        bus = agent.publisher = Bus()
        agent.reconcile()
        return (root, name, reporter.host_provider_uuid(), agent,
                classifier, bus)

    def required_beside_a_preferred_pair(self, root, host, agent):
        """r1 (required) in one domain, p1 and p2 (preferred) in the other.

        Two domains of 4 CPUs; every instance has 2 vCPUs.
        """
        preferred = dict(MEMORY, **{'cacheaware:cache_clean': 'preferred'})
        r1 = self.boot(root, host, MEMORY, True)
        agent.handle_events([(r1, 'started')])
        agent.reconcile()
        p1, p2 = (self.boot(root, host, preferred, False) for _ in 'ab')
        agent.handle_events([(u, 'started') for u in (p1, p2)])
        agent.reconcile()
        self.assertNotEqual(agent.last_held[r1], agent.last_held[p1])
        self.assertEqual(agent.last_held[p1], agent.last_held[p2])
        return r1, p1, p2

    def boot(self, root, host_rp, specs, slot):
        uuid = self.define(2, cpuset='0-7', extra=specs)
        resources = {VCPU: 2}
        if slot:
            resources[MEMBOUND] = 1
        self.client.put('/allocations/%s' % uuid, {
            'allocations': {root: {'resources': {'VCPU': 2}},
                            host_rp: {'resources': resources}},
            'project_id': str(uuid_mod.uuid4()),
            'user_id': str(uuid_mod.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            expected=(204,))
        return uuid

    def test_domains_chosen_and_counts_follow(self):
        root, name = self.compute_node(ratio=1.0)
        agent, reporter = self.host_agent(name)
        agent.reconcile()
        host = reporter.host_provider_uuid()
        self.assertEqual({'total': 8, 'reserved': 0, 'min_unit': 1,
                          'max_unit': 2, 'step_size': 1,
                          'allocation_ratio': 1.0},
                         self.inventory(host, VCPU))
        self.assertEqual(4, self.inventory(host, MEMBOUND)['total'])

        m1 = self.boot(root, host, MEMORY, True)
        m2 = self.boot(root, host, MEMORY, True)
        c1 = self.boot(root, host, CPU, False)
        agent.handle_events([(u, 'started') for u in (m1, m2, c1)])
        one = agent.reconcile()
        chosen = {u: agent.last_held[u] for u in (m1, m2, c1)}
        # Each in a domain of its own (2 CPUs each), as assign_domains says.
        self.assertEqual(3, len(set(chosen.values())))
        self.assertEqual(chosen, domain_assignment.assign_domains(
            {d: 2 for d in ('L2-0', 'L2-1', 'L2-2', 'L2-3')},
            # m1 and m2 hold a Clean slot in their allocations.
            [domain_assignment.HostHeld(m1, 2, True, holds_slot=True),
             domain_assignment.HostHeld(m2, 2, True, holds_slot=True),
             domain_assignment.HostHeld(c1, 2, False)]))
        cpus = {'L2-0': (0, 1), 'L2-1': (2, 3), 'L2-2': (4, 5),
                'L2-3': (6, 7)}
        for uuid, domain in chosen.items():
            self.assertEqual({0: cpus[domain], 1: cpus[domain]},
                             self.live_pins(uuid))
        got = {d.uuid: d for d in one.decisions}
        self.assertEqual((chosen[m1],), got[m1].domains)
        self.assertEqual('holds room of the host in Placement; the agent '
                         'chose %s' % chosen[m1], got[m1].reason)
        # One domain left with room for 2; two slots used. The cpu VM's
        # domain has no memory-bound VM but no room either (2 vCPUs on 2
        # CPUs), so it is no place for a Clean claim: one free Clean place
        # (the empty domain) -> 4 - 2 used - 1 free = 1 reserved.
        self.assertEqual(2, self.inventory(host, VCPU)['max_unit'])
        self.assertEqual(1, self.inventory(host, MEMBOUND)['reserved'])

        # The last domain taken by a memory-bound VM that has no slot in
        # its allocation (a flavor without the cache group's slot): no
        # free Clean place left -> reserved 2, nothing offered.
        m3 = self.boot(root, host, dict(MEMORY, **{
            'cacheaware:cache_clean': 'preferred'}), False)
        agent.handle_events([(m3, 'started')])
        agent.reconcile()
        self.assertEqual({cpus[agent.last_held[m3]]}, set(
            self.live_pins(m3).values()))
        self.assertEqual(4, len(set(agent.last_held.values())))
        self.assertEqual(1, self.inventory(host, VCPU)['max_unit'])
        self.assertEqual(2, self.inventory(host, MEMBOUND)['reserved'])
        # Capacity left for a Clean claim: 4 - 2 reserved - 2 used = 0
        # (before room counted: 1, the full cpu VM's domain). Domains stay
        # put on the next passes.
        before = dict(agent.last_held)
        agent.reconcile()
        self.assertEqual(before, agent.last_held)
        # The choice replays from the agent's dump (nova-cacheaware
        # domain-choice reads the same section).
        dump = agent.dump_state()
        capacity, held, base = domain_choice_doc.choice_from_dict(
            dump['agent']['domain_choice'])
        self.assertEqual({'L2-0': 2, 'L2-1': 2, 'L2-2': 2, 'L2-3': 2},
                         capacity)
        # Which of them hold a Clean slot, as their allocations say.
        self.assertEqual({m1: True, m2: True, c1: False, m3: False},
                         {vm.uuid: vm.holds_slot for vm in held})
        self.assertEqual(before, domain_assignment.assign_domains(
            capacity, held, base))

    def test_published_capacity_and_choice_loads_predict_the_choice(self):
        # Nova's ratio 4.0 on the root; the agent sizes the domains with
        # [agent] domain_cpu_allocation_ratio = 1.0 and says so (payload
        # 1.4), so the scheduler needs no knowledge of the agent's ratio.
        root, name = self.compute_node(ratio=4.0)
        agent, reporter = self.host_agent(name, ratio=1.0)
        bus = agent.publisher = Bus()
        agent.reconcile()
        host = reporter.host_provider_uuid()
        m1 = self.boot(root, host, MEMORY, True)
        a1 = self.boot(root, host, AUTO, False)
        agent.handle_events([(u, 'started') for u in (m1, a1)])
        agent.reconcile()
        state = notify.to_host_cache_state(bus.sent[-1], name)
        home = {agent.last_held[m1]: 'm1', agent.last_held[a1]: 'a1'}
        self.assertEqual(2, len(home))
        self.assertEqual(
            # (id, memory-bound VMs, capacity, vCPUs used, Clean holders):
            # the 'auto' VM is no memory-bound VM yet, but the choice
            # counts it against Clean.
            [(d, int(home.get(d) == 'm1'), 2, 2 if d in home else 0,
              1 if d in home else 0)
             for d in ('L2-0', 'L2-1', 'L2-2', 'L2-3')],
            [(d.id, len(d.memory_bound_vms), d.vcpus_capacity,
              d.vcpus_used, d.clean_holders) for d in state.domains])
        # Payload 1.5: m1 asks cache_clean=required, a1 only prefers it.
        self.assertEqual(
            {d: int(home.get(d) == 'm1')
             for d in ('L2-0', 'L2-1', 'L2-2', 'L2-3')},
            {d.id: d.required_holders for d in state.domains})
        # The scheduler's prediction for the next instance, from the
        # published state at Nova's ratio, is the agent's choice.
        rows = state.domain_rows(4.0)
        m2 = self.boot(root, host, MEMORY, True)
        predicted = domain_order.predict_domain(
            domain_order.host_loads(rows), 2, True, m2)
        agent.handle_events([(m2, 'started')])
        agent.reconcile()
        self.assertEqual(predicted, agent.last_held[m2])
        self.assertNotIn(predicted, home)

    def test_no_room_leaves_the_instance_on_novas_cpus(self):
        root, name = self.compute_node(ratio=1.0)
        agent, reporter = self.host_agent(name)
        agent.reconcile()
        host = reporter.host_provider_uuid()
        first = [self.boot(root, host, CPU, False) for _ in range(4)]
        agent.handle_events([(u, 'started') for u in first])
        agent.reconcile()
        self.assertEqual(4, len(set(agent.last_held[u] for u in first)))
        # A fifth claim raced in (the host counts were 8 of 8; the VCPU
        # inventory of the host provider is bypassed here on purpose).
        late = self.define(2, cpuset='0-7', extra=CPU)
        # As the reporter would have read it from such an allocation.
        reporter._held[late] = '*'
        logs = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.agent.service', level=logging.WARNING))
        agent.reconcile()
        agent.reconcile()
        # Said once, not every pass while it waits.
        self.assertEqual(1, logs.output.count(
            "no cache domain it may join has room"), logs.output)
        self.assertNotIn(late, agent.last_held)
        self.assertEqual({0: tuple(range(8)), 1: tuple(range(8))},
                         self.live_pins(late))

    def test_a_required_claim_that_raced_waits_on_novas_cpus(self):
        # Two domains of 4 CPUs. r1 (required) has one; p1 and p2
        # (memory-bound, preferred) share the other. r2 (required) raced
        # in: the only room left is beside r1, which it must not join.
        # The planner must not pin it there either.
        root, name = self.compute_node(ratio=1.0)
        agent, reporter = self.host_agent(name)
        agent.domain_set = base.domain_set((0, 1, 2, 3), (4, 5, 6, 7))
        agent.reconcile()
        host = reporter.host_provider_uuid()
        r1, p1, p2 = self.required_beside_a_preferred_pair(root, host, agent)
        r2 = self.define(2, cpuset='0-7', extra=MEMORY)
        # As the reporter would have read it from such an allocation.
        reporter._held[r2] = '*'
        agent.reconcile()
        one = agent.reconcile()
        self.assertNotIn(r2, agent.last_held)
        self.assertEqual({0: tuple(range(8)), 1: tuple(range(8))},
                         self.live_pins(r2))
        decision = next(d for d in one.decisions
                        if d.uuid == r2)
        self.assertEqual(repinning.WAITING_REASON, decision.reason)

    def test_a_floating_memory_bound_instance_stays_out_of_required(self):
        # Two domains of 4 CPUs: r1 (required) in one, p1 and p2
        # (memory-bound, preferred) fill the other. f, a plain 'auto'
        # instance without cache_share=all (no host room held), is found
        # memory-bound: no domain has room for it, and it must not float
        # over r1's CPUs (nor be pinned beside r1): r1 stays Clean.
        root, name, host, agent, classifier, bus = self.two_domains()
        r1, p1, p2 = self.required_beside_a_preferred_pair(root, host, agent)
        home = agent.last_held[r1]
        f = self.define(2, cpuset='0-7', extra={
            'cacheaware:workload': 'auto'})
        agent.handle_events([(f, 'started')])
        classifier.found.add(f)
        one = agent.reconcile()
        outside = tuple(sorted(set(range(8)) - set(FOUR_CPUS[home])))
        self.assertEqual({0: outside, 1: outside}, self.live_pins(f))
        decision = next(d for d in one.decisions if d.uuid == f)
        self.assertEqual(repinning.OUTSIDE_CLOSED_REASON, decision.reason)
        state = notify.to_host_cache_state(bus.sent[-1], name)
        by_id = {d.id: d for d in state.domains}
        self.assertEqual(('clean', (r1,)),
                         (by_id[home].state, by_id[home].memory_bound_vms))
        # The dump names the closed domain; its plan input leaves it out.
        dump = agent.dump_state()
        self.assertEqual([home], dump['agent']['closed_domains'])
        self.assertNotIn(home, [d['id'] for d in dump['domains']])
        other = agent.last_held[p1]
        self.assertEqual(('dirty', tuple(sorted((p1, p2, f)))),
                         (by_id[other].state,
                          tuple(sorted(by_id[other].memory_bound_vms))))
        # r1 leaves: its domain opens again, and the planner seats f
        # there, All-share and Clean.
        self._remove(r1)
        self.client.delete('/allocations/%s' % r1, expected=(204,))
        agent.handle_events([(r1, 'undefined')])
        agent.reconcile()
        self.assertEqual({0: FOUR_CPUS[home], 1: FOUR_CPUS[home]},
                         self.live_pins(f))

    def test_every_domain_required_a_floating_one_stays_and_is_counted(self):
        # Both domains hold a required instance: f (plain 'auto', found
        # memory-bound) has no CPU outside them. It keeps Nova's CPUs,
        # the planner never pins it beside either, and the host's state
        # says both domains are Dirty (what the Watcher strategy acts on).
        root, name, host, agent, classifier, bus = self.two_domains()
        r1, r2 = (self.boot(root, host, MEMORY, True) for _ in 'ab')
        agent.handle_events([(u, 'started') for u in (r1, r2)])
        agent.reconcile()
        self.assertEqual({'L2-0', 'L2-1'},
                         {agent.last_held[r1], agent.last_held[r2]})
        f = self.define(2, cpuset='0-7', extra={
            'cacheaware:workload': 'auto'})
        agent.handle_events([(f, 'started')])
        classifier.found.add(f)
        one = agent.reconcile()
        self.assertEqual({0: tuple(range(8)), 1: tuple(range(8))},
                         self.live_pins(f))
        decision = next(d for d in one.decisions if d.uuid == f)
        self.assertEqual(repinning.KEEP, decision.action)
        state = notify.to_host_cache_state(bus.sent[-1], name)
        self.assertEqual(
            {agent.last_held[r1]: ('dirty', tuple(sorted((r1, f)))),
             agent.last_held[r2]: ('dirty', tuple(sorted((r2, f))))},
            {d.id: (d.state, tuple(sorted(d.memory_bound_vms)))
             for d in state.domains})

    def test_auto_instance_found_not_memory_bound_leaves_room_for_clean(self):
        # Two domains of 4 CPUs, an 'auto' instance in each. Once the
        # classifier finds a1 not memory-bound, the choice and the live
        # state stop counting it against Clean: a required instance joins
        # it instead of taking a domain back from an 'auto' one.
        root, name, host, agent, classifier, bus = self.two_domains()
        a1, a2 = (self.boot(root, host, AUTO, False) for _ in 'ab')
        agent.handle_events([(u, 'started') for u in (a1, a2)])
        agent.reconcile()
        homes = {agent.last_held[a1], agent.last_held[a2]}
        self.assertEqual({'L2-0', 'L2-1'}, homes)
        classifier.other.add(a1)
        agent.reconcile()
        state = notify.to_host_cache_state(bus.sent[-1], name)
        self.assertEqual(
            {agent.last_held[a1]: 0, agent.last_held[a2]: 1},
            {d.id: d.clean_holders for d in state.domains})
        # The scheduler predicts the next choice from that state.
        m1 = self.boot(root, host, MEMORY, True)
        predicted = domain_order.predict_domain(
            domain_order.host_loads(state.domain_rows(1.0)), 2, True, m1)
        agent.handle_events([(m1, 'started')])
        agent.reconcile()
        self.assertEqual(agent.last_held[a1], agent.last_held[m1])
        self.assertEqual(predicted, agent.last_held[m1])
        self.assertEqual(set(), agent.placement_side.unplaced)
        self.assertEqual({0: (0, 1, 2, 3)} if agent.last_held[m1] == 'L2-0'
                         else {0: (4, 5, 6, 7)},
                         {0: self.live_pins(m1)[0]})
        # An agent restarted (kill -9) has no verdict yet: a1 counts as
        # memory-bound again and leaves the required m1's domain, beside a2
        # (preferred: Dirty, not waiting); m1 stays where it is, Clean.
        restarted, _reporter = self.host_agent(name)
        restarted.domain_set = agent.domain_set
        restarted.repin.classifier = test_reporting.FoundMemoryBound()
        home_m1 = agent.last_held[m1]
        restarted.reconcile()
        self.assertEqual(home_m1, restarted.last_held[m1])
        self.assertEqual(restarted.last_held[a2], restarted.last_held[a1])
        self.assertEqual(set(), restarted.placement_side.unplaced)
        cpus = {'L2-0': (0, 1, 2, 3), 'L2-1': (4, 5, 6, 7)}
        self.assertEqual({cpus[restarted.last_held[a2]]},
                         set(self.live_pins(a1).values()))
        # Found memory-bound, the same.
        classifier.other.clear()
        classifier.found.add(a1)
        agent.reconcile()
        self.assertEqual(agent.last_held[a2], agent.last_held[a1])
        self.assertNotEqual(agent.last_held[m1], agent.last_held[a1])

    def test_switch_from_domain_model_keeps_instances_in_place(self):
        root, name = self.compute_node(ratio=1.0)
        old = placement_report.PlacementSyncReporter(self.client,
                                                     lambda: name)
        agent = self.agent(FOUR)
        agent.placement = old
        agent.reconcile()
        rps = old.provider_uuids()
        held = self.define(2, cpuset='0-7', extra=MEMORY)
        self.client.put('/allocations/%s' % held, {
            'allocations': {root: {'resources': {'VCPU': 2}},
                            rps['L2-2']: {'resources': {VCPU: 2,
                                                        MEMBOUND: 1}}},
            'project_id': str(uuid_mod.uuid4()),
            'user_id': str(uuid_mod.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            expected=(204,))
        agent.handle_events([(held, 'started')])
        agent.reconcile()
        self.assertEqual({0: (4, 5), 1: (4, 5)}, self.live_pins(held))

        # The agent restarts with provider_model = host.
        new_agent, reporter = self.host_agent(name)
        new_agent.reconcile()
        host = reporter.host_provider_uuid()
        kids = {p['name'] for p in self.client.providers_in_tree(root)
                if p['uuid'] != root}
        self.assertEqual({name + ':cacheaware'}, kids)
        allocs = self.client.get('/allocations/%s' % held)['allocations']
        self.assertEqual({VCPU: 2, MEMBOUND: 1}, allocs[host]['resources'])
        # Not moved: its pins lie in L2-2, so that is its domain.
        self.assertEqual({held: 'L2-2'}, new_agent.last_held)
        self.assertEqual({0: (4, 5), 1: (4, 5)}, self.live_pins(held))

        # And back: the host provider is kept, fully reserved, while
        # the instance holds it.
        agent.placement = placement_report.PlacementSyncReporter(
            self.client, lambda: name)
        agent.reconcile()
        inv = self.inventory(host, VCPU)
        self.assertEqual(inv['total'], inv['reserved'])
