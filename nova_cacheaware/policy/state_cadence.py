"""When the agent sends its full state, a heartbeat, or nothing.

Pure (no clock, no I/O): the agent's publisher
(:class:`~nova_cacheaware.agent.notify.NotificationStatePublisher`) keeps
a :class:`Sent` and asks :func:`next_message` at every pass.

The rule (payload 2.0, ``doc/source/admin/live-state.rst``):

1. The state's content differs from the last one delivered: send it,
   under the next ``generation``.
2. No full state delivered for the resync interval (or none ever): send
   it again, same generation - the schedulers that missed a message or
   started since get it. The interval is drawn anew after each state from
   ``[resync_s * (1 - jitter), resync_s]`` (:func:`resync_after`): agents
   that restarted together (a region-wide upgrade) would otherwise resend
   their states together every ``resync_s``, a storm that echoes for ever;
   the upper bound stays ``resync_s``, which is what the schedulers are
   promised.
3. A scheduler asked for the state (it started, or missed an update)
   and the time drawn for the answer has come: send it, same generation
   (:func:`requested`).
4. Nothing delivered for ``heartbeat_s`` seconds: a heartbeat naming the
   generation of the newest state.
5. Otherwise nothing.

Generations only ever grow, so a scheduler that hears a heartbeat naming
a generation newer than the state it holds knows that it missed one.
"""

import dataclasses
import typing as ty

STATE = 'state'
HEARTBEAT = 'heartbeat'


@dataclasses.dataclass(frozen=True)
class Cadence:
    """``[agent] state_heartbeat_s``, ``state_resync_s`` and its jitter."""

    heartbeat_s: float
    resync_s: float
    #: The fraction of ``resync_s`` a resync may come early by.
    jitter: float = 0.25


@dataclasses.dataclass(frozen=True)
class Sent:
    """What the schedulers were last sent.

    ``generation``: the highest number ever put in a message (delivered
    or not: a number is never reused for other content); ``content``: the
    last delivered state's content (anything comparable; None: none
    delivered); ``state_at`` and ``any_at``: when the last full state and
    the last message of either kind were delivered (the caller's clock;
    None: never); ``resync_in``: seconds after ``state_at`` that the next
    resync is due (None: ``resync_s``).
    """

    generation: int
    content: ty.Any = None
    state_at: ty.Optional[float] = None
    any_at: ty.Optional[float] = None
    resync_in: ty.Optional[float] = None


def resync_after(cadence, draw):
    """The resync interval for a uniform ``draw`` in ``[0, 1)``."""
    return cadence.resync_s * (1.0 - cadence.jitter * draw)


def requested(due, at):
    """When the state asked for is due, once asked again for ``at``.

    ``due``: the time an earlier request is due (None: none pending).
    Requests coalesce: the earliest wins, so a region's schedulers
    restarting one after the other get one state per host, not one each.
    """
    return at if due is None else min(due, at)


def answered(due, sent_at):
    """The request still pending after a full state went out at ``sent_at``.

    None when that state answered it (it was due by then).
    """
    return None if due is None or due <= sent_at else due


def next_message(sent, content, now, cadence, requested_at=None):
    """``(kind or None, generation)`` to send at ``now``.

    ``kind`` is :data:`STATE` or :data:`HEARTBEAT`; the generation is the
    one to put in it (a changed state gets the next one).
    ``requested_at``: when a state a scheduler asked for is due (None:
    none asked).
    """
    if content != sent.content:
        return STATE, sent.generation + 1
    resync = cadence.resync_s if sent.resync_in is None else sent.resync_in
    if sent.state_at is None or now - sent.state_at >= resync:
        return STATE, sent.generation
    if requested_at is not None and now >= requested_at:
        return STATE, sent.generation
    if sent.any_at is None or now - sent.any_at >= cadence.heartbeat_s:
        return HEARTBEAT, sent.generation
    return None, sent.generation


def attempted(sent, kind, generation, content, now, ok, resync_in=None):
    """The :class:`Sent` after sending ``kind`` at ``now``.

    ``ok``: it was delivered. A failed state still uses up its
    generation, and the next pass sends a state under a new one whatever
    its content (the schedulers may hold either). ``resync_in``: the
    interval until the next resync if this was a state
    (:func:`resync_after`; None: ``resync_s``).
    """
    generation = max(sent.generation, generation)
    if not ok:
        if kind == STATE:
            return dataclasses.replace(sent, generation=generation,
                                       content=None)
        return dataclasses.replace(sent, generation=generation)
    if kind == STATE:
        return Sent(generation=generation, content=content, state_at=now,
                    any_at=now, resync_in=resync_in)
    return dataclasses.replace(sent, generation=generation, any_at=now)
