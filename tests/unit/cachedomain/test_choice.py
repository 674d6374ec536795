"""The in-host cache-domain choice: tables and properties."""

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware.cachedomain import assignment as da
from nova_cacheaware.cachedomain import choice as dc
from nova_cacheaware.cachedomain import choice_doc as dcd
from nova_cacheaware import exception

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

    def test_a_required_instances_domain_comes_after_the_others(self):
        table = [
            # (name, loads, vCPUs, expected order)
            ('a preferred neighbour before a required one',
             [L('a', 1, 1, 4, holds_required=True), L('b', 1, 1, 4)], 1,
             ['b', 'a']),
            ('even one holding more memory-bound instances',
             [L('a', 1, 1, 4, holds_required=True), L('b', 2, 2, 4)], 1,
             ['b', 'a']),
            ('still before a domain too small',
             [L('a', 1, 1, 4, holds_required=True), L('b', 0, 4, 4)], 1,
             ['a', 'b']),
            ('an Empty domain first as always',
             [L('a', 0, 0, 4), L('b', 1, 1, 4, holds_required=True)], 2,
             ['a', 'b']),
        ]
        for name, loads, vcpus, expected in table:
            for seed in ('vm-1', 'vm-2', 'vm-3'):
                self.assertEqual(expected, dc.order_domains(
                    loads, vcpus=vcpus, memory_bound=True, seed=seed), name)
        # Best fit (cpu/io) ignores it: sharing with them is allowed.
        self.assertEqual(['a', 'b'], dc.order_domains(
            [L('a', 1, 2, 4, holds_required=True), L('b', 1, 1, 4)], 1,
            memory_bound=False, seed='vm-1'))

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


class TightestCleanDomainTest(testtools.TestCase):
    """Rule 1 with ``best_fit`` (the agent): tightest of equally clean."""

    TABLE = [
        # (name, loads, vCPUs, expected order)
        ('the domain cpu-bound instances filled most, not the whole one',
         [L('a', 0, 0, 4), L('b', 0, 3, 4), L('c', 0, 2, 4)], 1,
         ['b', 'c', 'a']),
        ('an exact fit first',
         [L('a', 0, 1, 4), L('b', 0, 0, 2)], 2, ['b', 'a']),
        ('Clean still outranks tight',
         [L('a', 1, 3, 4), L('b', 0, 0, 4)], 1, ['b', 'a']),
        ('fewer memory-bound still outranks tight',
         [L('a', 2, 3, 4), L('b', 1, 0, 4)], 1, ['b', 'a']),
        ('a domain too small last',
         [L('a', 0, 4, 4), L('b', 0, 0, 4)], 1, ['b', 'a']),
        ('unknown capacity after every known one',
         [L('a', 0, 0), L('b', 0, 0, 8)], 1, ['b', 'a']),
    ]

    def test_table(self):
        for name, loads, vcpus, expected in self.TABLE:
            for seed in ('vm-1', 'vm-2', 'vm-3'):
                self.assertEqual(expected, dc.order_domains(
                    loads, vcpus, True, seed, best_fit=True), name)

    def test_without_best_fit_equally_clean_domains_spread(self):
        # Concurrent schedulers ordering the same domains (the domain
        # model) keep the tie-break: the tightest would draw them all.
        loads = [L('a', 0, 0, 4), L('b', 0, 3, 4), L('c', 0, 2, 4)]
        firsts = {dc.order_domains(loads, 1, True, 'vm-%d' % n)[0]
                  for n in range(40)}
        self.assertEqual({'a', 'b', 'c'}, firsts)

    def test_a_burst_of_one_vcpu_instances_keeps_a_whole_domain(self):
        # 3 x 1 vCPU memory-bound into domains of 4 with 3, 2, 0 used by
        # cpu-bound instances: each takes the tightest Clean one, so the
        # whole domain stays Empty for a 4-vCPU instance.
        loads = {'a': L('a', 0, 0, 4), 'b': L('b', 0, 3, 4),
                 'c': L('c', 0, 2, 4)}
        out = da.assign_domains({'a': 4, 'b': 4, 'c': 4}, [
            _held('m1', 1, True), _held('m2', 1, True)],
            base={p: (x.vcpus_used, 0) for p, x in loads.items()})
        self.assertEqual({'b', 'c'}, set(out.values()))


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


