"""Repinning: the plan input the agent builds and the safety rules."""

import dataclasses

import testtools

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware.cachedomain import repinning as decide
from nova_cacheaware.cachedomain import replan as allshare_replan
from nova_cacheaware.topology import domains

ALL = tuple(range(8))
# Two L2 clusters of four CPUs, like a small E-core part.
DOMAINS = domains.DomainSet(level=2, fallback=False, domains=(
    domains.CacheDomain('L2-0', 2, (0, 1, 2, 3), 2048, (0,)),
    domains.CacheDomain('L2-1', 2, (4, 5, 6, 7), 2048, (0,)),
))


def instance(uuid, vcpus, allowed=ALL, live=None, per_vcpu=None,
             dedicated=False, nova_pinned=False, ours=()):
    allowed_map = per_vcpu or {v: tuple(allowed) for v in range(vcpus)}
    nova = domain_xml.NovaDomain(
        uuid=uuid, name='instance-' + uuid, instance_name='vm-' + uuid,
        flavor='m1', vcpus=vcpus, allowed=allowed_map,
        nova_pinned=nova_pinned or dedicated or per_vcpu is not None,
        dedicated=dedicated)
    return hv.Instance(nova=nova, live=live or dict(allowed_map),
                       ours=frozenset(ours))


MEM = {decide.WORKLOAD_SPEC: 'memory'}
CPU = {decide.WORKLOAD_SPEC: 'cpu'}
#: The real planner (nova_cacheaware.cachedomain.planner).
PLAN = cachedomain.plan


def as_doc(plan_input):
    """The JSON form of a plan input (what --dump-state writes)."""
    return cachedomain_model.input_to_dict(plan_input)


def plan_of(vms):
    """A plan with these VM plans and nothing else."""
    return cachedomain_model.Plan(vms=vms, domains={}, unplaced=())


class WorkloadAndMovabilityTest(testtools.TestCase):

    def test_workload_of(self):
        for specs, expected in [({}, 'unknown'), (None, 'unknown'),
                                ({decide.WORKLOAD_SPEC: 'auto'}, 'unknown'),
                                ({decide.WORKLOAD_SPEC: 'bogus'}, 'unknown'),
                                (MEM, 'memory'),
                                ({decide.WORKLOAD_SPEC: 'cpu'}, 'cpu'),
                                ({decide.WORKLOAD_SPEC: 'io'}, 'io')]:
            self.assertEqual(expected, decide.workload_of(specs), specs)

    def test_movability_table(self):
        domain_cpus = set(ALL)
        cases = [
            (instance('a', 2), {}, True, 'floating'),
            (instance('b', 2), {'hw:cpu_policy': 'shared'}, True,
             'floating'),
            (instance('c', 2), {'hw:cpu_policy': 'dedicated'}, False,
             'dedicated: Nova pinned each vCPU to one CPU'),
            (instance('d', 2), {'hw:cpu_policy': 'mixed'}, False,
             'dedicated: Nova pinned each vCPU to one CPU'),
            (instance('e', 2, per_vcpu={0: (4,), 1: (5,)}, dedicated=True),
             {}, False, 'dedicated: Nova pinned each vCPU to one CPU'),
            (instance('f', 2, allowed=(0, 1, 2, 3, 4, 5)), {}, False,
             'Nova does not allow CPUs 6-7'),
            (instance('g', 2, per_vcpu={0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}),
             {}, False, 'Nova does not allow CPUs 0-7'),
            (instance('h', 2), {'cacheaware:numa': 'full'}, False,
             'full-NUMA: CPUs are handed off by numa_balance'),
            (instance('i', 2), {'cacheaware:numa': 'any'}, True,
             'floating'),
        ]
        for inst, specs, movable, reason in cases:
            self.assertEqual((movable, reason),
                             decide.movability(inst, specs, domain_cpus),
                             inst.uuid)

    def test_domains_cut_to_usable_cpus(self):
        self.assertEqual([{'id': 'L2-0', 'cpus': [2, 3]}],
                         decide.usable_domains(DOMAINS, (2, 3)))
        self.assertEqual([{'id': 'L2-0', 'cpus': [0, 1, 2, 3]},
                          {'id': 'L2-1', 'cpus': [4, 5, 6, 7]}],
                         decide.usable_domains(DOMAINS, ALL))

    def test_restricted_usable_set_makes_restricted_vms_movable(self):
        # cpu_shared_set = 0-5: a VM allowed 0-5 can now move.
        inst = instance('f', 1, allowed=(0, 1, 2, 3, 4, 5))
        doc, why = decide.build_plan_input(DOMAINS, range(6), [inst],
                                           {'f': MEM})
        self.assertEqual((True, 'floating'), why['f'])
        self.assertEqual([{'id': 'L2-0', 'cpus': [0, 1, 2, 3]},
                          {'id': 'L2-1', 'cpus': [4, 5]}],
                         as_doc(doc)['domains'])


