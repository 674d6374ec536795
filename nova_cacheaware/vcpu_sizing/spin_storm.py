"""Is a VM in a lock-holder-preemption storm? Study 001, out of the kernel.

A preempted vCPU that holds a spinlock (or must answer an IPI) makes the
VM's other vCPUs spin; with Pause-Loop Exiting each spin traps into KVM
(a *pause-loop exit*) and yields. Study 001 fixes the yield inside KVM; an
agent outside the kernel can only see the storm and remove its cause: more
runnable vCPUs than pCPUs the VM really gets (study 004).

The signal, one :class:`~.model.StormSignal` per VM and agent period:

* **run delay**: per online vCPU, the share of the period it waited
  runnable for a pCPU (``/proc/<tid>/schedstat`` field 2, libvirt's
  ``vcpu.N.delay``). It is the host's view of the guest's *steal*, which is
  used instead when no run delay is known;
* **pause-loop exits** per second per online vCPU, where the host counts
  the ``kvm:kvm_exit`` tracepoint (None elsewhere: run delay alone).

One vote per period (:func:`vote`), with a dead band between the enter and
leave thresholds of both signals (:class:`~.model.StormThresholds`,
defaults calibrated with ``benchmarks/storm_bench.py``):

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

Everything is pure: the values of :mod:`.model` in and out, no clock, no
I/O, no JSON (:func:`.model.to_dict` and the ``*_from_dict`` functions
are the replay's edge).
"""

import dataclasses

from nova_cacheaware.vcpu_sizing import model


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
        return model.ABSTAIN, None, pause
    t = thresholds
    if delay >= t.enter_delay and (pause is None
                                   or pause >= t.enter_pause_exits):
        return model.STORM, delay, pause
    if delay <= t.leave_delay or (pause is not None
                                  and pause <= t.leave_pause_exits):
        return model.QUIET, delay, pause
    return model.ABSTAIN, delay, pause


def step(state, signal, thresholds=None):
    """Advance one VM's detector by one period; a ``StormDecision``."""
    t = thresholds or model.StormThresholds()
    got, delay, pause = vote(signal, t)
    new = _advance(state, got, t)
    return model.StormDecision(
        storm=new.storm, changed=new.storm != state.storm, vote=got,
        state=new, delay=delay, pause_exits_per_s=pause)


def _advance(state, got, t):
    since = None if state.since_end is None else state.since_end + 1
    hold = state.hold or t.leave_periods
    if got == model.ABSTAIN:
        return dataclasses.replace(state, since_end=(
            state.since_end if state.storm else since))
    if state.storm:
        if got == model.STORM:
            return dataclasses.replace(state, streak=0)
        if state.streak + 1 >= hold:
            return model.StormState(storm=False, hold=hold, since_end=0,
                                    storms=state.storms)
        return dataclasses.replace(state, streak=state.streak + 1)
    if got == model.QUIET:
        return dataclasses.replace(state, streak=0, since_end=since)
    if state.streak + 1 < t.enter_periods:
        return dataclasses.replace(state, streak=state.streak + 1,
                                   since_end=since)
    if since is not None and since <= 2 * hold:
        hold = min(2 * hold, t.max_leave_periods)      # came back quickly
    else:
        hold = t.leave_periods
    return model.StormState(storm=True, hold=hold, since_end=None,
                            storms=state.storms + 1)


def online_target(storm, recommended, configured):
    """vCPUs an ``apply`` instance keeps online: fewer only in a storm.

    ``recommended`` is pCPU-Est's count (at least 1); never more than
    ``configured``.
    """
    if configured < 1 or recommended < 1:
        raise ValueError('vCPU counts must be >= 1')
    return min(recommended, configured) if storm else configured