def _held(uuid, vcpus=1, memory=False, current=None, previous=None,
          order=None, required=False, slot=False):
    return da.HostHeld(uuid=uuid, vcpus=vcpus, memory_bound=memory,
                       current=current, previous=previous, order=order,
                       clean_required=required, holds_slot=slot)


class ContentionScoreTest(testtools.TestCase):
    """The weigher's raw weight: Clean places with room, memory-bound."""

    TABLE = [
        # (name, rows, vCPUs, expected)
        ('no domains: neutral', [], 1, 0.0),
        # 0.75 + fine / 4 with a Clean place, -0.75 + fine / 4 without.
        ('four Empty domains with room', [('a', 0, 0, 0, 4)] * 4, 2, 1.0),
        ('one memory-bound VM of four domains',
         [('a', 1, 1, 1, 4)] + [('b', 0, 0, 0, 4)] * 3, 1,
         0.75 + (0.75 - 0.25) / 4),
        ('an Empty domain cpu-bound VMs filled is no Clean place',
         [('a', 0, 0, 4, 4), ('b', 0, 0, 0, 4)], 1, 0.75 + 0.5 / 4),
        ('room is for the whole instance',
         [('a', 0, 0, 3, 4), ('b', 0, 0, 0, 4)], 2, 0.75 + 0.5 / 4),
        ('unknown capacity counts as room',
         [('a', 0, 0, 9, None), ('b', 1, 1, 0, None)], 4, 0.75),
        ('memory-bound term saturates at -1',
         [('a', 5, 5, 0, 8), ('b', 0, 0, 0, 8)], 1, 0.75 - 0.5 / 4),
        ('no Clean place: the lower band',
         [('a', 1, 1, 1, 2), ('b', 0, 0, 2, 2)], 1, -0.75 - 0.5 / 4),
        ('every domain memory-bound', [('a', 1, 1, 1, 4)] * 4, 1, -1.0),
        ('no domains', [], 1, 0.0),
    ]

    def test_table(self):
        for name, rows, vcpus, expected in self.TABLE:
            self.assertAlmostEqual(expected, dc.contention_score(rows, vcpus),
                                   msg=name)

    rows_st = st.lists(st.tuples(
        st.integers(0, 3), st.integers(0, 8),
        st.one_of(st.none(), st.integers(1, 8))), min_size=1, max_size=8)

    @hypothesis.given(rows_st, st.integers(1, 8), st.data())
    def test_a_claim_never_raises_the_score(self, spec, vcpus, data):
        rows = [('d%d' % i, m, m, u, c) for i, (m, u, c) in enumerate(spec)]
        before = dc.contention_score(rows, vcpus)
        self.assertTrue(-1.0 <= before <= 1.0)
        i = data.draw(st.integers(0, len(rows) - 1))
        d, m, c, u, cap = rows[i]
        bound = data.draw(st.booleans())
        claimed = list(rows)
        claimed[i] = (d, m + bound, c + bound, u + vcpus, cap)
        self.assertLessEqual(dc.contention_score(claimed, vcpus), before)

    @hypothesis.given(rows_st, rows_st, st.integers(1, 8))
    def test_a_clean_place_outweighs_any_host_without(self, one, other,
                                                      vcpus):
        def rows(spec):
            return [('d%d' % i, m, m, u, c)
                    for i, (m, u, c) in enumerate(spec)]

        def places(spec):
            return sum(1 for m, u, c in spec
                       if not m and (c is None or u + vcpus <= c))

        a, b = dc.contention_score(rows(one), vcpus), dc.contention_score(
            rows(other), vcpus)
        if places(one) and not places(other):
            # Half the span: 5 at the default multiplier, once normalised.
            self.assertGreaterEqual(a - b, 1.0)
        for score, spec in ((a, one), (b, other)):
            self.assertEqual(places(spec) > 0, score >= 0.5)
            self.assertEqual(not places(spec), score <= -0.5)

    BEST_FIT = [
        # (name, rows, vCPUs, expected): 2 * vcpus / room - 1 of the
        # tightest Clean place, -1 without one.
        ('exact fit', [('a', 0, 0, 3, 4), ('b', 0, 0, 0, 4)], 1, 1.0),
        ('half the room left', [('a', 0, 0, 2, 4)], 1, 2 / 2 - 1),
        ('a whole Empty domain', [('a', 0, 0, 0, 4)] * 2, 1, 2 / 4 - 1),
        ('4 vCPUs in a whole Empty domain', [('a', 0, 0, 0, 4)], 4, 1.0),
        ('a tight place holding a memory-bound VM is no place',
         [('a', 1, 1, 3, 4), ('b', 0, 0, 0, 4)], 1, -0.5),
        ('a place too small is no place',
         [('a', 0, 0, 3, 4), ('b', 0, 0, 0, 8)], 2, 2 * 2 / 8 - 1),
        ('no Clean place', [('a', 1, 1, 0, 4)], 1, -1.0),
        ('unknown capacity: neutral', [('a', 0, 0, 0, None)], 1, 0.0),
        ('a known tight place beats unknown capacity',
         [('a', 0, 0, 0, None), ('b', 0, 0, 1, 4)], 2, 2 * 2 / 3 - 1),
        ('no domains: neutral', [], 1, 0.0),
    ]

    def test_best_fit_table(self):
        for name, rows, vcpus, expected in self.BEST_FIT:
            self.assertAlmostEqual(
                expected, dc.contention_score(rows, vcpus, best_fit=True),
                msg=name)

    @hypothesis.given(rows_st, st.integers(1, 8), st.data())
    def test_best_fit_a_memory_bound_claim_never_raises_the_score(
            self, spec, vcpus, data):
        rows = [('d%d' % i, m, m, u, c) for i, (m, u, c) in enumerate(spec)]
        before = dc.contention_score(rows, vcpus, best_fit=True)
        self.assertTrue(-1.0 <= before <= 1.0)
        i = data.draw(st.integers(0, len(rows) - 1))
        d, m, c, u, cap = rows[i]
        claimed = list(rows)
        claimed[i] = (d, m + 1, c + 1, u + vcpus, cap)
        self.assertLessEqual(
            dc.contention_score(claimed, vcpus, best_fit=True), before)

    @hypothesis.given(rows_st, st.integers(1, 8))
    def test_best_fit_is_above_minus_one_exactly_with_a_clean_place(
            self, spec, vcpus):
        rows = [('d%d' % i, m, m, u, c) for i, (m, u, c) in enumerate(spec)]
        places = [u for m, u, c in spec
                  if not m and (c is None or u + vcpus <= c)]
        self.assertEqual(bool(places), dc.contention_score(
            rows, vcpus, best_fit=True) > -1.0)


