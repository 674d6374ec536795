"""Guest reports are untrusted: every lie is rejected with a reason."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.balloon import guest_report as gr


def report(**over):
    doc = {'v': 1, 'uptime_s': 1000, 'interval_s': 10,
           'read_kib': 102400, 'fetched_kib': 25600,
           'pgpgin_kib': 5000000, 'mem_total_kib': 2000 * 1024,
           'mem_free_kib': 100 * 1024, 'cached_kib': 1500 * 1024,
           'buffers_kib': 20 * 1024, 'committed_as_kib': 300 * 1024}
    doc.update(over)
    return doc


class TestValidateReport(testtools.TestCase):

    def test_accepts_and_converts(self):
        s = gr.validate_report(report(), assigned_mib=2048)
        self.assertEqual(0.75, s.hit_ratio)
        self.assertEqual(10.0, s.read_mib_s)
        self.assertEqual(1520.0, s.cache_mib)
        self.assertEqual(100.0, s.free_mib)
        self.assertEqual(380.0, s.used_mib)

    def test_no_reads_means_no_ratio(self):
        s = gr.validate_report(report(read_kib=0, fetched_kib=0), 2048)
        self.assertIsNone(s.hit_ratio)

    def test_readahead_beyond_reads_clamps_to_zero(self):
        s = gr.validate_report(report(fetched_kib=200000), 2048)
        self.assertEqual(0.0, s.hit_ratio)

    def test_explicit_ratio(self):
        self.assertEqual(0.5, gr.validate_report(
            report(hit_ratio=0.5), 2048).hit_ratio)

    def test_consecutive_reports(self):
        first = gr.validate_report(report(), 2048)
        second = gr.validate_report(
            report(uptime_s=1010, pgpgin_kib=5025600), 2048, first)
        self.assertEqual(1010, second.uptime_s)

    def test_rejections(self):
        first = gr.validate_report(report(), 2048)
        cases = [
            (report(read_kib='lots'), None),
            (report(read_kib=float('nan')), None),
            (report(read_kib=1.5), None),
            (report(read_kib=True), None),
            (report(read_kib=-1), None),
            (report(hit_ratio=1.5), None),
            (report(hit_ratio=-0.1), None),
            (report(hit_ratio=float('nan')), None),
            (report(hit_ratio='1'), None),
            (report(v=2), None),
            (report(interval_s=0), None),
            (report(read_kib=10 ** 12), None),
            (report(fetched_kib=10 ** 12), None),
            (report(mem_total_kib=10 ** 9), None),
            (report(mem_free_kib=2000 * 1024), None),
            ({k: v for k, v in report().items() if k != 'cached_kib'}, None),
            ('{"v": 1}', None),
            (report(uptime_s=900), first),
            (report(uptime_s=1000), first),
            (report(uptime_s=1010, pgpgin_kib=4000000), first),
            (report(uptime_s=1010, pgpgin_kib=5000000 + 10 ** 10), first),
        ]
        for doc, previous in cases:
            e = self.assertRaises(gr.InvalidGuestReport, gr.validate_report,
                                  doc, 2048, previous)
            self.assertIn('rejected guest report', str(e))


_junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                  st.text(max_size=5), st.lists(st.integers(), max_size=2))


class TestValidateReportFuzz(testtools.TestCase):
    """Whatever a guest sends: accepted with sane values, or rejected."""

    @settings(max_examples=200, deadline=None)
    @given(st.dictionaries(st.sampled_from(sorted(report())), _junk),
           st.booleans())
    def test_never_crashes(self, over, with_previous):
        previous = (gr.validate_report(report(), 2048) if with_previous
                    else None)
        doc = report(**over)
        try:
            s = gr.validate_report(doc, 2048, previous)
        except gr.InvalidGuestReport:
            return
        self.assertTrue(s.hit_ratio is None or 0.0 <= s.hit_ratio <= 1.0)
        self.assertLessEqual(s.memory_mib, 2048 + 64)
        for value in (s.cache_mib, s.free_mib, s.used_mib, s.read_mib_s):
            self.assertGreaterEqual(value, 0)
