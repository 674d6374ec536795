"""The most Clean any placement of a day's servers has (the ILP bound)."""

import random

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware_evaluation.sim import clean_bound

MEM, CPU = True, False


class PatternsTest(testtools.TestCase):

    def test_every_content_of_a_four_cpu_domain(self):
        pats = clean_bound.patterns((1, 2, 4), 4)
        kinds = clean_bound.types((1, 2, 4))
        self.assertEqual([(MEM, 1), (MEM, 2), (MEM, 4),
                          (CPU, 1), (CPU, 2), (CPU, 4)], kinds)
        self.assertEqual(32, len(pats))
        self.assertIn((0,) * 6, pats)
        self.assertTrue(all(
            sum(n * v for n, (_m, v) in zip(p, kinds)) <= 4 for p in pats))
        self.assertEqual(1, clean_bound.clean_in((1, 0, 0, 3, 0, 0), kinds))
        self.assertEqual(0, clean_bound.clean_in((2, 1, 0, 0, 0, 0), kinds))
        self.assertEqual(0, clean_bound.clean_in((0, 0, 0, 0, 2, 0), kinds))


class BoundTest(testtools.TestCase):

    def test_named_days(self):
        table = [
            # (servers {(memory-bound, vCPUs): n}, domains, cpus, optimum)
            ({}, 4, 16, 0),
            # Fewer memory-bound servers than domains: all Clean.
            ({(MEM, 2): 3, (CPU, 2): 5}, 4, 16, 3),
            # More than domains: the others share one domain.
            ({(MEM, 1): 6}, 4, 16, 3),
            # Eight memory-bound servers: three alone, five in the fourth
            # domain? It holds four: two Dirty domains, two Clean.
            ({(MEM, 1): 8}, 4, 16, 2),
            ({(MEM, 1): 7}, 4, 16, 3),
            # Each 4-vCPU server fills a domain: the two CPU-bound ones
            # take two domains, two are left for four memory-bound ones.
            ({(MEM, 2): 4, (CPU, 4): 2}, 4, 16, 0),
            ({(MEM, 2): 3, (CPU, 4): 2}, 4, 16, 1),
            ({(MEM, 2): 2, (CPU, 4): 2}, 4, 16, 2),
        ]
        for counts, domains, cpus, expected in table:
            self.assertEqual(expected, clean_bound.bound(
                counts, domains, 4, cpus), counts)

    def test_unseated_servers_take_cpus_only(self):
        table = [
            # (servers, cpus, optimum seated, optimum with unseated)
            ({(MEM, 1): 8}, 16, 2, 4),
            ({(MEM, 2): 4, (CPU, 4): 2}, 16, 0, 4),
            ({(MEM, 2): 4, (CPU, 4): 1}, 16, 2, 4),
        ]
        for counts, cpus, seated, unseated in table:
            self.assertEqual(seated, clean_bound.bound(counts, 4, 4, cpus),
                             counts)
            self.assertEqual(unseated, clean_bound.bound(
                counts, 4, 4, cpus, unseated=True), counts)

    def test_speed_spreads_what_clean_packs(self):
        # Six 1-vCPU memory-bound servers in four 4-CPU domains, a server
        # beside n others at 1 / (1 + 0.25 n): the most Clean is 3 (three
        # alone, three together: 3 + 3 / 1.5 = 5.0); the most speed is
        # two pairs and two alone (2 + 4 / 1.25 = 5.2).
        counts = {(MEM, 1): 6}
        self.assertEqual(3, clean_bound.bound(counts, 4, 4, 16))
        self.assertAlmostEqual(5.2, clean_bound.performance_bound(
            counts, 4, 4, 16, 0.25, 0.3))
        # Room for all alone: each Clean.
        self.assertAlmostEqual(3.0, clean_bound.performance_bound(
            {(MEM, 2): 3, (CPU, 2): 5}, 4, 4, 16, 0.25, 0.3))
        # A server held in no domain counts ``partial``: four 4-vCPU
        # memory-bound servers, two domains.
        self.assertAlmostEqual(2.6, clean_bound.performance_bound(
            {(MEM, 4): 4}, 2, 4, 16, 0.25, 0.3, unseated=True))
        self.assertEqual(0.0, clean_bound.performance_bound(
            {}, 2, 4, 16, 0.25, 0.3))

    def test_in_pairs_no_domain_holds_a_third(self):
        table = [
            # (servers, domains, cpus, optimum, optimum in pairs)
            # Six in four domains: three alone and three together, or
            # two pairs and two alone.
            ({(MEM, 1): 6}, 4, 16, 3, 2),
            # Eight: two Clean beside a domain of four and one of two;
            # in pairs every domain holds two.
            ({(MEM, 1): 8}, 4, 16, 2, 0),
            # Five: three alone and a pair either way.
            ({(MEM, 1): 5}, 4, 16, 3, 3),
            # Room for all alone: the same.
            ({(MEM, 2): 3, (CPU, 2): 5}, 4, 16, 3, 3),
            # Two 4-vCPU CPU-bound servers fill two domains; three
            # memory-bound ones in the other two: a pair and one alone.
            ({(MEM, 1): 3, (CPU, 4): 2}, 4, 16, 1, 1),
            ({(MEM, 1): 5, (CPU, 4): 2}, 4, 16, 1, None),
            # Nine: two alone, seven in two domains; more than two a
            # domain, so no placement in pairs.
            ({(MEM, 1): 9}, 4, 16, 2, None),
            ({}, 4, 16, 0, 0),
        ]
        for counts, domains, cpus, optimum, in_pairs in table:
            self.assertEqual(optimum, clean_bound.bound(
                counts, domains, 4, cpus), counts)
            self.assertEqual(in_pairs, clean_bound.bound_in_pairs(
                counts, domains, 4, cpus), counts)

    def test_servers_that_do_not_fit_are_an_error(self):
        self.assertRaises(ValueError, clean_bound.bound,
                          {(CPU, 4): 5}, 4, 4, 20)
        self.assertRaises(ValueError, clean_bound.bound,
                          {(CPU, 4): 5}, 4, 4, 16, unseated=True)

    @hypothesis.settings(max_examples=200, deadline=None)
    @hypothesis.given(st.integers(1, 12), st.integers(0, 2 ** 32 - 1))
    def test_no_random_placement_beats_it(self, domains, seed):
        # Random placements, each server into a random domain with room
        # (or nowhere when none has): the bound is at least each one's
        # Clean and at most min(memory-bound, domains).
        rng = random.Random(seed)
        servers = [(rng.random() < 0.6, rng.choice((1, 2, 2, 4)))
                   for _ in range(rng.randint(0, 3 * domains))]
        free = [4] * domains
        placed = [[] for _ in range(domains)]
        kept = []
        for memory, vcpus in servers:
            fits = [d for d in range(domains) if free[d] >= vcpus]
            if not fits:
                continue
            d = rng.choice(fits)
            free[d] -= vcpus
            placed[d].append(memory)
            kept.append((memory, vcpus))
        counts = {}
        for kind in kept:
            counts[kind] = counts.get(kind, 0) + 1
        clean = sum(1 for members in placed if sum(members) == 1)
        best = clean_bound.bound(counts, domains, 4, 4 * domains)
        memory = sum(1 for m, _v in kept if m)
        self.assertLessEqual(clean, best)
        self.assertLessEqual(best, min(memory, domains))
        in_pairs = clean_bound.bound_in_pairs(counts, domains, 4,
                                              4 * domains)
        if max(map(sum, placed), default=0) <= 2:
            # This placement is one in pairs.
            self.assertLessEqual(clean, in_pairs)
        if in_pairs is not None:
            self.assertLessEqual(in_pairs, best)
        speed = sum(n / (1 + 0.25 * (n - 1))
                    for n in map(sum, placed) if n)
        most = clean_bound.performance_bound(counts, domains, 4,
                                             4 * domains, 0.25, 0.3)
        self.assertLessEqual(speed, most + 1e-6)
        self.assertLessEqual(most, memory + 1e-6)