class AssignDomainsTest(testtools.TestCase):
    """The agent's choice in the per-host model: tables."""

    CAPACITY = {'L3-0': 8, 'L3-1': 8, 'L3-2': 8}

    def test_memory_bound_instances_get_empty_domains(self):
        out = da.assign_domains(self.CAPACITY, [
            _held('a', 2, True), _held('b', 2, True), _held('c', 2, True)])
        self.assertEqual({'L3-0', 'L3-1', 'L3-2'}, set(out.values()))

    def test_a_fourth_memory_bound_shares_a_domain(self):
        out = da.assign_domains(self.CAPACITY, [
            _held(u, 2, True) for u in 'abcd'])
        self.assertEqual([1, 1, 2], sorted(
            list(out.values()).count(d) for d in self.CAPACITY))

    def test_previous_and_current_domains_are_kept(self):
        out = da.assign_domains(self.CAPACITY, [
            _held('a', 2, True, previous='L3-2'),
            _held('b', 2, True, current='L3-2'),
            _held('c', 8, False, previous='gone', current='L3-1')])
        self.assertEqual({'a': 'L3-2', 'b': 'L3-2', 'c': 'L3-1'}, out)

    def test_cpu_instances_fill_the_fullest_domain_first(self):
        out = da.assign_domains(self.CAPACITY, [
            _held('m', 2, True, previous='L3-1'),
            _held('x', 4, False), _held('y', 2, False)])
        # Best fit keeps the Empty domains for memory-bound instances.
        self.assertEqual({'m': 'L3-1', 'x': 'L3-1', 'y': 'L3-1'}, out)

    def test_no_room_leaves_the_instance_unassigned(self):
        out = da.assign_domains({'L3-0': 4}, [
            _held('a', 4, previous='L3-0'), _held('b', 1)])
        self.assertEqual({'a': 'L3-0', 'b': None}, out)

    def test_same_seed_as_the_scheduler(self):
        # With the same loads, the agent picks what order_domains (the
        # scheduler's prediction) puts first.
        loads = [dc.DomainLoad(provider=d, vcpus_total=8)
                 for d in sorted(self.CAPACITY)]
        for uuid in ('u1', 'u2', 'u3', 'u4'):
            predicted = dc.order_domains(loads, 2, True, uuid,
                                         best_fit=True)[0]
            self.assertEqual({uuid: predicted}, da.assign_domains(
                self.CAPACITY, [_held(uuid, 2, True)]))

    def test_base_load_counts_against_room_and_clean(self):
        # L3-0 and L3-1 hold memory-bound VMs pinned by the planner (4 and
        # 6 vCPUs): the memory-bound instance goes to the Empty L3-2, the
        # 4-vCPU cpu one to the fullest domain that fits (L3-0).
        base = {'L3-0': (4, 1), 'L3-1': (6, 1)}
        out = da.assign_domains(self.CAPACITY, [
            _held('m', 2, True), _held('x', 4, False)], base)
        self.assertEqual({'m': 'L3-2', 'x': 'L3-0'}, out)
        self.assertEqual(6, da.largest_room(self.CAPACITY, out,
                                            {'m': 2, 'x': 4}, base))

    def test_largest_room(self):
        self.assertEqual(6, da.largest_room(
            {'L3-0': 8, 'L3-1': 8}, {'a': 'L3-0', 'b': 'L3-1', 'c': None},
            {'a': 2, 'b': 3, 'c': 8}))
        self.assertEqual(1, da.largest_room({'L3-0': 2}, {'a': 'L3-0'},
                                            {'a': 2}))


