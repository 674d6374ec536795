"""``balloon-plan`` and ``simulate balloon`` through the real CLI parser."""

import io
import json
import os
import tempfile
from unittest import mock

import testtools

from nova_cacheaware.cmd import cli

GOOD = {'params': {'threshold': 0.99, 'alpha': 0.1, 'beta': 0.1,
                   'mode': 'A', 'interval_s': 10},
        'vms': [{'id': 'a', 'memory_mib': 2357, 'hit_ratio': 1.0,
                 'streak': 2, 'min_mib': 256, 'max_mib': 7071},
                {'id': 'b', 'memory_mib': 2357, 'hit_ratio': 0.5,
                 'streak': 0, 'min_mib': 256, 'max_mib': 7071},
                {'id': 'c', 'memory_mib': 2357, 'hit_ratio': 0.25,
                 'streak': 0, 'min_mib': 256, 'max_mib': 7071}]}


def run_cli(argv, stdin_text=''):
    out, err = io.StringIO(), io.StringIO()
    with mock.patch('sys.stdout', out), mock.patch('sys.stderr', err), \
            mock.patch('sys.stdin', io.StringIO(stdin_text)):
        try:
            rc = cli.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def with_vm(**over):
    doc = json.loads(json.dumps(GOOD))
    doc['vms'][1].update(over)
    return doc


class TestBalloonPlanCli(testtools.TestCase):

    def test_plan_from_stdin(self):
        rc, out, err = run_cli(['balloon-plan', '--input', '-'],
                               json.dumps(GOOD))
        self.assertEqual((0, ''), (rc, err))
        self.assertEqual(
            {'vms': {'a': {'memory_mib': 1866, 'streak': 3,
                           'interval_s': 5.0},
                     'b': {'memory_mib': 2762, 'streak': 0,
                           'interval_s': 10.0},
                     'c': {'memory_mib': 2441, 'streak': 0,
                           'interval_s': 10.0}},
             'unallocated_mib': 2}, json.loads(out))

    def test_plan_from_file(self):
        with tempfile.NamedTemporaryFile('w', suffix='.json',
                                         delete=False) as f:
            json.dump(dict(GOOD, free_mib=100), f)
        self.addCleanup(os.unlink, f.name)
        rc, out, err = run_cli(['balloon-plan', '--input', f.name])
        self.assertEqual(0, rc)
        doc = json.loads(out)
        total = sum(v['memory_mib'] for v in doc['vms'].values())
        self.assertEqual(3 * 2357 + 100, total + doc['unallocated_mib'])

    def test_invalid_inputs_exit_2_one_line_no_stdout(self):
        params_bad = json.loads(json.dumps(GOOD))
        params_bad['params']['mode'] = 'C'
        neg_alpha = json.loads(json.dumps(GOOD))
        neg_alpha['params']['alpha'] = -0.1
        texts = [json.dumps(with_vm(hit_ratio=1.01)),
                 json.dumps(with_vm(hit_ratio='high')),
                 json.dumps(with_vm(hit_ratio=-0.5)),
                 json.dumps(GOOD).replace('0.25', 'NaN'),
                 json.dumps(with_vm(min_mib=5000, max_mib=4000,
                                    memory_mib=4500)),
                 json.dumps(with_vm(memory_mib=8000)),
                 json.dumps(with_vm(memory_mib=100)),
                 json.dumps(with_vm(streak=-2)),
                 json.dumps(dict(GOOD, free_mib=-5)),
                 json.dumps(params_bad), json.dumps(neg_alpha),
                 'not json', '[]']
        for text in texts:
            rc, out, err = run_cli(['balloon-plan', '--input', '-'], text)
            self.assertEqual(2, rc, text)
            self.assertEqual('', out, text)
            self.assertEqual(1, len(err.strip().splitlines()), err)
            self.assertIn('balloon-plan', err)

    def test_missing_file(self):
        rc, out, err = run_cli(['balloon-plan', '--input', '/nonexistent/x'])
        self.assertEqual((2, ''), (rc, out))


