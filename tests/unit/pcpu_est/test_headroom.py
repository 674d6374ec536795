"""pcpu_headroom: the incremental new-instance share equals the full one."""

from fractions import Fraction
import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.pcpu_est import headroom as pcpu_headroom
from nova_cacheaware.vcpu_sizing import policy as vcpu_sizing

CAPS = [None, 0.0, 0.1, 0.25, 0.3, 1 / 3, 0.5, 0.7, 0.9, 1.0]


def exact_new_share(req, vcpus, cap):
    """The new instance's exact per-vCPU share, by the full computation."""
    pcpus = req.pcpus
    if pcpus is None:
        pcpus = sorted({p for vm in req.vms.values()
                        for a in vm.vcpus.values() for p in a})
    affs, caps = req.flat_vcpus()
    for i in range(vcpus):
        affs[(vcpu_sizing.NEW_VM, i)] = tuple(pcpus)
        if cap is not None:
            caps[(vcpu_sizing.NEW_VM, i)] = cap
    shares = pcpu_est.fair_shares(affs, caps, req.pcpus)
    return shares[(vcpu_sizing.NEW_VM, 0)]


@st.composite
def hosts(draw, max_pcpus=12, max_vms=8):
    """Random hosts: pinned, windowed and wide vCPUs, some capped."""
    n = draw(st.integers(1, max_pcpus))
    cpu = st.integers(0, n)                # one more: outside "pcpus"
    vms = {}
    for v in range(draw(st.integers(0, max_vms))):
        vcpus = {}
        caps = {}
        for i in range(draw(st.integers(1, 4))):
            vcpus[i] = tuple(sorted(draw(st.sets(cpu, max_size=n + 1))))
            cap = draw(st.sampled_from(CAPS))
            if cap is not None:
                caps[i] = cap
        vms['vm%d' % v] = pcpu_est.VMAffinity(vcpus=vcpus, caps=caps)
    pcpus = None
    if draw(st.booleans()):
        pcpus = tuple(sorted(draw(st.sets(st.integers(0, n), max_size=n))))
    return pcpu_est.EstimateRequest(vms=vms, pcpus=pcpus)


class HeadroomExactnessTest(testtools.TestCase):
    """Property: equal to the full max-min fair computation, exactly."""

    @settings(max_examples=300, deadline=None)
    @given(hosts(), st.integers(1, 9), st.sampled_from(CAPS))
    def test_share_equals_full_estimate(self, req, vcpus, cap):
        headroom = pcpu_headroom.Headroom.of(req)
        full = vcpu_sizing.new_instance_estimate(req, vcpus, cap)
        if full is None:
            self.assertIsNone(headroom)
            return
        self.assertEqual(exact_new_share(req, vcpus, cap),
                         headroom.share(vcpus, cap))
        self.assertEqual(full.available_pcpus,
                         headroom.available_pcpus(vcpus, cap))

    @settings(max_examples=40, deadline=None)
    @given(st.integers(0, 10 ** 6), st.integers(1, 16),
           st.sampled_from(CAPS))
    def test_share_equals_full_estimate_on_large_hosts(self, seed, vcpus,
                                                       cap):
        # 64 pCPUs in 8 domains, up to 200 VMs: domain-pinned, pinned,
        # NUMA-wide and host-wide VMs, many levels.
        rng = random.Random(seed)
        vms = {}
        for v in range(rng.randint(0, 200)):
            kind = rng.random()
            n = rng.choice([1, 2, 4, 8])
            if kind < 0.2:
                first = rng.randrange(64)
                affs = {i: ((first + i) % 64,) for i in range(n)}
            elif kind < 0.6:
                lo = rng.randrange(0, 64, 8)
                affs = {i: tuple(range(lo, lo + 8)) for i in range(n)}
            elif kind < 0.8:
                lo = rng.choice([0, 32])
                affs = {i: tuple(range(lo, lo + 32)) for i in range(n)}
            else:
                affs = {i: tuple(range(64)) for i in range(n)}
            caps = ({0: rng.choice([0.25, 0.5, 0.3])}
                    if rng.random() < 0.3 else {})
            vms['vm%d' % v] = pcpu_est.VMAffinity(vcpus=affs, caps=caps)
        req = pcpu_est.EstimateRequest(vms=vms, pcpus=tuple(range(64)))
        headroom = pcpu_headroom.Headroom.of(req)
        self.assertEqual(exact_new_share(req, vcpus, cap),
                         headroom.share(vcpus, cap))
        self.assertEqual(
            vcpu_sizing.new_instance_estimate(req, vcpus,
                                              cap).available_pcpus,
            headroom.available_pcpus(vcpus, cap))


class HeadroomTableTest(testtools.TestCase):

    def test_table(self):
        def vm(cpus, n, cap=None):
            return pcpu_est.VMAffinity(
                vcpus={i: tuple(cpus) for i in range(n)},
                caps={} if cap is None else {i: cap for i in range(n)})

        table = [
            # (name, VMs, pcpus, new vCPUs, cap, share)
            ('empty host', {}, (0, 1, 2, 3), 2, None, Fraction(1)),
            ('more vCPUs than pCPUs', {}, (0, 1, 2, 3), 8, None,
             Fraction(1, 2)),
            ('6 floating + 2 new on 4', {'a': vm(range(4), 6)},
             (0, 1, 2, 3), 2, None, Fraction(1, 2)),
            ('pinned pair leaves 2 pCPUs', {'p': vm((0, 1), 4)},
             (0, 1, 2, 3), 4, None, Fraction(1, 2)),
            ('cap binds first', {}, (0, 1), 2, 0.3, Fraction(3, 10)),
            ('capped neighbours leave room', {'c': vm(range(4), 8, 0.25)},
             (0, 1, 2, 3), 4, None, Fraction(1, 2)),
            ('zero cap', {}, (0,), 1, 0.0, Fraction(0)),
        ]
        for name, vms, pcpus, vcpus, cap, share in table:
            req = pcpu_est.EstimateRequest(vms=vms, pcpus=pcpus)
            self.assertEqual(share, pcpu_headroom.Headroom.of(req).share(
                vcpus, cap), name)

    def test_no_pcpu_is_none(self):
        self.assertIsNone(pcpu_headroom.Headroom.of(
            pcpu_est.EstimateRequest(vms={}, pcpus=())))
        self.assertIsNone(pcpu_headroom.Headroom.of(
            pcpu_est.EstimateRequest(vms={})))

    def test_bad_input(self):
        headroom = pcpu_headroom.Headroom.of(
            pcpu_est.EstimateRequest(vms={}, pcpus=(0,)))
        for vcpus, cap in [(0, None), (1, 1.5), (1, -0.1)]:
            self.assertRaises(exception.InvalidInput,
                              headroom.share, vcpus, cap)
