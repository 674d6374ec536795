"""Tests for the exact pCPU-Est (nova_cacheaware.pcpu_est.estimate)."""

from fractions import Fraction
import json
import random
from unittest import mock

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.pcpu_est import flow as pcpu_est_flow
from nova_cacheaware_evaluation.baselines import pcpu_est_greedy
from tests.unit.pcpu_est import pcpu_lp

F = Fraction


def request(vms, pcpus=None):
    """Build a request from {name: ({index: affinity}, {index: cap})}."""
    return pcpu_est.EstimateRequest(
        vms={name: pcpu_est.VMAffinity(
            vcpus={i: tuple(sorted(a)) for i, a in affs.items()},
            caps=dict(caps))
            for name, (affs, caps) in vms.items()},
        pcpus=None if pcpus is None else tuple(sorted(pcpus)))


def floating(n, cpus, caps=None):
    """``n`` vCPUs that all float over ``cpus``."""
    return ({i: tuple(cpus) for i in range(n)},
            {i: caps for i in range(n)} if caps is not None else {})


def pinned(*cpus):
    """One vCPU pinned to each of ``cpus`` in turn."""
    return ({i: (p,) for i, p in enumerate(cpus)}, {})


# Named topologies: (request, {vm: (available, recommended, {i: share})}).
# Study 004's figures: 2 + 3 vCPUs on 4 shared pCPUs -> 8/5 and 12/5;
# "2/2 + 1/3 -> 2" and "2/3 -> 1" on two pCPUs.
STUDY_CASES = {
    'study004-4pcpus-2+3vcpus': (
        request({'vm1': floating(2, range(4)), 'vm2': floating(3, range(4))}),
        {'vm1': (F(8, 5), 2, {0: F(4, 5), 1: F(4, 5)}),
         'vm2': (F(12, 5), 3, {0: F(4, 5), 1: F(4, 5), 2: F(4, 5)})}),
    'study004-2/2+1/3-and-2/3': (
        request({'vm1': ({0: (0,), 1: (0,), 2: (1,)}, {}),
                 'vm2': ({0: (1,), 1: (1,)}, {})}),
        {'vm1': (F(4, 3), 2, {0: F(1, 2), 1: F(1, 2), 2: F(1, 3)}),
         'vm2': (F(2, 3), 1, {0: F(1, 3), 1: F(1, 3)})}),
    # The bottleneck is vm2 (3 vCPUs on pCPU 1: 1/3 each); vm1's vCPU 1
    # could also use pCPU 1 but gets its time from pCPU 0 alone.
    'bottleneck-set-first': (
        request({'vm1': ({0: (0,), 1: (0, 1)}, {}),
                 'vm2': ({0: (1,), 1: (1,), 2: (1,)}, {})}),
        {'vm1': (F(1), 1, {0: F(1, 2), 1: F(1, 2)}),
         'vm2': (F(1), 1, {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)})}),
    'pinned-8-vcpus-on-4-pcpus': (
        request({'vm': pinned(0, 0, 1, 1, 2, 2, 3, 3)}),
        {'vm': (F(4), 4, {i: F(1, 2) for i in range(8)})}),
    'alone-on-more-pcpus-than-vcpus': (
        request({'vm': floating(2, range(8))}),
        {'vm': (F(2), 2, {0: F(1), 1: F(1)})}),
    'cap-quarter': (
        request({'vm': floating(4, range(4), caps=0.25)}),
        {'vm': (F(1), 1, {i: F(1, 4) for i in range(4)})}),
    'capped-vm-leaves-time-to-neighbour': (
        request({'capped': floating(4, range(4), caps=0.1),
                 'free': floating(4, range(4))}),
        {'capped': (F(2, 5), 1, {i: F(1, 10) for i in range(4)}),
         'free': (F(18, 5), 4, {i: F(9, 10) for i in range(4)})}),
    'cap-above-fair-share-does-not-bind': (
        request({'a': floating(4, range(2), caps=0.75),
                 'b': floating(4, range(2))}),
        {'a': (F(1), 1, {i: F(1, 4) for i in range(4)}),
         'b': (F(1), 1, {i: F(1, 4) for i in range(4)})}),
    'empty-affinity-gets-nothing': (
        request({'vm': ({0: (), 1: (0,)}, {})}),
        {'vm': (F(1), 1, {0: F(0), 1: F(1)})}),
    'zero-cap-gets-nothing': (
        request({'vm': floating(2, range(2), caps=0.0)}),
        {'vm': (F(0), 1, {0: F(0), 1: F(0)})}),
    'pcpus-restriction': (
        request({'vm': floating(4, range(4))}, pcpus=[0, 1, 9]),
        {'vm': (F(2), 2, {i: F(1, 2) for i in range(4)})}),
    'pcpus-restriction-empties-affinity': (
        request({'vm': ({0: (5,), 1: (0,)}, {})}, pcpus=[0]),
        {'vm': (F(1), 1, {0: F(0), 1: F(1)})}),
    # A chain: a's two vCPUs pinned to pCPU 0 are the bottleneck (1/2);
    # a's third vCPU then shares pCPUs 1-2 with b's two (2/3 each).
    'chain-of-overlaps': (
        request({'a': ({0: (0,), 1: (0,), 2: (0, 1)}, {}),
                 'b': floating(2, (1, 2))}),
        {'a': (F(5, 3), 2, {0: F(1, 2), 1: F(1, 2), 2: F(2, 3)}),
         'b': (F(4, 3), 2, {0: F(2, 3), 1: F(2, 3)})}),
}


