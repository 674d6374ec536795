"""Incremental replanning after one arrival or departure."""

import dataclasses

from hypothesis import assume
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.cachedomain import heuristic as allshare_heuristic
from nova_cacheaware.cachedomain import incremental as allshare_incremental
from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware.cachedomain import replan as allshare_replan
from nova_cacheaware.cachedomain import search as allshare_search
from nova_cacheaware import exception
from tests.unit.cachedomain import test_planner as base


@st.composite
def hosts(draw):
    """A host with more than REFINE_MAX_VMS movable memory-bound VMs."""
    sizes = draw(st.lists(st.integers(2, 4), min_size=3, max_size=10))
    domains, cpu = [], 0
    for size in sizes:
        domains.append(cachedomain_model.Domain(
            id='d%d' % len(domains), cpus=tuple(range(cpu, cpu + size))))
        cpu += size
    vms = []
    for n in range(draw(st.integers(cachedomain.REFINE_MAX_VMS + 2, 18))):
        vcpus = draw(st.sampled_from([1, 1, 2, 2, 4]))
        current = None
        if draw(st.booleans()):
            cpus = draw(st.sampled_from(domains)).cpus
            current = {i: cpus for i in range(vcpus)}
        vms.append(cachedomain_model.VM(
            id='vm%02d' % n, vcpus=vcpus,
            workload=draw(st.sampled_from(['memory'] * 4 + ['cpu'])),
            current=current, movable=draw(st.integers(0, 9)) > 0))
    ratio = draw(st.sampled_from([1.0, 2.0]))
    return cachedomain_model.PlanInput(domains=tuple(domains), vms=tuple(vms),
                                       max_vcpus_per_cpu=ratio)


def applied(plan_input, result):
    """The input once the agent applied ``result``."""
    return dataclasses.replace(plan_input, vms=tuple(
        dataclasses.replace(vm, current=dict(result.vms[vm.id].pinning))
        for vm in plan_input.vms))


@st.composite
def changes(draw):
    """(previous input, its plan, the input after one change)."""
    plan_input = draw(hosts())
    previous = cachedomain.plan(plan_input)
    now = applied(plan_input, previous)
    memory = [vm for vm in now.vms if vm.memory_bound]
    if draw(st.booleans()) or not memory:
        arrival = cachedomain_model.VM(id='new', workload='memory',
                                       vcpus=draw(st.sampled_from([1, 2, 4])))
        after = dataclasses.replace(now, vms=now.vms + (arrival,))
    else:
        gone = draw(st.sampled_from(memory)).id
        after = dataclasses.replace(
            now, vms=tuple(vm for vm in now.vms if vm.id != gone))
    return now, previous, after


def moved_before(previous, now, result):
    """VMs placed by the previous plan whose pinning changed."""
    return [vm.id for vm in now.vms
            if vm.id in result.vms and vm.memory_bound and vm.movable
            and vm.id not in previous.unplaced
            and result.vms[vm.id].pinning != now.pinning_now(vm)]


class ReplanPropertyTest(testtools.TestCase):

    @settings(max_examples=50, deadline=None)
    @given(changes())
    def test_invariants_and_bound(self, change):
        now, previous, after = change
        result, incremental = allshare_replan.replan(
            after, now, previous.unplaced)
        base.check_rules(self, after, result)
        inst, _ = cachedomain.build_instance(after)
        # As many VMs placed as possible, as the full plan.
        self.assertEqual(
            len(inst.sizes) - allshare_search.max_placeable(inst),
            len(result.unplaced))
        excess = cachedomain.score(after, result)[1]
        if incremental:
            self.assertEqual(0, excess)
            self.assertLessEqual(
                len(moved_before(previous, after, result)),
                allshare_replan.MAX_MOVES)

    @settings(max_examples=50, deadline=None)
    @given(changes())
    def test_no_worse_than_a_full_plan_that_moves_nothing(self, change):
        now, previous, after = change
        full = cachedomain.plan(after)
        # Moves nothing: no VM placed before changes pinning, and the VMs
        # left unplaced before stay unplaced (arrival aside).
        assume(not moved_before(previous, after, full))
        assume(set(full.unplaced) - {'new'}
               == set(previous.unplaced) & set(full.vms))
        result, _ = allshare_replan.replan(after, now, previous.unplaced)
        self.assertLessEqual(cachedomain.score(after, result)[:3],
                             cachedomain.score(after, full)[:3])


