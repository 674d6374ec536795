"""``nova-cacheaware plan``: the JSON contract and one-line errors."""

import json
import os

import fixtures

from tests.unit.cachedomain import topologies as topo
from tests.unit.cmd import base

STUDY000_PARTIAL = {
    'domains': topo.Q6600,
    'vms': [{'id': 'a', 'vcpus': 2, 'workload': 'memory',
             'current': {'0': [0], '1': [2]}},
            {'id': 'b', 'vcpus': 2, 'workload': 'memory',
             'current': {'0': [1], '1': [3]}},
            {'id': 'c', 'vcpus': 1, 'workload': 'cpu'}]}


class PlanCommandTest(base.CLITestCase):

    def test_contract_from_stdin(self):
        doc = self.cli_json(['plan', '--input', '-'],
                            stdin=json.dumps(STUDY000_PARTIAL))
        self.assertEqual({
            'vms': {
                'a': {'pinning': {'0': [0, 1], '1': [0, 1]},
                      'domains': ['L2-0'], 'share': 'all', 'moved': True},
                'b': {'pinning': {'0': [2, 3], '1': [2, 3]},
                      'domains': ['L2-1'], 'share': 'all', 'moved': True},
                'c': {'pinning': {'0': [0, 1, 2, 3]},
                      'domains': ['L2-0', 'L2-1'], 'share': 'partial',
                      'moved': False}},
            'domains': {'L2-0': {'state': 'clean', 'memory_vms': ['a']},
                        'L2-1': {'state': 'clean', 'memory_vms': ['b']}},
            'unplaced': []}, doc)

    def test_from_file_same_as_stdin(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'in.json')
        with open(path, 'w') as f:
            json.dump(STUDY000_PARTIAL, f)
        self.assertEqual(
            self.cli_json(['plan', '--input', '-'],
                          stdin=json.dumps(STUDY000_PARTIAL)),
            self.cli_json(['plan', '--input', path]))

    def test_unplaced_listed(self):
        doc = self.cli_json(['plan', '--input', '-'], stdin=json.dumps({
            'domains': topo.Q6600, 'max_vcpus_per_cpu': 0.5,
            'vms': [{'id': 'a', 'vcpus': 2, 'workload': 'memory'},
                    {'id': 'b', 'vcpus': 1, 'workload': 'memory'}]}))
        self.assertEqual(['a'], doc['unplaced'])
        self.assertEqual({'0': [0, 1, 2, 3], '1': [0, 1, 2, 3]},
                         doc['vms']['a']['pinning'])

    def test_bad_input_is_one_line_exit_2(self):
        cases = [
            ('not json', 'not valid JSON'),
            ('[]', 'JSON object'),
            ('{"domains": [{"id": "a", "cpus": [0]}], "vms": [], '
             '"max_vcpus_per_cpu": NaN}', 'NaN'),
            (json.dumps({'domains': topo.Q6600, 'vms': [
                {'id': 'v', 'vcpus': 2, 'workload': 'memory',
                 'current': {'0': [7]}}]}), 'CPU 7 is in no domain'),
            (json.dumps({'domains': topo.Q6600, 'vms': [
                {'id': 'v', 'vcpus': -1, 'workload': 'memory'}]}),
             '"vcpus"'),
        ]
        for text, fragment in cases:
            err = self.assertOneLineError(['plan', '--input', '-'],
                                          fragment, stdin=text)
            self.assertTrue(err.startswith('nova-cacheaware plan: error:'),
                            err)

    def test_missing_file(self):
        self.assertOneLineError(['plan', '--input', '/nonexistent/x.json'],
                                'No such file')

    def test_input_required(self):
        self.assertOneLineError(['plan'], '--input')