class ClaimOrderTest(testtools.TestCase):
    """New instances are placed in Nova's claim order (database id)."""

    def test_a_multi_create_seen_in_one_pass_is_the_scheduler_sequence(self):
        capacity = {'L3-%d' % i: 3 for i in range(4)}
        # Nova claimed 'd' (id 7), then 'c' (8), 'b' (9), 'a' (10): the
        # reverse of uuid order.
        held = [_held(u, 2, True, order=o)
                for u, o in (('a', 10), ('b', 9), ('c', 8), ('d', 7))]
        self.assertEqual(scheduler_sequence(capacity, held),
                         da.assign_domains(capacity, held))

    def test_instances_without_an_order_follow_in_uuid_order(self):
        self.assertEqual(
            ['z', 'y', 'a', 'b'],
            [vm.uuid for vm in sorted(
                [_held('a'), _held('y', order=5), _held('b'),
                 _held('z', order=2)], key=da.arrival_key)])

    def test_a_preferred_instance_avoids_a_required_ones_domain(self):
        capacity = {'L3-0': 4, 'L3-1': 4}
        kept = [_held('r', 2, True, previous='L3-0', required=True),
                _held('p', 2, True, previous='L3-1')]
        for index in range(8):
            new = _held('n%d' % index, 1, True)
            out = da.assign_domains(capacity, kept + [new])
            self.assertEqual('L3-1', out[new.uuid], index)
            self.assertEqual({'L3-0': 1}, da.required_holders(
                [vm.uuid for vm in kept + [new] if vm.clean_required], out))
        # Where it is the only domain with room (two claims raced), a
        # memory-bound instance stays on Nova's CPUs rather than make the
        # required one Dirty; a cpu-bound one may go there.
        full = [_held('r', 2, True, previous='L3-0', required=True),
                _held('c', 4, False, previous='L3-1')]
        for new, domain in ((_held('n', 1, True), None),
                            (_held('n', 1, True, slot=True), None),
                            (_held('n', 1, True, required=True), None),
                            (_held('n', 1, False), 'L3-0')):
            self.assertEqual(domain, da.assign_domains(
                capacity, full + [new])['n'])
        # A required newcomer whose only room holds a memory-bound
        # instance waits on Nova's CPUs for a domain of its own.
        shared = [_held('p', 2, True, previous='L3-0'),
                  _held('c', 4, False, previous='L3-1')]
        self.assertIsNone(da.assign_domains(
            capacity, shared + [_held('n', 1, True, required=True)])['n'])
        self.assertEqual('L3-0', da.assign_domains(
            capacity, shared + [_held('n', 1, True)])['n'])

    def test_replay_document_carries_the_optional_flags(self):
        for key, flag in (('clean_required', 'required'),
                          ('holds_slot', 'slot')):
            held = [_held('a', 2, True, **{flag: True}), _held('b', 1, True)]
            doc = dcd.choice_to_dict({'L3-0': 4}, held)
            self.assertEqual([True, False],
                             [i[key] for i in doc['instances']])
            self.assertEqual(({'L3-0': 4}, held, {}),
                             dcd.choice_from_dict(doc))
            del doc['instances'][0][key]
            self.assertFalse(getattr(dcd.choice_from_dict(doc)[1][0], key))
            doc['instances'][0][key] = 'yes'
            self.assertRaisesRegex(
                exception.InvalidInput,
                '%s of a must be true or false' % key,
                dcd.choice_from_dict, doc)

    def test_slot_holders_take_the_clean_places_placement_counted(self):
        # One Clean place left (L3-1). 'a' (claimed first, no slot: auto
        # or a preferred request on its last host) and 'b' (a preferred
        # request that claimed the slot) arrive in one pass: 'b' gets it.
        capacity = {'L3-0': 4, 'L3-1': 4}
        base = {'L3-0': (1, 1)}
        held = [_held('a', 1, True, order=1),
                _held('b', 1, True, order=2, slot=True)]
        self.assertEqual({'a': 'L3-0', 'b': 'L3-1'},
                         da.assign_domains(capacity, held, base))
        # Without the slot, Nova's claim order decides: 'a' takes it.
        held[1] = _held('b', 1, True, order=2)
        self.assertEqual('L3-1', da.assign_domains(capacity, held,
                                                   base)['a'])
        # Required instances hold their slot too.
        held = [_held('a', 1, True, order=1),
                _held('r', 1, True, order=2, required=True, slot=True)]
        self.assertEqual('L3-1', da.assign_domains(capacity, held,
                                                   base)['r'])

    def test_a_small_slot_holder_moves_over_for_a_big_one(self):
        # Found by the property below: slot holders of 1 then 2 vCPUs on
        # domains of 1 and 3. The rule put the first in the big domain;
        # the second fits only there. Both hold a Clean place Placement
        # counted: the first, placed in this pass, moves to the small
        # Empty domain and each is Clean; the slot-less one joins the
        # room left.
        capacity = {'L3-0': 1, 'L3-1': 3}
        held = [_held('a', 1, True, order=0),
                _held('b', 1, True, slot=True, order=1),
                _held('c', 2, True, slot=True, order=2)]
        self.assertEqual({'a': 'L3-1', 'b': 'L3-0', 'c': 'L3-1'},
                         da.assign_domains(capacity, held))
        # A slot holder already running there (its home) is not moved.
        held[1] = _held('b', 1, True, slot=True, order=1, previous='L3-1')
        self.assertEqual({'a': 'L3-0', 'b': 'L3-1', 'c': 'L3-1'},
                         da.assign_domains(capacity, held))

    def test_a_slot_holder_takes_back_a_place_a_slot_less_one_took(self):
        # No Empty domain left: 'p' (no slot) took L3-0 in an earlier
        # pass, 's' holds L3-1's slot, 'q' (no slot) L3-2. A new slot
        # holder takes L3-0 back; 'p' is placed again like a new instance,
        # but only beside instances without a slot.
        capacity = {'L3-0': 2, 'L3-1': 2, 'L3-2': 2}
        kept = [_held('p', 1, True, previous='L3-0'),
                _held('s', 1, True, previous='L3-1', slot=True),
                _held('q', 1, True, previous='L3-2')]
        for new in (_held('n', 1, True, required=True, slot=True),
                    _held('n', 1, True, slot=True)):
            self.assertEqual(
                {'p': 'L3-2', 'q': 'L3-2', 's': 'L3-1', 'n': 'L3-0'},
                da.assign_domains(capacity, kept + [new]))
        kept.pop()
        capacity.pop('L3-2')
        # Without a slot, or against a slot holder or a required one,
        # nobody yields.
        out = da.assign_domains(capacity, kept + [_held('n', 1, True)])
        self.assertEqual(('L3-0', 'L3-1'), (out['p'], out['s']))
        self.assertIn(out['n'], capacity)
        held = [_held('p', 1, True, previous='L3-0', slot=True),
                _held('r', 1, True, previous='L3-1', required=True,
                      slot=True),
                _held('n', 1, True, slot=True)]
        self.assertEqual({'p': 'L3-0', 'r': 'L3-1', 'n': 'L3-0'},
                         da.assign_domains(capacity, held))
        # The one yielding waits on Nova's CPUs where it may join nothing.
        held = [_held('p', 1, True, previous='L3-0'),
                _held('r', 1, True, previous='L3-1', required=True,
                      slot=True),
                _held('n', 1, True, required=True, slot=True)]
        self.assertEqual({'p': None, 'r': 'L3-1', 'n': 'L3-0'},
                         da.assign_domains(capacity, held))

    def test_replay_document_carries_the_order(self):
        held = [_held('a', 2, True, order=12), _held('b', 1)]
        doc = dcd.choice_to_dict({'L3-0': 4}, held)
        self.assertEqual([12, None], [i['order'] for i in doc['instances']])
        self.assertEqual(({'L3-0': 4}, held, {}), dcd.choice_from_dict(doc))
        doc['instances'][0]['order'] = -1
        self.assertRaisesRegex(
            exception.InvalidInput,
            'order of a must be a non-negative integer, not -1',
            dcd.choice_from_dict, doc)

    @hypothesis.given(
        st.lists(st.integers(1, 6), min_size=1, max_size=6),
        st.lists(st.tuples(st.integers(1, 8), st.booleans(),
                           st.uuids().map(str)),
                 max_size=12, unique_by=lambda t: t[2]))
    def test_one_pass_equals_the_claim_by_claim_prediction(self, sizes,
                                                           vms):
        # Room for every instance in any one domain: the scheduler then
        # predicts every claim, the agent places every instance.
        capacity = {'L3-%d' % i: 96 + s for i, s in enumerate(sizes)}
        held = [_held(u, v, m, order=index)
                for index, (v, m, u) in enumerate(vms)]
        self.assertEqual(scheduler_sequence(capacity, held),
                         da.assign_domains(capacity, held))


