"""The counters through the REAL privsep daemon (a separate process).

Needs root, to start the daemon as the agent's sudo would: the helper
command (``python -m oslo_privsep.daemon``, our context's choice for a
root caller) forks a daemon that keeps only CAP_PERFMON (Linux 5.8: and
CAP_SYS_PTRACE; before: CAP_SYS_ADMIN and CAP_SYS_PTRACE). The thread it
counts belongs to a child process of another user (``nobody``) where an
interpreter that user may run is found, as a QEMU vCPU thread belongs to
``libvirt-qemu``.
Software events (task-clock, context switches) stand in for the hardware
ones, which this project's CI host does not have.
"""

import os
import subprocess
import sys
import time

import fixtures
from oslo_config import cfg

from nova_cacheaware.cachedomain import counters
from nova_cacheaware import privsep
from nova_cacheaware.privsep import perf
from tests.functional import base
from tests.unit.privsep import test_perf

SOFTWARE = {'task_clock': (counters.PERF_TYPE_SOFTWARE,
                           counters.PERF_COUNT_SW_TASK_CLOCK),
            'context_switches': (counters.PERF_TYPE_SOFTWARE,
                                 counters.PERF_COUNT_SW_CONTEXT_SWITCHES)}

# A "vCPU": a thread that works a little and sleeps a little, until stdin
# closes; it prints its thread id first.
CHILD = '''
import sys, threading, time
stop = threading.Event()
def vcpu():
    print(threading.get_native_id(), flush=True)
    while not stop.is_set():
        sum(range(20000))
        time.sleep(0.002)
t = threading.Thread(target=vcpu)
t.start()
sys.stdin.read()
stop.set()
t.join()
'''
NOBODY = 65534


def _cmdline(pid):
    try:
        with open('/proc/%s/cmdline' % pid, 'rb') as f:
            return f.read().split(b'\0')
    except OSError:
        return []


class DaemonTestCase(base.FunctionalTestCase):
    """This test's own daemon, a ``nobody`` child's thread to count."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest('starting the privsep daemon needs root')
        ctx = privsep.perfmon_pctxt
        # No other test's agent configuration (files since removed) for
        # the helper command.
        cfg.CONF.reset()
        self.addCleanup(cfg.CONF.reset)
        # This test's own daemon, started on the first call as in the
        # agent; the command is recorded to find the daemon's process.
        ctx.stop()
        self.addCleanup(ctx.stop)
        self.commands = []
        helper_command = ctx.helper_command

        def recording(sockpath):
            cmd = helper_command(sockpath)
            self.commands.append(cmd)
            return cmd

        self.useFixture(fixtures.MockPatchObject(ctx, 'helper_command',
                                                 recording))
        self.useFixture(fixtures.MockPatchObject(ctx, 'client_mode', True))

    def vcpu_thread(self, code=CHILD, pass_fds=()):
        """A thread of a child process of ``nobody``: (process, thread id).

        Any interpreter ``nobody`` may run (this one may live under
        root's home); as root when none. ``code`` prints the thread's id
        first.
        """
        for python, user in ((sys.executable, NOBODY),
                             ('/usr/bin/python3', NOBODY),
                             (sys.executable, None)):
            try:
                child = subprocess.Popen([python, '-c', code],
                                         stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, user=user,
                                         cwd='/', pass_fds=pass_fds)
                break
            except OSError:
                continue
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        return child, int(child.stdout.readline())

    def daemon_pid(self):
        """The daemon's process: the one with this test's socket path."""
        [cmd] = self.commands
        sock = os.fsencode(cmd[cmd.index('--privsep_sock_path') + 1])
        for _ in range(50):
            pids = [p for p in os.listdir('/proc') if p.isdigit()
                    and sock in _cmdline(p)]
            if len(pids) == 1:   # the helper forked it and has exited
                return int(pids[0])
            time.sleep(0.05)
        self.fail('no single privsep daemon with %s: %s' % (sock, pids))

    def perf_fds(self, pid):
        fd_dir = '/proc/%d/fd' % pid
        n = 0
        for fd in os.listdir(fd_dir):
            try:
                if os.readlink(os.path.join(fd_dir, fd)) == (
                        'anon_inode:[perf_event]'):
                    n += 1
            except OSError:
                pass
        return n


class RealDaemonTest(DaemonTestCase):

    def test_counts_grow_and_closing_frees_them(self):
        _, tid = self.vcpu_thread()
        source = counters.PerfCounterSource(events=SOFTWARE)
        self.addCleanup(source.close)
        self.assertTrue(source.available(), source.unsupported)
        first = source.sample({'vm/0': tid})
        time.sleep(0.3)
        second = source.sample({'vm/0': tid})
        self.assertGreater(second['vm/0']['task_clock'],
                           first['vm/0']['task_clock'])
        self.assertGreater(second['vm/0']['context_switches'],
                           first['vm/0']['context_switches'])
        # A separate process, root but with the two capabilities only.
        pid = self.daemon_pid()
        self.assertNotEqual(os.getpid(), pid)
        with open('/proc/%d/status' % pid) as f:
            eff = [line.split()[1] for line in f
                   if line.startswith('CapEff:')][0]
        held = {bit for bit in range(64) if int(eff, 16) >> bit & 1}
        self.assertEqual(set(privsep.perf_capabilities()), held)
        self.assertEqual(2, self.perf_fds(pid))    # one group, two events
        source.close()
        self.assertEqual(0, self.perf_fds(pid))

    def test_a_dead_thread_is_a_clear_error_not_a_crash(self):
        child, tid = self.vcpu_thread()
        handle, dropped = perf.open_group(tid, SOFTWARE)
        self.assertEqual({}, dropped)
        pid = self.daemon_pid()
        self.assertEqual(2, self.perf_fds(pid))
        child.stdin.close()
        child.wait()
        # An exited thread's group keeps its last counts until closed.
        last = perf.read_groups([handle])['counts'][handle]
        self.assertEqual(last, perf.read_groups([handle])['counts'][handle])
        self.assertEqual(1, perf.close_groups([handle]))
        self.assertEqual(0, self.perf_fds(pid))
        e = self.assertRaises(perf.ThreadNotFound, perf.open_group, tid,
                              SOFTWARE)
        self.assertEqual('thread %d does not exist (it ended, or is no '
                         'thread)' % tid, str(e))
        self.assertRaises(perf.ThreadNotFound, perf.open_group,
                          test_perf.free_tid(), SOFTWARE)
        # The same daemon goes on answering.
        self.assertEqual({'counts': {}, 'ended': (), 'unknown': (handle,)},
                         perf.read_groups([handle]))
        self.assertEqual(pid, self.daemon_pid())

    def test_the_agent_source_closes_the_group_of_a_vcpu_gone(self):
        child, tid = self.vcpu_thread()
        other, other_tid = self.vcpu_thread()
        source = counters.PerfCounterSource(events=SOFTWARE)
        self.addCleanup(source.close)
        threads = {'vm/0': tid, 'vm/1': other_tid}
        self.assertEqual({'vm/0', 'vm/1'}, set(source.sample(threads)))
        self.assertEqual(4, self.perf_fds(self.daemon_pid()))
        child.stdin.close()
        child.wait()
        # The hypervisor lists the vCPU threads there are.
        self.assertEqual({'vm/1'}, set(source.sample({'vm/1': other_tid})))
        self.assertIsNone(source.unsupported)
        self.assertEqual(2, self.perf_fds(self.daemon_pid()))
