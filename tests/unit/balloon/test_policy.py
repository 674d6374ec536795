"""The balancer round: bounds, pool, rate limits, who takes part."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.balloon import guest_report as gr
from nova_cacheaware.balloon import model as bm
from nova_cacheaware.balloon import policy as br
from nova_cacheaware import exception


def stats(hit_ratio, cache=100.0, free=0.0, used=50.0, memory=512.0):
    return gr.GuestStats(uptime_s=100, pgpgin_kib=0, hit_ratio=hit_ratio,
                         read_mib_s=10.0, memory_mib=memory, cache_mib=cache,
                         free_mib=free, used_mib=used, committed_as_mib=used)


def vm(id, memory, flavor=1024, floor=256, used=100.0, s=None,
       status=bm.OK, state=None):
    return bm.VmInput(id=id, memory_mib=memory, flavor_mib=flavor,
                      floor_mib=floor, used_mib=used, stats=s,
                      status=status, state=state or {})


P = bm.RoundParams(pool_mib=512, margin_mib=64, max_step_mib=256)


class TestLowBound(testtools.TestCase):

    def test_floor_use_plus_margin_and_flavor(self):
        self.assertEqual(256, br.low_bound(vm('a', 800, used=100.0), 64))
        self.assertEqual(465, br.low_bound(vm('a', 800, used=400.2), 64))
        self.assertEqual(1024, br.low_bound(vm('a', 800, used=2000.0), 64))

    def test_unknown_use_never_shrinks(self):
        self.assertEqual(800, br.low_bound(vm('a', 800, used=None), 64))


class TestDecideRound(testtools.TestCase):

    def test_default_policy_moves_idle_memory_to_a_missing_vm(self):
        # a: misses, 1024-MiB flavor, held at 768; b: 100 % hits, 600 MiB
        # of its guest idle.  Held back 256 = pool: b pays for a.
        vms = [vm('a', 768, s=stats(0.5, cache=600, free=0, used=100)),
               vm('b', 1024, s=stats(1.0, cache=100, free=600, used=100))]
        out = br.decide_round(bm.RoundParams(pool_mib=256), vms, 4096)
        self.assertEqual(1024, out.vms['a'].memory_mib)
        self.assertEqual(768, out.vms['b'].memory_mib)
        self.assertEqual(256, out.held_mib)
        self.assertEqual(512, out.moved_mib)

    def test_study_a_mode_and_its_streak_state(self):
        vms = [vm('a', 512, s=stats(0.5)), vm('b', 1024, s=stats(1.0))]
        params = bm.RoundParams(policy='study_a', pool_mib=1024,
                                max_step_mib=1024)
        out = br.decide_round(params, vms, 4096)
        # b gives 1024*0.1 then 10 % of 921.6; a gives 51.2: pool 245.76,
        # all to a (the only receiver): 460.8 + 245.76.
        self.assertEqual(706, out.vms['a'].memory_mib)
        self.assertEqual(829, out.vms['b'].memory_mib)
        self.assertEqual({'streak': 1}, out.vms['b'].state)
        self.assertEqual({'streak': 0}, out.vms['a'].state)

    def test_study_a_gives_back_what_capped_receivers_cannot_take(self):
        vms = [vm('a', 1024, s=stats(0.5)), vm('b', 1024, s=stats(1.0))]
        params = bm.RoundParams(policy='study_a', pool_mib=64)
        out = br.decide_round(params, vms, 4096)
        self.assertEqual(0, out.held_mib)

    def test_zero_pool_gives_back_and_never_shrinks(self):
        vms = [vm('a', 512, s=stats(1.0, free=300)),
               vm('b', 1024, s=stats(1.0, free=900))]
        out = br.decide_round(bm.RoundParams(policy='study_b', pool_mib=0),
                              vms, 4096)
        self.assertEqual(768, out.vms['a'].memory_mib)   # one step back
        self.assertEqual(1024, out.vms['b'].memory_mib)

    def test_rejected_and_pending_keep_silent_restores(self):
        vms = [vm('bad', 512, status=bm.INVALID),
               vm('wait', 512, status=bm.PENDING),
               vm('mute', 512, status=bm.SILENT)]
        out = br.decide_round(P, vms, 4096)
        self.assertEqual(512, out.vms['bad'].memory_mib)
        self.assertEqual(512, out.vms['wait'].memory_mib)
        self.assertEqual(768, out.vms['mute'].memory_mib)

    def test_below_its_use_grows_first_even_when_rate_limited(self):
        vms = [vm('tight', 300, used=400.0, status=bm.INVALID),
               vm('other', 500, status=bm.SILENT)]
        out = br.decide_round(P, vms, 100)
        self.assertEqual(400, out.vms['tight'].memory_mib)
        self.assertEqual(500, out.vms['other'].memory_mib)
        self.assertEqual(464, out.vms['tight'].low_mib)

    def test_no_reads_counts_as_satisfied(self):
        vms = [vm('a', 768, s=stats(0.2, cache=600, free=0, used=100)),
               vm('idle', 1024, s=stats(None, cache=10, free=900, used=50))]
        out = br.decide_round(bm.RoundParams(pool_mib=256), vms, 4096)
        self.assertLess(out.vms['idle'].memory_mib, 1024)

    def test_unknown_policy_and_duplicates(self):
        self.assertRaises(exception.InvalidInput, br.decide_round,
                          bm.RoundParams(policy='greedy'),
                          [vm('a', 512, s=stats(0.5))], 100)
        self.assertRaises(exception.InvalidInput, br.decide_round, P,
                          [vm('a', 512), vm('a', 512)], 100)


class TestUntrustedGuest(testtools.TestCase):
    """Guest-written sizes are bounded by the host's view and the flavor."""

    def test_bounded_memory(self):
        table = [
            # flavor, floor, claim, target set, expected
            (1024, 256, 768, None, 768),        # plausible first sight
            (1024, 256, 0, None, 1024),          # below the floor: flavor
            (1024, 256, 10240, None, 1024),      # above the flavor
            (1024, 256, None, None, 1024),       # no statistics
            (1024, 256, float('nan'), None, 1024),
            (1024, 2048, 1024, None, 1024),      # floor above the flavor
            (1024, 256, 0, 512, 512),            # our target wins
            (1024, 256, 10240, 768, 768),
            (1024, 256, 600, 4096, 1024),        # never above the flavor
        ]
        for flavor, floor, claim, target, expected in table:
            self.assertEqual(
                expected, br.bounded_memory(flavor, floor, claim, target),
                (flavor, floor, claim, target))

    def test_bounded_used(self):
        self.assertIsNone(br.bounded_used(None, 512))
        self.assertIsNone(br.bounded_used(float('inf'), 512))
        self.assertEqual(512.0, br.bounded_used(10 ** 9, 512))
        self.assertEqual(0.0, br.bounded_used(-5.0, 512))
        self.assertEqual(300.5, br.bounded_used(300.5, 512))

    def _round(self, liar):
        honest = [vm('a', 768, used=300.0,
                     s=stats(0.9, cache=400, free=0, used=300, memory=768)),
                  vm('b', 1024, used=300.0,
                     s=stats(1.0, cache=100, free=600, used=300))]
        out = br.decide_round(P, honest + [liar], 4096)
        return {k: v.memory_mib for k, v in out.vms.items()}

    def test_lying_balloon_takes_nothing_from_honest_guests(self):
        truthful = self._round(vm('liar', 1024, used=300.0, s=stats(
            1.0, cache=100, free=600, used=300)))
        # The honest "liar" is idle and satisfied: it fills the pool's
        # room (512 - 256 held back) with its free memory.
        self.assertEqual({'a': 774, 'b': 1018, 'liar': 768}, truthful)
        starving = stats(0.0, cache=900, free=0, used=1000, memory=1024)
        # Believed as is, a claim of 0 MiB makes the liar "urgent" and b
        # pays 256 MiB for it; 10x its flavor makes the agent ask libvirt
        # for 9984 MiB (above the domain's maximum).
        self.assertEqual(768, self._round(
            vm('liar', 0, used=0.0, s=starving))['b'])
        self.assertEqual(9984, self._round(
            vm('liar', 10240, used=10240.0, s=starving))['liar'])
        for claim, used in ((0, 0.0), (0, 1000.0), (10240, 10240.0)):
            memory = br.bounded_memory(1024, 256, claim)
            out = self._round(vm('liar', memory, s=starving,
                                 used=br.bounded_used(used, memory)))
            self.assertEqual((774, 1018), (out['a'], out['b']),
                             (claim, used))
            self.assertLessEqual(out['liar'], 1024)