def scheduler_sequence(capacity, held):
    """The scheduler's predictions, one claim after the other.

    Each instance is predicted as ``scheduler.domain_order.predict_domain``
    does: the loads of the earlier claims, the instance's own seed.
    """
    used = {d: 0 for d in capacity}
    clean = {d: 0 for d in capacity}
    out = {}
    for vm in sorted(held, key=lambda vm: vm.order):
        loads = [dc.DomainLoad(d, clean[d], used[d], capacity[d])
                 for d in sorted(capacity)]
        first = dc.order_domains(loads, vm.vcpus, vm.memory_bound,
                                 vm.uuid, best_fit=True)[0]
        out[vm.uuid] = first
        used[first] += vm.vcpus
        clean[first] += int(vm.memory_bound)
    return out


class AssignDomainsPropertiesTest(testtools.TestCase):

    @hypothesis.given(
        st.lists(st.integers(1, 16), min_size=1, max_size=6),
        st.lists(st.tuples(st.integers(1, 8), st.booleans()), max_size=20))
    def test_never_over_capacity_and_kept_stable(self, sizes, vms):
        capacity = {'L3-%d' % i: s for i, s in enumerate(sizes)}
        held = [_held('vm-%02d' % i, v, m) for i, (v, m) in enumerate(vms)]
        out = da.assign_domains(capacity, held)
        used = {d: 0 for d in capacity}
        for vm in held:
            if out[vm.uuid] is not None:
                used[out[vm.uuid]] += vm.vcpus
        for d in capacity:
            self.assertLessEqual(used[d], capacity[d])
        # A second pass with the answer as ``previous`` changes nothing.
        again = da.assign_domains(capacity, [
            da.HostHeld(vm.uuid, vm.vcpus, vm.memory_bound,
                        previous=out[vm.uuid]) for vm in held])
        self.assertEqual({u: d for u, d in out.items() if d is not None},
                         {u: d for u, d in again.items() if d is not None})
        # Nobody is left out while a domain could take it.
        for vm in held:
            if out[vm.uuid] is None:
                self.assertFalse(any(
                    used[d] + vm.vcpus <= capacity[d] for d in capacity))

    @hypothesis.given(
        st.lists(st.integers(1, 8), min_size=1, max_size=5),
        st.lists(st.tuples(st.integers(1, 4), st.booleans(), st.booleans(),
                           st.booleans()), max_size=16))
    def test_no_memory_bound_newcomer_joins_a_required_instance(
            self, sizes, vms):
        capacity = {'L3-%d' % i: s for i, s in enumerate(sizes)}
        held = [_held('vm-%02d' % i, v, m or r, required=r, slot=r or s,
                      order=i)
                for i, (v, m, r, s) in enumerate(vms)]
        out = da.assign_domains(capacity, held)
        inside = {d: [vm for vm in held if out[vm.uuid] == d]
                  for d in capacity}
        for domain, there in inside.items():
            if any(vm.clean_required for vm in there):
                self.assertEqual(
                    1, sum(vm.memory_bound for vm in there), there)
        # A slot holder that found no Clean place (none, or beside another
        # slot holder: slot-less ones come later and may still join it)
        # found no place a slot-less instance held alone and could yield.
        for vm in held:
            there = inside.get(out[vm.uuid], [])
            if not (vm.memory_bound and vm.holds_slot) or (
                    out[vm.uuid] is not None and not [
                        m for m in there if m.memory_bound and m.holds_slot
                        and m is not vm]):
                continue
            for domain, others in inside.items():
                bound = [m for m in others if m.memory_bound]
                room = capacity[domain] - sum(m.vcpus for m in others)
                self.assertFalse(
                    len(bound) == 1 and not bound[0].holds_slot
                    and room + bound[0].vcpus >= vm.vcpus, (vm, domain))

    @hypothesis.given(
        st.lists(st.integers(1, 8), min_size=1, max_size=5),
        st.lists(st.tuples(st.integers(1, 4), st.booleans(), st.booleans(),
                           st.integers(0, 5)), max_size=16))
    def test_homes_two_claims_raced_into_are_not_kept(self, sizes, vms):
        # Any instance may come with a home (the agent's earlier choice,
        # or pins a planner left): the result still never overfills a
        # domain nor puts a memory-bound instance beside a required one.
        capacity = {'L3-%d' % i: s for i, s in enumerate(sizes)}
        held = [_held('vm-%02d' % i, v, m or r, required=r, slot=r,
                      order=i, previous='L3-%d' % h)
                for i, (v, m, r, h) in enumerate(vms)]
        out = da.assign_domains(capacity, held)
        for domain in capacity:
            there = [vm for vm in held if out[vm.uuid] == domain]
            self.assertLessEqual(sum(vm.vcpus for vm in there),
                                 capacity[domain])
            if any(vm.clean_required for vm in there):
                self.assertEqual(
                    1, sum(vm.memory_bound for vm in there), there)

    def test_of_two_required_in_one_domain_the_first_claimed_stays(self):
        # Both ended in L2-0 (a race): the earlier claim keeps it, the
        # other takes the Empty L2-1, not the first one's domain.
        out = da.assign_domains({'L2-0': 4, 'L2-1': 4}, [
            _held('r2', 2, True, current='L2-0', required=True, slot=True,
                  order=2),
            _held('r1', 2, True, previous='L2-0', required=True, slot=True,
                  order=1)])
        self.assertEqual({'r1': 'L2-0', 'r2': 'L2-1'}, out)

    def test_beside_a_required_one_with_no_room_elsewhere_it_waits(self):
        out = da.assign_domains({'L2-0': 4}, [
            _held('r', 2, True, previous='L2-0', required=True, slot=True),
            _held('p', 2, True, current='L2-0')])
        self.assertEqual({'r': 'L2-0', 'p': None}, out)


