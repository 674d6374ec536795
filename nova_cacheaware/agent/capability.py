"""Run-time capabilities that plug into the agent's pass.

Repinning (study 000) is the agent's fixed first step
(:class:`~nova_cacheaware.cachedomain.agent.RepinStep`); every other
run-time capability (vCPU sizing, ballooning, full-NUMA hand-off) is a
:class:`Capability`: after the repin step the agent hands it the pass's
:class:`~nova_cacheaware.agent.service.Snapshot` and keeps what it returns.
A capability owns its own adapters (guest agent, balloon, metadata) and its
own rate limits; the agent only guarantees:

* a capability's failure is logged and never stops pinning or another
  capability;
* :meth:`Capability.release` runs when the agent stops, so a capability can
  give back what it took (online all vCPUs, restore memory);
* what :meth:`Capability.reconcile` returns (a JSON-able dict) is kept in
  the pass and written into ``--dump-state`` under ``agent.capabilities``;
  :meth:`Capability.host_state` turns it into the capability's typed
  section of the pass's :class:`~.reporting.HostReport` (under its
  ``name``), what the scheduler's live state is made of; a pass that
  raised is kept as a :class:`Failed` instead (``{"error":
  reason}`` in the JSON documents), which no consumer takes for a report.
"""

import abc
import dataclasses
from importlib import metadata

from nova_cacheaware import exception

ENTRY_POINT_GROUP = 'nova_cacheaware.agent.capabilities'


class Capability(abc.ABC):
    """One run-time capability of the agent."""

    #: Key of this capability in reports, dumps and the host-state payload.
    name = 'capability'

    @abc.abstractmethod
    def reconcile(self, snapshot):
        """Observe/decide/act for this capability; return a JSON-able dict."""

    def host_state(self, report):
        """The typed section of ``report`` for the host state (None: none).

        A frozen dataclass; ``notify`` puts on the wire what the contract
        carries of it (the ``vcpu_sizing`` capability's
        :class:`~.reporting.SizingSection`), the others are the agent's
        own (logged where no message bus is configured).
        """
        return None

    def format_report(self, report):
        """Lines for ``--once`` (default: none)."""
        return []

    def release(self):
        """Give back everything this capability changed (agent stopping)."""


@dataclasses.dataclass(frozen=True)
class Failed:
    """What the agent keeps of a capability's pass that raised."""

    reason: str

    def to_dict(self):
        """Its form in ``--dump-state`` and the ``--once`` output."""
        return {'error': self.reason}


def report_of(reports, name):
    """The report of capability ``name`` in ``reports``, or None.

    None where the capability did not run or its pass failed
    (:class:`Failed`).
    """
    report = (reports or {}).get(name)
    return None if isinstance(report, Failed) else report


def as_documents(reports):
    """``reports`` as JSON-able dicts (a :class:`Failed` as its dict)."""
    return {name: (r.to_dict() if isinstance(r, Failed) else r)
            for name, r in (reports or {}).items()}


def available():
    """``{name: entry point}`` of the installed capabilities."""
    return {ep.name: ep for ep in
            metadata.entry_points(group=ENTRY_POINT_GROUP)}


def load(names, conf, hypervisor):
    """Build the named capabilities.

    Each entry point is a factory ``factory(conf, hypervisor) ->
    Capability``; an unknown name raises
    :class:`~nova_cacheaware.exception.InvalidInput`.
    """
    eps = available()
    out = []
    for name in names:
        if name not in eps:
            raise exception.InvalidInput(
                reason='[agent] capabilities: unknown capability %r '
                       '(installed: %s)' % (name, ', '.join(sorted(eps))
                                            or 'none'))
        out.append(eps[name].load()(conf, hypervisor))
    return out
