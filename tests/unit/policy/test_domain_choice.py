"""The in-host cache-domain choice: tables and properties."""

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware.policy import domain_choice as dc

L = dc.DomainLoad


def seed_ranking(seed, providers):
    """Providers in pure tie-break order for ``seed``."""
    return sorted(providers, key=lambda p: dc.tie_break(seed, p))


class MemoryBoundRuleTest(testtools.TestCase):
    """Rule 1: Empty first, else fewest memory-bound instances."""

    TABLE = [
        # (name, loads, expected first)
        ('the only Empty domain wins over Clean ones',
         [L('a', 1), L('b', 0), L('c', 1)], 'b'),
        ('fewest memory-bound when none is Empty',
         [L('a', 3), L('b', 1), L('c', 2)], 'b'),
        ('an Empty domain with CPU-bound load still beats a Clean one',
         [L('a', 1, 0, 8), L('b', 0, 6, 8)], 'b'),
        ('a domain known too small goes last even if Empty',
         [L('a', 0, 7, 8), L('b', 1, 0, 8)], 'b'),
    ]

    def test_table(self):
        for name, loads, first in self.TABLE:
            order = dc.order_domains(loads, vcpus=2, memory_bound=True,
                                     seed='vm-1')
            self.assertEqual(first, order[0], name)
            self.assertEqual(sorted(x.provider for x in loads),
                             sorted(order), name)

    def test_this_requests_claims_outrank_older_memory(self):
        # Stale claims (servers since deleted) made a, b, c look busier
        # than d, which an earlier instance of this very request holds.
        loads = [L('a', 3), L('b', 3), L('c', 3),
                 L('d', 1, last_claim=9.0, claimed_now=1)]
        self.assertEqual('d', dc.order_domains(loads, 2, True, 'vm')[-1])

    def test_least_recently_claimed_first_among_equals(self):
        loads = [L('a', 1, last_claim=5.0), L('b', 1, last_claim=1.0),
                 L('c', 1, last_claim=3.0)]
        self.assertEqual(['b', 'c', 'a'],
                         dc.order_domains(loads, 2, True, 'vm'))

    def test_equal_domains_follow_the_tie_break(self):
        loads = [L(p) for p in 'abcd']
        for seed in ('vm-1', 'vm-2', 'vm-3'):
            self.assertEqual(seed_ranking(seed, 'abcd'),
                             dc.order_domains(loads, 2, True, seed))


class BestFitRuleTest(testtools.TestCase):
    """Rule 2: fullest domain that fits; Empty domains kept for last."""

    TABLE = [
        ('fullest fitting domain first',
         [L('a', 1, 2, 8), L('b', 1, 5, 8), L('c', 1, 7, 8)], 'b'),
        ('domains with a memory-bound VM before Empty ones',
         [L('a', 0, 6, 8), L('b', 1, 0, 8)], 'b'),
        ('an exact fit is the best fit',
         [L('a', 1, 0, 8), L('b', 1, 6, 8)], 'b'),
        ('unknown capacity: least used first (spread)',
         [L('a', 0, 4), L('b', 0, 2), L('c', 0, 6)], 'b'),
        ('all Empty: the fullest fitting one, the emptiest stays empty',
         [L('a', 0, 0, 8), L('b', 0, 4, 8)], 'b'),
    ]

    def test_table(self):
        for name, loads, first in self.TABLE:
            order = dc.order_domains(loads, vcpus=2, memory_bound=False,
                                     seed='vm-1')
            self.assertEqual(first, order[0], name)

    def test_two_domains_of_four_take_four_two_vcpu_instances(self):
        # The multi-create case of the issue: 4 x 2 vCPUs, domains of 4.
        loads = {'a': L('a', 0, 0, 4), 'b': L('b', 0, 0, 4)}
        placed = []
        for n in range(4):
            first = dc.order_domains(list(loads.values()), 2, False,
                                     'vm-%d' % n)[0]
            old = loads[first]
            self.assertTrue(old.fits(2))
            loads[first] = L(first, 0, old.vcpus_used + 2, 4)
            placed.append(first)
        self.assertEqual([2, 2], sorted(placed.count(p) for p in 'ab'))


loads_st = st.lists(
    st.builds(L,
              provider=st.text('abcdefgh', min_size=1, max_size=3),
              memory_bound=st.integers(0, 4),
              vcpus_used=st.integers(0, 16),
              vcpus_total=st.one_of(st.none(), st.integers(1, 16))),
    min_size=1, max_size=8,
    unique_by=lambda load: load.provider)


class PropertiesTest(testtools.TestCase):

    @hypothesis.given(loads_st, st.integers(1, 8), st.booleans(),
                      st.text(min_size=1, max_size=8))
    def test_a_permutation_with_fitting_domains_first(self, loads, vcpus,
                                                      memory, seed):
        order = dc.order_domains(loads, vcpus, memory, seed)
        self.assertEqual(sorted(x.provider for x in loads), sorted(order))
        by = {x.provider: x for x in loads}
        fits = [by[p].fits(vcpus) for p in order]
        self.assertEqual(sorted(fits, reverse=True), fits)

    @hypothesis.given(loads_st, st.integers(1, 8),
                      st.text(min_size=1, max_size=8))
    def test_memory_bound_first_has_fewest_memory_bound(self, loads, vcpus,
                                                        seed):
        order = dc.order_domains(loads, vcpus, True, seed)
        by = {x.provider: x for x in loads}
        fitting = [x for x in loads if x.fits(vcpus)]
        if fitting:
            self.assertEqual(min(x.memory_bound for x in fitting),
                             by[order[0]].memory_bound)

    @hypothesis.given(st.integers(2, 16))
    def test_ties_spread_over_instances(self, domains):
        # Equal domains: over many instances each domain comes first for
        # some, so concurrent schedulers do not pile onto one.
        loads = [L('d%d' % i) for i in range(domains)]
        firsts = {dc.order_domains(loads, 1, True, 'vm-%d' % n)[0]
                  for n in range(40 * domains)}
        self.assertEqual({x.provider for x in loads}, firsts)
