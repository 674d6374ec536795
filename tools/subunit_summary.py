"""Print 'N passed, N failed, N skipped' for a subunit v2 stream on stdin.

Failed tests are named, each with the end of its traceback, just before
the summary line: CI keeps only the tail of the output, and a failure
known only by its count cannot be fixed.
"""

import sys

import subunit
import testtools


MAX_FAILURES_SHOWN = 5
TRACEBACK_LINES = 12


def describe_failure(test):
    """Return a failed test's id, status and the end of its traceback."""
    lines = ['FAILED %s (%s)' % (test['id'], test['status'])]
    details = test.get('details') or {}
    text = ''
    for name in ('traceback', 'reason'):
        if name in details:
            text = details[name].as_text()
            break
    tail = [line for line in text.splitlines() if line.strip()]
    lines.extend('    ' + line for line in tail[-TRACEBACK_LINES:])
    return '\n'.join(lines)


def main():
    """Count test outcomes; exit 1 when a test failed or none ran."""
    result = testtools.StreamSummary()
    counts = {'success': 0, 'fail': 0, 'skip': 0}
    failures = []

    def on_test(test):
        status = test['status']
        if status in ('success', 'xfail'):
            counts['success'] += 1
        elif status == 'skip':
            counts['skip'] += 1
        elif status == 'exists':
            # A listing event, not an outcome.
            return
        else:
            counts['fail'] += 1
            failures.append(test)

    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer,
                                              non_subunit_name='stdout')
    summary = testtools.StreamToDict(on_test)
    result = testtools.CopyStreamResult([summary, result])
    result.startTestRun()
    try:
        stream.run(result)
    finally:
        result.stopTestRun()
    for test in failures[:MAX_FAILURES_SHOWN]:
        print(describe_failure(test))
    print('%d passed, %d failed, %d skipped'
          % (counts['success'], counts['fail'], counts['skip']))
    return 1 if counts['fail'] or not counts['success'] else 0


if __name__ == '__main__':
    sys.exit(main())