class StudyExamplesTest(testtools.TestCase):
    """Exact values on named topologies."""

    def test_named_topologies(self):
        for name, (req, expected) in STUDY_CASES.items():
            result = pcpu_est.estimate(req)
            shares = pcpu_est.fair_shares(
                {(n, i): a for n, vm in req.vms.items()
                 for i, a in vm.vcpus.items()},
                {(n, i): vm.cap(i) for n, vm in req.vms.items()
                 for i in vm.vcpus}, req.pcpus)
            for vm, (avail, rec, vcpus) in expected.items():
                got = result.vms[vm]
                self.assertEqual(float(avail), got.available_pcpus,
                                 '%s/%s' % (name, vm))
                self.assertEqual(rec, got.recommended_vcpus,
                                 '%s/%s' % (name, vm))
                self.assertEqual({i: float(s) for i, s in vcpus.items()},
                                 got.vcpus, '%s/%s' % (name, vm))
                for i, s in vcpus.items():
                    self.assertEqual(s, shares[(vm, i)], '%s/%s' % (name, vm))

    def test_greedy_baseline_reproduces_study_figures(self):
        # The study's own examples are where its heuristic is right.
        for name in ('study004-4pcpus-2+3vcpus', 'study004-2/2+1/3-and-2/3',
                     'pinned-8-vcpus-on-4-pcpus'):
            req, expected = STUDY_CASES[name]
            result = pcpu_est_greedy.greedy_estimate(req)
            for vm, (avail, rec, _) in expected.items():
                self.assertAlmostEqual(float(avail),
                                       result.vms[vm].available_pcpus,
                                       places=9, msg=name)
                self.assertEqual(rec, result.vms[vm].recommended_vcpus,
                                 name)

    def test_greedy_baseline_is_not_exact(self):
        # a0 is pinned to pCPU 0 and capped at 1/4; a1 floats over 0-1;
        # b's two vCPUs are pinned to 1. Greedy starts at pCPU 0 (ratio
        # 2 vCPUs : 1), pCPU 1 keeps the ratio (2 : 4), so one group at
        # 1/2: a1 gets 1/2. Exactly, a1 also gets the 1/4 that a0's cap
        # leaves on pCPU 0.
        req = request({'a': ({0: (0,), 1: (0, 1)}, {0: 0.25}),
                       'b': ({0: (1,), 1: (1,)}, {})})
        exact = pcpu_est.estimate(req)
        greedy = pcpu_est_greedy.greedy_estimate(req)
        # a1 gets the 0.75 that a0's cap leaves on pCPU 0; b's vCPUs 1/2.
        self.assertEqual({0: 0.25, 1: 0.75}, exact.vms['a'].vcpus)
        self.assertEqual({0: 0.5, 1: 0.5}, exact.vms['b'].vcpus)
        self.assertNotEqual(exact.vms['a'].available_pcpus,
                            greedy.vms['a'].available_pcpus)


class RecommendationTest(testtools.TestCase):
    """recommended = min(#vCPUs, max(1, ceil(available - 1e-6)))."""

    def test_rounding(self):
        cases = [(F(0), 4, 1), (F(1, 10), 4, 1), (F(1), 4, 1),
                 (F(1) + F(1, 10 ** 7), 4, 1), (F(1) + F(2, 10 ** 6), 4, 2),
                 (F(8, 5), 4, 2), (F(12, 5), 4, 3), (F(4), 4, 4),
                 (F(7), 4, 4), (2.0000000001, 8, 2)]
        for available, count, expected in cases:
            self.assertEqual(expected,
                             pcpu_est.recommended_vcpus(available, count),
                             (available, count))


