"""The privsep daemon's tracepoint groups: ids, filters, checks, errors."""

import errno
import os
import threading

import fixtures
import testtools

from nova_cacheaware import exception
from nova_cacheaware import privsep
from nova_cacheaware.privsep import perf
from nova_cacheaware.privsep import tracepoint
from tests.fixtures import privsep as privsep_fixture
from tests.unit.privsep import test_perf

KVM = {'exits': ('kvm:kvm_exit', None),
       'pause_exits': ('kvm:kvm_exit', ('exit_reason', 40))}


def fake_tracefs(root, ids):
    """``events/<system>/<name>/id`` files under ``root``."""
    for name, number in ids.items():
        system, event = name.split(':')
        path = os.path.join(root, 'events', system, event)
        os.makedirs(path)
        with open(os.path.join(path, 'id'), 'w') as f:
            f.write('%s\n' % number)


class TracepointGroupsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        fake_tracefs(self.root, {'kvm:kvm_exit': 1234})
        self.kernel = test_perf.FakeKernel()
        self.filters = []
        self.groups = self.make_groups()

    def make_groups(self, roots=None, set_filter=None):
        groups = tracepoint.TracepointGroups(
            roots=roots or ('/nonexistent/tracing', self.root),
            opener=self.kernel.open, reader=self.kernel.read,
            set_filter=set_filter or (
                lambda fd, text: self.filters.append((fd, text))),
            max_groups=2)
        self.addCleanup(groups.close_all)
        return groups

    def test_a_group_of_the_tracepoint_with_a_filtered_member(self):
        handle, dropped = self.groups.open_group(42, KVM)
        self.assertEqual({}, dropped)
        [leader, member] = self.kernel.calls
        self.assertEqual((42, 1234, -1, perf.PERF_FORMAT_GROUP), leader)
        self.assertEqual((42, 1234, 0), member[:2] + (member[3],))
        self.assertNotEqual(-1, member[2])      # in the leader's group
        # The filter is on the member only, built by the daemon.
        [member_fd] = self.kernel.open_fds - {member[2]}
        self.assertEqual([(member_fd, 'exit_reason == 40')], self.filters)
        self.assertEqual(
            {'counts': {handle: {'exits': 1, 'pause_exits': 1}},
             'ended': [], 'unknown': []},
            self.groups.read_groups([handle]))

    def test_the_attr_is_a_counting_tracepoint_event(self):
        attrs = []

        def opener(attr, tid, group_fd=-1):
            attrs.append(attr)
            return self.kernel.open(attr, tid, group_fd)

        groups = tracepoint.TracepointGroups(roots=(self.root,),
                                             opener=opener,
                                             reader=self.kernel.read)
        self.addCleanup(groups.close_all)
        groups.open_group(42, {'exits': ('kvm:kvm_exit', None)})
        [attr] = attrs
        self.assertEqual((2, 112, 1234, 0, 0, perf.PERF_FORMAT_GROUP,
                          1 << 6),
                         (attr.type, attr.size, attr.config,
                          attr.sample_period, attr.sample_type,
                          attr.read_format, attr.flags))

    def test_the_id_is_read_once(self):
        self.groups.open_group(42, KVM)
        os.remove(os.path.join(self.root, 'events', 'kvm', 'kvm_exit', 'id'))
        self.groups.open_group(43, KVM)
        self.assertEqual([1234] * 4, [c[1] for c in self.kernel.calls])

    def test_no_tracepoint_names_where_it_looked(self):
        groups = self.make_groups(roots=('/nonexistent/a', '/nonexistent/b'))
        e = self.assertRaises(tracepoint.NoTracepoint, groups.open_group,
                              42, KVM)
        self.assertEqual('no kvm:kvm_exit tracepoint: no events/kvm/kvm_exit '
                         'under /nonexistent/a or /nonexistent/b (tracefs '
                         'not mounted, or what defines the tracepoint not '
                         'loaded)', str(e))
        self.assertEqual([], self.kernel.calls)
        self.assertEqual(0, len(groups))

    def test_an_unreadable_id_is_named(self):
        with open(os.path.join(self.root, 'events', 'kvm', 'kvm_exit', 'id'),
                  'w') as f:
            f.write('junk\n')
        e = self.assertRaises(tracepoint.NoTracepoint, self.groups.open_group,
                              42, KVM)
        self.assertEqual("no kvm:kvm_exit tracepoint: %s/events/kvm/kvm_exit"
                         "/id: invalid literal for int() with base 10: "
                         "'junk'" % self.root, str(e))

    def test_a_refused_filter_drops_that_event_only(self):
        def refuse(fd, text):
            raise OSError(errno.EINVAL, 'Invalid argument')

        groups = self.make_groups(set_filter=refuse)
        handle, dropped = groups.open_group(42, KVM)
        self.assertEqual({'pause_exits': "the kernel refused the filter "
                          "'exit_reason == 40': Invalid argument"}, dropped)
        self.assertEqual({handle: {'exits': 1}},
                         groups.read_groups([handle])['counts'])
        # The refused event's fd is closed; the leader's stays open.
        self.assertEqual(1, len(self.kernel.closed()))

    def test_kernel_refusals_are_typed(self):
        for err, error_class in ((errno.ESRCH, perf.ThreadNotFound),
                                 (errno.EACCES, perf.CountingNotPermitted)):
            self.kernel.errors = {1234: OSError(err, os.strerror(err))}
            self.assertRaises(error_class, self.groups.open_group, 42, KVM)
        self.kernel.errors = {1234: perf.PerfUnsupported(errno.ENOENT, 'x')}
        e = self.assertRaises(perf.NothingToCount, self.groups.open_group,
                              42, KVM)
        self.assertEqual('exits: x; pause_exits: x', str(e))
        self.assertEqual(0, len(self.groups))

    def test_bounded(self):
        self.groups.open_group(1, KVM)
        self.groups.open_group(2, KVM)
        e = self.assertRaises(perf.TooManyGroups, self.groups.open_group, 3,
                              KVM)
        self.assertIn('already holds 2 counter groups', str(e))

    def test_input_is_checked(self):
        bad = [(0, KVM), (True, KVM), (42, {}), (42, [('a', KVM['exits'])]),
               (42, {'a': ('kvm_exit', None)}),
               (42, {'a': ('../kvm:kvm_exit', None)}),
               (42, {'a': ('kvm:kvm_exit/../x', None)}),
               (42, {'a': (3, None)}), (42, {'a': ('kvm:kvm_exit',)}),
               (42, {'a': ('kvm:kvm_exit', 'exit_reason == 40')}),
               (42, {'a': ('kvm:kvm_exit', ('exit_reason', '40'))}),
               (42, {'a': ('kvm:kvm_exit', ('exit_reason', True))}),
               (42, {'a': ('kvm:kvm_exit', ('x || 1', 40))}),
               (42, {'a': ('kvm:kvm_exit', ('exit_reason', 2 ** 64))}),
               (42, {'': ('kvm:kvm_exit', None)}),
               (42, {'e%d' % i: ('kvm:kvm_exit', None)
                     for i in range(perf.MAX_EVENTS + 1)})]
        for tid, events in bad:
            self.assertRaises(exception.InvalidInput, self.groups.open_group,
                              tid, events)
        self.assertEqual([], self.kernel.calls)
        # Lists, as msgpack may carry tuples, are accepted.
        self.groups.open_group(42, {'a': ['kvm:kvm_exit',
                                          ['exit_reason', 40]]})
        self.assertEqual('exit_reason == 40', self.filters[-1][1])


