"""The spin-storm detector: tables and properties."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.vcpu_sizing import model as sm
from nova_cacheaware.vcpu_sizing import spin_storm as ss

T = sm.StormThresholds()
HOT = sm.StormSignal(run_delay=(0.6, 0.5))       # storm vote
COLD = sm.StormSignal(run_delay=(0.02, 0.0))     # quiet vote
MID = sm.StormSignal(run_delay=(0.35, 0.35))       # dead band: abstain
NONE = sm.StormSignal()                          # nothing known


def run(signals, state=None, thresholds=T):
    state = state or sm.StormState()
    out = []
    for signal in signals:
        decision = ss.step(state, signal, thresholds)
        state = decision.state
        out.append(decision)
    return out


def flags(decisions):
    return ''.join('S' if d.storm else '.' for d in decisions)


class VoteTableTest(testtools.TestCase):

    def test_votes(self):
        table = [
            # run delays, pause exits/s, steal -> vote
            ((0.6, 0.5), None, None, sm.STORM),
            ((0.5,), None, None, sm.STORM),             # at enter
            ((0.49,), None, None, sm.ABSTAIN),
            ((0.2,), None, None, sm.QUIET),              # at leave
            ((), None, 0.5, sm.STORM),                   # steal stands in
            ((), None, None, sm.ABSTAIN),
            ((0.6,), (5000.0,), None, sm.STORM),         # spins too
            ((0.6,), (500.0,), None, sm.ABSTAIN),        # waits, spins less
            ((0.6,), (50.0,), None, sm.QUIET),           # contention only
            ((0.05,), (5000.0,), None, sm.QUIET),        # spins, not starved
        ]
        for delays, pause, steal, want in table:
            got = ss.vote(sm.StormSignal(run_delay=delays,
                                         pause_exits_per_s=pause,
                                         steal=steal), T)[0]
            self.assertEqual(want, got, (delays, pause, steal))

    def test_bad_input(self):
        self.assertRaises(ValueError, sm.StormSignal, run_delay=(1.5,))
        self.assertRaises(ValueError, sm.StormSignal, steal=-0.1)
        self.assertRaises(ValueError, sm.StormSignal,
                          pause_exits_per_s=(-1.0,))
        self.assertRaises(ValueError, sm.StormThresholds, enter_delay=0.1,
                          leave_delay=0.2)
        self.assertRaises(ValueError, sm.StormThresholds,
                          enter_pause_exits=10, leave_pause_exits=10)
        self.assertRaises(ValueError, sm.StormThresholds, leave_periods=4,
                          max_leave_periods=3)
        self.assertRaises(ValueError, ss.online_target, True, 0, 4)


class StepTableTest(testtools.TestCase):

    def test_sequences(self):
        table = [
            # signals -> storm flag per period
            ([HOT, HOT, HOT], '.SS'),                    # 2 periods to enter
            ([HOT, MID, HOT], '..S'),                    # abstain keeps count
            ([HOT, COLD, HOT, HOT], '...S'),             # quiet resets it
            ([HOT, HOT, COLD, COLD, COLD, COLD], '.SSS..'),   # 3 to leave
            ([HOT, HOT, COLD, HOT, COLD, COLD, COLD], '.SSSSS.'),
            ([HOT, HOT, MID, MID, MID, MID], '.SSSSS'),  # dead band: stays
            ([NONE] * 4, '....'),
        ]
        for signals, want in table:
            self.assertEqual(want, flags(run(signals)), want)

    def test_back_off_when_a_storm_comes_back_quickly(self):
        # A cap that stays: offlining ends the run delay, onlining brings
        # it back. Each quick return doubles the quiet periods to leave.
        holds = []
        decisions = run([HOT, HOT])
        state = decisions[-1].state
        for _ in range(6):
            holds.append(state.hold)
            quiet = run([COLD] * state.hold, state)
            state = quiet[-1].state
            self.assertFalse(state.storm)
            again = run([HOT, HOT], state)
            state = again[-1].state
            self.assertTrue(state.storm)
        self.assertEqual([3, 6, 12, 24, 48, 48], holds)
        # A storm long after the last one starts from leave_periods again.
        state = run([COLD] * 48, state)[-1].state
        state = run([COLD] * 200 + [HOT, HOT], state)[-1].state
        self.assertEqual((True, 3), (state.storm, state.hold))

    def test_online_target(self):
        self.assertEqual(8, ss.online_target(False, 2, 8))
        self.assertEqual(2, ss.online_target(True, 2, 8))
        self.assertEqual(4, ss.online_target(True, 6, 4))

    def test_json_round_trip(self):
        decision = run([HOT, HOT])[-1]
        doc = sm.to_dict(decision)
        self.assertEqual(decision.state, sm.state_from_dict(doc['state']))
        self.assertEqual(HOT, sm.signal_from_dict(sm.to_dict(HOT)))
        self.assertRaises(ValueError, sm.state_from_dict, {'bogus': 1})


delays = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
signals = st.builds(
    sm.StormSignal,
    run_delay=st.lists(delays, min_size=0, max_size=4).map(tuple),
    pause_exits_per_s=st.none() | st.lists(
        st.floats(min_value=0, max_value=1e5, allow_nan=False),
        min_size=1, max_size=4).map(tuple))


class StormPropertiesTest(testtools.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(st.lists(signals, max_size=60), st.lists(
        st.floats(min_value=0.0, max_value=T.leave_delay),
        min_size=T.max_leave_periods + 5, max_size=80))
    def test_a_storm_ends_when_the_signal_does(self, prefix, quiet):
        state = run(prefix)[-1].state if prefix else sm.StormState()
        after = run([sm.StormSignal(run_delay=(d,)) for d in quiet], state)
        # Within the longest hold, and then never again.
        tail = flags(after)[T.max_leave_periods:]
        self.assertEqual('.' * len(tail), tail)
        self.assertLessEqual(flags(after).count('S'), state.hold or
                             T.leave_periods)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(signals, max_size=60), st.lists(
        st.floats(min_value=T.enter_delay, max_value=1.0),
        min_size=T.enter_periods, max_size=40))
    def test_a_lasting_signal_starts_a_storm_that_lasts(self, prefix, hot):
        state = run(prefix)[-1].state if prefix else sm.StormState()
        after = flags(run([sm.StormSignal(run_delay=(d,)) for d in hot],
                          state))
        self.assertEqual('S' * (len(hot) - T.enter_periods + 1),
                         after[T.enter_periods - 1:])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(signals, min_size=1, max_size=120))
    def test_no_flapping_under_noise(self, noisy):
        decisions = run(noisy)
        votes = [d.vote for d in decisions]
        changes = [i for i, d in enumerate(decisions) if d.changed]
        for i in changes:
            # Every change is backed by a run of votes for the new state
            # (abstentions in between allowed) as long as its threshold.
            want, need = ((sm.STORM, T.enter_periods)
                          if decisions[i].storm else (sm.QUIET,
                                                      T.leave_periods))
            run_of = [v for v in votes[:i + 1] if v != sm.ABSTAIN]
            self.assertEqual([want] * need, run_of[-need:])
        gap = min(T.enter_periods, T.leave_periods)
        for a, b in zip(changes, changes[1:]):
            self.assertGreaterEqual(b - a, gap)
        for d in decisions:
            self.assertLessEqual(d.state.hold, T.max_leave_periods)

    @settings(max_examples=200, deadline=None)
    @given(st.booleans(), st.lists(
        st.floats(min_value=T.leave_delay, max_value=T.enter_delay,
                  exclude_min=True, exclude_max=True),
        min_size=1, max_size=60))
    def test_noise_inside_the_dead_band_changes_nothing(self, start, mid):
        state = run([HOT, HOT] if start else [COLD])[-1].state
        after = run([sm.StormSignal(run_delay=(d,)) for d in mid], state)
        self.assertEqual({start}, {d.storm for d in after})