def host(n_domains, vms, ratio=1.0):
    return cachedomain_model.PlanInput(
        domains=tuple(cachedomain_model.Domain(
            id='d%d' % d, cpus=tuple(range(4 * d, 4 * d + 4)))
            for d in range(n_domains)),
        vms=tuple(vms), max_vcpus_per_cpu=ratio)


def pinned(vm_id, domain, vcpus=2):
    cpus = tuple(range(4 * domain, 4 * domain + 4))
    return cachedomain_model.VM(id=vm_id, vcpus=vcpus, workload='memory',
                                current={i: cpus for i in range(vcpus)})


class ReplanTableTest(testtools.TestCase):

    # Ten 4-CPU domains, nine 2-vCPU VMs alone in d0..d8 (planned, Clean).
    NINE = [pinned('v%d' % d, d) for d in range(9)]

    def test_table(self):
        arrival = cachedomain_model.VM(id='new', vcpus=2, workload='memory')
        cases = [
            # (name, previous VMs, VMs now, incremental?, where 'new' goes)
            ('arrival takes the empty domain', self.NINE,
             self.NINE + [arrival], True, ('d9',)),
            ('departure', self.NINE + [pinned('w', 9)], self.NINE, True,
             None),
            ('two changes: full plan', self.NINE[:-1],
             self.NINE[:-1] + [pinned('x', 0), arrival], False, None),
            ('few VMs: full plan', self.NINE[:3],
             self.NINE[:3] + [arrival], False, ('d3',)),
        ]
        for name, before, after, incremental, where in cases:
            previous = host(10, before)
            result, used = allshare_replan.replan(host(10, after), previous)
            self.assertEqual(incremental, used, name)
            if where:
                self.assertEqual(where, result.vms['new'].domains, name)
            self.assertFalse(any(result.vms[vm.id].moved
                                 for vm in before if vm.id in result.vms),
                             name)

    def test_change_detection(self):
        previous = host(10, self.NINE)
        self.assertIsNone(allshare_replan.change(None, previous))
        self.assertIsNone(allshare_replan.change(previous, previous))
        self.assertEqual(frozenset([8]), allshare_replan.change(
            previous, host(10, self.NINE[:-1])))
        self.assertIsNone(allshare_replan.change(
            previous, host(10, self.NINE[:-1], ratio=2.0)))
        throughput = dataclasses.replace(host(10, self.NINE[:-1]),
                                         objective='throughput')
        self.assertIsNone(allshare_replan.change(previous, throughput))

    def test_arrival_in_a_full_host_moves_at_most_the_bound(self):
        # Every domain holds one VM; the arrival must share or displace.
        ten = [pinned('v%d' % d, d, vcpus=4) for d in range(10)]
        arrival = cachedomain_model.VM(id='new', vcpus=4, workload='memory')
        result, used = allshare_replan.replan(
            host(10, ten + [arrival], ratio=2.0), host(10, ten, ratio=2.0))
        self.assertTrue(used)
        self.assertLessEqual(sum(result.vms[v.id].moved for v in ten),
                             allshare_replan.MAX_MOVES)
        self.assertEqual(1, cachedomain.score(
            host(10, ten + [arrival], ratio=2.0), result)[2])


