"""The O(n log n) water-filling of ``balloon-plan`` equals the old one.

The reference is the original quadratic implementation
(:mod:`tests.fixtures.balloon_quadratic`); the results must be identical,
Fraction for Fraction, on any input, ties and zero weights included.
"""

import fractions

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.balloon import study_balancer as balloon
from tests.fixtures import balloon_quadratic as reference

F = fractions.Fraction

# Small numerators and denominators make ties (equal room / weight) and
# exact fills (pool == sum of rooms) frequent.
_FRACTIONS = st.builds(F, st.integers(0, 12), st.integers(1, 4))


@st.composite
def share_inputs(draw):
    keys = draw(st.lists(st.text(max_size=3), unique=True, max_size=12))
    weights = {k: draw(_FRACTIONS) for k in keys}
    room = {k: draw(_FRACTIONS) for k in keys}
    return draw(_FRACTIONS) * draw(st.integers(0, 6)), weights, room


@st.composite
def rounds(draw):
    n = draw(st.integers(0, 15))
    vms = []
    for i in range(n):
        lo = draw(st.integers(0, 3000))
        hi = draw(st.integers(lo, 9000))
        vms.append(balloon.VmMemory(
            id='vm%d' % i, memory_mib=draw(st.integers(lo, hi)),
            hit_ratio=draw(st.sampled_from([0.0, 0.25, 0.5, 0.99, 1.0])
                           | st.floats(0, 1)),
            streak=draw(st.integers(0, 5)), min_mib=lo, max_mib=hi))
    params = balloon.BalloonParams(
        threshold=draw(st.sampled_from([0.0, 0.5, 0.99, 1.0])
                       | st.floats(0, 1)),
        alpha=draw(st.floats(0, 2)), beta=draw(st.floats(0, 1)),
        mode=draw(st.sampled_from(balloon.MODES)), interval_s=10.0)
    return params, vms, draw(st.integers(0, 20000))


class ShareCappedTest(testtools.TestCase):

    @settings(max_examples=500, deadline=None)
    @given(share_inputs())
    def test_same_as_quadratic(self, args):
        pool, weights, room = args
        self.assertEqual(reference.share_capped(pool, weights, room),
                         balloon.share_capped(pool, weights, room))

    def test_zero_weights_share_equally_after_the_weighted_fill(self):
        shares, left = balloon.share_capped(
            F(10), {'a': F(1), 'b': F(0), 'c': F(0)},
            {'a': F(2), 'b': F(3), 'c': F(100)})
        self.assertEqual(({'a': F(2), 'b': F(3), 'c': F(5)}, F(0)),
                         (shares, left))

    def test_leftover_when_all_full(self):
        self.assertEqual(({'a': F(1), 'b': F(0)}, F(4)),
                         balloon.share_capped(F(5), {'a': F(1), 'b': F(1)},
                                              {'a': F(1), 'b': F(0)}))


class StudyPlanTest(testtools.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(rounds())
    def test_same_plan_as_quadratic(self, args):
        params, vms, free_mib = args
        self.assertEqual(reference.study_plan(params, vms, free_mib),
                         balloon.study_plan(params, vms, free_mib))
