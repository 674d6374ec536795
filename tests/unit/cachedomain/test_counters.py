"""The agent's counter sources: groups in the privsep daemon, traces."""

import errno
import threading

import fixtures
import testtools

from nova_cacheaware.cachedomain import counters
from nova_cacheaware.privsep import perf
from tests.fixtures import privsep as privsep_fixture
from tests.unit.privsep import test_perf


class PerfCounterSourceTest(testtools.TestCase):
    """The source on an in-process :class:`perf.CounterGroups`."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger())
        self.kernel = test_perf.FakeKernel()
        self.groups = perf.CounterGroups(opener=self.kernel.open,
                                         reader=self.kernel.read)
        self.addCleanup(self.groups.close_all)

    def source(self):
        return counters.PerfCounterSource(groups=self.groups)

    def test_no_pmu_is_said_once_and_then_nothing(self):
        for err in (errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP):
            self.kernel.calls = []
            self.kernel.errors = dict.fromkeys(
                (0, 1, 3), perf.PerfUnsupported(err, 'x'))
            source = self.source()
            self.assertEqual({}, source.sample({'vm/0': 123}))
            self.assertEqual({}, source.sample({'vm/0': 123}))
            self.assertEqual(3, len(self.kernel.calls))  # each event once
            self.assertIn('cycles: x', source.unsupported)
        self.assertEqual(3, self.log.output.count(
            'hardware counters are not available on this host'))

    def test_an_event_the_host_cannot_count_is_dropped_alone(self):
        self.kernel.errors = {counters.PERF_COUNT_HW_CACHE_MISSES:
                              perf.PerfUnsupported(errno.ENOENT, 'x')}
        source = self.source()
        self.addCleanup(source.close)
        self.assertEqual({'vm/0': {'cycles': 1, 'instructions': 1}},
                         source.sample({'vm/0': 1}))
        self.assertEqual({'vm/0': {'cycles': 2, 'instructions': 2},
                          'vm/1': {'cycles': 1, 'instructions': 1}},
                         source.sample({'vm/0': 1, 'vm/1': 2}))
        self.assertIsNone(source.unsupported)
        self.assertEqual(1, self.log.output.count(
            'llc_misses not counted on this host'))
        # The second thread's group was opened without the dropped event.
        self.assertEqual(5, len(self.kernel.calls))

    def test_available_probes_once_and_closes_the_probe(self):
        self.kernel.errors = {0: perf.PerfUnsupported(errno.ENOENT, 'x'),
                              1: perf.PerfUnsupported(errno.ENOENT, 'x'),
                              3: perf.PerfUnsupported(errno.ENOENT, 'x')}
        source = self.source()
        self.assertFalse(source.available())
        self.assertFalse(source.available())
        self.assertEqual(3, len(self.kernel.calls))
        self.kernel.errors = {}
        ok = self.source()
        self.assertTrue(ok.available())
        self.assertEqual(0, len(self.groups))  # the probe's group is closed
        self.assertFalse(counters.NoCounterSource().available())

    def test_an_ended_thread_is_skipped_and_tried_again(self):
        self.kernel.errors = {0: OSError(errno.ESRCH, 'No such process')}
        source = self.source()
        self.assertEqual({}, source.sample({'vm/0': 1}))
        self.assertIsNone(source.unsupported)
        self.kernel.errors = {}
        self.assertEqual({'vm/0': {'cycles': 1, 'instructions': 1,
                                   'llc_misses': 1}},
                         source.sample({'vm/0': 1}))

    def test_not_permitted_switches_the_source_off(self):
        self.kernel.errors = {0: OSError(errno.EACCES, 'Permission denied')}
        source = self.source()
        self.assertEqual({}, source.sample({'vm/0': 1}))
        self.assertIn('CAP_PERFMON', source.unsupported)
        self.assertIn('hardware counters are not available', self.log.output)

    def test_groups_kept_between_samples_and_closed_for_gone_threads(self):
        source = self.source()
        first = source.sample({'a': 1, 'b': 2})
        self.assertEqual({'cycles': 1, 'instructions': 1, 'llc_misses': 1},
                         first['a'])
        self.assertEqual(6, len(self.kernel.calls))
        self.assertEqual({'a': {'cycles': 2, 'instructions': 2,
                                'llc_misses': 2}}, source.sample({'a': 1}))
        self.assertEqual(6, len(self.kernel.calls))  # reused
        self.assertEqual(1, len(self.groups))
        source.close()
        self.assertEqual(0, len(self.groups))
        self.assertEqual(self.kernel.open_fds, self.kernel.closed())

    def test_a_group_that_cannot_be_read_is_dropped_and_reopened(self):
        source = self.source()
        source.sample({'a': 1, 'b': 2})
        self.kernel.broken.add(2)
        self.assertEqual({'a'}, set(source.sample({'a': 1, 'b': 2})))
        self.assertEqual(1, len(self.groups))
        self.kernel.broken.clear()
        self.assertEqual({'a', 'b'}, set(source.sample({'a': 1, 'b': 2})))

    def test_a_restarted_daemon_means_new_groups(self):
        source = self.source()
        source.sample({'a': 1})
        self.groups.close_all()         # what a daemon restart loses
        self.assertEqual({}, source.sample({'a': 1}))
        self.assertEqual({'a': {'cycles': 1, 'instructions': 1,
                                'llc_misses': 1}}, source.sample({'a': 1}))

    def test_a_daemon_that_does_not_start_switches_the_source_off(self):
        from oslo_privsep import daemon

        class NoDaemon:
            def open_group(self, tid, events):
                raise daemon.FailedToDropPrivileges(
                    'privsep helper command exited non-zero (1)')

        source = counters.PerfCounterSource(groups=NoDaemon())
        self.assertFalse(source.available())
        self.assertIn('privsep daemon did not start', source.unsupported)
        self.assertIn('[nova_cacheaware_privileged]', self.log.output)

    def test_a_daemon_gone_while_reading_is_one_lost_pass(self):
        groups = self.groups

        class Dying:
            open_group = groups.open_group
            close_groups = groups.close_groups

            def read_groups(self, handles):
                raise OSError('Premature eof waiting for privileged '
                              'process')

        source = counters.PerfCounterSource(groups=Dying())
        self.assertEqual({}, source.sample({'a': 1}))
        self.assertIsNone(source.unsupported)
        self.assertIn('counters not read this pass', self.log.output)


class TraceCounterSourceTest(testtools.TestCase):

    TRACE = {'passes': [
        {'a/0': {'instructions': 1000, 'llc_misses': 4},
         'b/0': {'all': {'instructions': 10},
                 'partial': {'instructions': 20}}},
        {'a/0': {'instructions': 1000, 'llc_misses': 6},
         'b/0': {'all': {'instructions': 10},
                 'partial': {'instructions': 20}}},
    ]}

    def test_replays_cumulative_counts_then_nothing(self):
        source = counters.TraceCounterSource(
            self.TRACE, names={'a': 'uuid-a', 'b': 'uuid-b'},
            mode_of=lambda key: 'partial', events=('instructions',
                                                   'llc_misses'))
        threads = {'uuid-a/0': 1, 'uuid-b/0': 2}
        self.assertEqual({'uuid-a/0': {'instructions': 1000,
                                       'llc_misses': 4},
                          'uuid-b/0': {'instructions': 20}},
                         source.sample(threads))
        self.assertEqual({'uuid-a/0': {'instructions': 2000,
                                       'llc_misses': 10},
                          'uuid-b/0': {'instructions': 40}},
                         source.sample(threads))
        self.assertEqual({}, source.sample(threads))

    def test_events_filter_and_unknown_threads(self):
        source = counters.TraceCounterSource(self.TRACE,
                                             events=('instructions',))
        self.assertEqual({'a/0': {'instructions': 1000}},
                         source.sample({'a/0': 1}))

    def test_bad_trace(self):
        self.assertRaises(ValueError, counters.TraceCounterSource, [])


class RealSyscallTest(testtools.TestCase):
    """The real perf_event_open path, privsep in unprivileged in-process mode.

    A software event works without a PMU; the hardware events are counted
    or reported missing.
    """

    def setUp(self):
        super().setUp()
        self.useFixture(privsep_fixture.PrivsepFixture())

    def test_task_clock_of_this_thread(self):
        tid = threading.get_native_id()
        source = counters.PerfCounterSource(events={
            'task_clock': (counters.PERF_TYPE_SOFTWARE,
                           counters.PERF_COUNT_SW_TASK_CLOCK)})
        self.addCleanup(source.close)
        before = source.sample({'me': tid})
        if source.unsupported:
            self.skipTest('perf_event_open not permitted here: %s'
                          % source.unsupported)
        self.assertIn('me', before)
        sum(range(200000))
        after = source.sample({'me': tid})
        self.assertGreater(after['me']['task_clock'],
                           before['me']['task_clock'])

    def test_hardware_events_counted_or_reported_missing(self):
        tid = threading.get_native_id()
        log = self.useFixture(fixtures.FakeLogger())
        source = counters.PerfCounterSource()
        self.addCleanup(source.close)
        got = source.sample({'me': tid})
        if source.unsupported:
            self.assertEqual({}, got)
            self.assertIn('hardware counters are not available', log.output)
        else:
            self.assertEqual({'cycles', 'instructions', 'llc_misses'},
                             set(got['me']))
