"""Print 'N passed, N failed, N skipped' for a subunit v2 stream on stdin."""

import sys

import subunit
import testtools


def main():
    """Count test outcomes; exit 1 when a test failed or none ran."""
    result = testtools.StreamSummary()
    counts = {'success': 0, 'fail': 0, 'skip': 0}

    def on_test(test):
        status = test['status']
        if status in ('success', 'xfail'):
            counts['success'] += 1
        elif status == 'skip':
            counts['skip'] += 1
        else:
            counts['fail'] += 1

    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer,
                                              non_subunit_name='stdout')
    summary = testtools.StreamToDict(on_test)
    result = testtools.CopyStreamResult([summary, result])
    result.startTestRun()
    try:
        stream.run(result)
    finally:
        result.stopTestRun()
    print('%d passed, %d failed, %d skipped'
          % (counts['success'], counts['fail'], counts['skip']))
    return 1 if counts['fail'] or not counts['success'] else 0


if __name__ == '__main__':
    sys.exit(main())
