"""Typed, operator-actionable errors.

Every error carries a message that says what to look at; the CLI prints it as
one line and exits 2, services log it. No ``None`` means "failed" anywhere.
"""


class CacheAwareError(Exception):
    """Base class: ``msg_fmt`` is formatted with the keyword arguments."""

    msg_fmt = 'An unknown error occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            message = self.msg_fmt % kwargs
        super().__init__(message)


class InvalidInput(CacheAwareError):
    """Input (a file, a JSON document, an option) is not acceptable."""

    msg_fmt = 'invalid input: %(reason)s'


class TopologyError(CacheAwareError):
    """Host topology could not be read or makes no sense."""

    msg_fmt = '%(source)s: %(reason)s'


class UnknownCacheLevel(CacheAwareError):
    """A cache level was requested that this host does not have."""

    msg_fmt = ('no level-%(level)s cache on this host '
               '(levels present: %(present)s)')
