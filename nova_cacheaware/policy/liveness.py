"""When a host's live state may be trusted for All-share and Clean requests.

A pure function of ages in seconds (no clock, no I/O). The scheduler's
host-state cache measures the ages; ``CacheDomainFilter`` asks
:func:`ineligible_reason` before it looks at any candidate.

The rule (doc/source/admin/failure-modes.rst), in order:

1. **Fresh state** (received at most ``ttl`` seconds ago): the host is
   eligible exactly when its agent reports itself healthy.
2. ``trust_placement`` (``[cacheaware_scheduler] stale_host_state =
   trust_placement``): missing or stale state is left to Placement, whose
   ``CUSTOM_CACHEAWARE_AGENT`` trait the agent removes on a clean stop.
3. **The bus is silent**: no state from *any* host for more than
   ``ttl / 2`` seconds (or none ever). That is a RabbitMQ outage, a
   listener that cannot start, or agents that do not publish; blaming every
   host at once would stop all cache-aware scheduling, so Placement decides.
4. **Warm-up**: the bus has been heard again (scheduler start, end of an
   outage) for at most ``ttl / 2`` seconds: live agents have not all had
   their turn to publish yet, so Placement decides.
5. Otherwise other hosts' agents are heard and this one is not: its agent
   is dead, hung or cut off. The host is not eligible.

Why ``ttl / 2``: with agents publishing every ``P`` seconds and
``ttl >= 2 P``, a host stale because of a bus outage is always seen with the
bus quiet for at least ``ttl - P >= ttl / 2`` (rule 3, not blamed), and a
single dead agent among live ones is seen with the bus quiet for at most
``P <= ttl / 2`` (rule 5, refused). A dead agent is therefore refused at
most ``ttl`` seconds after its last state, plus the bus's delivery time.
"""

import dataclasses
import typing as ty

#: ``stale_host_state`` values.
REFUSE = 'refuse'
TRUST_PLACEMENT = 'trust_placement'
CHOICES = (REFUSE, TRUST_PLACEMENT)


@dataclasses.dataclass(frozen=True)
class LiveView:
    """What the scheduler knows about one host's agent, as ages.

    :param ttl: seconds a received state stays fresh (> 0).
    :param age: seconds since this host's newest state was received, None
        if none was ever received by this process.
    :param healthy: the health the newest state reported (ignored when
        ``age`` is None).
    :param quiet_for: seconds since any host's state was received, None if
        none ever was.
    :param heard_for: seconds since the bus was heard again: since the
        first state received after a silence of more than ``ttl / 2``
        (or the first state ever).
    """

    ttl: float
    age: ty.Optional[float]
    healthy: bool
    quiet_for: ty.Optional[float]
    heard_for: float


def ineligible_reason(view, stale_policy=REFUSE):
    """Why the host must not get an All-share/Clean request, or None.

    ``stale_policy`` is one of :data:`CHOICES`. ``ValueError`` on any other
    value or a ``ttl`` that is not positive.
    """
    if stale_policy not in CHOICES:
        raise ValueError('stale_policy must be one of %s, not %r'
                         % (', '.join(CHOICES), stale_policy))
    if not view.ttl > 0:
        raise ValueError('ttl must be > 0, not %r' % (view.ttl,))
    if view.age is not None and view.age <= view.ttl:
        if view.healthy:
            return None
        return 'the nova-cacheaware agent reports itself unhealthy'
    if stale_policy == TRUST_PLACEMENT:
        return None
    half = view.ttl / 2.0
    if view.quiet_for is None or view.quiet_for > half:
        return None
    if view.heard_for <= half:
        return None
    if view.age is None:
        return ('no live state from its nova-cacheaware agent since this '
                'scheduler started listening %.0f s ago, while other '
                'agents report (dead, hung or not publishing)'
                % view.heard_for)
    return ('the live state of its nova-cacheaware agent is %.0f s old '
            '(host_state_ttl %.0f s) while other agents report (dead, '
            'hung or cut off)' % (view.age, view.ttl))
