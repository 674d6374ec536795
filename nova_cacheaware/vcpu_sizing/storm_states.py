"""The agent side of the spin-storm detector (study 001): per-VM states.

:class:`StormWatch` turns what :class:`~.spin.SpinMeter` measured of
one instance in one pass (run delay per vCPU, pause-loop exits per vCPU
where the ``kvm:kvm_exit`` tracepoint is counted) into a
:class:`~nova_cacheaware.vcpu_sizing.model.StormSignal` of its *online*
vCPUs, keeps each instance's hysteresis state between passes and hands
both to :func:`~nova_cacheaware.vcpu_sizing.spin_storm.step`. The
``vcpu_sizing`` capability calls it every pass and acts on the decision
(:mod:`~.vcpu_sizing`); the decision itself is pure and replayable
(``nova-cacheaware spin-storm --input``).
"""

import logging

from nova_cacheaware.vcpu_sizing import model
from nova_cacheaware.vcpu_sizing import spin_storm as policy

LOG = logging.getLogger(__name__)


def signal_of(entry, offlined=frozenset()):
    """The :class:`StormSignal` of a ``vcpu_sizing`` report entry.

    vCPUs in ``offlined`` are left out: they do not run, so they neither
    wait nor spin. Shares a little above 1 (timer skew between two reads)
    are clipped.
    """
    delays = tuple(min(1.0, max(0.0, float(f)))
                   for v, f in sorted(entry.get('run_delay', {}).items())
                   if int(v) not in offlined)
    exits = [rates['pause_exits']
             for v, rates in sorted(entry.get('kvm_exits_per_s', {}).items())
             if int(v) not in offlined and 'pause_exits' in rates]
    return model.StormSignal(run_delay=delays,
                             pause_exits_per_s=tuple(exits) or None)


class StormWatch:
    """Every instance's detector state, one :meth:`observe` per pass."""

    def __init__(self, thresholds=None):
        self.thresholds = thresholds or model.StormThresholds()
        self.states = {}          # uuid -> model.StormState
        self.inputs = {}          # uuid -> the last step's replay input

    def observe(self, uuid, entry, offlined=frozenset()):
        """Step ``uuid``'s detector with this pass's entry; the decision.

        Its input is kept in ``self.inputs[uuid]`` (the replay document of
        ``nova-cacheaware spin-storm``).
        """
        signal = signal_of(entry, offlined)
        before = self.states.get(uuid, model.StormState())
        decision = policy.step(before, signal, self.thresholds)
        self.states[uuid] = decision.state
        self.inputs[uuid] = {'state': model.to_dict(before),
                             'signals': [model.to_dict(signal)]}
        if decision.changed:
            LOG.warning('vcpu_sizing: %s: spin storm %s (run delay %s, '
                        'pause exits/s %s)', uuid,
                        'started' if decision.storm else 'ended',
                        _fmt(decision.delay),
                        _fmt(decision.pause_exits_per_s))
        return decision

    def forget(self, keep):
        """Drop the states of instances not in ``keep``."""
        for uuid in set(self.states) - set(keep):
            del self.states[uuid]
            self.inputs.pop(uuid, None)

    def replay_doc(self):
        """``{"thresholds", "vms": {uuid: {"state", "signals"}}}``."""
        return {'thresholds': model.to_dict(self.thresholds),
                'vms': dict(sorted(self.inputs.items()))}


def report(decision):
    """The JSON-able ``storm`` entry of one instance (report, host state)."""
    return {'storm': decision.storm, 'vote': decision.vote,
            'run_delay': _round(decision.delay),
            'pause_exits_per_s': _round(decision.pause_exits_per_s),
            'storms': decision.state.storms,
            'hold_periods': decision.state.hold or None}


def _round(value):
    return None if value is None else round(value, 4)


def _fmt(value):
    return '-' if value is None else '%.3g' % value