class BuildPlanInputTest(testtools.TestCase):

    def test_classified_vms_are_planned_memory_bound(self):
        # The classifier's verdict is an argument, not a flavor extra spec:
        # 'auto' VMs it found memory-bound go to the planner as memory.
        insts = [instance('a', 1), instance('b', 1), instance('c', 1)]
        doc, _ = decide.build_plan_input(
            DOMAINS, ALL, insts, {'c': CPU}, classified={'a'})
        self.assertEqual({'a': 'memory', 'b': 'unknown', 'c': 'cpu'},
                         {vm.id: vm.workload for vm in doc.vms})

    def test_exact_document(self):
        insts = [instance('b', 1, live={0: (4, 5, 6, 7)}),
                 instance('a', 2),
                 instance('c', 1, per_vcpu={0: (7,)}, dedicated=True)]
        doc, why = decide.build_plan_input(
            DOMAINS, ALL, insts, {'a': MEM, 'b': {decide.WORKLOAD_SPEC:
                                                  'cpu'}}, 2)
        self.assertEqual({
            'domains': [{'id': 'L2-0', 'cpus': [0, 1, 2, 3]},
                        {'id': 'L2-1', 'cpus': [4, 5, 6, 7]}],
            'max_vcpus_per_cpu': 2.0,
            'vms': [
                {'id': 'a', 'vcpus': 2, 'workload': 'memory',
                 'current': {'0': list(ALL), '1': list(ALL)},
                 'movable': True},
                {'id': 'b', 'vcpus': 1, 'workload': 'cpu',
                 'current': {'0': [4, 5, 6, 7]}, 'movable': True},
                {'id': 'c', 'vcpus': 1, 'workload': 'unknown',
                 'current': {'0': [7]}, 'movable': False},
            ]}, as_doc(doc))
        self.assertEqual(False, why['c'][0])
        # Typed all the way; the JSON form replays to the same input.
        self.assertEqual(doc, cachedomain_model.input_from_dict(as_doc(doc)))

    def test_cpus_outside_the_domains(self):
        # cpu_shared_set 0-5: a dedicated VM on 7 is left out of the plan
        # (it is in no domain), a movable VM allowed 0-7 is cut to 0-5, a
        # vCPU with nothing left drops "current" (planner: all CPUs).
        insts = [instance('ded', 1, per_vcpu={0: (7,)}, dedicated=True),
                 instance('mov', 2),
                 instance('far', 1, live={0: (6, 7)}, ours={0})]
        doc, why = decide.build_plan_input(DOMAINS, range(6), insts,
                                           {'mov': MEM})
        self.assertEqual(
            [{'id': 'far', 'vcpus': 1, 'workload': 'unknown',
              'movable': True},
             {'id': 'mov', 'vcpus': 2, 'workload': 'memory',
              'movable': True, 'current': {'0': [0, 1, 2, 3, 4, 5],
                                           '1': [0, 1, 2, 3, 4, 5]}}],
            as_doc(doc)['vms'])
        self.assertEqual(False, why['ded'][0])
        result = PLAN(doc)
        got = {d.uuid: d for d in decide.decisions_from_plan(
            doc, result, insts, why)}
        self.assertEqual(decide.AUDIT, got['ded'].action)
        self.assertEqual({}, got['ded'].changes())
        self.assertEqual(decide.REPIN, got['mov'].action)
        self.assertEqual(decide.RESTORE, got['far'].action)
        self.assertEqual({0: ALL}, got['far'].changes())


