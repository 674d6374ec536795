"""The guest helper on this machine's /proc, with sh and busybox sh."""

import json
import os
import shutil
import subprocess
import sys

import fixtures
import testtools

from nova_cacheaware.balloon import guest_report

HELPER = os.path.join(os.path.dirname(__file__), '..', '..', 'deploy',
                      'guest-tools', 'cacheaware-guest-stats')
BUSYBOX = shutil.which('busybox') or '/usr/bin/busybox'

# Waits a second (the helper takes its first sample), reads a cached file
# over and over for a second, then stays alive so that its /proc/<pid>/io
# is still there at the helper's second sample, two seconds later.
READER = '''
import sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
time.sleep(1)
end = time.time() + seconds
n = 0
while time.time() < end:
    with open(path, 'rb') as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            n += len(chunk)
print(n, flush=True)
time.sleep(60)
'''


class TestGuestHelper(testtools.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.data = os.path.join(tmp, 'data')
        with open(self.data, 'wb') as f:
            f.write(os.urandom(8 << 20))
        with open(self.data, 'rb') as f:
            f.read()                            # now in the page cache

    def _run(self, argv, env=None):
        reader = subprocess.Popen(
            [sys.executable, '-c', READER, self.data, '1'],
            stdout=subprocess.PIPE, text=True)
        # Cleanups run last-in first-out: kill, then reap.
        self.addCleanup(reader.wait)
        self.addCleanup(reader.kill)
        out = subprocess.run(argv + ['4'], capture_output=True, text=True,
                             env=env, timeout=60)
        self.assertEqual(0, out.returncode, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(1, len(lines), out.stdout)
        doc = json.loads(lines[0])
        read_bytes = int(reader.stdout.readline())
        return doc, read_bytes

    def _check(self, doc, read_bytes):
        self.assertGreaterEqual(doc['read_kib'], read_bytes // 1024)
        self.assertEqual(4, doc['interval_s'])
        with open('/proc/meminfo') as f:
            total_kib = int(f.readline().split()[1])
        stats = guest_report.validate_report(doc, total_kib // 1024 + 1)
        self.assertIsNotNone(stats.hit_ratio)
        self.assertTrue(0.0 <= stats.hit_ratio <= 1.0)
        self.assertGreater(stats.memory_mib, 0)

    def test_posix_sh(self):
        self._check(*self._run(['sh', HELPER]))

    def test_busybox_sh_and_applets_only(self):
        if not os.path.exists(BUSYBOX):
            self.fail('busybox missing: tools/setup.sh installs it')
        bindir = self.useFixture(fixtures.TempDir()).path
        for applet in ('sh', 'awk', 'cat', 'sleep'):
            os.symlink(BUSYBOX, os.path.join(bindir, applet))
        self._check(*self._run([BUSYBOX, 'sh', HELPER],
                               env={'PATH': bindir}))

    def test_shellcheck_posix_sh(self):
        exe = shutil.which('shellcheck')
        if exe is None:
            self.fail('shellcheck missing: tools/setup.sh installs it')
        out = subprocess.run([exe, '-s', 'sh', HELPER], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(0, out.returncode, out.stdout)

    def test_bad_interval(self):
        for arg in ('0', '601', 'x'):
            out = subprocess.run(['sh', HELPER, arg], capture_output=True,
                                 text=True, timeout=10)
            self.assertEqual(2, out.returncode)
            self.assertEqual('', out.stdout)
