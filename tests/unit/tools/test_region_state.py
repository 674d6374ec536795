"""The region benchmark's quick configuration, in-process (no RabbitMQ)."""

import contextlib
import io
import json
import os
import tempfile

import testtools

from benchmarks import region_state


class QuickRunTest(testtools.TestCase):
    """One ``--quick`` run (seconds), its document checked by shape."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'region.json')
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                cls.rc = region_state.main(['--quick', '--out', out])
            with open(out) as f:
                cls.doc = json.load(f)
        cls.config = cls.doc['configs'][0]

    def test_written_with_its_context(self):
        self.assertEqual(0, self.rc)
        for key in ('command', 'date', 'machine', 'cpu', 'loadavg_before',
                    'settings', 'goals', 'wall_s'):
            self.assertIn(key, self.doc)
        self.assertNotIn('rabbit', self.doc)

    def test_payload_2_sends_fewer_bytes_than_1_5(self):
        steady = self.config['steady']
        self.assertLess(steady['2.0']['mb_per_s']['max'],
                        steady['1.5']['mb_per_s']['min'] / 10)
        # Only changed hosts and resyncs send a state, not every host.
        self.assertLess(steady['2.0']['states_per_s']['max'],
                        self.config['hosts'] / 10.0 / 2)
        self.assertEqual(3, steady['2.0']['cores']['n'])

    def test_heartbeats_are_heartbeats(self):
        steady = self.config['steady']['2.0']
        self.assertGreater(steady['heartbeats_per_s']['min'], 0)
        for sizes in self.config['sizes'].values():
            self.assertLess(sizes['heartbeat']['payload_bytes_max'], 128)
            self.assertLess(sizes['heartbeat']['body_bytes_max'],
                            sizes['2.0']['body_bytes_max'] / 5)
            self.assertLess(sizes['2.0']['body_bytes_max'],
                            sizes['1.5']['body_bytes_max'])

    def test_storm_is_every_host_once(self):
        storm = self.config['storm']
        self.assertEqual(self.config['hosts'], storm['states']['min'])
        self.assertEqual(self.config['hosts'], storm['states']['max'])

    def test_lost_updates_recover_within_the_resync_interval(self):
        lost = self.config['lost_updates']
        self.assertGreater(lost['hosts_wrong'], 0)
        self.assertEqual(0, lost['not_recovered'])
        self.assertLessEqual(lost['recovery_s']['max'],
                             self.doc['settings']['resync_s'])
        # A heartbeat naming a newer generation: the cache says None.
        self.assertGreater(lost['host_periods_meanwhile']['none'], 0)

    def test_memory_of_both_formats(self):
        memory = self.config['memory']
        self.assertLess(memory['2.0']['per_host_kib'],
                        memory['1.5']['per_host_kib'])
        # Only instances that appeared lately, not every instance.
        self.assertLess(memory['2.0']['instances_indexed'],
                        0.1 * self.config['hosts'] * self.config['vms'])


class CommandLineTest(testtools.TestCase):

    def test_invalid_input_is_one_line(self):
        for argv in (['--hosts', '0'], ['--vms', 'many'],
                     ['--drop', '1.5'], ['--nope']):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                e = self.assertRaises(SystemExit, region_state.parse_args,
                                      argv)
            self.assertEqual(2, e.code)
            lines = err.getvalue().splitlines()
            self.assertEqual(1, len(lines), lines)
            self.assertIn('region_state.py: error:', lines[0])