class DecisionsTest(testtools.TestCase):

    def decide_all(self, insts, specs):
        doc, why = decide.build_plan_input(DOMAINS, ALL, insts, specs)
        result = PLAN(doc)
        return {d.uuid: d for d in decide.decisions_from_plan(
            doc, result, insts, why)}

    def test_actions(self):
        insts = [instance('m1', 2), instance('m2', 2),
                 instance('m3', 4),  # no room left after m1, m2 + m4
                 instance('m4', 4),
                 instance('cpu', 1, live={0: (0, 1, 2, 3)}, ours={0}),
                 instance('ext', 1, live={0: (5,)}),
                 instance('ded', 1, per_vcpu={0: (7,)}, dedicated=True),
                 instance('nar', 1, allowed=(0, 1))]
        specs = {u: MEM for u in ('m1', 'm2', 'm3', 'm4', 'nar')}
        specs['cpu'] = {decide.WORKLOAD_SPEC: 'cpu'}
        got = self.decide_all(insts, specs)
        self.assertEqual(decide.REPIN, got['m1'].action)
        # 'nar' (unmovable, memory-bound, inside L2-0) and 'cpu' (pinned
        # there) take L2-0's room: the real planner puts m1 and m2 (2 + 2
        # vCPUs) in L2-1; m3 and m4 (4 each) fit nowhere.
        for uuid in ('m1', 'm2'):
            self.assertEqual({0: (4, 5, 6, 7), 1: (4, 5, 6, 7)},
                             got[uuid].desired)
            self.assertEqual(('L2-1',), got[uuid].domains)
            self.assertEqual('all', got[uuid].share)
        self.assertEqual(decide.KEEP, got['m3'].action)
        self.assertEqual('memory-bound, no domain has room',
                         got['m3'].reason)
        self.assertEqual({}, got['m3'].changes())
        self.assertEqual(decide.KEEP, got['m4'].action)
        # A VM we pinned earlier that is not memory-bound goes back to
        # Nova's CPUs.
        self.assertEqual(decide.RESTORE, got['cpu'].action)
        self.assertEqual({0: ALL}, got['cpu'].changes())
        # Pinned by someone else: left alone.
        self.assertEqual(decide.KEEP, got['ext'].action)
        self.assertEqual('unknown: pins not made by the agent, left alone',
                         got['ext'].reason)
        self.assertEqual({}, got['ext'].changes())
        self.assertEqual(decide.AUDIT, got['ded'].action)
        self.assertEqual({}, got['ded'].changes())
        self.assertEqual(decide.KEEP, got['nar'].action)
        self.assertEqual('Nova does not allow CPUs 2-7', got['nar'].reason)

    def test_changes_are_only_the_difference(self):
        inst = instance('m', 2, live={0: (0, 1, 2, 3), 1: ALL})
        got = self.decide_all([inst], {'m': MEM})
        self.assertEqual({1: (0, 1, 2, 3)}, got['m'].changes())

    def test_planner_output_without_pinning_is_an_error(self):
        inst = instance('m', 1)
        doc, why = decide.build_plan_input(DOMAINS, ALL, [inst], {'m': MEM})
        for bad in ({}, [], plan_of({}),
                    plan_of({'m': cachedomain_model.VMPlan(
                        pinning={}, domains=(), share='all', moved=True)}),
                    plan_of({'m': cachedomain_model.VMPlan(
                        pinning={0: ('x',)}, domains=(), share='all',
                        moved=True)})):
            self.assertRaises(decide.PlannerError,
                              decide.decisions_from_plan, doc, bad, [inst],
                              why)

    def test_audit_reports_drift_of_dedicated_pins(self):
        inst = instance('d', 1, per_vcpu={0: (7,)}, dedicated=True,
                        live={0: (6, 7)})
        got = self.decide_all([inst], {})
        problem = decide.audit_dedicated(got['d'])
        self.assertIn('live pins {0: \'6-7\'} differ from Nova\'s '
                      '{0: \'7\'}', problem)
        clean = self.decide_all([instance('e', 1, per_vcpu={0: (7,)},
                                          dedicated=True)], {})
        self.assertEqual('', decide.audit_dedicated(clean['e']))


