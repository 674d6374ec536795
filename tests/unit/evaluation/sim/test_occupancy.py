"""The independent yardstick: fair shares, cache occupancy, optimum."""

import fractions
import math
import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware_evaluation.sim import contention
from nova_cacheaware_evaluation.sim import fairshare
from nova_cacheaware_evaluation.sim import occupancy
from nova_cacheaware_evaluation.sim import yardstick
from tests.unit.evaluation.sim.test_calibration import probe_doc

F = fractions.Fraction
SQRT2 = math.sqrt(2)


class MaxMinFairTest(testtools.TestCase):

    def test_pinned_and_floating_share_alike(self):
        # Three vCPUs on two CPUs, one pinned: two thirds each (the
        # balancer moves the floating ones; nobody is served first).
        got = fairshare.max_min_fair([
            (frozenset({0}), 1), (frozenset({0, 1}), 1),
            (frozenset({0, 1}), 1)])
        self.assertEqual([F(2, 3)] * 3, got)

    def test_a_full_cpu_leaves_the_other_to_the_floater(self):
        got = fairshare.max_min_fair([
            (frozenset({0}), 1), (frozenset({0}), 1), (frozenset({0, 1}), 1)])
        self.assertEqual([F(1, 2), F(1, 2), 1], got)

    def test_a_part_time_vcpu_leaves_its_rest(self):
        got = fairshare.max_min_fair([
            (frozenset({0, 1}), F(3, 10)), (frozenset({0, 1}), 1),
            (frozenset({0, 1}), 1)])
        self.assertEqual([F(3, 10), F(17, 20), F(17, 20)], got)

    def test_overlapping_affinities_are_refused(self):
        self.assertRaises(ValueError, fairshare.max_min_fair, [
            (frozenset({0, 1}), 1), (frozenset({1, 2}), 1)])


