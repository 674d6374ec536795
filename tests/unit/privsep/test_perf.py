"""The privsep daemon's counter groups: layout, registry, bounds, errors."""

import ctypes
import errno
import os
import threading

import fixtures
import testtools

from nova_cacheaware import exception
from nova_cacheaware import privsep
from nova_cacheaware.privsep import perf
from tests.fixtures import privsep as privsep_fixture

SOFTWARE = {'task_clock': (perf.PERF_TYPE_SOFTWARE, 1),
            'context_switches': (perf.PERF_TYPE_SOFTWARE, 3)}


class AttrLayoutTest(testtools.TestCase):
    """Offsets of ``struct perf_event_attr`` (linux/perf_event.h)."""

    def test_size_is_ver5(self):
        self.assertEqual(perf.PERF_ATTR_SIZE_VER5,
                         ctypes.sizeof(perf.PerfEventAttr))

    def test_offsets(self):
        a = perf.PerfEventAttr
        self.assertEqual(
            [('type', 0), ('size', 4), ('config', 8), ('sample_period', 16),
             ('sample_type', 24), ('read_format', 32), ('flags', 40),
             ('wakeup_events', 48), ('bp_type', 52), ('config1', 56),
             ('config2', 64), ('branch_sample_type', 72),
             ('sample_regs_user', 80), ('sample_stack_user', 88),
             ('clockid', 92), ('sample_regs_intr', 96),
             ('aux_watermark', 104), ('sample_max_stack', 108)],
            [(name, getattr(a, name).offset) for name in (
                'type', 'size', 'config', 'sample_period', 'sample_type',
                'read_format', 'flags', 'wakeup_events', 'bp_type',
                'config1', 'config2', 'branch_sample_type',
                'sample_regs_user', 'sample_stack_user', 'clockid',
                'sample_regs_intr', 'aux_watermark', 'sample_max_stack')])

    def test_make_attr(self):
        attr = perf.make_attr(perf.PERF_TYPE_HARDWARE, 1)
        self.assertEqual((0, 112, 1, 0), (attr.type, attr.size, attr.config,
                                          attr.read_format))
        # Enabled at once (disabled bit clear), hypervisor excluded.
        self.assertEqual(1 << 6, attr.flags)
        leader = perf.make_attr(perf.PERF_TYPE_SOFTWARE, 1,
                                perf.PERF_FORMAT_GROUP)
        self.assertEqual(perf.PERF_FORMAT_GROUP, leader.read_format)


class FakeKernel:
    """``perf_event_open`` and the group read, for :class:`CounterGroups`.

    ``errors`` maps an event config to the OSError its open raises; each
    read of a group adds ``step`` to every count; reading a group of a
    ``broken`` thread fails.
    """

    def __init__(self, errors=None, step=1):
        self.errors = errors or {}
        self.step = step
        self.open_fds = set()
        self.calls = []
        self.counts = {}
        self.broken = set()
        self.tids = {}

    def open(self, attr, tid, group_fd=-1):
        self.calls.append((tid, attr.config, group_fd, attr.read_format))
        error = self.errors.get(attr.config)
        if error is not None:
            raise error
        r, w = os.pipe()
        os.close(w)
        self.open_fds.add(r)
        self.counts.pop(r, None)     # a number reused for a new counter
        self.tids[r] = tid
        return r

    def read(self, fd, n):
        if self.tids[fd] in self.broken:
            raise OSError(errno.EIO, 'short read from perf group fd')
        values = self.counts.get(fd, (0,) * n)
        values = tuple(v + self.step for v in values)
        self.counts[fd] = values
        return values

    def closed(self):
        return {fd for fd in self.open_fds if not _is_open(fd)}


