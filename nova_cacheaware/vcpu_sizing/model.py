"""The ``vcpu_sizing`` capability's values, and their JSON for replays.

Typed values only, no decisions: :mod:`.policy` (sizing) and
:mod:`.spin_storm` (the storm detector) decide over them; :mod:`.agent`
builds them from what :mod:`.view` and :mod:`.spin` read. The only JSON
of the capability's decisions is here: :func:`to_dict` writes the storm
detector's values into the agent's ``--dump-state`` and the
``*_from_dict`` functions read them back for ``nova-cacheaware
spin-storm``.
"""

import dataclasses
import typing as ty

from nova_cacheaware.contracts import schema

#: libvirt's default CFS period (µs) when a quota is given without one.
DEFAULT_PERIOD_US = 100000


@dataclasses.dataclass(frozen=True)
class Target:
    """What ``apply`` wants online next, and whether it is time to act."""

    online: int
    act: bool
    reason: str


#: The storm detector's votes (:func:`.spin_storm.vote`).
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
    """Per-VM hysteresis state, in and out of :func:`.spin_storm.step`."""

    storm: bool = False
    streak: int = 0
    hold: int = 0
    since_end: ty.Optional[int] = None
    storms: int = 0


@dataclasses.dataclass(frozen=True)
class StormDecision:
    """The outcome of :func:`.spin_storm.step` for one period."""

    storm: bool
    changed: bool
    vote: str
    state: StormState
    delay: ty.Optional[float] = None
    pause_exits_per_s: ty.Optional[float] = None


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