class PlannerTest(testtools.TestCase):
    """The agent's planner: full plans, then incremental replans."""

    def test_one_arrival_replans_incrementally(self):
        # Twelve 4-CPU domains, ten memory-bound VMs alone in d0..d9: an
        # arrival goes to an empty domain and nobody else moves; the same
        # document planned from scratch gives the same domains here.
        domains, vms = ten_alone_in_twelve()
        planner = decide.Planner()
        first = planner(cachedomain_model.input_from_dict(
            {'domains': domains, 'vms': vms}))
        doc = {'domains': domains, 'vms': vms + [
            {'id': 'new', 'vcpus': 2, 'workload': 'memory'}]}
        second = planner(cachedomain_model.input_from_dict(doc))
        self.assertFalse(any(second.vms[v['id']].moved for v in vms))
        self.assertEqual(('d10',), second.vms['new'].domains)
        self.assertEqual(first.vms['v0'], second.vms['v0'])
        full = cachedomain.plan(cachedomain_model.input_from_dict(doc))
        self.assertEqual(full.domains, second.domains)

    def test_incremental_plan_replays_from_its_previous_section(self):
        # The dump after an incremental replan carries "previous"; the
        # plan command's path (plan_from_dict) then gives the agent's plan.
        domains, vms = ten_alone_in_twelve()
        planner = decide.Planner()
        planner(cachedomain_model.input_from_dict({'domains': domains,
                                                   'vms': vms}))
        self.assertIsNone(planner.previous())
        doc = {'domains': domains, 'vms': vms + [
            {'id': 'new', 'vcpus': 2, 'workload': 'memory'}]}
        agent_plan = planner(cachedomain_model.input_from_dict(doc))
        previous = planner.previous()
        self.assertEqual({'input', 'unplaced'}, set(previous))
        self.assertEqual(10, len(previous['input']['vms']))
        replayed = allshare_replan.plan_from_dict(
            dict(doc, previous=previous))
        self.assertEqual(agent_plan, replayed)

    def test_typed_plan_for_a_typed_input(self):
        plan_input = cachedomain_model.input_from_dict({
            'domains': [{'id': 'L2-0', 'cpus': [0, 1]}],
            'vms': [{'id': 'm', 'vcpus': 2, 'workload': 'memory'}]})
        planner = decide.Planner(objective='throughput')
        self.assertEqual(
            {'vms': {'m': {'pinning': {'0': [0, 1], '1': [0, 1]},
                           'domains': ['L2-0'], 'share': 'all',
                           'moved': False}},
             'domains': {'L2-0': {'state': 'clean', 'memory_vms': ['m']}},
             'unplaced': []},
            cachedomain_model.plan_to_dict(planner(plan_input)))

    def test_objective_set_on_inputs_naming_the_default(self):
        domains, vms = ten_alone_in_twelve()
        plan_input = cachedomain_model.input_from_dict({'domains': domains,
                                                        'vms': vms})
        planner = decide.Planner('throughput')
        planner(plan_input)
        self.assertEqual('throughput',
                         planner._last['input'].objective)
        self.assertEqual('contract', plan_input.objective)

    def test_dump_records_the_objective_the_plan_command_replays(self):
        # [agent] plan_objective = throughput: the dump's input names it,
        # so the plan command plans what the agent planned.
        doc = {'domains': [{'id': 'd0', 'cpus': [0, 1, 2, 3]},
                           {'id': 'd1', 'cpus': [4, 5, 6]}],
               'max_vcpus_per_cpu': 8.0,
               'vms': [{'id': 'm0', 'vcpus': 4, 'workload': 'memory'},
                       {'id': 'm1', 'vcpus': 2, 'workload': 'memory'},
                       {'id': 'o0', 'vcpus': 2, 'workload': 'cpu'}]}
        plan_input = cachedomain_model.input_from_dict(doc)
        planner = decide.Planner('throughput')
        agent_plan = planner(plan_input)
        dumped = cachedomain_model.input_to_dict(
            planner.with_objective(plan_input))
        self.assertEqual('throughput', dumped['objective'])
        self.assertEqual(agent_plan, allshare_replan.plan_from_dict(dumped))
        # An input naming an objective keeps it; a contract planner
        # leaves the input as it is.
        named = dataclasses.replace(plan_input, objective='contract')
        self.assertIs(named, decide.Planner('contract').with_objective(named))
        # An old dump (no "objective") still replays, under contract.
        self.assertEqual(cachedomain.plan(plan_input),
                         allshare_replan.plan_from_dict(doc))


