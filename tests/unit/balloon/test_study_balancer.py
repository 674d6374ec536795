"""Study 002's balancer (modes A and B): exact cases and properties."""

import fractions

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.balloon import study_balancer as balloon
from nova_cacheaware import exception

F = fractions.Fraction


def params(mode='A', threshold=0.99, alpha=0.1, beta=0.1, interval=10.0):
    return balloon.BalloonParams(threshold=threshold, alpha=alpha, beta=beta,
                                 mode=mode, interval_s=interval)


def vm(vm_id, memory, ratio, streak=0, lo=256, hi=7071):
    return balloon.VmMemory(id=vm_id, memory_mib=memory, hit_ratio=ratio,
                            streak=streak, min_mib=lo, max_mib=hi)


def memories(plan):
    return {k: d.memory_mib for k, d in plan.vms.items()}


STUDY_VMS = [vm('a', 2357, 1.0, streak=2), vm('b', 2357, 0.5),
             vm('c', 2357, 0.25)]


class TestStudyPlanExact(testtools.TestCase):
    """Hand-computed rounds (the arithmetic is in the comments)."""

    def test_mode_a(self):
        # a donates 2357*0.1*1.2 = 282.84, then 10% of 2074.16 = 207.416:
        # base 1866.744.  b, c give 235.7 each: base 2121.3.  Pool
        # 961.656 shared 0.5 : 0.25 -> b +641.104, c +320.552.
        plan = balloon.study_plan(params('A'), STUDY_VMS)
        self.assertEqual({'a': 1866, 'b': 2762, 'c': 2441}, memories(plan))
        self.assertEqual(2, plan.unallocated_mib)   # .744 + .404 + .852

    def test_mode_b(self):
        # Same pool shared by miss ratio 0.5 : 0.75 -> b +384.6624,
        # c +576.9936.
        plan = balloon.study_plan(params('B'), STUDY_VMS)
        self.assertEqual({'a': 1866, 'b': 2505, 'c': 2698}, memories(plan))
        self.assertEqual(2, plan.unallocated_mib)

    def test_streak_and_interval(self):
        vms = [vm('s1', 1000, 1.0, streak=1), vm('s2', 1000, 0.995, streak=2),
               vm('s0', 1000, 0.99, streak=0), vm('r', 1000, 0.5, streak=7)]
        plan = balloon.study_plan(params(), vms)
        got = {k: (d.streak, d.interval_s) for k, d in plan.vms.items()}
        self.assertEqual({'s1': (2, 15.0), 's2': (3, 5.0), 's0': (1, 15.0),
                          'r': (0, 10.0)}, got)

    def test_receiver_capped_then_other_receiver(self):
        # b can take only 2400 - 2121.3 = 278.7; the 362.404 it can't take
        # goes to c by the same weights (c is the only one left).
        vms = [STUDY_VMS[0], vm('b', 2357, 0.5, hi=2400), STUDY_VMS[2]]
        plan = balloon.study_plan(params('A'), vms)
        self.assertEqual({'a': 1866, 'b': 2400, 'c': 2804}, memories(plan))
        self.assertEqual(1, plan.unallocated_mib)

    def test_all_receivers_capped_rest_to_donors_by_memory(self):
        # b, c capped at 2200: the rest of the pool (and the 471 free)
        # goes to the donor a, which ends at 7071 + 471 - 4400 = 2828
        # exactly (no float residue).
        vms = [STUDY_VMS[0], vm('b', 2200, 0.5, hi=2200),
               vm('c', 2200, 0.25, hi=2200)]
        plan = balloon.study_plan(params('A'), vms, free_mib=471)
        self.assertEqual({'a': 2828, 'b': 2200, 'c': 2200}, memories(plan))
        self.assertEqual(0, plan.unallocated_mib)

    def test_everyone_capped_leaves_unallocated(self):
        vms = [vm('a', 1000, 0.5, lo=0, hi=1000),
               vm('b', 1000, 1.0, lo=0, hi=1000)]
        plan = balloon.study_plan(params('A'), vms, free_mib=300)
        self.assertEqual({'a': 1000, 'b': 1000}, memories(plan))
        self.assertEqual(300, plan.unallocated_mib)

    def test_no_receivers_pool_back_by_memory(self):
        # Gifts 190 and 570 (+10 free) go back 1:3: +192.5, +577.5.
        vms = [vm('x', 1000, 1.0, lo=0), vm('y', 3000, 0.999, lo=0)]
        plan = balloon.study_plan(params(), vms, free_mib=10)
        self.assertEqual({'x': 1002, 'y': 3007}, memories(plan))
        self.assertEqual(1, plan.unallocated_mib)

    def test_all_weights_zero_share_equally(self):
        vms = [vm('x', 1000, 0.0, lo=0), vm('y', 1000, 0.0, lo=0),
               vm('d', 2000, 1.0, lo=0)]
        plan = balloon.study_plan(params('A', alpha=0.0, beta=0.5), vms)
        self.assertEqual({'x': 1500, 'y': 1500, 'd': 1000}, memories(plan))
        self.assertEqual(0, plan.unallocated_mib)

    def test_min_limits_gift(self):
        # The donor would give 10% + 10% but may only go down to 950.
        vms = [vm('d', 1000, 1.0, lo=950), vm('r', 1000, 0.5, lo=0)]
        plan = balloon.study_plan(params('A'), vms)
        self.assertEqual({'d': 950, 'r': 1050}, memories(plan))

    def test_receiver_weights_zero_in_mode_b_at_full_hit(self):
        # Mode B weight of a receiver is its miss ratio; hit 0.98 -> 0.02.
        vms = [vm('p', 1000, 0.98, lo=0), vm('q', 1000, 0.0, lo=0)]
        plan = balloon.study_plan(params('B', alpha=0, beta=0.5), vms)
        # pool 1000 shared 0.02 : 1 -> p +19.607.., q +980.39..
        self.assertEqual({'p': 519, 'q': 1480}, memories(plan))
        self.assertEqual(1, plan.unallocated_mib)

    def test_inputs_not_modified_and_dict_roundtrip(self):
        vms = list(STUDY_VMS)
        plan = balloon.study_plan(params(), vms)
        self.assertEqual(STUDY_VMS, vms)
        doc = balloon.plan_to_dict(plan)
        self.assertEqual({'memory_mib': 1866, 'streak': 3, 'interval_s': 5.0},
                         doc['vms']['a'])
        self.assertEqual(2, doc['unallocated_mib'])


