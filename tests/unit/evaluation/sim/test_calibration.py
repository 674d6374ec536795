"""Calibrating the cache simulator from a contention probe's JSON."""

import json
import os

import fixtures
import testtools

from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import calibration
from nova_cacheaware_evaluation.sim import contention
from tests.unit.cmd import base


def probe_doc(*cells, **extra):
    """A probe document with ``(kernel, factor, placement, slowdown)``."""
    doc = {'format_version': 1, 'date': '2026-11-24T05:00:00+00:00',
           'loadavg_before': [1.5, 1.0, 1.0],
           'matrix': [{'kernel': k, 'factor': f, 'placement': p,
                       'slowdown': s, 'low': s * 0.9, 'high': s * 1.1}
                      for k, f, p, s in cells]}
    doc.update(extra)
    return doc


class SameDomainSlowdownTest(testtools.TestCase):
    """Where the simulator's same-domain co-run slowdown comes from."""

    def _alone_and_shared(self, model):
        one_domain = [(0, 1)]
        vms = [contention.SimVM('a', 1, 'memory'),
               contention.SimVM('b', 1, 'memory')]
        alone = contention.simulate_host(
            one_domain, vms[:1], {'a': [(0,)]}, 50,
            contention.new_rng(1), model)['a'].performance
        shared = contention.simulate_host(
            one_domain, vms, {'a': [(0,)], 'b': [(1,)]}, 50,
            contention.new_rng(1), model)['a'].performance
        return alone, shared

    def test_it_is_one_plus_dirty_all(self):
        for dirty_all in (0.12, 1.0892, 0.0):
            alone, shared = self._alone_and_shared(
                contention.Model(dirty_all=dirty_all))
            self.assertEqual(1.0, alone)
            self.assertAlmostEqual(1 + dirty_all, alone / shared)


class FromProbeTest(testtools.TestCase):

    def test_geometric_mean_of_same_domain_cells(self):
        c = calibration.from_probe(probe_doc(
            ('chase', 0.5, 'same', 1.21), ('stream', 2.0, 'same', 1.0),
            ('chase', 0.5, 'different', 1.02)), 'p.json')
        self.assertEqual({'dirty_all': 0.1}, c.fields)
        self.assertEqual(
            'measured: p.json (2026-11-24T05:00:00+00:00, load 1.50): '
            'same-domain slowdown 1.100 (geometric mean of chase 0.5x '
            '1.210, stream 2x 1.000) - 1', c.sources['dirty_all'])
        self.assertEqual(('chase 0.5x different-domain slowdown 1.020',),
                         c.unused)
        model = c.apply(contention.Model())
        self.assertEqual(0.1, model.dirty_all)
        self.assertEqual(3.2, model.split_mem)
        doc = c.to_dict(model)
        self.assertEqual(sorted(calibration.DEFAULT_SOURCES),
                         sorted(doc['parameters']))
        self.assertIn('study 000', doc['parameters']['split_mem']['source'])
        self.assertEqual(0.1, doc['parameters']['dirty_all']['value'])

    def test_one_cell_and_floor_at_zero(self):
        doc = probe_doc(('chase', 0.5, 'same', 1.5),
                        ('stream', 2.0, 'same', 0.97))
        self.assertEqual({'dirty_all': 0.5}, calibration.from_probe(
            doc, cell=('chase', 0.5)).fields)
        self.assertEqual({'dirty_all': 0.0}, calibration.from_probe(
            doc, cell=('stream', 2.0)).fields)

    def test_refused(self):
        good = probe_doc(('chase', 0.5, 'same', 1.5))
        for doc, fragment in [
                ([], 'must be the JSON object'),
                (dict(good, format_version=2), 'format_version must be 1'),
                (dict(good, matrix=[]), '"matrix" must be a non-empty'),
                (probe_doc(('walk', 0.5, 'same', 1.5)), 'kernel must be'),
                (probe_doc(('chase', 0.5, 'alone', 1.5)), 'placement must'),
                (probe_doc(('chase', -1, 'same', 1.5)),
                 'matrix[0].factor must be a positive number'),
                (probe_doc(('chase', 0.5, 'different', 1.5)),
                 'no same-domain co-run')]:
            e = self.assertRaises(exception.InvalidInput,
                                  calibration.from_probe, doc)
            self.assertIn(fragment, str(e))
        e = self.assertRaises(exception.InvalidInput, calibration.from_probe,
                              good, 'p.json', ('stream', 0.5))
        self.assertIn('p.json has no same-domain cell stream:0.5', str(e))

    def test_parse_cell(self):
        self.assertEqual(('chase', 0.5), calibration.parse_cell('chase:0.5'))
        for bad in ('chase', 'walk:1', 'chase:x', 'chase:0', None):
            self.assertRaises(exception.InvalidInput,
                              calibration.parse_cell, bad)