class ChoiceLoadsTest(testtools.TestCase):
    """What the agent publishes of its choice (payload 1.4)."""

    def test_table(self):
        held = [_held('a', 2, True), _held('b', 4, False),
                _held('c', 1, True), _held('d', 8, True)]
        table = [
            # (assigned, base, loads)
            ({}, None, {}),
            ({'a': 'L3-0', 'b': 'L3-0', 'c': 'L3-1', 'd': None}, None,
             {'L3-0': (6, 1), 'L3-1': (1, 1)}),
            ({'a': 'L3-0'}, {'L3-0': (3, 1), 'L3-2': (2, 0)},
             {'L3-0': (5, 2), 'L3-2': (2, 0)}),
        ]
        for assigned, base, loads in table:
            self.assertEqual(loads, da.choice_loads(held, assigned, base))

    @hypothesis.settings(deadline=None)
    @hypothesis.given(
        st.lists(st.integers(1, 16), min_size=1, max_size=6),
        st.lists(st.tuples(st.integers(1, 8), st.booleans()), max_size=12),
        st.dictionaries(st.integers(0, 5),
                        st.tuples(st.integers(0, 4), st.integers(0, 2))),
        st.integers(1, 8), st.booleans(), st.uuids().map(str))
    def test_prediction_from_published_loads_is_the_agents_choice(
            self, sizes, vms, base_of, vcpus, memory, new):
        # The scheduler orders the published loads with the new
        # instance's seed; the agent's next pass assigns it with the
        # others kept where they are: the same domain, or none.
        capacity = {'L3-%d' % i: s for i, s in enumerate(sizes)}
        base = {'L3-%d' % i: v for i, v in base_of.items()
                if 'L3-%d' % i in capacity}
        held = [_held('vm-%02d' % i, v, m) for i, (v, m) in enumerate(vms)]
        out = da.assign_domains(capacity, held, base)
        loads = da.choice_loads(held, out, base)
        published = [dc.DomainLoad(d, loads.get(d, (0, 0))[1],
                                   loads.get(d, (0, 0))[0], capacity[d])
                     for d in sorted(capacity)]
        predicted = dc.order_domains(published, vcpus, memory, new,
                                     best_fit=True)[0]
        kept = [da.HostHeld(vm.uuid, vm.vcpus, vm.memory_bound,
                            previous=out[vm.uuid]) for vm in held
                if out[vm.uuid] is not None]
        agent = da.assign_domains(
            capacity, kept + [_held(new, vcpus, memory)], base)[new]
        fits = any(loads.get(d, (0, 0))[0] + vcpus <= capacity[d]
                   for d in capacity)
        self.assertEqual(predicted if fits else None, agent)
