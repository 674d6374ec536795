"""The installed ``nova-cacheaware pcpu-est`` command, as a real process."""

import json
import os
import shutil
import subprocess
import sys

import fixtures
import testtools


def _command():
    # The console script pbr installed next to this interpreter, or the
    # module when the package is only on the path.
    script = os.path.join(os.path.dirname(sys.executable), 'nova-cacheaware')
    if os.access(script, os.X_OK):
        return [script]
    found = shutil.which('nova-cacheaware')
    if found:
        return [found]
    return [sys.executable, '-m', 'nova_cacheaware.cmd.cli']


class PcpuEstProcessTest(testtools.TestCase):

    def _run(self, args, stdin=None):
        return subprocess.run(_command() + ['pcpu-est'] + args, input=stdin,
                              capture_output=True, text=True, timeout=120)

    def test_study_example_on_stdin(self):
        doc = {'vms': {
            'vm1': {'vcpus': {str(i): [0, 1, 2, 3] for i in range(2)}},
            'vm2': {'vcpus': {str(i): [0, 1, 2, 3] for i in range(3)}}}}
        proc = self._run(['--input', '-'], json.dumps(doc))
        self.assertEqual(0, proc.returncode, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertEqual(1.6, out['vms']['vm1']['available_pcpus'])
        self.assertEqual(2, out['vms']['vm1']['recommended_vcpus'])
        self.assertEqual(2.4, out['vms']['vm2']['available_pcpus'])
        self.assertEqual(3, out['vms']['vm2']['recommended_vcpus'])

    def test_large_host_from_file(self):
        # 64 pCPUs in 4 nodes, 256 vCPUs: every VM gets its estimate and
        # the shares add up to the pCPUs in use.
        vms = {}
        for v in range(64):
            node = v % 4
            cpus = list(range(node * 16, node * 16 + 16))
            vms['vm%d' % v] = {'vcpus': {str(i): cpus for i in range(4)}}
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'host.json')
        with open(path, 'w') as f:
            json.dump({'pcpus': list(range(64)), 'vms': vms}, f)
        proc = self._run(['--input', path])
        self.assertEqual(0, proc.returncode, proc.stderr)
        out = json.loads(proc.stdout)['vms']
        self.assertEqual(64, len(out))
        for est in out.values():
            self.assertEqual(1.0, est['available_pcpus'])
            self.assertEqual(1, est['recommended_vcpus'])

    def test_bad_input_exit_2_one_line(self):
        proc = self._run(['--input', '-'],
                         '{"vms": {"a": {"vcpus": {"0": [0, 0]}}}}')
        self.assertEqual(2, proc.returncode)
        self.assertEqual('', proc.stdout)
        self.assertEqual(1, proc.stderr.count('\n'), proc.stderr)
        self.assertIn('duplicate pCPU', proc.stderr)