def _is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class CounterGroupsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.kernel = FakeKernel()
        self.groups = perf.CounterGroups(opener=self.kernel.open,
                                         reader=self.kernel.read,
                                         max_groups=3)
        self.addCleanup(self.groups.close_all)

    def test_one_group_per_thread_one_read_each(self):
        handle, dropped = self.groups.open_group(41, SOFTWARE)
        self.assertEqual({}, dropped)
        leader = self.kernel.calls[0]
        self.assertEqual((41, 1, -1, perf.PERF_FORMAT_GROUP), leader)
        member = self.kernel.calls[1]
        self.assertEqual(41, member[0])
        self.assertNotEqual(-1, member[2])      # in the leader's group
        self.assertEqual(
            {'counts': {handle: {'task_clock': 1, 'context_switches': 1}},
             'ended': [], 'unknown': []},
            self.groups.read_groups([handle]))
        self.assertEqual(
            {handle: {'task_clock': 2, 'context_switches': 2}},
            self.groups.read_groups([handle])['counts'])

    def test_an_event_the_host_cannot_count_is_left_out(self):
        self.kernel.errors[3] = perf.PerfUnsupported(errno.ENOENT, 'x')
        handle, dropped = self.groups.open_group(41, SOFTWARE)
        self.assertEqual({'context_switches': 'x'}, dropped)
        self.assertEqual({handle: {'task_clock': 1}},
                         self.groups.read_groups([handle])['counts'])

    def test_nothing_countable_is_one_error_naming_each_event(self):
        self.kernel.errors = {
            1: perf.PerfUnsupported(errno.ENOENT, 'No such file'),
            3: perf.PerfUnsupported(errno.EOPNOTSUPP, 'Not supported')}
        e = self.assertRaises(perf.NothingToCount, self.groups.open_group,
                              41, SOFTWARE)
        self.assertEqual('context_switches: Not supported; task_clock: No '
                         'such file', str(e))
        self.assertEqual(0, len(self.groups))

    def test_kernel_refusals_are_typed_and_leave_nothing_open(self):
        cases = [(errno.ESRCH, perf.ThreadNotFound, 'thread 41 does not '
                  'exist'),
                 (errno.EACCES, perf.CountingNotPermitted, 'CAP_PERFMON'),
                 (errno.EMFILE, perf.OpenFailed, 'Too many open files')]
        for err, error_class, words in cases:
            # The leader opens, its member is refused: the leader closes.
            self.kernel.errors = {3: OSError(err, os.strerror(err))}
            e = self.assertRaises(error_class, self.groups.open_group, 41,
                                  SOFTWARE)
            self.assertIn(words, str(e))
            self.assertEqual(self.kernel.open_fds, self.kernel.closed())
        self.assertEqual(0, len(self.groups))

    def test_bounded(self):
        handles = [self.groups.open_group(t, SOFTWARE)[0] for t in (1, 2, 3)]
        e = self.assertRaises(perf.TooManyGroups, self.groups.open_group, 4,
                              SOFTWARE)
        self.assertIn('already holds 3 counter groups', str(e))
        self.assertEqual(1, self.groups.close_groups(handles[:1]))
        self.groups.open_group(4, SOFTWARE)

    def test_close_frees_the_fds_and_forgets_the_handle(self):
        handle, _ = self.groups.open_group(41, SOFTWARE)
        self.assertEqual(set(), self.kernel.closed())
        self.assertEqual(1, self.groups.close_groups([handle, 7]))
        self.assertEqual(self.kernel.open_fds, self.kernel.closed())
        self.assertEqual({'counts': {}, 'ended': [], 'unknown': [handle]},
                         self.groups.read_groups([handle]))
        self.assertEqual(0, self.groups.close_groups([handle]))

    def test_a_group_that_cannot_be_read_is_ended_and_closed(self):
        good, _ = self.groups.open_group(41, SOFTWARE)
        bad, _ = self.groups.open_group(42, SOFTWARE)
        self.kernel.broken.add(42)
        answer = self.groups.read_groups([good, bad])
        self.assertEqual([bad], answer['ended'])
        self.assertEqual([good], list(answer['counts']))
        self.assertEqual(1, len(self.groups))

    def test_handles_are_not_reused_by_another_registry(self):
        other = perf.CounterGroups(opener=self.kernel.open,
                                   reader=self.kernel.read)
        self.addCleanup(other.close_all)
        mine, _ = self.groups.open_group(41, SOFTWARE)
        theirs, _ = other.open_group(41, SOFTWARE)
        self.assertNotEqual(mine, theirs)
        self.assertEqual([theirs],
                         self.groups.read_groups([theirs])['unknown'])

    def test_input_is_checked(self):
        bad = [(0, SOFTWARE), (-1, SOFTWARE), (True, SOFTWARE),
               ('41', SOFTWARE), (41, {}), (41, [('a', (1, 1))]),
               (41, {'a': (2, 1)}),             # a tracepoint
               (41, {'a': (1, -1)}), (41, {'a': (1,)}), (41, {'': (1, 1)}),
               (41, {'e%d' % i: (1, 1) for i in range(perf.MAX_EVENTS + 1)})]
        for tid, events in bad:
            self.assertRaises(exception.InvalidInput, self.groups.open_group,
                              tid, events)
        self.assertEqual([], self.kernel.calls)
        for handles in (7, ['7'], [True], list(range(perf.MAX_GROUPS + 1))):
            self.assertRaises(exception.InvalidInput,
                              self.groups.read_groups, handles)


