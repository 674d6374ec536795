"""ISO 8601 UTC timestamps of the live-state payloads (every major).

Pure module.
"""

import datetime

from nova_cacheaware import exception


def format_time(moment):
    """``moment`` as ISO 8601 UTC with microseconds and a ``Z``."""
    # isoformat, not strftime('%Y'): glibc writes year 999 as "999", which
    # is no ISO 8601 and fromisoformat refuses.
    return moment.astimezone(datetime.timezone.utc).replace(
        tzinfo=None).isoformat(timespec='microseconds') + 'Z'


def parse_time(text):
    """The aware UTC datetime of ``text``, or InvalidInput."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        raise exception.InvalidInput(
            reason='timestamp %r is not ISO 8601' % text) from None
    if moment.tzinfo is None:
        raise exception.InvalidInput(
            reason='timestamp %r has no time zone' % text)
    try:
        return moment.astimezone(datetime.timezone.utc)
    except OverflowError:
        # 0001-01-01T00:00+01:00 is before the first UTC moment (the old
        # walker crashed on it).
        raise exception.InvalidInput(
            reason='timestamp %r is out of range' % text) from None
