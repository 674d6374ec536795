"""The memory-bound classifier and its two-sample test."""

import json
import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.cachedomain import memclass
from nova_cacheaware.cachedomain import stats


def cpi(rng, mean, spread, n=12):
    return tuple(max(0.05, rng.gauss(mean, spread)) for _ in range(n))


def study000_window(rng, memory_bound):
    """A window as study 000 saw it.

    CPI ~0.5 vs ~3.2 when memory-bound, ~1.0 with < 5 % difference
    otherwise.
    """
    if memory_bound:
        return memclass.Window(all_share_cpi=cpi(rng, 0.5, 0.05),
                               partial_share_cpi=cpi(rng, 3.2, 0.4))
    return memclass.Window(all_share_cpi=cpi(rng, 1.0, 0.05),
                           partial_share_cpi=cpi(rng, 1.03, 0.05))


def run(windows, declared='auto', config=None):
    state = memclass.ClassifierState()
    decisions = []
    for window in windows:
        decision = memclass.classify(declared, state, window, config)
        state = decision.state
        decisions.append(decision)
    return decisions


class MannWhitneyTest(testtools.TestCase):

    def test_known_value(self):
        # The textbook example (also scipy's docs): U = 17, asymptotic
        # two-sided p with continuity correction 0.1113.
        result = stats.mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12])
        self.assertEqual(17.0, result.statistic)
        self.assertAlmostEqual(0.11134688653314041, result.p_value,
                               places=12)

    def test_complete_separation(self):
        result = stats.mann_whitney_u(range(8), range(8, 16))
        self.assertEqual(0.0, result.statistic)
        self.assertLess(result.p_value, 0.001)
        self.assertLess(result.z, 0)

    def test_all_equal_gives_no_evidence(self):
        result = stats.mann_whitney_u([1.0] * 5, [1.0] * 7)
        self.assertEqual(1.0, result.p_value)

    def test_ties_get_mean_ranks(self):
        self.assertEqual([1.5, 1.5, 3.0], stats._ranks([2, 2, 5]))

    def test_empty_sample_refused(self):
        self.assertRaises(ValueError, stats.mann_whitney_u, [], [1])

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.floats(0, 10), min_size=1, max_size=20),
           st.lists(st.floats(0, 10), min_size=1, max_size=20))
    def test_symmetry(self, xs, ys):
        a = stats.mann_whitney_u(xs, ys)
        b = stats.mann_whitney_u(ys, xs)
        self.assertAlmostEqual(len(xs) * len(ys),
                               a.statistic + b.statistic)
        self.assertAlmostEqual(a.p_value, b.p_value)
        self.assertTrue(0.0 <= a.p_value <= 1.0)

    def test_median(self):
        self.assertEqual(2.0, stats.median([3, 1, 2]))
        self.assertEqual(2.5, stats.median([4, 1, 2, 3]))


