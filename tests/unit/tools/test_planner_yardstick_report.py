"""The planner yardstick's tables: which probe, which figures."""

import json
import os

import testtools

from benchmarks import planner_yardstick as py
from benchmarks import planner_yardstick_report as pyr

RESULTS = os.path.join(os.path.dirname(os.path.abspath(pyr.__file__)),
                       'results')


def _load(name):
    with open(os.path.join(RESULTS, name)) as f:
        return json.load(f)


class YardstickReportTest(testtools.TestCase):

    def test_default_probe_is_the_quiet_rerun(self):
        self.assertEqual('benchmarks/results/contention_probe-quiet.json',
                         py.PROBE)
        self.assertEqual(py.PROBE, _load('planner_yardstick.json')[
            'calibration']['probe_file'])
        # Stall at alpha 0.5 from the four runs' same-domain slowdowns
        # 1.1318 and 1.2765 (lowest, highest): (s - 1) / (sqrt(2) - 1).
        mix, calib = py.probe_mix(os.path.join(
            RESULTS, 'contention_probe-quiet.json'))
        self.assertEqual((0.3182, 0.6675), mix.stall)

    def test_compare_rows(self):
        old = _load('planner_yardstick-loaded-probe.json')
        lines = pyr.compare(old, old).splitlines()
        self.assertEqual(
            'stall range: old [0.0814, 0.388] '
            '(benchmarks/results/contention_probe.json), new [0.0814, '
            '0.388] (benchmarks/results/contention_probe.json)', lines[0])
        row = [x for x in lines if x.startswith('contract, host ratio')][0]
        self.assertEqual(
            ['contract,', 'host', 'ratio', '0.976', '/', '0.829', '(6)',
             '0.976', '/', '0.829', '(6)', '0.976', '/', '0.759', '(3)',
             '0.976', '/', '0.759', '(3)'], row.split())

    def test_distribution_sums_both_seeds(self):
        lines = pyr.distribution(
            _load('planner_yardstick-loaded-probe.json')).splitlines()
        row = [x for x in lines if x.startswith('no planner')][0]
        self.assertEqual(['28', '16', '19', '7', '10', '0'],
                         row.split()[-6:])
