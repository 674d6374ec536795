"""When the agent sends its full state, a heartbeat, or nothing.

Pure (no clock, no I/O): the agent's publisher
(:class:`~nova_cacheaware.agent.notify.NotificationStatePublisher`) keeps
a :class:`Sent` and asks :func:`next_message` at every pass.

The rule (payload 2.0, ``doc/source/admin/live-state.rst``):

1. The state's content differs from the last one delivered: send it,
   under the next ``generation``.
2. No full state delivered for ``resync_s`` seconds (or none ever): send
   it again, same generation - the schedulers that missed a message or
   started since get it.
3. Nothing delivered for ``heartbeat_s`` seconds: a heartbeat naming the
   generation of the newest state.
4. Otherwise nothing.

Generations only ever grow, so a scheduler that hears a heartbeat naming
a generation newer than the state it holds knows that it missed one.
"""

import dataclasses
import typing as ty

STATE = 'state'
HEARTBEAT = 'heartbeat'


@dataclasses.dataclass(frozen=True)
class Cadence:
    """``[agent] state_heartbeat_s`` and ``state_resync_s``."""

    heartbeat_s: float
    resync_s: float


@dataclasses.dataclass(frozen=True)
class Sent:
    """What the schedulers were last sent.

    ``generation``: the highest number ever put in a message (delivered
    or not: a number is never reused for other content); ``content``: the
    last delivered state's content (anything comparable; None: none
    delivered); ``state_at`` and ``any_at``: when the last full state and
    the last message of either kind were delivered (the caller's clock;
    None: never).
    """

    generation: int
    content: ty.Any = None
    state_at: ty.Optional[float] = None
    any_at: ty.Optional[float] = None


def next_message(sent, content, now, cadence):
    """``(kind or None, generation)`` to send at ``now``.

    ``kind`` is :data:`STATE` or :data:`HEARTBEAT`; the generation is the
    one to put in it (a changed state gets the next one).
    """
    if content != sent.content:
        return STATE, sent.generation + 1
    if sent.state_at is None or now - sent.state_at >= cadence.resync_s:
        return STATE, sent.generation
    if sent.any_at is None or now - sent.any_at >= cadence.heartbeat_s:
        return HEARTBEAT, sent.generation
    return None, sent.generation


def attempted(sent, kind, generation, content, now, ok):
    """The :class:`Sent` after sending ``kind`` at ``now``.

    ``ok``: it was delivered. A failed state still uses up its
    generation, and the next pass sends a state under a new one whatever
    its content (the schedulers may hold either).
    """
    generation = max(sent.generation, generation)
    if not ok:
        if kind == STATE:
            return dataclasses.replace(sent, generation=generation,
                                       content=None)
        return dataclasses.replace(sent, generation=generation)
    if kind == STATE:
        return Sent(generation=generation, content=content, state_at=now,
                    any_at=now)
    return dataclasses.replace(sent, generation=generation, any_at=now)
