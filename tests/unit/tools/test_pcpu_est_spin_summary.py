"""The spin experiment's summary: which settings missed the 5 % goal."""

import testtools

from benchmarks import pcpu_est_bench as pcb


def _setting(name, wait, rec, best, ratio):
    return {'name': name, 'wait': wait, 'recommended_threads': rec,
            'best_threads': best, 'recommended_over_best': ratio}


class SpinSummaryTest(testtools.TestCase):

    def test_counts_misses_over_five_percent(self):
        settings = [
            _setting('cap 0.5 CPU', 'spin', 1, 1, 1.0),
            _setting('cap 0.5 CPU', 'spin-then-block', 1, 2, 1.06),
            _setting('competitor 2 threads', 'spin', 2, 1, 1.05),
            {'name': 'affinity 1 CPU', 'skipped': 'cgroup unavailable'},
        ]
        self.assertEqual(
            {'settings': 3, 'within_5_percent': 2,
             'misses': [{'name': 'cap 0.5 CPU', 'wait': 'spin-then-block',
                         'recommended': 1, 'best': 2,
                         'recommended_over_best': 1.06}]},
            pcb.spin_summary(settings))

    def test_timed_out_recommendation_is_a_miss(self):
        # recommended_over_best is None when the recommended count timed
        # out.
        summary = pcb.spin_summary([_setting('x', 'spin', 8, 1, None)])
        self.assertEqual(
            {'settings': 1, 'within_5_percent': 0,
             'misses': [{'name': 'x', 'wait': 'spin', 'recommended': 8,
                         'best': 1, 'recommended_over_best': None}]},
            summary)
