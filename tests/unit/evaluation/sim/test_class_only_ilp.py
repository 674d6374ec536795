"""The class-only pattern ILP: its yardstick replica, ILP and search."""

import dataclasses
import math
import random

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware_evaluation.sim import class_only_ilp
from nova_cacheaware_evaluation.sim import contention
from nova_cacheaware_evaluation.sim import occupancy
from nova_cacheaware_evaluation.sim import yardstick


def _host(rng):
    domains, cpu = [], 0
    for _ in range(rng.randint(2, 3)):
        size = rng.randint(2, 4)
        domains.append(tuple(range(cpu, cpu + size)))
        cpu += size
    vms = [contention.SimVM('v%d' % n, rng.choice([1, 2, 4]),
                            rng.choice(['memory', 'memory', 'cpu', 'io']))
           for n in range(rng.randint(2, 7))]
    return domains, vms


class HostLevelTest(testtools.TestCase):

    def test_named_levels(self):
        table = [
            # (pinned vCPUs per domain, CPUs per domain, floating demands,
            #  level)
            ([0], [4], [1.0] * 8, 0.5),
            # Two pinned on four CPUs, six floating: 2L + 6L = 4.
            ([2], [4], [1.0] * 6, 0.5),
            # Six pinned on four CPUs take all four: floating fill the
            # other domain, one CPU each.
            ([6, 0], [4, 4], [1.0] * 4, 1.0),
            # Six pinned on four CPUs and eight floating: 6L + 8L = 8
            # before the domain is full (L = 4 / 6).
            ([6, 0], [4, 4], [1.0] * 8, 4 / 7),
            # Demands that fit: every vCPU gets its demand.
            ([0], [1], [0.2] * 5, 1.0),
        ]
        for pinned, cpus, floating, level in table:
            self.assertAlmostEqual(level, class_only_ilp.host_level(
                pinned, cpus, floating), places=9)


class PatternsTest(testtools.TestCase):

    def test_every_content_within_capacity_and_counts(self):
        self.assertEqual([(0, 0), (0, 1), (1, 0), (2, 0)],
                         class_only_ilp.patterns({1: 2, 4: 1}, 4))
        self.assertEqual([(0,), (1,)],
                         class_only_ilp.patterns({2: 5}, 3))


class EnvironmentTest(testtools.TestCase):

    def test_the_yardstick_decomposed_scores_as_the_yardstick(self):
        rng = random.Random(5)
        base = occupancy.Params()
        settings = [(base, yardstick.Mix()),
                    (dataclasses.replace(base, domain_bw_per_cpu=1e9,
                                         host_bw_per_cpu=1e9),
                     yardstick.Mix()),
                    (base, yardstick.Mix(stall_scale=2.0,
                                         write_shared=(0.0, 0.2)))]
        for params, mix in settings:
            for _ in range(15):
                domains, vms = _host(rng)
                work = {vm.id: yardstick.draw(rng, vm, mix, params)
                        for vm in vms}
                pinned = {vm.id: rng.randrange(len(domains)) for vm in vms
                          if vm.workload == 'memory' and rng.random() < 0.7}
                perf = occupancy.evaluate(
                    domains, vms, work,
                    class_only_ilp.allowed(domains, vms, pinned), params)
                _env, total, _states = class_only_ilp.environment(
                    domains, vms, work, pinned, params)
                self.assertAlmostEqual(
                    sum(math.log(v) for v in perf.values()), total,
                    places=9)


def _objective(layout, values, floats, sizes, counts):
    got = 0.0
    for c, pats in layout.items():
        for p in pats:
            got += values[c][p]
    for t, k in enumerate(sizes):
        placed = sum(p[t] for pats in layout.values() for p in pats)
        got += (counts[k] - placed) * floats[k]
    return got