def ten_alone_in_twelve():
    """Twelve 4-CPU domains; ten 2-vCPU memory-bound VMs alone in d0..d9."""
    domains = [{'id': 'd%d' % d, 'cpus': list(range(4 * d, 4 * d + 4))}
               for d in range(12)]
    vms = [{'id': 'v%d' % d, 'vcpus': 2, 'workload': 'memory',
            'current': {'0': domains[d]['cpus'], '1': domains[d]['cpus']}}
           for d in range(10)]
    return domains, vms


class HeldDomainTest(testtools.TestCase):
    """Rule 5: an instance holding a domain in Placement is pinned there."""

    def plan(self, insts, specs, held):
        doc, why = decide.build_plan_input(DOMAINS, ALL, insts, specs,
                                           held=held)
        result = PLAN(doc)
        return doc, {d.uuid: d for d in decide.decisions_from_plan(
            doc, result, insts, why, held=held)}

    def test_held_instance_pinned_to_its_domain_and_counted(self):
        # 'h' holds L2-1; 'm' (memory-bound, 4 vCPUs) then only fits L2-0.
        insts = [instance('h', 4), instance('m', 4)]
        doc, got = self.plan(insts, {'h': MEM, 'm': MEM}, {'h': 'L2-1'})
        self.assertEqual(
            {'id': 'h', 'vcpus': 4, 'workload': 'memory', 'movable': False,
             'current': {str(v): [4, 5, 6, 7] for v in range(4)}},
            as_doc(doc)['vms'][0])
        self.assertEqual(decide.REPIN, got['h'].action)
        self.assertEqual('holds L2-1 in Placement', got['h'].reason)
        self.assertEqual({v: (4, 5, 6, 7) for v in range(4)},
                         got['h'].desired)
        self.assertEqual(('L2-1',), got['h'].domains)
        self.assertEqual('all', got['h'].share)
        self.assertEqual({v: (0, 1, 2, 3) for v in range(4)},
                         got['m'].desired)

    def test_held_wins_over_declared_class(self):
        # A cpu-declared VM that holds a domain is still pinned there.
        doc, got = self.plan([instance('c', 2)], {'c': CPU}, {'c': 'L2-0'})
        self.assertEqual({0: (0, 1, 2, 3), 1: (0, 1, 2, 3)},
                         got['c'].desired)

    def test_held_ignored_when_nova_forbids_or_unknown_or_dedicated(self):
        insts = [instance('n', 1, allowed=(0, 1, 2, 3, 4, 5)),
                 instance('u', 1),
                 instance('d', 1, allowed=(4,), live={0: (4,)})]
        doc, got = self.plan(
            insts, {'n': MEM, 'u': MEM,
                    'd': {'hw:cpu_policy': 'dedicated'}},
            {'n': 'L2-1', 'u': 'L3-9', 'd': 'L2-1'})
        self.assertEqual('Nova does not allow CPUs 6-7', got['n'].reason)
        self.assertEqual(decide.KEEP, got['n'].action)
        # Unknown domain: planned like any memory-bound VM.
        self.assertEqual('memory-bound: All-share', got['u'].reason)
        self.assertEqual(decide.AUDIT, got['d'].action)


