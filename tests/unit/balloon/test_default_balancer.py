"""Our default balancer: behaviour, properties, lying guests."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.balloon import default_balancer as bd

P = bd.DefaultParams()


def view(vm_id, memory, ratio, cache, free=0, used=300, lo=428, hi=6215,
         **state):
    return bd.VmView(id=vm_id, memory_mib=memory, hit_ratio=ratio,
                     cache_mib=cache, free_mib=free, used_mib=used,
                     min_mib=lo, max_mib=hi, **state)


def mem(plan):
    return {k: d.memory_mib for k, d in plan.vms.items()}


class TestEstimate(testtools.TestCase):

    def test_uniform_lru_inversion(self):
        # 1000 MiB cached at hit ratio 0.25 -> working set 4000 MiB.
        self.assertEqual(4000, bd.estimate_working_set(
            view('a', 1300, 0.25, 1000)))

    def test_unknown_without_hits_or_cache(self):
        self.assertEqual(bd.INF, bd.estimate_working_set(
            view('a', 1300, 0.0, 1000)))
        self.assertEqual(bd.INF, bd.estimate_working_set(
            view('a', 300, 0.5, 0)))


class TestDefaultPlan(testtools.TestCase):

    def test_idle_guest_memory_goes_to_needy_vm(self):
        # b: 2000 cached at 0.8 -> W 2500, need 300 + 2575 + 16 = 2891.
        vms = [view('a', 2357, 1.0, 100, free=1900),
               view('b', 2357, 0.8, 2000)]
        plan = bd.default_plan(P, vms)
        self.assertEqual({'a': 1823, 'b': 2891}, mem(plan))
        self.assertEqual(0, plan.unallocated_mib)
        self.assertTrue(plan.vms['b'].favoured)

    def test_unassigned_memory_first(self):
        vms = [view('a', 2357, 1.0, 100, free=1900),
               view('b', 2357, 0.8, 2000)]
        plan = bd.default_plan(P, vms, free_mib=1000)
        self.assertEqual({'a': 2357, 'b': 2891}, mem(plan))
        self.assertEqual(1000 - 534, plan.unallocated_mib)

    def test_probe_satisfied_vm_without_free_memory(self):
        # a is at 100 % with a full cache: probe 10 % of what it has
        # above its floor (2357 - 428 = 1929 -> 192).
        vms = [view('a', 2357, 1.0, 2057), view('b', 2357, 0.8, 2057)]
        plan = bd.default_plan(P, vms)
        self.assertEqual(2357 - 192, mem(plan)['a'])
        self.assertEqual(1, plan.vms['a'].probe)
        plan2 = bd.default_plan(P, [
            view('a', 2165, 1.0, 1865, probe=1),
            view('b', 2549, 0.85, 2249)])
        self.assertEqual(2165 - int((2165 - 428) * 0.2), mem(plan2)['a'])

    def test_no_probe_on_stale_report(self):
        vms = [view('a', 2357, 1.0, 2057, fresh=False),
               view('b', 2357, 0.8, 2057)]
        self.assertEqual({'a': 2357, 'b': 2357},
                         mem(bd.default_plan(P, vms)))

    def test_hold_stops_probing_below_learnt_need(self):
        vms = [view('a', 1000, 1.0, 700, hold_mib=1000, hold_left=5),
               view('b', 2357, 0.5, 2057)]
        self.assertEqual(1000, mem(bd.default_plan(P, vms))['a'])

    def test_smaller_working_set_served_first_from_larger(self):
        # b: W 2500; c: W 20000 (under 50 % even at its 6215 MiB
        # maximum, so hopeless): c gives b what it lacks.
        vms = [view('b', 2357, 0.8, 2000), view('c', 2357, 0.1, 2000)]
        plan = bd.default_plan(P, vms)
        self.assertEqual({'b': 2891, 'c': 2357 - 534}, mem(plan))

    def test_hopeless_estimate_counts_as_unknown(self):
        # b: 2000 cached at 0.05 -> W 40000: at most 5899 of it would fit
        # below max 6215 (15 %): no probe for it (with a scan, or a ratio
        # made of non-file reads, none would pay).
        vms = [view('a', 2357, 1.0, 2057), view('b', 2357, 0.05, 2000)]
        plan = bd.default_plan(P, vms)
        self.assertEqual({'a': 2357, 'b': 2357}, mem(plan))
        self.assertEqual(0, plan.vms['a'].probe)
        b = vms[1]
        self.assertEqual(bd.INF, bd._reachable(b, 40000, P))
        # The edge: 5899 MiB of room >= 0.5 * W * 1.03 up to W 11454.
        self.assertEqual(11454, bd._reachable(b, 11454, P))
        self.assertEqual(bd.INF, bd._reachable(b, 11455, P))
        self.assertEqual(bd.INF, bd._reachable(b, bd.INF, P))

    def test_warming_vm_not_given_more(self):
        vms = [view('a', 2357, 1.0, 100, free=1900),
               view('b', 2357, 0.5, 1000, free=1000)]
        self.assertEqual({'a': 2357, 'b': 2357},
                         mem(bd.default_plan(P, vms)))


@st.composite
def rounds(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    vms = []
    for i in range(n):
        lo = draw(st.integers(min_value=0, max_value=2000))
        hi = draw(st.integers(min_value=lo, max_value=lo + 6000))
        memory = draw(st.integers(min_value=lo, max_value=hi))
        used = draw(st.integers(min_value=0, max_value=memory))
        cache = draw(st.integers(min_value=0, max_value=memory - used))
        free = draw(st.integers(min_value=0, max_value=memory - used - cache))
        vms.append(view('v%d' % i, memory,
                        draw(st.floats(min_value=0, max_value=1)), cache,
                        free=free, used=used, lo=lo, hi=hi,
                        fresh=draw(st.booleans()),
                        probe=draw(st.integers(min_value=0, max_value=6)),
                        hold_mib=draw(st.integers(min_value=0,
                                                  max_value=8000)),
                        hold_left=draw(st.integers(min_value=0, max_value=5)),
                        favoured=draw(st.booleans())))
    return vms, draw(st.integers(min_value=0, max_value=5000))


class TestDefaultProperties(testtools.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(rounds())
    def test_conservation_and_bounds(self, case):
        vms, free = case
        plan = bd.default_plan(P, vms, free)
        new = mem(plan)
        self.assertEqual(sum(v.memory_mib for v in vms) + free,
                         sum(new.values()) + plan.unallocated_mib)
        self.assertGreaterEqual(plan.unallocated_mib, 0)
        for v in vms:
            self.assertIsInstance(new[v.id], int)
            self.assertLessEqual(v.min_mib, new[v.id])
            self.assertLessEqual(new[v.id], v.max_mib)


class TestLyingGuests(testtools.TestCase):
    """A guest can claim anything valid; the plan stays inside bounds."""

    def _run(self, liar_ratio, rounds=200):
        vms = [view('liar', 2357, liar_ratio(0), 2057, hi=3000),
               view('b', 2357, 1.0, 1500, free=500),
               view('c', 2357, 0.6, 2057)]
        free = 0
        for r in range(rounds):
            plan = bd.default_plan(P, vms, free)
            free = plan.unallocated_mib
            new = []
            for v in vms:
                d = plan.vms[v.id]
                self.assertLessEqual(d.memory_mib, v.max_mib)
                self.assertGreaterEqual(d.memory_mib, v.min_mib)
                ratio = liar_ratio(r + 1) if v.id == 'liar' else v.hit_ratio
                new.append(view(v.id, d.memory_mib, ratio,
                                max(0, d.memory_mib - 300),
                                lo=v.min_mib, hi=v.max_mib, probe=d.probe,
                                hold_mib=d.hold_mib, hold_left=d.hold_left,
                                favoured=d.favoured))
            vms = new
            self.assertEqual(3 * 2357, sum(v.memory_mib for v in vms) + free)

    def test_zero_never_makes_others_probe(self):
        vms = [view('liar', 1000, 0.0, 700), view('b', 2357, 1.0, 2057),
               view('c', 2357, 1.0, 1800, free=257)]
        plan = bd.default_plan(P, vms, free_mib=100)
        # Only the unassigned 100 MiB and c's idle 241 MiB move.
        self.assertEqual({'liar': 1341, 'b': 2357, 'c': 2116}, mem(plan))
        self.assertEqual(0, plan.vms['b'].probe)

    def test_zero_forever(self):
        self._run(lambda r: 0.0)

    def test_flapping(self):
        self._run(lambda r: 1.0 if r % 2 else 0.0)

    def test_just_below_threshold(self):
        self._run(lambda r: 0.989)
