"""Is a VM in a lock-holder-preemption storm? Study 001, out of the kernel.

A preempted vCPU that holds a spinlock (or must answer an IPI) makes the
VM's other vCPUs spin; with Pause-Loop Exiting each spin traps into KVM
(a *pause-loop exit*) and yields. Study 001 fixes the yield inside KVM; an
agent outside the kernel can only see the storm and remove its cause: more
runnable vCPUs than pCPUs the VM really gets (study 004).

The signal, one :class:`StormSignal` per VM and agent period:

* **run delay**: per online vCPU, the share of the period it waited
  runnable for a pCPU (``/proc/<tid>/schedstat`` field 2, libvirt's
  ``vcpu.N.delay``). It is the host's view of the guest's *steal*, which is
  used instead when no run delay is known;
* **pause-loop exits** per second per online vCPU, where the host counts
  the ``kvm:kvm_exit`` tracepoint (None elsewhere: run delay alone).

One vote per period (:func:`vote`), with a dead band between the enter and
leave thresholds of both signals (:class:`StormThresholds`, defaults
calibrated with ``benchmarks/storm_bench.py``):

* **storm**: mean run delay ``>= enter_delay`` and, where counted, mean
  pause exits ``>= enter_pause_exits``: the vCPUs wait for pCPUs *and*
  spin (run delay alone is also plain CPU contention);
* **quiet**: mean run delay ``<= leave_delay``, or pause exits counted and
  ``<= leave_pause_exits``;
* otherwise (or with no signal at all): abstain.

Hysteresis (:func:`step`): a storm starts after ``enter_periods`` storm
votes in a row and ends after ``hold`` quiet votes in a row; abstentions
leave both counts as they are, a vote for the current state resets the
count. ``hold`` starts at ``leave_periods`` and doubles (up to
``max_leave_periods``) each time a storm comes back within ``2 x hold``
periods of the last one's end: offlining vCPUs removes the run delay it
reacts to, so without the back-off a cap that stays would make the VM
flap; with it, the agent probes the full vCPU count ever more rarely.

Everything is pure: dataclasses in and out, no clock, no I/O.
"""

import dataclasses
import typing as ty

from nova_cacheaware.contracts import schema

STORM, QUIET, ABSTAIN = 'storm', 'quiet', 'abstain'


@dataclasses.dataclass(frozen=True)
class StormThresholds:
    """Thresholds and periods of the detector (documented defaults)."""

    enter_delay: float = 0.50
    leave_delay: float = 0.20
    enter_pause_exits: float = 1000.0
    leave_pause_exits: float = 100.0
    enter_periods: int = 2
    leave_periods: int = 3
    max_leave_periods: int = 48

    def __post_init__(self):
        if not 0 <= self.leave_delay < self.enter_delay <= 1:
            raise ValueError('need 0 <= leave_delay < enter_delay <= 1')
        if not 0 <= self.leave_pause_exits < self.enter_pause_exits:
            raise ValueError('need 0 <= leave_pause_exits < '
                             'enter_pause_exits')
        if (self.enter_periods < 1 or self.leave_periods < 1
                or self.max_leave_periods < self.leave_periods):
            raise ValueError('need enter_periods >= 1, leave_periods >= 1 '
                             'and max_leave_periods >= leave_periods')


@dataclasses.dataclass(frozen=True)
class StormSignal:
    """What one period showed of one VM's online vCPUs."""

    run_delay: ty.Tuple[float, ...] = ()
    pause_exits_per_s: ty.Optional[ty.Tuple[float, ...]] = None
    steal: ty.Optional[float] = None

    def __post_init__(self):
        for d in self.run_delay + ((self.steal,) if self.steal is not None
                                   else ()):
            if not 0 <= d <= 1:
                raise ValueError('run delay and steal are shares in 0..1, '
                                 'not %r' % (d,))
        if self.pause_exits_per_s is not None and any(
                r < 0 for r in self.pause_exits_per_s):
            raise ValueError('pause exits per second must be >= 0')


@dataclasses.dataclass(frozen=True)
class StormState:
    """Per-VM hysteresis state, passed in and returned by :func:`step`."""

    storm: bool = False
    streak: int = 0
    hold: int = 0
    since_end: ty.Optional[int] = None
    storms: int = 0


