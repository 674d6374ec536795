"""The spin-storm detector on a real spin-barrier program (study 001).

A short run of ``benchmarks/storm_bench.py``'s competitor scenario: the
agent's :class:`~nova_cacheaware.vcpu_sizing.storm_states.StormWatch` reads the
program's real run delay from ``/proc/<pid>/task/<tid>/schedstat``, and the
reaction runs pCPU-Est's thread count while it sees a storm. Needs gcc and
a writable cgroup CPU controller (root); skipped otherwise. The figures
are in ``doc/source/evaluation/spin-storms.rst``.
"""

import argparse
import os
import shutil

import fixtures
import testtools

from benchmarks import pcpu_est_bench as pcb
from benchmarks import storm_bench


class StormBenchTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if not shutil.which('gcc'):
            self.skipTest('needs gcc')
        try:
            self.groups = pcb.CpuCgroups(parent_shares=262144)
        except OSError as e:
            self.skipTest('needs a writable cgroup CPU controller: %s' % e)
        self.addCleanup(self.groups.cleanup)
        driver = self.groups.group('driver', shares=1024)
        root = ('/sys/fs/cgroup/cpu/cgroup.procs' if self.groups.version == 1
                else '/sys/fs/cgroup/cgroup.procs')
        pcb._write(driver, str(os.getpid()))
        self.addCleanup(pcb._write, root, str(os.getpid()))
        workdir = self.useFixture(fixtures.TempDir()).path
        self.binary = pcb.build_spin_barrier(workdir)

    def test_detects_reacts_and_recovers(self):
        args = argparse.Namespace(threads=2, period=0.5, phases=[4, 8, 12],
                                  rounds=200, work=100000)
        setting = storm_bench.SETTINGS['competitor']
        got = storm_bench.run_one(self.binary, self.groups, setting, args,
                                  react=True)
        timeline = got['timeline']
        storm = [row for row in timeline if row[1]]
        after = [row for row in timeline if row[0] >= 12]
        # Detected within the storm phase (16 periods), with periods left
        # for the reaction: 2-3 periods in on a quiet machine, 10 once
        # beside the other test worker's load on 2 CPUs.
        self.assertIsNotNone(got['detected_after_periods'])
        self.assertLessEqual(got['detected_after_periods'], 12)
        # The reaction: pCPU-Est's 1 thread while the storm lasts.
        self.assertIn(1, [row[5] for row in storm if row[4]])
        # Recovery: both threads back after the competitor left.
        self.assertEqual(2, after[-1][5])
        self.assertGreater(got['units_per_s']['after'], 0)
