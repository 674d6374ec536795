"""vcpu_sizing's kvm:kvm_exit counter, on tracepoint groups of a fake kernel.

The groups are :class:`~nova_cacheaware.privsep.tracepoint.
TracepointGroups` in this process, with the syscalls replaced: the same
registry the privsep daemon keeps (tests/functional/agent/
test_privsep_counters.py runs the real daemon).
"""

import errno
import os

import fixtures
from oslo_privsep import daemon as privsep_daemon
import testtools

from nova_cacheaware.privsep import perf
from nova_cacheaware.privsep import tracepoint
from nova_cacheaware.vcpu_sizing import spin as vcpu_spin
from tests.unit.privsep import test_perf
from tests.unit.privsep import test_tracepoint

OFF_LINE = 'KVM exits are not counted'


class RecordingGroups:
    """The daemon's module API over in-process groups; calls recorded."""

    def __init__(self, groups):
        self.groups = groups
        self.calls = []
        self.down = None

    def _call(self, name, *args):
        self.calls.append(name)
        if self.down is not None:
            raise self.down
        return getattr(self.groups, name)(*args)

    def open_group(self, tid, events):
        return self._call('open_group', tid, events)

    def read_groups(self, handles):
        return self._call('read_groups', handles)

    def close_groups(self, handles):
        return self._call('close_groups', handles)


class KvmExitCounterTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())
        self.dir = self.useFixture(fixtures.TempDir()).path
        test_tracepoint.fake_tracefs(self.dir, {'kvm:kvm_exit': 1234})
        self.kernel = test_perf.FakeKernel(step=7)
        self.filters = []

    def counter(self, cpu_flag='vmx', roots=None, set_filter=None):
        cpuinfo = os.path.join(self.dir, 'cpuinfo')
        with open(cpuinfo, 'w') as f:
            f.write('processor : 0\nflags : fpu %s sse\n' % cpu_flag)
        groups = tracepoint.TracepointGroups(
            roots=roots or (self.dir,), opener=self.kernel.open,
            reader=self.kernel.read,
            set_filter=set_filter or (
                lambda fd, text: self.filters.append(text)))
        self.addCleanup(groups.close_all)
        self.groups = RecordingGroups(groups)
        return vcpu_spin.KvmExitCounter(groups=self.groups, cpuinfo=cpuinfo)

    def test_counts_all_and_pause_exits_with_a_filter(self):
        c = self.counter('vmx')
        self.assertEqual({'a/0': {'exits': 7, 'pause_exits': 7}},
                         c.sample({'a/0': 42}))
        self.assertEqual([(42, 1234, -1, perf.PERF_FORMAT_GROUP)],
                         self.kernel.calls[:1])
        self.assertEqual([42, 42], [call[0] for call in self.kernel.calls])
        self.assertEqual(['exit_reason == 40'], self.filters)
        self.assertEqual({'a/0': {'exits': 14, 'pause_exits': 14},
                          'b/1': {'exits': 7, 'pause_exits': 7}},
                         c.sample({'a/0': 42, 'b/1': 43}))
        self.assertEqual(4, len(self.kernel.calls))   # groups kept open
        self.assertEqual({'b/1': {'exits': 14, 'pause_exits': 14}},
                         c.sample({'b/1': 43}))
        self.assertEqual(1, len(self.groups.groups))  # a/0's closed
        c.close()
        self.assertEqual(0, len(self.groups.groups))
        self.assertEqual(self.kernel.open_fds, self.kernel.closed())
        self.assertIsNone(c.unsupported)

    def test_svm_pause_exit_reason(self):
        c = self.counter('svm')
        c.sample({'a/0': 42})
        self.assertEqual(['exit_reason == 119'], self.filters)

    def test_unknown_vendor_counts_all_exits_only(self):
        c = self.counter('none')
        self.assertEqual({'a/0': {'exits': 7}}, c.sample({'a/0': 42}))
        self.assertEqual([], self.filters)

    def test_refused_filter_counts_all_exits_only_logged_once(self):
        def refuse(fd, text):
            raise OSError(errno.EINVAL, 'Invalid argument')

        c = self.counter('svm', set_filter=refuse)
        self.assertEqual({'a/0': {'exits': 7}}, c.sample({'a/0': 1}))
        self.assertEqual({'a/0': {'exits': 14}, 'b/0': {'exits': 7}},
                         c.sample({'a/0': 1, 'b/0': 2}))
        self.assertEqual(1, self.logs.output.count(
            "the kernel refused the filter 'exit_reason == 119': Invalid "
            "argument; counting all exits only"))
        self.assertEqual({'exits': ('kvm:kvm_exit', None)}, c.events)
        self.assertIsNone(c.unsupported)

    def test_no_tracepoint_switches_off_once(self):
        c = self.counter(roots=('/nonexistent/tracing',))
        self.assertFalse(c.available())
        self.assertEqual({}, c.sample({'a/0': 1}))
        self.assertFalse(c.available())
        self.assertEqual('no kvm:kvm_exit tracepoint: no events/kvm/kvm_exit '
                         'under /nonexistent/tracing (tracefs not mounted, '
                         'or what defines the tracepoint not loaded)',
                         c.unsupported)
        self.assertEqual(1, self.logs.output.count(OFF_LINE))
        # Asked once (the probe), never again.
        self.assertEqual(['open_group'], self.groups.calls)

    def test_probe_counts_this_thread_once_and_closes(self):
        c = self.counter()
        self.assertTrue(c.available())
        self.assertTrue(c.available())
        self.assertEqual(['open_group', 'read_groups', 'close_groups'],
                         self.groups.calls)
        self.assertEqual(0, len(self.groups.groups))

    def test_no_permission_switches_off(self):
        c = self.counter()
        self.kernel.errors = {1234: PermissionError(errno.EACCES,
                                                    'Permission denied')}
        self.assertEqual({}, c.sample({'a/0': 1, 'b/0': 2}))
        self.assertIn('perf_event_open on thread 1: Permission denied',
                      c.unsupported)
        self.assertEqual({}, c.sample({'a/0': 1}))
        self.assertEqual(1, self.logs.output.count(OFF_LINE))
        self.assertEqual(['open_group'], self.groups.calls)

    def test_no_pmu_for_tracepoints_switches_off(self):
        c = self.counter()
        self.kernel.errors = {1234: perf.PerfUnsupported(
            errno.ENOENT, 'No such file or directory')}
        self.assertEqual({}, c.sample({'a/0': 1}))
        self.assertEqual('exits: No such file or directory; pause_exits: No '
                         'such file or directory', c.unsupported)

    def test_no_daemon_switches_off(self):
        c = self.counter()
        self.groups.down = privsep_daemon.FailedToDropPrivileges('no sudo')
        self.assertFalse(c.available())
        self.assertEqual('the privsep daemon did not start or stopped (no '
                         'sudo): see [nova_cacheaware_privileged]',
                         c.unsupported)
        self.assertEqual(1, self.logs.output.count(OFF_LINE))

    def test_a_daemon_gone_between_passes_opens_again(self):
        c = self.counter()
        c.sample({'a/0': 1})
        self.groups.down = OSError(errno.EPIPE, 'Broken pipe')
        self.assertEqual({}, c.sample({'a/0': 1}))
        self.assertIsNone(c.unsupported)
        # A new daemon knows none of the old handles.
        self.groups.down = None
        self.groups.groups.close_all()
        self.assertEqual({'a/0': {'exits': 7, 'pause_exits': 7}},
                         c.sample({'a/0': 1}))

    def test_a_thread_that_ended_is_skipped(self):
        c = self.counter()
        self.kernel.errors = {1234: OSError(errno.ESRCH, 'No such process')}
        self.assertEqual({}, c.sample({'a/0': 1}))
        self.assertIsNone(c.unsupported)
        self.kernel.errors = {}
        c.sample({'b/0': 2})
        self.kernel.broken.add(2)       # its group cannot be read now
        self.assertEqual({}, c.sample({'b/0': 2}))
        self.assertEqual(0, len(self.groups.groups))
        self.assertEqual(0, self.logs.output.count(OFF_LINE))