class DirtThresholdTest(testtools.TestCase):
    """Fall back to the full plan when the incremental one is dirtier."""

    # Domains of 4, 2 and 4 CPUs: (id, vCPUs, domain or None: floating).
    # The last plan left vm05, vm08, vm10-vm13 unplaced; vm02 leaves d1.
    SIZES = (4, 2, 4)
    NOW = (('vm00', 1, 2), ('vm01', 2, 2), ('vm02', 1, 1), ('vm03', 1, 0),
           ('vm04', 1, 0), ('vm05', 1, 0), ('vm06', 1, 1), ('vm07', 1, 2),
           ('vm08', 4, None), ('vm09', 2, 0), ('vm10', 2, 0),
           ('vm11', 2, None), ('vm12', 2, 2), ('vm13', 2, None))
    UNPLACED = ('vm05', 'vm08', 'vm10', 'vm11', 'vm12', 'vm13')

    def _inputs(self):
        domains, cpu = [], 0
        for size in self.SIZES:
            domains.append(cachedomain_model.Domain(
                id='d%d' % len(domains), cpus=tuple(range(cpu, cpu + size))))
            cpu += size
        vms = tuple(cachedomain_model.VM(
            id=vm_id, vcpus=vcpus, workload='memory',
            current=None if d is None else {
                i: domains[d].cpus for i in range(vcpus)})
            for vm_id, vcpus, d in self.NOW)
        now = cachedomain_model.PlanInput(domains=tuple(domains), vms=vms)
        after = dataclasses.replace(now, vms=tuple(
            vm for vm in vms if vm.id != 'vm02'))
        return now, after

    def test_dirtier_incremental_plan_falls_back(self):
        now, after = self._inputs()
        loose, used = allshare_replan.replan(after, now, self.UNPLACED,
                                             dirt_bound=None)
        self.assertTrue(used)
        self.assertEqual((5, 0, 16, 1), cachedomain.score(after, loose))
        inst, _ = cachedomain.build_instance(after)
        greedy = allshare_heuristic.greedy(inst)
        self.assertEqual((5, 0, 12, 4),
                         allshare_search.objective(inst, greedy))
        # 16 > 12 * 1.05: the full plan (dirt 12).
        result, used = allshare_replan.replan(after, now, self.UNPLACED)
        self.assertFalse(used)
        self.assertEqual((5, 0, 12, 4), cachedomain.score(after, result))
        self.assertEqual(
            cachedomain_model.plan_to_dict(cachedomain.plan(after)),
            cachedomain_model.plan_to_dict(result))
        # 16 <= 12 * 1.34 keeps the incremental plan; 12 * 1.33 does not.
        _, used = allshare_replan.replan(after, now, self.UNPLACED,
                                         dirt_bound=0.34)
        self.assertTrue(used)
        _, used = allshare_replan.replan(after, now, self.UNPLACED,
                                         dirt_bound=0.33)
        self.assertFalse(used)

    def test_dirt_within(self):
        inst, _ = cachedomain.build_instance(self._inputs()[1])
        greedy = allshare_heuristic.greedy(inst)
        self.assertTrue(allshare_incremental.dirt_within(
            inst, greedy, greedy, bound=0.0))
        self.assertFalse(allshare_incremental.dirt_within(
            inst, [None] * len(greedy), greedy, bound=0.05))


class DirtThresholdPropertyTest(testtools.TestCase):

    @settings(max_examples=50, deadline=None)
    @given(changes())
    def test_incremental_plans_within_the_bound(self, change):
        now, previous, after = change
        result, incremental = allshare_replan.replan(
            after, now, previous.unplaced)
        inst, _ = cachedomain.build_instance(after)
        greedy = allshare_heuristic.greedy(inst)
        if incremental:
            self.assertLessEqual(
                cachedomain.score(after, result)[2],
                allshare_search.objective(inst, greedy)[2]
                * (1 + allshare_replan.DIRT_BOUND))
        else:
            self.assertEqual(
                cachedomain_model.plan_to_dict(cachedomain.plan(after)),
                cachedomain_model.plan_to_dict(result))


class ReplayInputTest(testtools.TestCase):
    """The ``previous`` section of a plan input: replay and bad input."""

    @settings(max_examples=25, deadline=None)
    @given(changes())
    def test_replay_equals_replan(self, change):
        now, previous, after = change
        doc = dict(cachedomain_model.input_to_dict(after), previous={
            'input': cachedomain_model.input_to_dict(now),
            'unplaced': sorted(previous.unplaced)})
        expected, _ = allshare_replan.replan(after, now, previous.unplaced)
        self.assertEqual(cachedomain_model.plan_to_dict(expected),
                         cachedomain_model.plan_to_dict(
                             allshare_replan.plan_from_dict(doc)))

    def test_without_previous_the_full_plan(self):
        plan_input = host(10, ReplanTableTest.NINE)
        doc = cachedomain_model.input_to_dict(plan_input)
        self.assertIsNone(allshare_replan.previous_from_dict(doc))
        self.assertEqual(
            cachedomain_model.plan_to_dict(cachedomain.plan(plan_input)),
            cachedomain_model.plan_to_dict(
                allshare_replan.plan_from_dict(doc)))

    def test_bad_previous(self):
        good = cachedomain_model.input_to_dict(host(10, ReplanTableTest.NINE))
        cases = [
            ([], '"previous" must be an object'),
            ({'input': good, 'extra': 1}, '"previous" must be an object'),
            ({'input': good, 'unplaced': 'v1'}, '"previous.unplaced"'),
            ({'input': good, 'unplaced': [1]}, '"previous.unplaced"'),
            ({'unplaced': []}, '"previous.input"'),
            ({'input': dict(good, previous={})}, '"previous.input"'),
            ({'input': {'domains': 1, 'vms': []}}, '"domains" must be'),
        ]
        for section, message in cases:
            e = self.assertRaises(
                exception.InvalidInput, allshare_replan.plan_from_dict,
                dict(good, previous=section))
            self.assertIn(message, str(e), section)