class TestReclaimIdle(testtools.TestCase):
    """Filling the pool: Nova boots every instance at its flavor RAM."""

    def booted(self, id, floor, free=180.0, ratio=None, status=bm.OK):
        # A 256-MiB guest as Nova boots it; nothing read: satisfied.
        return vm(id, 256, flavor=256, floor=floor, used=40.0,
                  s=stats(ratio, cache=20, free=free, used=40, memory=256),
                  status=status)

    def test_without_it_nothing_would_ever_move(self):
        # Every policy leaves instances at their flavor RAM alone: there is
        # no room to grow into. Only the pool's room makes memory move.
        for policy in bm.POLICIES:
            params = bm.RoundParams(policy=policy, pool_mib=96,
                                    margin_mib=32)
            out = br.decide_round(params, [self.booted('floor', 224),
                                           self.booted('idle', 128)], 4096)
            self.assertEqual(
                {'floor': 256, 'idle': 160},
                {k: v.memory_mib for k, v in out.vms.items()}, policy)
            self.assertEqual(96, out.held_mib)

    def test_floor_binds_then_the_pool(self):
        params = bm.RoundParams(pool_mib=96, margin_mib=32)
        vms = [self.booted('floor', 224)]
        out = br.decide_round(params, vms, 4096)
        self.assertEqual((224, 224), (out.vms['floor'].memory_mib,
                                      out.vms['floor'].low_mib))
        # A second instance gets the pool's rest (96 - 32), exactly.
        vms = [vm('floor', 224, flavor=256, floor=224, used=40.0,
                  s=stats(None, cache=20, free=148, used=40, memory=224)),
               self.booted('idle', 128)]
        out = br.decide_round(params, vms, 4096)
        self.assertEqual({'floor': 224, 'idle': 192},
                         {k: v.memory_mib for k, v in out.vms.items()})
        self.assertEqual(96, out.held_mib)

    def test_full_pool_is_stable(self):
        params = bm.RoundParams(pool_mib=96, margin_mib=32)
        vms = [vm('idle', 160, flavor=256, floor=128, used=40.0,
                  s=stats(None, cache=20, free=84, used=40, memory=160))]
        out = br.decide_round(params, vms, 4096)
        self.assertEqual((160, 0), (out.vms['idle'].memory_mib,
                                    out.moved_mib))

    def test_only_idle_satisfied_reporting_instances_give(self):
        params = bm.RoundParams(pool_mib=512, margin_mib=32)
        vms = [self.booted('missing', 128, ratio=0.5),
               self.booted('rejected', 128, status=bm.INVALID),
               self.booted('busy', 128, free=10.0),
               self.booted('idle', 128, free=100.0)]
        out = br.decide_round(params, vms, 4096)
        self.assertEqual(
            {'missing': 256, 'rejected': 256, 'busy': 256, 'idle': 172},
            {k: v.memory_mib for k, v in out.vms.items()})

    def test_largest_idle_first_and_zero_pool(self):
        vms = [self.booted('a', 128, free=100.0),
               self.booted('b', 128, free=150.0)]
        targets = {'a': 256, 'b': 256}
        lows = {'a': 128, 'b': 128}
        params = bm.RoundParams(pool_mib=150)
        self.assertEqual(150, br.reclaim_idle(params, vms, targets, lows))
        # b gives all it has above its low (134 idle, capped at 128), a
        # the pool's rest.
        self.assertEqual({'a': 234, 'b': 128}, targets)
        targets = {'a': 256, 'b': 256}
        self.assertEqual(0, br.reclaim_idle(bm.RoundParams(pool_mib=0), vms,
                                            targets, lows))
        self.assertEqual({'a': 256, 'b': 256}, targets)


