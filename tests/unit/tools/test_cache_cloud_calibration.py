"""The cloud evaluation's calibration: which probe file, which figures."""

import json
import os

import fixtures
import testtools

from benchmarks import cache_cloud_bench as ccb
from benchmarks import cache_cloud_report as ccr

RESULTS = os.path.join(ccb.HERE, 'results')


class ProbeCalibrationTest(testtools.TestCase):

    def test_default_is_the_quiet_rerun(self):
        calib = ccb.probe_calibration()
        self.assertEqual(
            'benchmarks/results/contention_probe-quiet.json',
            calib['probe_file'])
        # Four runs' same-domain slowdown - 1 and alone-sample sigmas.
        self.assertEqual([0.1318, 0.1777, 0.1416, 0.2765],
                         calib['dirty_all_runs'])
        self.assertEqual(0.1597, calib['dirty_all'])
        self.assertEqual([0.1179, 0.1311, 0.0731, 0.0889],
                         calib['sigma_runs'])
        self.assertEqual(0.1034, calib['sigma'])
        self.assertEqual(0.5467, calib['sigma_max'])
        self.assertEqual(
            'benchmarks/results/contention_probe-quiet.json '
            '(2026-11-24T12:29:34.876703+00:00, AMD EPYC, 2 CPUs, KVM, '
            'load 1.3-1.8)', calib['source'])

    def test_loaded_probe_gives_the_earlier_figures(self):
        calib = ccb.probe_calibration(
            os.path.join(RESULTS, 'contention_probe.json'))
        self.assertEqual('benchmarks/results/contention_probe.json',
                         calib['probe_file'])
        self.assertEqual(0.0869, calib['dirty_all'])
        self.assertEqual(0.0751, calib['sigma'])
        self.assertEqual(0.7498, calib['sigma_max'])
        self.assertIn('load 5.1-17.4', calib['source'])
        # The loaded-probe results file was made with exactly these.
        with open(os.path.join(RESULTS,
                               'cache_cloud-loaded-probe.json')) as f:
            old = json.load(f)['calibration']
        self.assertEqual(
            {k: calib[k] for k in ('dirty_all', 'sigma', 'sigma_max')},
            {k: old[k] for k in ('dirty_all', 'sigma', 'sigma_max')})

    def test_probe_outside_the_repository_keeps_its_name(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'probe.json')
        self.assertEqual(path, ccb.repo_path(path))
        self.assertEqual('benchmarks/results/x.json',
                         ccb.repo_path(os.path.join(RESULTS, 'x.json')))

    def test_results_record_the_probe_file(self):
        with open(os.path.join(RESULTS, 'cache_cloud.json')) as f:
            doc = json.load(f)
        self.assertEqual(ccb.probe_calibration()['probe_file'],
                         doc['calibration']['probe_file'])


class CompareTest(testtools.TestCase):

    def test_headline_rows_of_two_results(self):
        with open(os.path.join(RESULTS,
                               'cache_cloud-loaded-probe.json')) as f:
            old = json.load(f)
        lines = ccr.compare(old, old).splitlines()
        self.assertIn('old  0.087      0.075  0.750        '
                      'benchmarks/results/contention_probe.json', lines)
        header = ('config          30 % old  new    70 % old  new    '
                  '1.4x noisy old  new    small old  new        '
                  'tight old  new')
        self.assertIn(header, lines)
        row = [x for x in lines if x.startswith('nova-shared')][0]
        # 30 % and 70 % memory-bound and the 1.4x worst-noise run over
        # the bound, then the small clouds over their optimum.
        self.assertEqual(['nova-shared', '0.434', '0.434', '0.385',
                          '0.385', '0.634', '0.634', '0.23-0.49',
                          '0.23-0.49', '0.98-1.00', '0.98-1.00'],
                         row.split())
