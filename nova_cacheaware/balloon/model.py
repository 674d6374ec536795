"""The ``balloon`` capability's values: a round's input, output, report.

Typed values only, no decisions: :mod:`.policy` decides over them,
:mod:`.agent` builds the input from what :mod:`.view` and the guest
reports (:mod:`.guest_report`) say. Nothing here is JSON; the agent's
host report serialises :class:`HeldMemory` at its edge.
"""

import dataclasses
import typing as ty

#: The policies a round can run (``[balloon] policy``).
POLICIES = ('default', 'study_a', 'study_b')

#: Why a VM did not take part in the policy this round.
OK = 'ok'
SILENT = 'silent'
INVALID = 'invalid'
PENDING = 'pending'
STATUSES = (OK, SILENT, INVALID, PENDING)


@dataclasses.dataclass(frozen=True)
class RoundParams:
    """The balancer's knobs (from ``[balloon]``)."""

    policy: str = 'default'
    pool_mib: int = 0
    margin_mib: int = 64
    max_step_mib: int = 256
    threshold: float = 0.99
    alpha: float = 0.1
    beta: float = 0.1
    interval_s: float = 10.0
    #: Study 002's gamma (0: every VM reports every round).
    report_interval_s: float = 0.0
    min_report_s: float = 5.0
    max_report_s: float = 60.0


@dataclasses.dataclass(frozen=True)
class VmInput:
    """One opted-in VM at the start of a round."""

    id: str
    memory_mib: int
    flavor_mib: int
    floor_mib: int
    #: Host balloon stats ``available - usable`` in MiB; None: unknown.
    used_mib: ty.Optional[float]
    #: The accepted report (:class:`~.guest_report.GuestStats`) or None.
    stats: object = None
    status: str = OK
    #: The policy's state from the previous round (JSON-able dict).
    state: ty.Mapping = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class VmOutcome:
    """What the round decided for one VM."""

    memory_mib: int
    target_mib: int
    low_mib: int
    state: dict
    #: Seconds until this VM's next report is used (None: next round).
    next_report_s: ty.Optional[float] = None


@dataclasses.dataclass(frozen=True)
class RoundResult:
    """Per-VM outcomes, the memory held back after the round, MiB moved."""

    vms: dict
    held_mib: int
    moved_mib: int


@dataclasses.dataclass(frozen=True)
class HeldMemory:
    """Ballooning's section of the agent's host report."""

    #: MiB held back from the opted-in instances.
    held_mib: int
    #: Instances it manages.
    instances: int