class EntrypointsTest(testtools.TestCase):
    """The entrypoints in unprivileged in-process mode, on this host."""

    def setUp(self):
        super().setUp()
        self.useFixture(privsep_fixture.PrivsepFixture())

    def test_entrypoints_belong_to_the_perf_context(self):
        for fn in (tracepoint.open_group, tracepoint.read_groups,
                   tracepoint.close_groups):
            self.assertTrue(privsep.perfmon_pctxt.is_entrypoint(fn))

    def test_sched_switch_of_this_thread_or_no_tracefs(self):
        tid = threading.get_native_id()
        try:
            handle, dropped = tracepoint.open_group(
                tid, {'switches': ('sched:sched_switch', None),
                      # Counted on this thread: it is always prev.
                      'from_init': ('sched:sched_switch', ('prev_pid', 1))})
        except tracepoint.NoTracepoint as e:
            self.assertIn('no sched:sched_switch tracepoint', str(e))
            self.skipTest('no tracefs here: %s' % e)
        except perf.CountingNotPermitted:
            self.skipTest('perf_event_open not permitted here')
        self.addCleanup(tracepoint.close_groups, [handle])
        self.assertEqual({}, dropped)
        before = tracepoint.read_groups([handle])['counts'][handle]
        for _ in range(5):
            os.sched_yield()
            threading.Event().wait(0.001)
        after = tracepoint.read_groups([handle])['counts'][handle]
        self.assertGreater(after['switches'], before['switches'])
        self.assertEqual((0, 0), (before['from_init'], after['from_init']))
