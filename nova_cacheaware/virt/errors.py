"""Typed failures of the hypervisor port."""

from nova_cacheaware import exception


class DomainGone(exception.CacheAwareError):
    """The domain disappeared (destroyed, undefined) while we used it."""

    msg_fmt = 'domain %(uuid)s is gone: %(reason)s'


class HypervisorUnavailable(exception.CacheAwareError):
    """The hypervisor cannot be reached now; the agent retries later."""

    msg_fmt = '%(uri)s is unavailable: %(reason)s'


class GuestAgentError(exception.CacheAwareError):
    """The guest agent answered with an error or nonsense."""

    msg_fmt = 'guest agent of %(uuid)s: %(reason)s'


class GuestAgentUnavailable(GuestAgentError):
    """No guest agent, or it did not answer in time."""

    msg_fmt = 'guest agent of %(uuid)s is not answering: %(reason)s'
