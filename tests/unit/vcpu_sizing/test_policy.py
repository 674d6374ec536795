"""The pure decisions of vCPU sizing."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.vcpu_sizing import policy as vs


class CapTest(testtools.TestCase):

    def test_table(self):
        for args, cap in [
                ((None,), None), ((-1,), None), ((0,), None),
                ((50000,), 0.5), ((50000, 100000), 0.5),
                (('25000', '50000'), 0.5), ((300000,), 1.0),
                ((100000, 100000, 4), 0.25),        # global quota / 4
                ((800000, 100000, 4), 1.0)]:
            self.assertEqual(cap, vs.cap_from_quota(*args), args)

    def test_bad(self):
        self.assertRaises(exception.InvalidInput, vs.cap_from_quota, 'x')
        self.assertRaises(exception.InvalidInput, vs.cap_from_quota, 10, -5)

    def test_combine(self):
        self.assertIsNone(vs.combine_caps(None, None))
        self.assertEqual(0.25, vs.combine_caps(0.5, None, 0.25))


def request(vms, pcpus=(0, 1, 2, 3)):
    return pcpu_est.EstimateRequest.from_dict(
        {'pcpus': list(pcpus), 'vms': vms})


class NewInstanceTest(testtools.TestCase):

    def test_study_004_example(self):
        # 3 busy vCPUs on 4 shared pCPUs; a new 2-vCPU VM gets 1.6.
        busy = {'a': {'vcpus': {str(i): [0, 1, 2, 3] for i in range(3)}}}
        self.assertAlmostEqual(1.6, vs.new_instance_estimate(
            request(busy), 2).available_pcpus)
        self.assertEqual(2, vs.new_instance_estimate(
            request(busy), 2).recommended_vcpus)

    def test_cap_and_no_pcpus(self):
        self.assertAlmostEqual(1.0, vs.new_instance_estimate(
            request({}), 4, cap=0.25).available_pcpus)
        self.assertIsNone(vs.new_instance_estimate(request({}, ()), 2))
        # No pcpus given: the pCPUs the current VMs use.
        doc = pcpu_est.EstimateRequest.from_dict(
            {'vms': {'a': {'vcpus': {'0': [0, 1]}}}})
        self.assertAlmostEqual(1.0, vs.new_instance_estimate(
            doc, 1).available_pcpus)
        self.assertRaises(exception.InvalidInput, vs.new_instance_estimate,
                          request({}), 0)


class TargetTest(testtools.TestCase):

    def test_band_and_stability(self):
        # 4 online, estimate 3.9: within (2.75, 4.25]: nothing to do.
        t, p = vs.target_online(4, 3.9, 4)
        self.assertEqual((4, False, None), (t.online, t.act, p))
        t, p = vs.target_online(4, 2.8, 4)
        self.assertEqual((4, False), (t.online, t.act))
        # 2.7 is outside: 3 wanted, acted on at the second pass.
        t, p = vs.target_online(4, 2.7, 4)
        self.assertEqual((3, False, (3, 1)), (t.online, t.act, p))
        t, p = vs.target_online(4, 2.7, 4, pending=p)
        self.assertEqual((3, True, None), (t.online, t.act, p))
        # A changed wish restarts the count.
        t, p = vs.target_online(4, 1.5, 4, pending=(3, 1))
        self.assertEqual((2, False, (2, 1)), (t.online, t.act, p))
        # Going up: 2 online, 2.3 > 2 + 0.25.
        t, p = vs.target_online(2, 2.3, 4, stable_passes=1)
        self.assertEqual((3, True), (t.online, t.act))
        # Band 0 at an exact integer: nothing.
        t, _ = vs.target_online(2, 2.0, 4, band=0.0, stable_passes=1)
        self.assertFalse(t.act)
        t, _ = vs.target_online(2, 1.0, 4, band=0.0, stable_passes=1)
        self.assertEqual((1, True), (t.online, t.act))

    def test_bad(self):
        self.assertRaises(exception.InvalidInput, vs.target_online, 0, 1, 4)
        self.assertRaises(exception.InvalidInput, vs.target_online, 5, 1, 4)
        self.assertRaises(exception.InvalidInput, vs.target_online, 2, 1, 4,
                          -1)

    @settings(max_examples=200, deadline=None)
    @given(st.integers(1, 16), st.data())
    def test_never_outside_1_n_and_stable_within_band(self, n, data):
        current = data.draw(st.integers(1, n))
        available = data.draw(st.floats(0, n, allow_nan=False))
        band = data.draw(st.floats(0, 1))
        t, _ = vs.target_online(current, available, n, band,
                                stable_passes=1)
        self.assertTrue(1 <= t.online <= n)
        if current - 1 - band < available <= current + band:
            self.assertFalse(t.act)
        elif t.act:
            self.assertEqual(pcpu_est.recommended_vcpus(available, n),
                             t.online)


class PlanOnlineTest(testtools.TestCase):

    def test_table(self):
        every = {0, 1, 2, 3}
        for online, offlinable, count, want in [
                ({0, 1, 2, 3}, {1, 2, 3}, 2, (set(), {2, 3})),
                ({0, 1, 2, 3}, {1, 2, 3}, 1, (set(), {1, 2, 3})),
                ({0, 1, 2, 3}, {0, 1, 2, 3}, 1, (set(), {1, 2, 3})),
                ({0, 1, 2, 3}, {3}, 1, (set(), {3})),     # only 3 can go
                ({0}, {1, 2, 3}, 3, ({1, 2}, set())),
                ({0, 3}, {1, 2, 3}, 4, ({1, 2}, set())),
                ({0, 1}, {1}, 2, (set(), set())),
                ({0, 1}, {1}, 0, (set(), {1})),           # never below 1
                ({0, 1}, {1}, 9, ({2, 3}, set()))]:       # never above n
            self.assertEqual(want, tuple(map(set, vs.plan_online(
                every, online, offlinable, count))), (online, count))

    @settings(max_examples=200, deadline=None)
    @given(st.integers(1, 12), st.data())
    def test_never_offlines_vcpu_0(self, n, data):
        every = set(range(n))
        online = data.draw(st.sets(st.sampled_from(sorted(every)))) | {0}
        offlinable = data.draw(st.sets(st.sampled_from(sorted(every))))
        count = data.draw(st.integers(0, n + 2))
        up, down = vs.plan_online(every, online, offlinable, count)
        self.assertNotIn(0, down)
        self.assertFalse(up & online)
        self.assertTrue(down.issubset(online))
        after = (online | up) - down
        self.assertGreaterEqual(len(after), 1)


class RatesTest(testtools.TestCase):

    def test_delay_and_rate(self):
        self.assertEqual(0.25, vs.delay_fraction(0, 2.5e9, 10))
        self.assertIsNone(vs.delay_fraction(None, 5, 10))
        self.assertIsNone(vs.delay_fraction(10, 5, 10))   # restarted
        self.assertIsNone(vs.rate(1, 2, 0))
        self.assertEqual(50.0, vs.rate(100, 600, 10))

    def test_guest_file(self):
        est = pcpu_est.VMEstimate(available_pcpus=1.6, recommended_vcpus=2,
                                  vcpus={0: 0.8, 1: 0.8})
        self.assertEqual('2\navailable_pcpus 1.600\nmode apply\n',
                         vs.guest_file(est, 'apply'))
