"""``nova-cacheaware plan`` and ``simulate cache`` as real processes."""

import json
import subprocess
import sys

import testtools

CLI = [sys.executable, '-m', 'nova_cacheaware.cmd.cli']
Q6600 = [{'id': 'L2-0', 'cpus': [0, 1]}, {'id': 'L2-1', 'cpus': [2, 3]}]


def run(args, stdin):
    return subprocess.run(CLI + args, input=stdin, capture_output=True,
                          text=True, timeout=120)


class PlanProcessTest(testtools.TestCase):

    def test_plan_round_trip(self):
        doc = {'domains': Q6600, 'vms': [
            {'id': 'a', 'vcpus': 2, 'workload': 'memory',
             'current': {'0': [0], '1': [2]}}]}
        proc = run(['plan', '--input', '-'], json.dumps(doc))
        self.assertEqual(0, proc.returncode, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertEqual('all', out['vms']['a']['share'])
        self.assertEqual('', proc.stderr)

    def test_bad_input_exit_2_one_line_nothing_on_stdout(self):
        proc = run(['plan', '--input', '-'], '{"domains": 1}')
        self.assertEqual(2, proc.returncode)
        self.assertEqual('', proc.stdout)
        self.assertEqual(1, len(proc.stderr.splitlines()), proc.stderr)

    def test_simulate_cache(self):
        scenario = {'slices': 100, 'policies': ['credit', 'agent'],
                    'vms': [{'id': 'a', 'vcpus': 2, 'workload': 'memory'},
                            {'id': 'b', 'vcpus': 2, 'workload': 'memory'}]}
        proc = run(['simulate', 'cache', '--scenario', '-'],
                   json.dumps(scenario))
        self.assertEqual(0, proc.returncode, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertEqual(1.0, out['policies']['agent']['geomean'])