class CalibrationCLITest(base.CLITestCase):

    SCENARIO = {'slices': 100, 'host': [[0, 1]], 'policies': ['credit'],
                'vms': [{'id': 'a', 'vcpus': 1, 'workload': 'memory'},
                        {'id': 'b', 'vcpus': 1, 'workload': 'memory'}]}

    def _files(self, probe):
        tmp = self.useFixture(fixtures.TempDir()).path
        paths = []
        for name, doc in (('scenario.json', self.SCENARIO),
                          ('probe.json', probe)):
            paths.append(os.path.join(tmp, name))
            with open(paths[-1], 'w') as f:
                json.dump(doc, f)
        return paths

    def test_measured_dirty_all_changes_the_result(self):
        scenario, probe = self._files(probe_doc(
            ('chase', 0.5, 'same', 2.0)))
        plain = self.cli_json(['simulate', 'cache', '--scenario', scenario])
        calibrated = self.cli_json(['simulate', 'cache', '--scenario',
                                    scenario, '--calibration', probe])
        self.assertNotIn('calibration', plain)
        params = calibrated['calibration']['parameters']
        self.assertEqual(1.0, params['dirty_all']['value'])
        self.assertTrue(params['dirty_all']['source'].startswith(
            'measured: ' + probe))
        self.assertLess(calibrated['policies']['credit']['geomean'],
                        plain['policies']['credit']['geomean'])

    def test_errors_are_one_line(self):
        scenario, probe = self._files({'format_version': 1})
        self.assertOneLineError(['simulate', 'cache', '--scenario', scenario,
                                 '--calibration', probe],
                                'calibration: "matrix" must be a non-empty')
        self.assertOneLineError(['simulate', 'cache', '--scenario', scenario,
                                 '--calibration-cell', 'chase:0.5'],
                                '--calibration-cell needs --calibration')
        self.assertOneLineError(['simulate', 'cache', '--scenario', scenario,
                                 '--calibration', probe,
                                 '--calibration-cell', 'x'],
                                'cell must be KERNEL:FACTOR')


class NoiseSigmaTest(testtools.TestCase):
    """Per-sample CPI noise from the probe's alone samples."""

    def test_log_sd_per_cell(self):
        e = 2.718281828459045
        doc = {'runs': [
            {'placement': 'alone', 'kernel': 'chase', 'factor': 0.5,
             'ns_per_line': [1.0, e]},
            {'placement': 'alone', 'kernel': 'stream', 'factor': 0.5,
             'ns_per_line': [2.0, 2.0, 2.0]},
            {'placement': 'same', 'kernel': 'stream', 'factor': 0.5,
             'ns_per_line': [1.0, 100.0]}]}
        self.assertEqual({'median': 0.5, 'max': 0.5, 'cells': 2},
                         calibration.noise_sigma(doc))

    def test_no_samples(self):
        self.assertRaises(exception.InvalidInput, calibration.noise_sigma,
                          {'runs': []})
        self.assertRaises(exception.InvalidInput, calibration.noise_sigma,
                          [])