class TestShareCapped(testtools.TestCase):

    def test_exact_proportions(self):
        shares, left = balloon.share_capped(
            F(90), {'a': F(1), 'b': F(2)}, {'a': F(100), 'b': F(100)})
        self.assertEqual({'a': F(30), 'b': F(60)}, shares)
        self.assertEqual(0, left)

    def test_cap_redistributes(self):
        shares, left = balloon.share_capped(
            F(90), {'a': F(1), 'b': F(1), 'c': F(2)},
            {'a': F(10), 'b': F(100), 'c': F(100)})
        self.assertEqual({'a': F(10), 'b': F(80, 3), 'c': F(160, 3)}, shares)
        self.assertEqual(0, left)

    def test_leftover_when_all_full(self):
        shares, left = balloon.share_capped(
            F(90), {'a': F(1)}, {'a': F(10)})
        self.assertEqual(F(80), left)


class TestRequestValidation(testtools.TestCase):

    def doc(self, **vm_over):
        v = {'id': 'a', 'memory_mib': 1000, 'hit_ratio': 0.5, 'streak': 0,
             'min_mib': 100, 'max_mib': 2000}
        v.update(vm_over)
        return {'params': {'threshold': 0.99, 'alpha': 0.1, 'beta': 0.1,
                           'mode': 'A', 'interval_s': 10},
                'vms': [v]}

    def test_valid(self):
        p, vms, free = balloon.request_from_dict(self.doc())
        self.assertEqual('A', p.mode)
        self.assertEqual(0, free)
        self.assertEqual(1000, vms[0].memory_mib)

    def test_invalid(self):
        cases = [dict(hit_ratio=1.5), dict(hit_ratio=-0.1),
                 dict(hit_ratio='0.5'), dict(hit_ratio=None),
                 dict(hit_ratio=True), dict(min_mib=3000),
                 dict(memory_mib=50), dict(memory_mib=2500),
                 dict(memory_mib=-1, min_mib=-5), dict(streak=-1),
                 dict(memory_mib=1000.5), dict(id=''), dict(id=3)]
        for over in cases:
            self.assertRaises(exception.InvalidInput,
                              balloon.request_from_dict, self.doc(**over))

    def test_invalid_params_and_top_level(self):
        for key, value in (('mode', 'C'), ('alpha', -0.1), ('beta', 'x'),
                           ('threshold', 1.2), ('interval_s', -1)):
            doc = self.doc()
            doc['params'][key] = value
            self.assertRaises(exception.InvalidInput,
                              balloon.request_from_dict, doc)
        for doc in ([], {'vms': []}, dict(self.doc(), free_mib=-1),
                    dict(self.doc(), vms={}),
                    dict(self.doc(), vms=self.doc()['vms'] * 2)):
            self.assertRaises(exception.InvalidInput,
                              balloon.request_from_dict, doc)


