"""The test run's closing summary names each failed test."""

import io
import os
import subprocess
import sys

import subunit
import testtools

SCRIPT = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                      'subunit_summary.py')


def _stream(events):
    """A subunit v2 byte stream of ``(test id, status, traceback)``."""
    out = io.BytesIO()
    result = subunit.StreamResultToBytes(out)
    for test_id, status, traceback in events:
        if traceback is not None:
            result.status(test_id=test_id, file_name='traceback',
                          file_bytes=traceback.encode(),
                          mime_type='text/plain; charset=utf8')
        result.status(test_id=test_id, test_status=status)
    return out.getvalue()


def _summary(events):
    done = subprocess.run([sys.executable, SCRIPT], input=_stream(events),
                          capture_output=True, check=False)
    return done.returncode, done.stdout.decode()


class SubunitSummaryTest(testtools.TestCase):

    def test_failed_tests_are_named_with_the_end_of_their_traceback(self):
        traceback = '\n'.join('line %d' % n for n in range(20))
        rc, out = _summary([('t.ok', 'exists', None),
                            ('t.ok', 'success', None),
                            ('t.skipped', 'skip', None),
                            ('t.broken', 'fail', traceback)])
        self.assertEqual(1, rc)
        self.assertEqual(
            ['FAILED t.broken (fail)']
            + ['    line %d' % n for n in range(8, 20)]
            + ['1 passed, 1 failed, 1 skipped'],
            out.splitlines())

    def test_all_passed(self):
        rc, out = _summary([('t.a', 'success', None),
                            ('t.b', 'xfail', None)])
        self.assertEqual((0, '2 passed, 0 failed, 0 skipped\n'), (rc, out))

    def test_nothing_ran_is_a_failure(self):
        rc, out = _summary([])
        self.assertEqual((1, '0 passed, 0 failed, 0 skipped\n'), (rc, out))