class WaitingTest(testtools.TestCase):
    """Per-host model: holding host room, no domain it may join has room."""

    def plan(self, insts, specs, held, waiting):
        doc, why = decide.build_plan_input(DOMAINS, ALL, insts, specs,
                                           held=held, waiting=waiting)
        result = PLAN(doc)
        return doc, {d.uuid: d for d in decide.decisions_from_plan(
            doc, result, insts, why, held=held, waiting=waiting)}

    def test_the_planner_never_pins_it_into_a_domain(self):
        # 'r' (required) holds L2-0 by the agent's choice; 'w' found no
        # domain it may join: it stays on Nova's CPUs, though L2-1 is
        # Empty to the planner's eyes.
        insts = [instance('r', 2), instance('w', 2)]
        doc, got = self.plan(insts, {'r': MEM, 'w': MEM}, {'r': 'L2-0'},
                             frozenset({'w'}))
        self.assertEqual(
            {'id': 'w', 'vcpus': 2, 'workload': 'memory', 'movable': False,
             'current': {'0': list(ALL), '1': list(ALL)}},
            as_doc(doc)['vms'][1])
        self.assertEqual(decide.RESTORE, got['w'].action)
        self.assertEqual(decide.WAITING_REASON, got['w'].reason)
        self.assertEqual({0: ALL, 1: ALL}, got['w'].desired)
        self.assertEqual((), got['w'].domains)

    def test_pins_the_agent_made_go_back_to_novas_cpus(self):
        # It had L2-1 until a slot holder took it back (the agent's pins).
        w = instance('w', 2, live={0: (4, 5, 6, 7), 1: (4, 5, 6, 7)},
                     ours=(0, 1))
        _, got = self.plan([w], {'w': MEM}, {}, frozenset({'w'}))
        self.assertEqual((decide.RESTORE, {0: ALL, 1: ALL}),
                         (got['w'].action, got['w'].desired))

    def test_pins_made_by_someone_else_stay(self):
        w = instance('w', 1, live={0: (4, 5)})
        _, got = self.plan([w], {'w': MEM}, {}, frozenset({'w'}))
        self.assertEqual((decide.KEEP, {0: (4, 5)}),
                         (got['w'].action, got['w'].desired))