_ratio = st.floats(min_value=0, max_value=1)


@st.composite
def rounds(draw):
    n = draw(st.integers(min_value=0, max_value=8))
    vms = []
    for i in range(n):
        lo = draw(st.integers(min_value=0, max_value=4000))
        hi = draw(st.integers(min_value=lo, max_value=lo + 8000))
        mem = draw(st.integers(min_value=lo, max_value=hi))
        vms.append(vm('v%d' % i, mem, draw(_ratio),
                      draw(st.integers(min_value=0, max_value=20)), lo, hi))
    p = params(draw(st.sampled_from(['A', 'B'])), draw(_ratio),
               draw(st.floats(min_value=0, max_value=1)),
               draw(st.floats(min_value=0, max_value=1)),
               draw(st.floats(min_value=0.1, max_value=100)))
    return p, vms, draw(st.integers(min_value=0, max_value=10000))


class TestStudyPlanProperties(testtools.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(rounds())
    def test_conservation_and_bounds(self, case):
        p, vms, free = case
        plan = balloon.study_plan(p, vms, free)
        new = memories(plan)
        self.assertEqual(sum(v.memory_mib for v in vms) + free,
                         sum(new.values()) + plan.unallocated_mib)
        self.assertGreaterEqual(plan.unallocated_mib, 0)
        for v in vms:
            self.assertLessEqual(v.min_mib, new[v.id])
            self.assertLessEqual(new[v.id], v.max_mib)
            d = plan.vms[v.id]
            over = v.hit_ratio >= p.threshold
            self.assertEqual(v.streak + 1 if over else 0, d.streak)

    @settings(max_examples=200, deadline=None)
    @given(rounds())
    def test_receivers_never_lose_and_donors_never_gain_with_receivers(
            self, case):
        p, vms, free = case
        plan = balloon.study_plan(p, vms, free)
        new = memories(plan)
        receivers = [v for v in vms if v.hit_ratio < p.threshold]
        uncapped = [v for v in receivers if new[v.id] < v.max_mib]
        if uncapped:
            # The pool was not exhausted by caps, so donors got nothing.
            for v in vms:
                if v.hit_ratio >= p.threshold:
                    self.assertLessEqual(new[v.id], v.memory_mib)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.floats(min_value=0.01, max_value=0.98), min_size=2,
                    max_size=6),
           st.sampled_from(['A', 'B']),
           st.integers(min_value=0, max_value=5000))
    def test_proportional_without_caps(self, ratios, mode, free):
        vms = [vm('v%d' % i, 1000, r, lo=0, hi=10 ** 6)
               for i, r in enumerate(ratios)]
        plan = balloon.study_plan(params(mode, alpha=0.0, beta=0.3), vms,
                                  free)
        w = [r if mode == 'A' else 1 - r for r in ratios]
        pool = 300 * len(ratios) + free
        for i, v in enumerate(vms):
            exact = 700 + pool * w[i] / sum(w)
            self.assertLessEqual(abs(plan.vms[v.id].memory_mib - exact), 1)


class TestStudyLyingGuests(testtools.TestCase):
    """A guest stuck at 0 % (mode B's favourite) stays within its bounds."""

    def test_zero_forever_mode_b(self):
        vms = [vm('liar', 2357, 0.0, lo=428, hi=3000),
               vm('b', 2357, 1.0, lo=428, hi=6215),
               vm('c', 2357, 0.7, lo=428, hi=6215)]
        free = 0
        for _ in range(300):
            plan = balloon.study_plan(params('B'), vms, free)
            free = plan.unallocated_mib
            vms = [vm(v.id, plan.vms[v.id].memory_mib, v.hit_ratio,
                      plan.vms[v.id].streak, v.min_mib, v.max_mib)
                   for v in vms]
            for v in vms:
                self.assertTrue(v.min_mib <= v.memory_mib <= v.max_mib)
            self.assertEqual(3 * 2357, sum(v.memory_mib for v in vms) + free)
        self.assertEqual(3000, vms[0].memory_mib)
