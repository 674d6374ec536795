"""The agent's loop in an eventlet-monkey-patched process (Nova's case).

libvirt's default event loop blocks in C. Before it ran on a real OS thread,
a monkey-patched process stalled as soon as the agent started (the probe
below timed out); now lifecycle events reach the agent's green loop through
a pipe and the hub keeps running.
"""

import json
import os
import subprocess
import sys

import testtools

from tests.functional.agent import base

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


class EventletProcessTest(base.AgentTestCase):

    def test_events_reach_the_loop_and_the_hub_keeps_running(self):
        try:
            proc = subprocess.run(
                [sys.executable, '-W', 'ignore', '-m',
                 'tests.functional.agent.eventlet_probe'],
                cwd=REPO_ROOT, capture_output=True, text=True, timeout=90,
                # Nova's eventlet mode for the whole probe process (its
                # package would otherwise choose native threads first).
                env=dict(os.environ,
                         OS_NOVA_DISABLE_EVENTLET_PATCHING='false'))
        except subprocess.TimeoutExpired as e:
            self.fail('the monkey-patched agent stalled: %s' % e)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertTrue(got['started'])
        # Pass 2 came from the STARTED event (the period is an hour).
        self.assertTrue(got['woke'])
        self.assertEqual(2, got['passes'])
        self.assertEqual([[True, 'started']], got['events'])
        # ... and repinned the new memory-bound VM into the first domain.
        self.assertEqual({'0': [0, 1], '1': [0, 1]}, got['pins'])
        # 0.5 s of green sleep at 10 ms per tick while libvirt's loop sat
        # in poll(): the hub ran (a blocked hub gives 0).
        self.assertGreater(got['ticks_idle'], 0)
        self.assertEqual(['MainThread', 'libvirt-events'],
                         got['os_threads'])


class WakerTest(testtools.TestCase):

    def test_post_from_an_os_thread(self):
        from nova_cacheaware.agent import threads
        waker = threads.Waker()
        self.addCleanup(waker.close)
        thread = threads.start_os_thread(
            lambda: waker.post(('u', 'started')), 'poster')
        thread.join()
        self.assertEqual([('u', 'started')], waker.wait(30))
        # Nothing posted: the wait times out with no items.
        self.assertEqual([], waker.wait(0))
        waker.set()
        self.assertEqual([], waker.wait(30))