@dataclasses.dataclass(frozen=True)
class StormDecision:
    """The outcome of :func:`step` for one period."""

    storm: bool
    changed: bool
    vote: str
    state: StormState
    delay: ty.Optional[float] = None
    pause_exits_per_s: ty.Optional[float] = None


def _mean(values):
    return sum(values) / len(values) if values else None


def vote(signal, thresholds):
    """``(vote, mean delay, mean pause exits/s)`` of one period."""
    delay = _mean(signal.run_delay)
    if delay is None:
        delay = signal.steal
    pause = (_mean(signal.pause_exits_per_s)
             if signal.pause_exits_per_s else None)
    if delay is None:
        return ABSTAIN, None, pause
    t = thresholds
    if delay >= t.enter_delay and (pause is None
                                   or pause >= t.enter_pause_exits):
        return STORM, delay, pause
    if delay <= t.leave_delay or (pause is not None
                                  and pause <= t.leave_pause_exits):
        return QUIET, delay, pause
    return ABSTAIN, delay, pause


def step(state, signal, thresholds=None):
    """Advance one VM's detector by one period; a :class:`StormDecision`."""
    t = thresholds or StormThresholds()
    got, delay, pause = vote(signal, t)
    new = _advance(state, got, t)
    return StormDecision(storm=new.storm, changed=new.storm != state.storm,
                         vote=got, state=new, delay=delay,
                         pause_exits_per_s=pause)


def _advance(state, got, t):
    since = None if state.since_end is None else state.since_end + 1
    hold = state.hold or t.leave_periods
    if got == ABSTAIN:
        return dataclasses.replace(state, since_end=(
            state.since_end if state.storm else since))
    if state.storm:
        if got == STORM:
            return dataclasses.replace(state, streak=0)
        if state.streak + 1 >= hold:
            return StormState(storm=False, hold=hold, since_end=0,
                              storms=state.storms)
        return dataclasses.replace(state, streak=state.streak + 1)
    if got == QUIET:
        return dataclasses.replace(state, streak=0, since_end=since)
    if state.streak + 1 < t.enter_periods:
        return dataclasses.replace(state, streak=state.streak + 1,
                                   since_end=since)
    if since is not None and since <= 2 * hold:
        hold = min(2 * hold, t.max_leave_periods)      # came back quickly
    else:
        hold = t.leave_periods
    return StormState(storm=True, hold=hold, since_end=None,
                      storms=state.storms + 1)


def online_target(storm, recommended, configured):
    """vCPUs an ``apply`` instance keeps online: fewer only in a storm.

    ``recommended`` is pCPU-Est's count (at least 1); never more than
    ``configured``.
    """
    if configured < 1 or recommended < 1:
        raise ValueError('vCPU counts must be >= 1')
    return min(recommended, configured) if storm else configured


def to_dict(obj):
    """JSON-ready dict of a dataclass of this module (tuples as lists)."""
    doc = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        if dataclasses.is_dataclass(value):
            value = to_dict(value)
        elif isinstance(value, tuple):
            value = list(value)
        doc[field.name] = value
    return doc


_OBJECT = schema.Check(schema.is_object, '%(where)s must be an object')


def _from_dict(cls, doc, what):
    # The schema is the dataclass: its fields, any value (a replay of
    # to_dict; __post_init__ checks what the detector relies on).
    with schema.reraise(ValueError):
        _OBJECT.check(doc, None, what)
        schema.only_keys(doc, [f.name for f in dataclasses.fields(cls)],
                         what, 'unknown %(where)s fields: %(keys)s')
    return cls(**doc)


def state_from_dict(doc):
    """A :class:`StormState` from :func:`to_dict` (replay)."""
    return _from_dict(StormState, doc, 'storm state')


def thresholds_from_dict(doc):
    """:class:`StormThresholds` from :func:`to_dict` (replay)."""
    return _from_dict(StormThresholds, doc, 'storm thresholds')


def signal_from_dict(doc):
    """A :class:`StormSignal` from :func:`to_dict` (replay)."""
    pause = doc.get('pause_exits_per_s')
    return StormSignal(
        run_delay=tuple(float(d) for d in doc.get('run_delay', ())),
        pause_exits_per_s=(None if pause is None
                           else tuple(float(p) for p in pause)),
        steal=doc.get('steal'))
