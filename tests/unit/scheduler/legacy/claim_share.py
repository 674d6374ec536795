"""The claim payload's walker before the declared schema."""
# flake8: noqa

import math

from nova_cacheaware import exception
from nova_cacheaware.scheduler import claims

MAJOR = 1


def from_payload(payload, now):
    """``(origin, host, Claim)`` of a payload; the claim made at ``now``.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` naming the
    first problem (wrong major version, missing or mistyped field).
    """
    if not isinstance(payload, dict):
        raise exception.InvalidInput(reason='payload must be an object')
    version = payload.get('version')
    if not isinstance(version, str) or version.split('.')[0] != str(MAJOR):
        raise exception.InvalidInput(
            reason='claim payload version %r not supported (major %d '
                   'expected)' % (version, MAJOR))
    for key in ('origin', 'host', 'domain'):
        if not isinstance(payload.get(key), str) or not payload[key]:
            raise exception.InvalidInput(
                reason='%s must be a non-empty string' % key)
    instance = payload.get('instance')
    if instance is not None and not isinstance(instance, str):
        raise exception.InvalidInput(reason='instance must be a string')
    vcpus = payload.get('vcpus')
    if (not isinstance(vcpus, int) or isinstance(vcpus, bool)
            or not 0 < vcpus <= 1 << 16):
        raise exception.InvalidInput(reason='vcpus must be an int >= 1')
    memory = payload.get('memory_bound')
    if not isinstance(memory, bool):
        raise exception.InvalidInput(reason='memory_bound must be a bool')
    if not isinstance(now, float) or not math.isfinite(now):
        raise exception.InvalidInput(reason='now must be a finite float')
    return payload['origin'], payload['host'], claims.Claim(
        provider=payload['domain'], instance=instance, vcpus=vcpus,
        memory_bound=memory, at=now)
