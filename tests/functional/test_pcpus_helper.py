"""The guest helper cacheaware-pcpus, with sh and busybox sh."""

import os
import shutil
import subprocess

import fixtures
import testtools

HELPER = os.path.join(os.path.dirname(__file__), '..', '..', 'deploy',
                      'guest-tools', 'cacheaware-pcpus')
BUSYBOX = shutil.which('busybox')


class PcpusHelperTest(testtools.TestCase):

    def run_helper(self, shell, content, *args):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'p')
        if content is not None:
            with open(path, 'w') as f:
                f.write(content)
        env = dict(os.environ, CACHEAWARE_PCPUS_FILE=path)
        return subprocess.run(shell + [HELPER] + list(args), env=env,
                              capture_output=True, text=True)

    def shells(self):
        out = [['sh']]
        if BUSYBOX:
            out.append([BUSYBOX, 'sh'])
        return out

    def test_prints_the_recommendation_or_online_cpus(self):
        online = str(os.sysconf('SC_NPROCESSORS_ONLN'))
        for shell in self.shells():
            done = self.run_helper(shell, '3\navailable_pcpus 2.500\n')
            self.assertEqual((0, '3\n', ''), (done.returncode, done.stdout,
                                              done.stderr), shell)
            for bad in (None, '', 'many\n', '0\n', '-2\n'):
                done = self.run_helper(shell, bad)
                self.assertEqual((0, online + '\n'),
                                 (done.returncode, done.stdout), (shell, bad))
            done = self.run_helper(shell, '2\n', '-v')
            self.assertEqual(['2', 'source: host agent'],
                             [line.split(' (')[0] for line in
                              done.stdout.splitlines()])
            done = self.run_helper(shell, '2\n', '--bad')
            self.assertEqual(2, done.returncode)
