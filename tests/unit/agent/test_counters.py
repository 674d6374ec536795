"""perf_event_open counters: struct layout, error mapping, the real syscall."""

import ctypes
import errno
import os
import threading

import fixtures
import testtools

from nova_cacheaware.agent import counters


class AttrLayoutTest(testtools.TestCase):
    """Offsets of ``struct perf_event_attr`` (linux/perf_event.h)."""

    def test_size_is_ver5(self):
        self.assertEqual(counters.PERF_ATTR_SIZE_VER5,
                         ctypes.sizeof(counters.PerfEventAttr))

    def test_offsets(self):
        a = counters.PerfEventAttr
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
        attr = counters.make_attr(counters.PERF_TYPE_HARDWARE,
                                  counters.PERF_COUNT_HW_INSTRUCTIONS)
        self.assertEqual((0, 112, 1), (attr.type, attr.size, attr.config))
        # Enabled at once (disabled bit clear), hypervisor excluded.
        self.assertEqual(1 << 6, attr.flags)


class FakeOpener:
    """Replaces only the syscall: raises ``error`` for chosen events."""

    def __init__(self, error=None):
        self.error = error
        self.calls = 0
        self.fds = []

    def __call__(self, attr, tid):
        self.calls += 1
        if self.error:
            raise self.error
        r, w = os.pipe()
        os.close(w)
        self.fds.append(r)
        return r


class PerfCounterSourceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger())

    def test_no_pmu_is_said_once_and_then_nothing(self):
        for err in (errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP):
            opener = FakeOpener(counters.PerfUnsupported(err, 'x'))
            source = counters.PerfCounterSource(opener=opener)
            self.assertEqual({}, source.sample({'vm/0': 123}))
            self.assertEqual({}, source.sample({'vm/0': 123}))
            self.assertEqual(3, opener.calls)  # each event once
            self.assertTrue(source.unsupported)
        self.assertEqual(3, self.log.output.count(
            'hardware counters are not available on this host'))

    def test_an_event_the_host_cannot_count_is_dropped_alone(self):
        def opener(attr, tid):
            if attr.config == counters.PERF_COUNT_HW_CACHE_MISSES:
                raise counters.PerfUnsupported(errno.ENOENT, 'x')
            return FakeOpener()(attr, tid)

        source = counters.PerfCounterSource(opener=opener,
                                            reader=lambda fd: 7)
        self.addCleanup(source.close)
        self.assertEqual({'vm/0': {'cycles': 7, 'instructions': 7}},
                         source.sample({'vm/0': 1}))
        self.assertEqual({'vm/0': {'cycles': 7, 'instructions': 7}},
                         source.sample({'vm/0': 1}))
        self.assertIsNone(source.unsupported)
        self.assertEqual(1, self.log.output.count(
            'llc_misses not counted on this host'))

    def test_available_probes_once(self):
        opener = FakeOpener(counters.PerfUnsupported(errno.ENOENT, 'x'))
        source = counters.PerfCounterSource(opener=opener)
        self.assertFalse(source.available())
        self.assertFalse(source.available())
        self.assertEqual(3, opener.calls)
        ok = counters.PerfCounterSource(opener=FakeOpener(),
                                        reader=lambda fd: 0)
        self.assertTrue(ok.available())
        self.assertEqual({}, ok._fds)  # the probe's counters are closed
        self.assertFalse(counters.NoCounterSource().available())

    def test_other_errors_skip_the_thread_only(self):
        opener = FakeOpener(OSError(errno.ESRCH, 'No such process'))
        source = counters.PerfCounterSource(opener=opener)
        self.assertEqual({}, source.sample({'vm/0': 1}))
        self.assertIsNone(source.unsupported)
        self.assertEqual(3, opener.calls)  # tried every event; retried later

    def test_fds_kept_between_samples_and_closed_for_gone_threads(self):
        opener = FakeOpener()
        reads = iter(range(100))
        source = counters.PerfCounterSource(
            opener=opener, reader=lambda fd: next(reads))
        first = source.sample({'a': 1, 'b': 2})
        self.assertEqual({'cycles': 0, 'instructions': 1, 'llc_misses': 2},
                         first['a'])
        self.assertEqual(6, opener.calls)
        source.sample({'a': 1})
        self.assertEqual(6, opener.calls)  # reused
        self.assertEqual(3, len(source._fds))
        source.close()
        self.assertEqual({}, source._fds)

    def test_derived(self):
        self.assertEqual(
            {'cpi': 2.0, 'llc_mpki': 5.0, 'instructions': 1000,
             'llc_misses': 5},
            counters.derived({'cycles': 0, 'instructions': 0,
                              'llc_misses': 0},
                             {'cycles': 2000, 'instructions': 1000,
                              'llc_misses': 5}))
        self.assertEqual({}, counters.derived({}, {'cycles': 1}))


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
    """The real perf_event_open path.

    A software event works without a PMU; the hardware events are counted
    or reported missing.
    """

    def test_task_clock_of_this_thread(self):
        tid = threading.get_native_id()
        source = counters.PerfCounterSource(events={
            'task_clock': (counters.PERF_TYPE_SOFTWARE,
                           counters.PERF_COUNT_SW_TASK_CLOCK)})
        self.addCleanup(source.close)
        try:
            before = source.sample({'me': tid})
        except PermissionError:
            self.skipTest('perf_event_open not permitted here')
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