class TestGuard(testtools.TestCase):

    def test_growth_first_then_shrinks_that_pay_for_it(self):
        vms = [vm('a', 500), vm('b', 1000), vm('c', 1000)]
        new = br.guard(vms, {'a': 700, 'b': 800, 'c': 900}, pool_mib=0,
                       max_step_mib=1000, budget_mib=10000)
        # held 548 > pool 0: shrinks only pay for the 200 grown.
        self.assertEqual({'a': 700, 'b': 800, 'c': 1000}, new)

    def test_pool_bounds_what_is_held_back(self):
        vms = [vm('a', 1024), vm('b', 1024)]
        new = br.guard(vms, {'a': 1024, 'b': 700}, pool_mib=64,
                       max_step_mib=1000, budget_mib=10000)
        self.assertEqual({'a': 1024, 'b': 960}, new)

    def test_step_and_budget(self):
        vms = [vm('a', 500), vm('b', 1000)]
        new = br.guard(vms, {'a': 1000, 'b': 500}, pool_mib=1000,
                       max_step_mib=300, budget_mib=400)
        self.assertEqual({'a': 800, 'b': 900}, new)


def _vms(draw_list):
    out = []
    for i, (flavor, frac, floor, used, ratio, status) in enumerate(
            draw_list):
        memory = max(1, int(flavor * frac))
        s = None
        if status == bm.OK:
            s = stats(ratio, cache=memory / 2.0, free=memory / 8.0,
                      used=memory / 4.0)
        out.append(vm('vm%d' % i, memory, flavor=flavor,
                      floor=min(floor, flavor), used=used, s=s,
                      status=status))
    return out