class ClosedDomainTest(testtools.TestCase):
    """Rule 6: domains holding a required instance are closed."""

    def plan(self, insts, specs, held, closed, waiting=frozenset(),
             classified=frozenset()):
        shut = decide.close_domains(DOMAINS, ALL, insts, specs, held,
                                    closed, classified=classified)
        doc, why = decide.build_plan_input(
            DOMAINS, ALL, insts, specs, held=held, waiting=waiting,
            classified=classified, closed=shut)
        # The agent plans nothing when every domain is closed.
        result = PLAN(doc) if doc.domains else decide.NO_PLAN
        got = {d.uuid: d for d in decide.decisions_from_plan(
            doc, result, insts, why, held=held, waiting=waiting,
            closed=shut)}
        return doc, decide.with_closed(result, shut, got.values()), got

    def test_nothing_closed_changes_nothing(self):
        self.assertIs(decide.NOTHING_CLOSED, decide.close_domains(
            DOMAINS, ALL, [instance('r', 2)], {'r': MEM}, {'r': 'L2-0'},
            frozenset()))
        # A closed domain without a usable CPU is no closed domain.
        self.assertIs(decide.NOTHING_CLOSED, decide.close_domains(
            DOMAINS, (4, 5, 6, 7), [instance('r', 2)], {'r': MEM},
            {'r': 'L2-0'}, frozenset({'L2-0'})))

    def test_unplaced_memory_bound_floats_outside_the_closed_domain(self):
        # r (required) holds L2-0; h (memory-bound) fills L2-1. m
        # (memory-bound, 4 vCPUs) fits nowhere: it floats over L2-1 only,
        # and the planner never saw L2-0 (before, it pinned m beside r).
        insts = [instance('r', 2), instance('h', 4), instance('m', 4)]
        doc, plan, got = self.plan(
            insts, {'r': MEM, 'h': MEM, 'm': MEM},
            {'r': 'L2-0', 'h': 'L2-1'}, frozenset({'L2-0'}))
        self.assertEqual(['L2-1'], [d['id'] for d in as_doc(doc)['domains']])
        self.assertEqual(['h', 'm'], [v['id'] for v in as_doc(doc)['vms']])
        self.assertEqual((decide.REPIN, decide.OUTSIDE_CLOSED_REASON),
                         (got['m'].action, got['m'].reason))
        self.assertEqual({v: (4, 5, 6, 7) for v in range(4)},
                         got['m'].desired)
        self.assertEqual((('L2-1',), 'all'),
                         (got['m'].domains, got['m'].share))
        self.assertEqual((decide.REPIN, 'holds L2-0 in Placement',
                          {0: (0, 1, 2, 3), 1: (0, 1, 2, 3)}),
                         (got['r'].action, got['r'].reason,
                          got['r'].desired))
        self.assertEqual('memory', got['r'].workload)
        # Every domain is in the plan: L2-0 Clean with r alone.
        self.assertEqual(
            {'L2-0': cachedomain_model.DomainPlan('clean', ('r',)),
             'L2-1': cachedomain_model.DomainPlan('dirty', ('h', 'm'))},
            plan.domains)

    def test_it_floats_only_over_usable_cpus_of_open_domains(self):
        # CPUs 6-7 are in no usable domain (not the agent's to plan on):
        # m floats over L2-1's usable CPUs, never onto those alone.
        insts = [instance('r', 2), instance('h', 2), instance('m', 1)]
        specs = {'r': MEM, 'h': MEM, 'm': MEM}
        held = {'r': 'L2-0', 'h': 'L2-1'}
        usable = (0, 1, 2, 3, 4, 5)
        shut = decide.close_domains(DOMAINS, usable, insts, specs, held,
                                    frozenset({'L2-0'}))
        doc, why = decide.build_plan_input(DOMAINS, usable, insts, specs,
                                           held=held, closed=shut)
        got = {d.uuid: d for d in decide.decisions_from_plan(
            doc, PLAN(doc), insts, why, held=held, closed=shut)}
        self.assertEqual((decide.REPIN, {0: (4, 5)}),
                         (got['m'].action, got['m'].desired))

    def test_the_planner_seats_memory_bound_only_in_open_domains(self):
        # r (required, 2 vCPUs) in L2-0 leaves room for m there; L2-1 has
        # a Clean-wanting h: m goes beside h (Dirty), never beside r.
        insts = [instance('r', 2), instance('h', 2), instance('m', 2)]
        _doc, plan, got = self.plan(
            insts, {'r': MEM, 'h': MEM, 'm': MEM},
            {'r': 'L2-0', 'h': 'L2-1'}, frozenset({'L2-0'}))
        self.assertEqual(('memory-bound: All-share', ('L2-1',)),
                         (got['m'].reason, got['m'].domains))
        self.assertEqual({0: (4, 5, 6, 7), 1: (4, 5, 6, 7)},
                         got['m'].desired)
        closed = plan.domains['L2-0']
        self.assertEqual(('clean', ('r',)),
                         (closed.state, closed.memory_vms))
        self.assertEqual('dirty', plan.domains['L2-1'].state)

    def test_every_domain_closed(self):
        # Both domains hold a required instance: nothing is planned,
        # both stay pinned to theirs, m keeps Nova's CPUs (it has no
        # other) and the reason says so.
        insts = [instance('r0', 2), instance('r1', 2), instance('m', 2)]
        doc, plan, got = self.plan(
            insts, {'r0': MEM, 'r1': MEM, 'm': MEM},
            {'r0': 'L2-0', 'r1': 'L2-1'}, frozenset({'L2-0', 'L2-1'}),
            classified=frozenset({'m'}))
        self.assertEqual((), doc.domains)
        # m floats over both: both are Dirty in the host's report.
        self.assertEqual(
            {'L2-0': ('dirty', ('m', 'r0')), 'L2-1': ('dirty', ('m', 'r1'))},
            {d: (p.state, p.memory_vms) for d, p in plan.domains.items()})
        self.assertEqual((('L2-0', 'L2-1'), 'partial'),
                         (got['m'].domains, got['m'].share))
        self.assertEqual({0: (0, 1, 2, 3), 1: (0, 1, 2, 3)},
                         got['r0'].desired)
        self.assertEqual({0: (4, 5, 6, 7), 1: (4, 5, 6, 7)},
                         got['r1'].desired)
        self.assertEqual(decide.KEEP, got['m'].action)
        self.assertEqual(
            'memory-bound, no domain has room; Nova allows no CPU outside '
            'the cache_clean=required domains', got['m'].reason)
        self.assertEqual({}, got['m'].changes())

    def test_pins_made_by_someone_else_stay(self):
        insts = [instance('r', 2), instance('h', 4),
                 instance('m', 1, live={0: (1, 2)})]
        _doc, _plan, got = self.plan(
            insts, {'r': MEM, 'h': MEM, 'm': MEM},
            {'r': 'L2-0', 'h': 'L2-1'}, frozenset({'L2-0'}))
        self.assertEqual(decide.KEEP, got['m'].action)
        self.assertEqual({}, got['m'].changes())

    def test_cpu_bound_and_unclassified_still_float_everywhere(self):
        # Only memory-bound instances are kept out: the others were never
        # counted against Clean (an 'auto' one until found memory-bound).
        insts = [instance('r', 2),
                 instance('c', 1, live={0: (4,)}, ours={0}),
                 instance('a', 1, live={0: (5,)}, ours={0})]
        _doc, _plan, got = self.plan(
            insts, {'r': MEM, 'c': CPU, 'a': {}}, {'r': 'L2-0'},
            frozenset({'L2-0'}))
        self.assertEqual({0: ALL}, got['c'].desired)
        self.assertEqual({0: ALL}, got['a'].desired)

    def test_a_waiting_memory_bound_instance_is_counted_where_it_floats(self):
        # Host room held, no domain it may join: it waits on every CPU
        # (confined, its pins would read as a home in L2-1), and the
        # closed domain it floats over is Dirty in the host's report.
        insts = [instance('r', 2), instance('w', 2), instance('c', 2)]
        doc, plan, got = self.plan(
            insts, {'r': MEM, 'w': MEM, 'c': CPU}, {'r': 'L2-0'},
            frozenset({'L2-0'}), waiting=frozenset({'w', 'c'}))
        # The planner sees it over the open domain.
        self.assertEqual(
            {'id': 'w', 'vcpus': 2, 'workload': 'memory', 'movable': False,
             'current': {'0': [4, 5, 6, 7], '1': [4, 5, 6, 7]}},
            as_doc(doc)['vms'][1])
        self.assertEqual(
            (decide.WAITING_REASON, {0: ALL, 1: ALL}),
            (got['w'].reason, got['w'].desired))
        self.assertEqual(('dirty', ('r', 'w')),
                         (plan.domains['L2-0'].state,
                          plan.domains['L2-0'].memory_vms))
        self.assertEqual({0: ALL, 1: ALL}, got['c'].desired)