class ClassifierTest(testtools.TestCase):

    def test_clear_separation_is_memory_bound_after_dwell(self):
        rng = random.Random(1)
        decisions = run([study000_window(rng, True) for _ in range(4)])
        self.assertEqual(['memory'] * 4, [d.vote for d in decisions])
        self.assertEqual(['unknown', 'unknown', 'memory', 'memory'],
                         [d.workload for d in decisions])
        self.assertEqual('cpi-test', decisions[0].source)
        self.assertLess(decisions[0].p_value, 0.001)
        self.assertGreater(decisions[0].effect, 4.0)

    def test_same_distribution_is_not_memory_bound(self):
        rng = random.Random(2)
        decisions = run([study000_window(rng, False) for _ in range(5)])
        self.assertEqual(['other'] * 5, [d.vote for d in decisions])
        self.assertEqual('other', decisions[-1].state.vm_class)
        self.assertEqual(['unknown'] * 5, [d.workload for d in decisions])

    def test_small_but_significant_shift_is_not_memory_bound(self):
        # 200 samples make a 5 % shift significant; the effect size rule
        # keeps a CPU-bound VM out.
        rng = random.Random(3)
        window = memclass.Window(all_share_cpi=cpi(rng, 1.0, 0.02, 200),
                                 partial_share_cpi=cpi(rng, 1.05, 0.02, 200))
        vote, p_value, effect = memclass.cpi_vote(
            window, memclass.ClassifierConfig())
        self.assertLess(p_value, 0.01)
        self.assertEqual('other', vote)

    def test_too_few_samples_abstain(self):
        window = memclass.Window(all_share_cpi=(0.5,) * 3,
                                 partial_share_cpi=(3.2,) * 3)
        decision = memclass.classify('auto', memclass.ClassifierState(),
                                     window)
        self.assertEqual(('abstain', 'none'),
                         (decision.vote, decision.source))

    def test_mpki_rule_when_no_cpi_test(self):
        config = memclass.ClassifierConfig()
        high = memclass.Window(llc_misses=25_000, instructions=1_000_000)
        mid = memclass.Window(llc_misses=5_000, instructions=1_000_000)
        low = memclass.Window(llc_misses=1_000, instructions=1_000_000)
        self.assertEqual(('memory', 25.0), memclass.mpki_vote(high, config))
        self.assertEqual(('abstain', 5.0), memclass.mpki_vote(mid, config))
        self.assertEqual(('other', 1.0), memclass.mpki_vote(low, config))
        self.assertEqual(('abstain', None), memclass.mpki_vote(
            memclass.Window(llc_misses=5, instructions=0), config))
        decisions = run([high, high, high, mid, mid, low, low, low])
        self.assertEqual('mpki', decisions[0].source)
        self.assertEqual(['unknown', 'unknown', 'memory', 'memory', 'memory',
                          'memory', 'memory', 'unknown'],
                         [d.workload for d in decisions])

    def test_hysteresis_holds_against_alternating_noise(self):
        # Memory-bound VM whose every other window looks CPU-bound: after
        # entering, it never leaves (no ``dwell`` consecutive "other").
        rng = random.Random(4)
        windows = [study000_window(rng, True) for _ in range(3)]
        for n in range(40):
            windows.append(study000_window(rng, n % 2 == 0))
        decisions = run(windows)
        self.assertEqual(['memory'] * 41,
                         [d.workload for d in decisions[2:]])

    def test_hysteresis_leaves_after_dwell(self):
        rng = random.Random(5)
        windows = ([study000_window(rng, True) for _ in range(3)]
                   + [study000_window(rng, False) for _ in range(3)])
        decisions = run(windows)
        self.assertEqual(['memory', 'memory', 'memory', 'unknown'],
                         [d.workload for d in decisions[2:]])

    def test_abstain_keeps_streak(self):
        config = memclass.ClassifierConfig(dwell=2)
        state = memclass.step(memclass.ClassifierState(), 'memory', config)
        state = memclass.step(state, 'abstain', config)
        self.assertEqual(('undecided', 'memory', 1),
                         (state.vm_class, state.candidate, state.streak))
        state = memclass.step(state, 'memory', config)
        self.assertEqual('memory', state.vm_class)

    def test_declared_wins(self):
        rng = random.Random(6)
        for declared in ('memory', 'cpu', 'io'):
            decision = memclass.classify(
                declared, memclass.ClassifierState(),
                study000_window(rng, declared != 'memory'))
            self.assertEqual((declared, 'declared'),
                             (decision.workload, decision.source))

    def test_bad_declared_refused(self):
        self.assertRaises(ValueError, memclass.classify, 'fast',
                          memclass.ClassifierState(), memclass.Window())

    def test_bad_config_refused(self):
        self.assertRaises(ValueError, memclass.ClassifierConfig,
                          alpha_enter=0.3, alpha_leave=0.2)
        self.assertRaises(ValueError, memclass.ClassifierConfig,
                          mpki_enter=1, mpki_leave=2)
        self.assertRaises(ValueError, memclass.ClassifierConfig, dwell=0)

    def test_json_round_trip(self):
        rng = random.Random(7)
        decision = run([study000_window(rng, True)])[0]
        doc = json.loads(json.dumps(memclass.to_dict(decision)))
        self.assertEqual(decision, memclass.from_dict(memclass.Decision, doc))
        window = study000_window(rng, False)
        self.assertEqual(window, memclass.from_dict(
            memclass.Window, json.loads(json.dumps(memclass.to_dict(window)))))
        config = memclass.ClassifierConfig(dwell=5)
        self.assertEqual(config, memclass.from_dict(
            memclass.ClassifierConfig, memclass.to_dict(config)))
