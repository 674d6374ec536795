"""One WARNING when a dependency becomes unreachable, one INFO when it is back.

The agent retries Placement, libvirtd and RabbitMQ every pass; logging each
failure would flood the journal during an outage. :class:`Outages` logs the
first failure of a dependency and its recovery (``... recovered after N s``)
and nothing in between. The clock is injected for tests.
"""

import logging
import time

LOG = logging.getLogger(__name__)


class Outages:
    """Which dependencies are down, since when; logs the transitions."""

    def __init__(self, clock=time.monotonic, log=LOG):
        self._clock = clock
        self._log = log
        self._since = {}

    def failed(self, what, error, consequence='retrying every pass'):
        """Record a failure of ``what``; True (and a WARNING) if it is new."""
        if what in self._since:
            return False
        self._since[what] = self._clock()
        self._log.warning('%s is unreachable (%s); %s', what, error,
                          consequence)
        return True

    def ok(self, what):
        """Record a success; the outage's length in s if one just ended."""
        since = self._since.pop(what, None)
        if since is None:
            return None
        seconds = self._clock() - since
        self._log.info('%s recovered after %.0f s', what, seconds)
        return seconds

    def down(self):
        """Names of the dependencies down now."""
        return set(self._since)