class RoundTripTest(testtools.TestCase):
    """Dataclasses round-trip through the CLI's JSON."""

    def test_request_round_trip(self):
        doc = {'pcpus': [0, 1, 2, 3],
               'vms': {'a': {'vcpus': {'0': [0, 1], '1': [2]},
                             'caps': {'1': 0.5}},
                       'b': {'vcpus': {'0': []}}}}
        req = pcpu_est.EstimateRequest.from_dict(doc)
        self.assertEqual(doc, json.loads(json.dumps(req.to_dict())))
        self.assertEqual(req, pcpu_est.EstimateRequest.from_dict(
            req.to_dict()))

    def test_result_round_trip(self):
        req, _ = STUDY_CASES['study004-2/2+1/3-and-2/3']
        result = pcpu_est.estimate(req)
        doc = json.loads(json.dumps(result.to_dict()))
        self.assertEqual(result, pcpu_est.EstimateResult.from_dict(doc))


BAD_REQUESTS = {
    'not an object': [],
    'unknown top key': {'vms': {}, 'hosts': []},
    'vms missing': {'pcpus': [0]},
    'vms not object': {'vms': []},
    'vm not object': {'vms': {'a': [0]}},
    'unknown vm key': {'vms': {'a': {'vcpus': {'0': [0]}, 'weight': 2}}},
    'vcpus missing': {'vms': {'a': {}}},
    'empty vcpus': {'vms': {'a': {'vcpus': {}}}},
    'vcpus not object': {'vms': {'a': {'vcpus': [[0]]}}},
    'non-integer index': {'vms': {'a': {'vcpus': {'x': [0]}}}},
    'negative index': {'vms': {'a': {'vcpus': {'-1': [0]}}}},
    'float index': {'vms': {'a': {'vcpus': {'1.0': [0]}}}},
    'padded index': {'vms': {'a': {'vcpus': {'01': [0]}}}},
    'affinity not list': {'vms': {'a': {'vcpus': {'0': 3}}}},
    'affinity not a cpulist': {'vms': {'a': {'vcpus': {'0': '0-3,2'}}}},
    'negative pcpu': {'vms': {'a': {'vcpus': {'0': [-1]}}}},
    'float pcpu': {'vms': {'a': {'vcpus': {'0': [1.0]}}}},
    'bool pcpu': {'vms': {'a': {'vcpus': {'0': [True]}}}},
    'duplicate pcpu': {'vms': {'a': {'vcpus': {'0': [1, 1]}}}},
    'pcpus not list': {'pcpus': 4, 'vms': {}},
    'duplicate pcpus': {'pcpus': [0, 0], 'vms': {}},
    'negative pcpus': {'pcpus': [-2], 'vms': {}},
    'cap above 1': {'vms': {'a': {'vcpus': {'0': [0]}, 'caps': {'0': 1.5}}}},
    'cap below 0': {'vms': {'a': {'vcpus': {'0': [0]},
                                  'caps': {'0': -0.1}}}},
    'cap not number': {'vms': {'a': {'vcpus': {'0': [0]},
                                     'caps': {'0': '0.5'}}}},
    'cap bool': {'vms': {'a': {'vcpus': {'0': [0]}, 'caps': {'0': True}}}},
    'cap for missing vcpu': {'vms': {'a': {'vcpus': {'0': [0]},
                                           'caps': {'1': 0.5}}}},
    'caps not object': {'vms': {'a': {'vcpus': {'0': [0]}, 'caps': [1]}}},
}