@st.composite
def laminar_vcpus(draw):
    """vCPUs pinned to one CPU, one domain or floating; exact demands."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    domains, cpu = [], 0
    for size in sizes:
        domains.append(frozenset(range(cpu, cpu + size)))
        cpu += size
    every = frozenset(range(cpu))
    choices = [every] + domains + [frozenset({c}) for c in every]
    return [(draw(st.sampled_from(choices)),
             F(draw(st.integers(1, 10)), 10))
            for _ in range(draw(st.integers(1, 9)))]


class MaxMinFairPropertyTest(testtools.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(laminar_vcpus())
    def test_feasible_and_every_vcpu_has_a_bottleneck(self, vcpus):
        x = fairshare.max_min_fair(vcpus)
        sets = {a for a, _ in vcpus}
        load = {s: sum(xi for (a, _), xi in zip(vcpus, x) if a <= s)
                for s in sets}
        for (a, d), xi in zip(vcpus, x):
            self.assertTrue(0 < xi <= d)
        for s in sets:
            self.assertLessEqual(load[s], len(s))
        # Max-min fairness: a vCPU below its demand lies in a full set
        # in which nobody gets more than it.
        for (a, d), xi in zip(vcpus, x):
            if xi == d:
                continue
            self.assertTrue(any(
                load[s] == len(s) and a <= s
                and all(xj <= xi for (b, _), xj in zip(vcpus, x) if b <= s)
                for s in sets), (vcpus, x))

    @settings(max_examples=100, deadline=None)
    @given(laminar_vcpus(), st.randoms(use_true_random=False))
    def test_order_does_not_matter(self, vcpus, rng):
        order = list(range(len(vcpus)))
        rng.shuffle(order)
        x = fairshare.max_min_fair(vcpus)
        y = fairshare.max_min_fair([vcpus[i] for i in order])
        self.assertEqual([x[i] for i in order], y)


def mem(stall=0.3, ws=8.0, shared=0.0, bandwidth=0.0, alpha=0.5):
    return occupancy.Workload(working_set_mib=ws, alpha=alpha, stall=stall,
                              write_shared=shared, bandwidth=bandwidth)


class OccupancyTest(testtools.TestCase):

    def test_shares_follow_access_rates_up_to_working_sets(self):
        self.assertEqual([4.0, 4.0],
                         occupancy.foa_shares(8.0, [1, 1], [16, 16]))
        # The first needs 1 MiB of its 2: the rest goes to the second.
        self.assertEqual([1.0, 7.0],
                         occupancy.foa_shares(8.0, [1, 3], [1, 100]))

    def test_power_law_miss_curve(self):
        p = occupancy.Params()
        self.assertEqual(2.0, occupancy.miss_factor(mem(ws=8), 2.0, p))
        self.assertEqual(1.0, occupancy.miss_factor(mem(ws=8), 9.0, p))
        self.assertEqual(20.0, occupancy.miss_factor(mem(ws=8), 0.0, p))

    def _run(self, domains, vms, work, allowed, params=None):
        sim = [contention.SimVM(i, n, 'memory') for i, n in vms]
        return occupancy.evaluate(domains, sim, work, allowed, params)

    def test_alone_with_its_working_set_is_ideal(self):
        got = self._run([(0, 1)], [('a', 1)], {'a': mem()}, {'a': [(0, 1)]})
        self.assertEqual({'a': 1.0}, got)

    def test_two_in_one_cache_halve_it(self):
        # 8 MiB each, 8 MiB of cache: 4 each, misses x sqrt(2).
        got = self._run([(0, 1)], [('a', 1), ('b', 1)],
                        {'a': mem(), 'b': mem()},
                        {'a': [(0, 1)], 'b': [(0, 1)]})
        want = 1 / (0.7 + 0.3 * SQRT2)
        self.assertAlmostEqual(want, got['a'], places=12)
        self.assertAlmostEqual(want, got['b'], places=12)
        # ... which is what the probe's calibration inverts.
        self.assertAlmostEqual(
            0.3, yardstick.stall_from_slowdown(1 / want), places=12)

    def test_a_split_vm_pays_cross_domain_transfers(self):
        # Half its time in each domain: 10 % write-shared x 1/2 of its
        # accesses cross, each (80 - 20) / 174 of a miss, misses 5 %.
        got = self._run([(0,), (1,)], [('a', 2)],
                        {'a': mem(ws=1.0, shared=0.1)},
                        {'a': [(0, 1), (0, 1)]})
        self.assertAlmostEqual(29 / 32, got['a'], places=12)

    def test_bandwidth_caps_throughput(self):
        # Alone it would stream half a core's bandwidth; the host's one
        # CPU gets 0.113 of it: performance 0.113 / 0.5.
        got = self._run([(0,)], [('a', 1)],
                        {'a': mem(stall=0.5, ws=1.0, bandwidth=0.5)},
                        {'a': [(0,)]})
        self.assertAlmostEqual(0.226, got['a'], places=6)

    def test_cpu_time_counts(self):
        # Two 1-vCPU VMs on one CPU: half the time each.
        cpu = occupancy.Workload(working_set_mib=0.5)
        got = self._run([(0,)], [('a', 1), ('b', 1)],
                        {'a': cpu, 'b': cpu}, {'a': [(0,)], 'b': [(0,)]})
        self.assertEqual({'a': 0.5, 'b': 0.5}, got)


class YardstickTest(testtools.TestCase):

    def test_stall_range_from_probe_runs(self):
        docs = [probe_doc(('chase', 0.5, 'same', 1.0 + 0.3 * (SQRT2 - 1))),
                probe_doc(('chase', 0.5, 'same', 1.0 + 0.1 * (SQRT2 - 1)))]
        # The probe's calibration rounds the slowdown - 1 to 4 places.
        self.assertEqual((0.0999, 0.3001), yardstick.stall_range(docs))

    def test_optimum_keeps_two_caches_clean(self):
        domains = [(0,), (1,)]
        vms = [contention.SimVM('a', 1, 'memory'),
               contention.SimVM('b', 1, 'memory')]
        work = {'a': mem(ws=4.0), 'b': mem(ws=4.0)}
        allowed, (geo, total) = yardstick.optimum(domains, vms, work)
        self.assertEqual(1.0, geo)
        self.assertEqual(2.0, total)
        self.assertNotEqual(allowed['a'], allowed['b'])

    def test_too_many_choices_refused(self):
        vms = [contention.SimVM('m%d' % i, 1, 'memory') for i in range(7)]
        work = {vm.id: mem() for vm in vms}
        self.assertRaises(ValueError, yardstick.optimum,
                          [(0,), (1,), (2,)], vms, work)


@st.composite
def small_hosts(draw):
    """(domains, vms, workloads) of a small random host."""
    rng = random.Random(draw(st.integers(0, 10 ** 6)))
    domains, cpu = [], 0
    for _ in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 3))
        domains.append(tuple(range(cpu, cpu + size)))
        cpu += size
    vms = [contention.SimVM('v%d' % n, draw(st.integers(1, 3)),
                            draw(st.sampled_from(['memory', 'cpu', 'io'])))
           for n in range(draw(st.integers(1, 4)))]
    mix = yardstick.Mix(stall_scale=draw(st.sampled_from([1.0, 2.0])))
    return domains, vms, {vm.id: yardstick.draw(rng, vm, mix) for vm in vms}


class YardstickPropertyTest(testtools.TestCase):

    @settings(max_examples=60, deadline=None)
    @given(small_hosts())
    def test_performance_in_range_and_optimum_beats_floating(self, host):
        domains, vms, work = host
        everything = tuple(c for d in domains for c in d)
        floating = {vm.id: [everything] * vm.vcpus for vm in vms}
        for perf in occupancy.evaluate(domains, vms, work,
                                       floating).values():
            self.assertTrue(0 < perf <= 1 + 1e-12)
        _allowed, best = yardstick.optimum(domains, vms, work)
        self.assertGreaterEqual(
            best[0] + 1e-12,
            yardstick.score(domains, vms, work, floating)[0])

    @settings(max_examples=40, deadline=None)
    @given(small_hosts())
    def test_vm_order_does_not_matter(self, host):
        domains, vms, work = host
        everything = tuple(c for d in domains for c in d)
        allowed = {vm.id: [tuple(domains[n % len(domains)])] * vm.vcpus
                   if vm.workload == 'memory' else [everything] * vm.vcpus
                   for n, vm in enumerate(vms)}
        a = occupancy.evaluate(domains, vms, work, allowed)
        b = occupancy.evaluate(domains, vms[::-1], work, allowed)
        for vm in vms:
            self.assertAlmostEqual(a[vm.id], b[vm.id], places=9)