vm_strategy = st.tuples(
    st.integers(256, 8192), st.floats(0.1, 1.0), st.integers(128, 1024),
    st.one_of(st.none(), st.floats(0, 4096)),
    st.one_of(st.none(), st.floats(0, 1)),
    st.sampled_from(bm.STATUSES))


class TestProperties(testtools.TestCase):

    @settings(max_examples=300, deadline=None)
    @given(st.lists(vm_strategy, min_size=1, max_size=6),
           st.sampled_from(bm.POLICIES), st.integers(0, 4096),
           st.integers(1, 1024), st.integers(-100, 4096))
    def test_safety(self, raw, policy, pool, step, budget):
        vms = _vms(raw)
        params = bm.RoundParams(policy=policy, pool_mib=pool,
                                max_step_mib=step)
        out = br.decide_round(params, vms, budget)
        held_before = sum(v.flavor_mib - v.memory_mib for v in vms)
        moved = 0
        for v in vms:
            o = out.vms[v.id]
            low = br.low_bound(v, params.margin_mib)
            # Never above flavor RAM unless it already was; never pushed
            # below its bound; a VM already below it only grows.
            self.assertLessEqual(o.memory_mib, max(v.flavor_mib,
                                                   v.memory_mib))
            self.assertGreaterEqual(o.memory_mib, min(low, v.memory_mib))
            self.assertLessEqual(abs(o.memory_mib - v.memory_mib), step)
            if v.status != bm.OK:
                # Sitting out: kept, or (silent) only given memory back.
                self.assertGreaterEqual(o.memory_mib, v.memory_mib)
            moved += abs(o.memory_mib - v.memory_mib)
        self.assertEqual(moved, out.moved_mib)
        self.assertLessEqual(moved, max(0, budget))
        self.assertLessEqual(out.held_mib, max(pool, held_before))


class TestReportInterval(testtools.TestCase):
    """Study 002's adaptive reporting interval (gamma), in the bounds."""

    def test_table(self):
        params = bm.RoundParams(report_interval_s=10.0, min_report_s=6.0,
                                max_report_s=12.0)
        for ratio, streak, want in [
                (0.5, 0, 10.0),         # under the threshold: gamma
                (0.995, 1, 12.0),       # over: 1.5 gamma, capped at max
                (0.995, 2, 12.0),
                (0.995, 3, 6.0),        # three in a row: 0.5 gamma -> min
                (1.0, 7, 6.0)]:
            self.assertEqual(want, br.next_report_s(params, ratio, streak),
                             (ratio, streak))
        self.assertIsNone(br.next_report_s(bm.RoundParams(), 1.0, 3))
        self.assertRaises(exception.InvalidInput, br.next_report_s,
                          bm.RoundParams(report_interval_s=10.0,
                                         min_report_s=9.0, max_report_s=8.0),
                          0.5, 0)

    def test_the_round_sets_the_time_and_keeps_the_streak(self):
        params = bm.RoundParams(pool_mib=256, report_interval_s=10.0)
        vms = [vm('a', 768, s=stats(0.5)),
               vm('b', 1024, s=stats(1.0), state={'report_streak': 2}),
               vm('c', 1024, status=bm.PENDING)]
        out = br.decide_round(params, vms, 4096)
        self.assertEqual((10.0, 0), (out.vms['a'].next_report_s,
                                     out.vms['a'].state['report_streak']))
        self.assertEqual((5.0, 3), (out.vms['b'].next_report_s,
                                    out.vms['b'].state['report_streak']))
        self.assertIsNone(out.vms['c'].next_report_s)
        # Off (gamma 0): no time, no streak kept.
        off = br.decide_round(bm.RoundParams(pool_mib=256), vms[:1], 4096)
        self.assertIsNone(off.vms['a'].next_report_s)
        self.assertNotIn('report_streak', off.vms['a'].state)

    @settings(max_examples=100, deadline=None)
    @given(st.floats(0, 1), st.integers(0, 50),
           st.floats(1, 100), st.floats(1, 30), st.floats(0, 100))
    def test_always_within_the_bounds(self, ratio, streak, gamma, low,
                                      extra):
        params = bm.RoundParams(report_interval_s=gamma, min_report_s=low,
                                max_report_s=low + extra)
        got = br.next_report_s(params, ratio, streak)
        self.assertTrue(low <= got <= low + extra)