class ValidationTest(testtools.TestCase):
    """Bad input is refused with a reason."""

    def test_bad_requests(self):
        for name, doc in BAD_REQUESTS.items():
            self.assertRaises(exception.InvalidInput,
                              pcpu_est.EstimateRequest.from_dict, doc)

    def test_repeated_lists_are_checked_each_time(self):
        # Valid lists are checked once per document and reused; a list
        # equal to a valid one in value but not in type, or a bad list
        # after good ones, is still refused with its own message.
        for bad, message in [([True, 2], "True is not a pCPU"),
                             ([2, 2], 'duplicate pCPU(s) [2]'),
                             ([1, -2], '-2 is not a pCPU')]:
            doc = {'vms': {'a': {'vcpus': {'0': [1, 2], '1': [1, 2],
                                           '2': bad}}}}
            e = self.assertRaises(exception.InvalidInput,
                                  pcpu_est.EstimateRequest.from_dict, doc)
            self.assertIn("VM 'a' vCPU 2: " + message, str(e))
        req = pcpu_est.EstimateRequest.from_dict(
            {'vms': {'a': {'vcpus': {'0': [2, 1], '1': [2, 1]}},
                     'b': {'vcpus': {'0': [2, 1]}}}})
        self.assertEqual({0: (1, 2), 1: (1, 2)}, req.vms['a'].vcpus)
        self.assertEqual({0: (1, 2)}, req.vms['b'].vcpus)

    def test_fair_shares_refuses_caps_outside_0_1(self):
        for cap in (-0.5, 1.5, float('nan'), float('inf'), 'x'):
            self.assertRaises(exception.InvalidInput, pcpu_est.fair_shares,
                              {'v': (0,)}, {'v': cap})

    def test_good_edge_cases(self):
        for doc in ({'vms': {}}, {'pcpus': [], 'vms': {}},
                    {'vms': {'a': {'vcpus': {'0': []}, 'caps': {'0': 0}}}},
                    {'vms': {'a': {'vcpus': {'7': [3]}, 'caps': {'7': 1}}}}):
            req = pcpu_est.EstimateRequest.from_dict(doc)
            pcpu_est.estimate(req)


# -- hypothesis: exactness against the sequential LP ------------------------

CAPS = [0.0, 0.1, 0.25, 0.3, 1 / 3, 0.5, 0.7, 0.9, 1.0]


@st.composite
def small_hosts(draw):
    """Up to 4 pCPUs (one more can appear only in affinities), <= 7 vCPUs."""
    n_pcpus = draw(st.integers(1, 4))
    cpu = st.integers(0, n_pcpus)
    vms = {}
    for v in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 3))
        affs = {i: tuple(sorted(draw(st.sets(cpu, max_size=3))))
                for i in range(n)}
        caps = {i: draw(st.sampled_from(CAPS))
                for i in range(n) if draw(st.booleans())}
        vms['vm%d' % v] = (affs, caps)
    pcpus = None
    if draw(st.booleans()):
        pcpus = draw(st.sets(st.integers(0, n_pcpus), max_size=n_pcpus + 1))
    return request(vms, pcpus)


def _flat(req):
    affs = {(n, i): a for n, vm in req.vms.items()
            for i, a in vm.vcpus.items()}
    caps = {(n, i): vm.cap(i) for n, vm in req.vms.items() for i in vm.vcpus}
    return affs, caps