class TestSimulateBalloonCli(testtools.TestCase):

    def test_json_output_shape(self):
        scenario = {'duration_s': 1200, 'tick_s': 5, 'vms': 2,
                    'host_memory_mib': 4000}
        rc, out, err = run_cli(['simulate', 'balloon', '--scenario', '-',
                                '--format', 'json'], json.dumps(scenario))
        self.assertEqual((0, ''), (rc, err))
        doc = json.loads(out)
        self.assertEqual({'static', 'committed_as', 'mom', 'hit_ratio_a',
                          'hit_ratio_b', 'default', 'oracle'},
                         set(doc['policies']))
        for r in doc['policies'].values():
            self.assertEqual({'arith_mean_mib_s', 'geo_mean_mib_s'}, set(r))

    def test_table_output(self):
        rc, out, err = run_cli(['simulate', 'balloon', '--scenario', '-'],
                               json.dumps({'duration_s': 600, 'tick_s': 5}))
        self.assertEqual(0, rc)
        self.assertIn('oracle', out)

    def test_bad_scenarios(self):
        for doc in ({'vms': 0}, {'bogus': 1}, {'params': {'alpha': 'x'}},
                    {'working_sets': [20000]}, {'disk_mib_s': -1},
                    {'vms': 3, 'host_memory_mib': 100},
                    {'access': {'pattern': 'lfu'}},
                    {'access': [{}, {}]}, {'estimator': {'blind_vms': [7]}},
                    {'estimator': {'nonfile_mib_s': -1}}):
            rc, out, err = run_cli(['simulate', 'balloon', '--scenario', '-'],
                                   json.dumps(doc))
            self.assertEqual((2, ''), (rc, out), doc)
            self.assertEqual(1, len(err.strip().splitlines()))


DEFAULT_DOC = {
    'vms': [{'id': 'a', 'memory_mib': 2357, 'hit_ratio': 1.0,
             'cache_mib': 100, 'free_mib': 1900, 'used_mib': 300,
             'min_mib': 428, 'max_mib': 6215},
            {'id': 'b', 'memory_mib': 2357, 'hit_ratio': 0.8,
             'cache_mib': 2000, 'free_mib': 0, 'used_mib': 300,
             'min_mib': 428, 'max_mib': 6215, 'favoured': True,
             'hold_mib': 2000, 'hold_left': 3}]}


class TestBalloonPlanDefaultPolicyCli(testtools.TestCase):

    def test_replay(self):
        rc, out, err = run_cli(['balloon-plan', '--policy', 'default',
                                '--input', '-'], json.dumps(DEFAULT_DOC))
        self.assertEqual((0, ''), (rc, err))
        self.assertEqual(
            {'vms': {'a': {'memory_mib': 1823, 'probe': 0, 'hold_mib': 0,
                           'hold_left': 0, 'favoured': False},
                     'b': {'memory_mib': 2891, 'probe': 0, 'hold_mib': 2891,
                           'hold_left': 24, 'favoured': True}},
             'unallocated_mib': 0}, json.loads(out))

    def test_invalid(self):
        def doc_with(**over):
            doc = json.loads(json.dumps(DEFAULT_DOC))
            doc['vms'][1].update(over)
            return doc
        bad = [doc_with(hit_ratio=2), doc_with(cache_mib=-1),
               doc_with(used_mib=3000), doc_with(favoured='yes'),
               doc_with(probe=1.5), dict(DEFAULT_DOC, params={'margin': 'x'}),
               dict(DEFAULT_DOC, params={'threshold': 1.5}), {'vms': 1}]
        for doc in bad:
            rc, out, err = run_cli(['balloon-plan', '--policy', 'default',
                                    '--input', '-'], json.dumps(doc))
            self.assertEqual((2, ''), (rc, out), doc)
            self.assertEqual(1, len(err.strip().splitlines()))
