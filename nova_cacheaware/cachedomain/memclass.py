"""Is a VM memory-bound? The classifier of study 000, with hysteresis.

A declared ``cacheaware:workload`` (``memory``, ``cpu``, ``io``) always wins.
For ``auto`` each observation window gives one *vote*:

1. **CPI test** (study 000, section 4.2.1): CPI samples taken while the VM
   was All-share and while it was Partial-share. A memory-bound VM's CPI is
   bimodal (about 0.5 All-share vs 3.2 Partial-share on the Q6600); a CPU- or
   I/O-bound VM's barely moves (< 5 %). With at least ``min_samples`` per
   side, a Mann–Whitney U test of Partial against All votes *memory* when
   ``p < alpha_enter`` and the median CPI rose by at least ``min_effect``
   (significance alone is not enough with many samples: a 2 % shift becomes
   "significant"); it votes *other* when ``p > alpha_leave`` or the rise is
   under half of ``min_effect``; in between it abstains.
2. **LLC misses per kilo-instruction** (MPKI), used when the CPI test
   abstains or has too few samples: ``>= mpki_enter`` votes memory,
   ``<= mpki_leave`` votes other, in between abstains. Cheap, needs no
   Partial-share phase, but is only a proxy for cache sensitivity.

Hysteresis: the class changes only after ``dwell`` consecutive votes for the
new class; a vote for the current class resets the count and an abstention
leaves it as it is. Together with the enter/leave gaps of both rules this
keeps a VM from flipping on noise.

Everything is pure: dataclasses in and out, JSON round-trip via
``to_dict``/``from_dict``.
"""

import dataclasses
import typing as ty

from nova_cacheaware.cachedomain import stats

MEMORY, OTHER, UNDECIDED = 'memory', 'other', 'undecided'
ABSTAIN = 'abstain'
DECLARED_WORKLOADS = ('memory', 'cpu', 'io')
AUTO = 'auto'


@dataclasses.dataclass(frozen=True)
class ClassifierConfig:
    """Thresholds of the classifier (defaults from study 000's numbers)."""

    alpha_enter: float = 0.01
    alpha_leave: float = 0.2
    min_effect: float = 0.25
    min_samples: int = 8
    mpki_enter: float = 10.0
    mpki_leave: float = 3.0
    dwell: int = 3

    def __post_init__(self):
        if not 0 < self.alpha_enter < self.alpha_leave < 1:
            raise ValueError('need 0 < alpha_enter < alpha_leave < 1')
        if not 0 <= self.mpki_leave < self.mpki_enter:
            raise ValueError('need 0 <= mpki_leave < mpki_enter')
        if self.min_samples < 2 or self.dwell < 1 or self.min_effect <= 0:
            raise ValueError('min_samples >= 2, dwell >= 1, min_effect > 0')


@dataclasses.dataclass(frozen=True)
class Window:
    """What one observation window saw of a VM.

    ``all_share_cpi`` / ``partial_share_cpi``: CPI samples taken while the
    VM's vCPUs were in one cache domain / split across domains.
    ``llc_misses`` / ``instructions``: counter deltas over the window (None
    when no hardware counters are available).
    """

    all_share_cpi: ty.Tuple[float, ...] = ()
    partial_share_cpi: ty.Tuple[float, ...] = ()
    llc_misses: ty.Optional[int] = None
    instructions: ty.Optional[int] = None


@dataclasses.dataclass(frozen=True)
class ClassifierState:
    """Per-VM hysteresis state: the class and the streak towards another."""

    vm_class: str = UNDECIDED
    candidate: ty.Optional[str] = None
    streak: int = 0


@dataclasses.dataclass(frozen=True)
class Decision:
    """The outcome of :func:`classify` for one window."""

    workload: str
    source: str
    vote: str
    state: ClassifierState
    p_value: ty.Optional[float] = None
    effect: ty.Optional[float] = None
    mpki: ty.Optional[float] = None


def cpi_vote(window, config):
    """Vote of the CPI test: ``(vote, p_value, effect)``.

    Abstains (p and effect None) with fewer than ``min_samples`` per side.
    """
    all_s, partial = window.all_share_cpi, window.partial_share_cpi
    if min(len(all_s), len(partial)) < config.min_samples:
        return ABSTAIN, None, None
    test = stats.mann_whitney_u(partial, all_s)
    base = stats.median(all_s)
    effect = stats.median(partial) / base - 1.0 if base > 0 else 0.0
    if test.p_value < config.alpha_enter and effect >= config.min_effect:
        return MEMORY, test.p_value, effect
    if test.p_value > config.alpha_leave or effect < config.min_effect / 2:
        return OTHER, test.p_value, effect
    return ABSTAIN, test.p_value, effect


def mpki_vote(window, config):
    """Vote of the LLC-misses rule: ``(vote, mpki)``."""
    if window.llc_misses is None or not window.instructions:
        return ABSTAIN, None
    mpki = window.llc_misses * 1000.0 / window.instructions
    if mpki >= config.mpki_enter:
        return MEMORY, mpki
    if mpki <= config.mpki_leave:
        return OTHER, mpki
    return ABSTAIN, mpki


def step(state, vote, config):
    """Advance the hysteresis state machine by one vote."""
    if vote == ABSTAIN:
        return state
    if vote == state.vm_class:
        return ClassifierState(vm_class=state.vm_class)
    streak = state.streak + 1 if vote == state.candidate else 1
    if streak >= config.dwell:
        return ClassifierState(vm_class=vote)
    return ClassifierState(vm_class=state.vm_class, candidate=vote,
                           streak=streak)


def classify(declared, state, window, config=None):
    """Classify one VM for one window.

    ``declared`` is the flavor's ``cacheaware:workload`` (``auto`` when
    unset). Returns a :class:`Decision` whose ``workload`` is what the
    planner uses: the declared class, or for ``auto`` ``memory`` once the
    VM is classified memory-bound and ``unknown`` otherwise.
    """
    config = config or ClassifierConfig()
    if declared in DECLARED_WORKLOADS:
        return Decision(workload=declared, source='declared', vote=ABSTAIN,
                        state=state)
    if declared != AUTO:
        raise ValueError('workload must be memory, cpu, io or auto, not %r'
                         % (declared,))
    vote, p_value, effect = cpi_vote(window, config)
    source = 'cpi-test'
    mpki = None
    if vote == ABSTAIN:
        vote, mpki = mpki_vote(window, config)
        source = 'mpki' if vote != ABSTAIN else 'none'
    new_state = step(state, vote, config)
    return Decision(
        workload='memory' if new_state.vm_class == MEMORY else 'unknown',
        source=source, vote=vote, state=new_state, p_value=p_value,
        effect=effect, mpki=mpki)


# --------------------------------------------------------------------------
# JSON

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


def from_dict(cls, doc):
    """Rebuild a dataclass ``cls`` of this module from :func:`to_dict`."""
    kwargs = {}
    for field in dataclasses.fields(cls):
        if field.name not in doc:
            continue
        value = doc[field.name]
        if field.name == 'state':
            value = from_dict(ClassifierState, value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[field.name] = value
    return cls(**kwargs)