class SolveTest(testtools.TestCase):

    def test_named_optima(self):
        domains = [(0, 1), (2, 3)]
        # One 1-vCPU VM per domain is worth most; a third floats (a pair
        # in one domain costs more than floating: one optimum, whatever
        # the solver's order).
        values = {2: {(0,): 0.0, (1,): -1.0, (2,): -3.5}}
        layout = class_only_ilp.solve(domains, [1], {1: 3}, values,
                                      {1: -2.0})
        self.assertEqual({2: [(1,), (1,)]}, layout)
        # Floating is cheap: every VM floats.
        layout = class_only_ilp.solve(domains, [1], {1: 3}, values,
                                      {1: -0.5})
        self.assertEqual({2: [(0,), (0,)]}, layout)
        # Uneven domains: the pair goes where it costs least.
        domains = [(0, 1), (2, 3, 4, 5)]
        values = {2: {(0,): 0.0, (1,): -1.0, (2,): -3.0},
                  4: {(0,): 0.0, (1,): -0.5, (2,): -1.2}}
        layout = class_only_ilp.solve(domains, [1], {1: 2}, values,
                                      {1: -5.0})
        self.assertEqual({2: [(0,)], 4: [(2,)]}, layout)

    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(st.integers(0, 2 ** 32 - 1))
    def test_never_below_a_feasible_layout(self, seed):
        rng = random.Random(seed)
        domains = [tuple(range(n * 2, n * 2 + rng.choice([2, 4])))
                   for n in range(rng.randint(1, 4))]
        counts = {k: rng.randint(1, 3) for k in rng.sample([1, 2, 4], 2)}
        sizes = sorted(counts)
        groups = sorted({len(d) for d in domains})
        values = {c: {p: rng.uniform(-3, 0) for p in
                      class_only_ilp.patterns(counts, c * 2)}
                  for c in groups}
        floats = {k: rng.uniform(-3, 0) for k in sizes}
        best = _objective(class_only_ilp.solve(
            domains, sizes, counts, values, floats), values, floats, sizes,
            counts)
        for _ in range(20):
            left = dict(counts)
            layout = {c: [] for c in groups}
            for d in domains:
                fits = [p for p in values[len(d)]
                        if all(n <= left[k] for n, k in zip(p, sizes))]
                p = rng.choice(fits)
                layout[len(d)].append(p)
                for n, k in zip(p, sizes):
                    left[k] -= n
            self.assertGreaterEqual(best + 1e-9, _objective(
                layout, values, floats, sizes, counts))


class SearchTest(testtools.TestCase):

    def test_reaches_the_exhaustive_optimum_on_tiny_hosts(self):
        # Memory-bound VMs of distinct sizes: which VM of a size goes
        # where is then no choice the search leaves out.
        params = occupancy.Params()
        rng = random.Random(11)
        for _ in range(6):
            domains, vms = _host(rng)
            sizes = [1, 2, 4]
            rng.shuffle(sizes)
            vms = [contention.SimVM(vm.id, sizes.pop(), vm.workload)
                   if vm.workload == 'memory' and sizes
                   else dataclasses.replace(vm, workload='cpu')
                   if vm.workload == 'memory' else vm for vm in vms]
            works = [{vm.id: yardstick.draw(rng, vm, params=params)
                      for vm in vms} for _ in range(3)]

            def capacity(cpus):
                return cpus * 2
            exact = yardstick.class_optimum(
                domains, vms, works, params,
                capacity=[capacity(len(d)) for d in domains] + [math.inf])
            want = sum(math.log(yardstick.score(
                domains, vms, w, exact, params)[0]) for w in works) / 3
            found = class_only_ilp.candidates(domains, vms, works, capacity,
                                              params)
            start = max(found, key=lambda p: class_only_ilp.value(
                domains, vms, works, p, params))
            best, got, _spent = class_only_ilp.improve(
                domains, vms, works, start, capacity, params)
            self.assertAlmostEqual(want, got, places=9)
            self.assertGreaterEqual(got, class_only_ilp.value(
                domains, vms, works, start, params))
            for d in range(len(domains)):
                self.assertLessEqual(
                    sum(vm.vcpus for vm in vms if best.get(vm.id) == d),
                    capacity(len(domains[d])))
