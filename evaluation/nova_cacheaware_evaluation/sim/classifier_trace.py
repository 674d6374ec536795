"""The ``auto`` classifier on noisy CPI traces: its errors and its delay.

The agent's :class:`~nova_cacheaware.cachedomain.sampling.ShareSampler`
decides whether an ``auto`` VM is memory-bound by sampling its CPI in both
sharing modes and calling
:func:`nova_cacheaware.cachedomain.memclass.classify` (the real, pure
classifier; nothing is re-implemented here). This module drives
that classifier with generated CPI samples and the sampler's schedule, so
that the cache simulator pays what the classifier really costs:

* **schedule** (the agent's defaults, ``[agent] period_s`` 10 s,
  ``sampling_passes`` 5, ``sampling_interval_s`` 600 s): a VM spends its
  time in its *usual* mode (floating, i.e. Partial share, until it is
  classified memory-bound; then pinned, All share) and every
  ``interval + passes x period`` seconds one *trial* of ``passes`` passes
  in the other mode. Each pass gives one CPI sample per vCPU in the mode
  the VM is in; once both modes hold ``min_samples`` a vote is taken and
  the samples start again (at most 256 per mode are kept, as the agent
  does);
* **samples**: a VM's CPI in a mode is its median CPI times
  ``exp(N(0, sigma))`` (log-normal noise). The medians come from the
  contention model: memory-bound ``cpi_mem`` All share and ``cpi_mem x
  split_mem`` Partial share; CPU- and I/O-bound ``cpi_cpu`` and
  ``cpi_cpu x (1 + split_cpu)``. ``sigma`` is calibrated from the spread of
  real measurements (:func:`.calibration.noise_sigma`).

Simplification, stated: the host runs one trial at a time; here every VM
gets its trials on schedule (no waiting for another VM's trial), so the
delays below are lower bounds on a busy host.
"""

import dataclasses
import math

from nova_cacheaware.cachedomain import memclass

MEMORY = memclass.MEMORY
#: Samples the agent keeps per VM and mode (cachedomain.trials.MAX_SAMPLES).
MAX_SAMPLES = 256


@dataclasses.dataclass(frozen=True)
class Schedule:
    """The sampler's schedule (the agent's option defaults)."""

    period_s: float = 10.0
    passes: int = 5
    interval_s: float = 600.0

    def __post_init__(self):
        if self.period_s <= 0 or self.passes < 1 or self.interval_s < 0:
            raise ValueError('period_s > 0, passes >= 1, interval_s >= 0')

    @property
    def cycle_s(self):
        """Seconds from the start of one trial to the start of the next."""
        return self.interval_s + self.passes * self.period_s

    @property
    def trial_fraction(self):
        """Fraction of a sampled VM's time spent in the other mode."""
        return self.passes * self.period_s / self.cycle_s


def medians(workload, model):
    """``(All-share CPI, Partial-share CPI)`` of a true workload class."""
    if workload == 'memory':
        return model.cpi_mem, model.cpi_mem * model.split_mem
    return model.cpi_cpu, model.cpi_cpu * (1 + model.split_cpu)


def _draw(rng, median, sigma, n):
    return [median * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


def trajectory(workload, vcpus, horizon_s, model, sigma, rng,
               schedule=None, config=None):
    """When the classifier changes its mind about one VM.

    Returns ``[(seconds since boot, class), ...]``, one entry per change
    of :attr:`ClassifierState.vm_class` (``memory`` or ``other``) up to
    ``horizon_s``; empty when the VM is never classified.
    """
    schedule = schedule or Schedule()
    config = config or memclass.ClassifierConfig()
    if vcpus < 1 or sigma < 0 or horizon_s < 0:
        raise ValueError('vcpus >= 1, sigma >= 0, horizon_s >= 0')
    all_med, partial_med = medians(workload, model)
    state = memclass.ClassifierState()
    kept = {'all': 0, 'partial': 0}
    changes = []
    between = int(schedule.interval_s // schedule.period_s)
    t = 0.0
    while True:
        usual = 'all' if state.vm_class == MEMORY else 'partial'
        other = 'partial' if usual == 'all' else 'all'
        # The trial first (a new VM is tried at once), pass by pass.
        for _ in range(schedule.passes):
            t += schedule.period_s
            if t > horizon_s:
                return changes
            kept[other] = min(MAX_SAMPLES, kept[other] + vcpus)
            state = _maybe_vote(state, kept, rng, all_med, partial_med,
                                sigma, config, changes, t)
        # Then the interval in the usual mode (votes between passes are
        # impossible: the other mode gets no sample here).
        t += between * schedule.period_s
        if t > horizon_s:
            return changes
        kept[usual] = min(MAX_SAMPLES, kept[usual] + between * vcpus)
        state = _maybe_vote(state, kept, rng, all_med, partial_med, sigma,
                            config, changes, t)


def _maybe_vote(state, kept, rng, all_med, partial_med, sigma, config,
                changes, t):
    if min(kept.values()) < config.min_samples:
        return state
    window = memclass.Window(
        all_share_cpi=tuple(_draw(rng, all_med, sigma, kept['all'])),
        partial_share_cpi=tuple(_draw(rng, partial_med, sigma,
                                      kept['partial'])))
    kept['all'] = kept['partial'] = 0
    new = memclass.classify(memclass.AUTO, state, window, config).state
    if new.vm_class != state.vm_class:
        changes.append((t, new.vm_class))
    return new


def class_at(changes, seconds):
    """The class a trajectory gives at ``seconds`` since boot."""
    current = memclass.UNDECIDED
    for t, vm_class in changes:
        if t > seconds:
            break
        current = vm_class
    return current


def confusion(model, sigma, checkpoints_s, vms=200, vcpus=2, seed=0,
              schedule=None, config=None):
    """The classifier's confusion at each checkpoint, per true class.

    Returns ``{workload: {checkpoint: {class: fraction}}}`` for ``memory``
    and ``cpu`` VMs of ``vcpus`` vCPUs (``vms`` traces each, seeded), plus
    ``{workload: {'first_memory_s': median seconds to the first memory
    verdict among those that got one, 'ever_memory': fraction}}`` under
    ``'delay'``.
    """
    import random
    rng = random.Random(seed)
    horizon = max(checkpoints_s)
    out = {'delay': {}}
    for workload in ('memory', 'cpu'):
        runs = [trajectory(workload, vcpus, horizon, model, sigma, rng,
                           schedule, config) for _ in range(vms)]
        table = {}
        for cp in checkpoints_s:
            counts = {}
            for changes in runs:
                c = class_at(changes, cp)
                counts[c] = counts.get(c, 0) + 1
            table[cp] = {c: round(n / vms, 4)
                         for c, n in sorted(counts.items())}
        out[workload] = table
        firsts = sorted(next((t for t, c in ch if c == MEMORY), None)
                        for ch in runs
                        if any(c == MEMORY for _, c in ch))
        out['delay'][workload] = {
            'ever_memory': round(len(firsts) / vms, 4),
            'first_memory_s': firsts[len(firsts) // 2] if firsts else None}
    return out