class ExactnessTest(testtools.TestCase):
    """Property tests: the exact estimate equals an independent LP."""

    @settings(max_examples=150, deadline=None)
    @given(small_hosts())
    def test_matches_sequential_lp(self, req):
        affs, caps = _flat(req)
        pcpus = None if req.pcpus is None else set(req.pcpus)
        exact = pcpu_est.fair_shares(affs, caps, req.pcpus)
        reference = pcpu_lp.lp_max_min_shares(affs, caps, pcpus)
        for key in affs:
            self.assertLess(abs(float(exact[key]) - reference[key]), 1e-6,
                            (key, exact, reference))

    @settings(max_examples=100, deadline=None)
    @given(small_hosts(), st.randoms(use_true_random=False))
    def test_invariant_under_relabelling(self, req, rnd):
        # Renaming pCPUs and regrouping vCPUs into other VMs changes
        # nothing: the division depends only on the affinity graph.
        affs, caps = _flat(req)
        cpus = sorted({p for a in affs.values() for p in a}
                      | set(req.pcpus or ()))
        perm = dict(zip(cpus, rnd.sample(range(100, 100 + len(cpus)),
                                         len(cpus))))
        keys = list(affs)
        rnd.shuffle(keys)
        renamed = {('x', j): tuple(sorted(perm[p] for p in affs[k]))
                   for j, k in enumerate(keys)}
        renamed_caps = {('x', j): caps[k] for j, k in enumerate(keys)}
        pcpus = (None if req.pcpus is None
                 else [perm[p] for p in req.pcpus])
        before = pcpu_est.fair_shares(affs, caps, req.pcpus)
        after = pcpu_est.fair_shares(renamed, renamed_caps, pcpus)
        for j, k in enumerate(keys):
            self.assertEqual(before[k], after[('x', j)])

    @settings(max_examples=8, deadline=None)
    @given(st.integers(0, 10 ** 6))
    def test_matches_lp_on_medium_hosts(self, seed):
        # 16 pCPUs, up to 24 vCPUs mixing pinned, windowed and NUMA-wide
        # floating vCPUs, some capped: many classes, atoms and levels.
        rng = random.Random(seed)
        affs, caps = {}, {}
        for v in range(rng.randint(8, 24)):
            kind = rng.random()
            if kind < 0.3:
                a = (rng.randrange(16),)
            elif kind < 0.6:
                lo = rng.randrange(13)
                a = tuple(range(lo, lo + rng.randint(2, 3)))
            else:
                a = tuple(range(rng.choice([0, 8]), 16))
            affs[v] = a
            if rng.random() < 0.3:
                caps[v] = rng.choice(CAPS)
        exact = pcpu_est.fair_shares(affs, caps)
        reference = pcpu_lp.lp_max_min_shares(affs, caps)
        for v in affs:
            self.assertLess(abs(float(exact[v]) - reference[v]), 1e-6)

    @settings(max_examples=10, deadline=None)
    @given(st.integers(0, 10 ** 6))
    def test_level_sets_tight_on_large_hosts(self, seed):
        # Fujishige's optimality condition for the lexicographically
        # optimal base, checked with an LP: the shares are feasible, and
        # for every level the vCPUs at or below it get together all the
        # time they could get on their own. Hosts of 48 pCPUs in 3 nodes
        # and ~150 vCPUs, with host-wide, per-node, windowed and pinned
        # (several per pCPU) vCPUs, some capped: folding and components
        # are exercised at a size the sequential LP cannot reach.
        rng = random.Random(seed)
        affs, caps = {}, {}
        v = 0
        while v < 150:
            size = rng.choice([1, 2, 4, 8])
            kind = rng.random()
            node = rng.randrange(3)
            cap = rng.choice(CAPS) if rng.random() < 0.3 else None
            first = rng.randrange(node * 16, node * 16 + 12)
            for j in range(size):
                if kind < 0.2:
                    a = tuple(range(48))
                elif kind < 0.6:
                    a = tuple(range(node * 16, node * 16 + 16))
                elif kind < 0.75:
                    a = tuple(range(first, first + 4))
                else:
                    a = (rng.randrange(node * 16, node * 16 + 6),)
                affs[v] = a
                if cap is not None:
                    caps[v] = cap
                v += 1
        shares = pcpu_est.fair_shares(affs, caps)
        self.assertTrue(pcpu_lp.lp_feasible(affs, caps, shares))
        for level in sorted(set(shares.values())):
            below = [k for k, s in shares.items() if s <= level]
            got = float(sum(shares[k] for k in below))
            best = pcpu_lp.lp_max_total(affs, caps, below)
            self.assertLess(abs(best - got), 1e-6, (level, best, got))


class FlowBackendTest(testtools.TestCase):
    """SciPy's max-flow (when installed) and ours give the same shares."""

    @settings(max_examples=15, deadline=None)
    @given(st.integers(0, 10 ** 6))
    def test_scipy_and_python_networks_agree(self, seed):
        if pcpu_est_flow._scipy() is None:
            self.skipTest('SciPy is not installed')
        rng = random.Random(seed)
        affs, caps = {}, {}
        for v in range(rng.randint(20, 120)):
            lo = rng.randrange(40)
            affs[v] = tuple(range(lo, lo + rng.choice([1, 2, 4, 8])))
            if rng.random() < 0.3:
                caps[v] = rng.choice(CAPS)
        with mock.patch.object(pcpu_est_flow, 'SCIPY_MIN_NODES', new=0):
            with_scipy = pcpu_est.fair_shares(affs, caps)
        with mock.patch.object(pcpu_est_flow, '_SCIPY', new=None):
            self.assertEqual(with_scipy, pcpu_est.fair_shares(affs, caps))

    def test_capacities_beyond_32_bits_use_the_python_network(self):
        # 1/7919 and 1/7907 caps: the common denominator times the atom
        # size does not fit SciPy's int32 capacities.
        affs = {v: tuple(range(3)) for v in range(5)}
        affs.update({10 + v: (0,) for v in range(3)})
        caps = {0: Fraction(1, 7919), 10: Fraction(1, 7907),
                11: Fraction(1, 104729)}
        built = []
        real = pcpu_est_flow._Network

        def spy(*args):
            built.append(args)
            return real(*args)

        self.useFixture(
            fixtures.MockPatchObject(pcpu_est_flow, '_Network', spy))
        self.useFixture(fixtures.MockPatchObject(
            pcpu_est_flow, 'SCIPY_MIN_NODES', 0))
        shares = pcpu_est.fair_shares(affs, caps)
        self.assertNotEqual([], built)
        self.assertEqual(Fraction(1, 7919), shares[0])
        self.assertEqual(Fraction(1, 7907), shares[10])
        self.assertEqual(3, sum(shares.values()))