class EntrypointsTest(testtools.TestCase):
    """The entrypoints in unprivileged in-process mode, on real syscalls."""

    def setUp(self):
        super().setUp()
        self.useFixture(privsep_fixture.PrivsepFixture())

    def test_task_clock_of_this_thread(self):
        try:
            handle, dropped = perf.open_group(threading.get_native_id(),
                                              SOFTWARE)
        except perf.CountingNotPermitted:
            self.skipTest('perf_event_open not permitted here')
        self.addCleanup(perf.close_groups, [handle])
        self.assertEqual({}, dropped)
        before = perf.read_groups([handle])['counts'][handle]
        sum(range(200000))
        after = perf.read_groups([handle])['counts'][handle]
        self.assertGreater(after['task_clock'], before['task_clock'])
        self.assertEqual(1, perf.close_groups([handle]))

    def test_a_thread_that_is_not_there(self):
        try:
            perf.open_group(free_tid(), SOFTWARE)
        except perf.ThreadNotFound as e:
            self.assertIn('does not exist', str(e))
        except perf.CountingNotPermitted:
            # perf_event_paranoid is checked before the thread is looked up.
            self.skipTest('perf_event_open not permitted here')
        else:
            self.fail('a thread that is not there was counted')


def free_tid():
    """A thread id no thread has now (the top of the pid range down)."""
    with open('/proc/sys/kernel/pid_max') as f:
        tid = int(f.read()) - 1
    while os.path.exists('/proc/%d' % tid):
        tid -= 1
    return tid


class ContextTest(testtools.TestCase):

    def test_capabilities_follow_the_kernel(self):
        path = self.useFixture(fixtures.TempDir()).join('c')
        for last, expected in (('40\n', [38]), ('41\n', [38]),
                               ('39\n', [38, 19]), ('38\n', [38, 19]),
                               ('37\n', [21, 19]), ('junk', [38])):
            with open(path, 'w') as f:
                f.write(last)
            self.assertEqual(expected, privsep.perf_capabilities(path))

    def test_entrypoints_belong_to_the_context(self):
        for fn in (perf.open_group, perf.read_groups, perf.close_groups):
            self.assertTrue(privsep.perfmon_pctxt.is_entrypoint(fn))

    def test_a_root_agent_needs_no_sudo(self):
        ctx = privsep.perfmon_pctxt
        self.useFixture(fixtures.MockPatch(
            'os.geteuid', return_value=0))
        cmd = ctx.helper_command('/tmp/s')
        self.assertEqual(['-m', 'oslo_privsep.daemon'], cmd[1:3])
        self.assertEqual(['--privsep_context',
                          'nova_cacheaware.privsep.perfmon_pctxt',
                          '--privsep_sock_path', '/tmp/s'], cmd[-4:])
        self.useFixture(fixtures.MockPatch(
            'os.geteuid', return_value=1000))
        self.assertEqual(['sudo', 'privsep-helper'],
                         ctx.helper_command('/tmp/s')[:2])
