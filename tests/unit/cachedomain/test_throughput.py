"""The throughput objective: table tests on small oversubscribed hosts."""

import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware.cachedomain import throughput as tp
from nova_cacheaware import exception


def vm(vm_id, vcpus, workload='memory', current=None, movable=True):
    doc = {'id': vm_id, 'vcpus': vcpus, 'workload': workload,
           'movable': movable}
    if current is not None:
        doc['current'] = {str(i): list(current) for i in range(vcpus)}
    return doc


def plan(domains, vms, ratio=8.0, objective='throughput'):
    doc = {'domains': [{'id': 'd%d' % n, 'cpus': list(cpus)}
                       for n, cpus in enumerate(domains)],
           'vms': vms, 'max_vcpus_per_cpu': ratio, 'objective': objective}
    return cachedomain_model.plan_to_dict(
        cachedomain.plan(cachedomain_model.input_from_dict(doc)))


# Host 15 of benchmarks/planner_quality.py (seed 7): 4 + 3 CPUs, 14 vCPUs.
HOST15 = ((0, 1, 2, 3), (4, 5, 6))
HOST15_VMS = [vm('m0', 4), vm('m1', 2), vm('o0', 2, 'io'),
              vm('o1', 2, 'cpu'), vm('o2', 1, 'io'), vm('o3', 1, 'io'),
              vm('o4', 2, 'cpu')]


class EstimateTest(testtools.TestCase):

    def test_alone_on_enough_cpus_is_ideal(self):
        # One memory-bound VM of 2 vCPUs on 2 CPUs, nothing else: 1.0.
        self.assertAlmostEqual(0.0, tp.estimate([2], [(2, 0)], []))

    def test_table(self):
        # (cpus, memory, others) -> performance (exp of the mean log).
        cases = [
            # 4 vCPUs on 2 CPUs: half a CPU each.
            ([2], [(4, 0)], [], 0.5),
            # Two VMs in one cache, each alone on a CPU: Dirty, 1 / 1.12.
            ([2], [(1, 0), (1, 0)], [], 1 / 1.12),
            # A CPU-bound VM floating beside a pinned one: a CPU each.
            ([1, 1], [(1, 0)], [(1, 1.0)], 1.0),
            # Both on one CPU: half each.
            ([1], [(1, 0)], [(1, 1.0)], 0.5),
        ]
        for cpus, memory, others, expected in cases:
            got = math.exp(tp.estimate(cpus, memory, others))
            self.assertAlmostEqual(expected, got, places=6,
                                   msg=(cpus, memory, others))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.integers(1, 4), min_size=1, max_size=3),
           st.lists(st.integers(1, 4), max_size=3),
           st.lists(st.integers(1, 4), max_size=3))
    def test_performance_is_a_share(self, cpus, memory, others):
        memory = [(v, n % len(cpus) if n % 3 else tp.FLOAT)
                  for n, v in enumerate(memory)]
        others = [(v, 1.0) for v in others]
        got = math.exp(tp.estimate(cpus, memory, others))
        self.assertGreater(got, 0.0)
        self.assertLessEqual(got, 1.0 + 1e-9)


class ThroughputPlanTest(testtools.TestCase):

    def test_host15_shares_cpu_time(self):
        # The contract keeps both Clean (m0 on the 4 CPUs, m1 on the 3);
        # the estimate packs both on the 3 CPUs so the 8 floating vCPUs
        # get the 4 others (the simulator's optimum).
        contract = plan(HOST15, HOST15_VMS, objective='contract')
        self.assertEqual(['d0'], contract['vms']['m0']['domains'])
        out = plan(HOST15, HOST15_VMS)
        self.assertEqual(['d1'], out['vms']['m0']['domains'])
        self.assertEqual(['d1'], out['vms']['m1']['domains'])
        self.assertEqual('dirty', out['domains']['d1']['state'])

    def test_capacity_still_holds(self):
        # Ratio 1.0: the 3-CPU domain takes 3 vCPUs, so not both.
        out = plan(HOST15, HOST15_VMS, ratio=1.0)
        self.assertEqual(['d0'], out['vms']['m0']['domains'])
        self.assertEqual(['d1'], out['vms']['m1']['domains'])

    def test_replanning_moves_nothing(self):
        out = plan(HOST15, HOST15_VMS)
        again = [dict(v) for v in HOST15_VMS]
        for doc in again:
            pins = out['vms'][doc['id']]['pinning']
            doc['current'] = pins
        second = plan(HOST15, again)
        self.assertFalse(any(v['moved'] for v in second['vms'].values()))
        self.assertEqual(
            {k: v['pinning'] for k, v in out['vms'].items()},
            {k: v['pinning'] for k, v in second['vms'].items()})

    def test_not_modelled_falls_back_to_the_contract(self):
        # A CPU-bound VM pinned to one CPU: the estimate does not model it.
        vms = HOST15_VMS[:-1] + [vm('o4', 2, 'cpu', current=(6,))]
        self.assertEqual(plan(HOST15, vms, objective='contract'),
                         plan(HOST15, vms))
        # Too many choices: 9 movable VMs on 2 domains (3 ** 9 > 512).
        many = [vm('m%d' % n, 1) for n in range(9)]
        self.assertEqual(plan(HOST15, many, objective='contract'),
                         plan(HOST15, many))

    def test_a_floating_vm_may_stay_floating(self):
        # 1 + 1 CPUs, two 1-vCPU memory VMs and two CPU-bound ones: the
        # result lists a VM left floating as unplaced, pinning unchanged.
        out = plan(((0,), (1,)), [vm('a', 1), vm('b', 1),
                                  vm('x', 1, 'cpu'), vm('y', 1, 'cpu')])
        for vm_id in out['unplaced']:
            self.assertEqual({'0': [0, 1]}, out['vms'][vm_id]['pinning'])

    def test_bad_objective(self):
        self.assertRaisesRegex(
            exception.InvalidInput, 'objective',
            plan, HOST15, HOST15_VMS, objective='fastest')

    def test_round_trip(self):
        doc = {'domains': [{'id': 'a', 'cpus': [0]}], 'vms': [],
               'max_vcpus_per_cpu': 1.0, 'objective': 'throughput'}
        self.assertEqual(doc, cachedomain_model.input_to_dict(
            cachedomain_model.input_from_dict(doc)))
