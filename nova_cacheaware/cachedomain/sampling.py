"""The repin step's classifier of ``auto`` VMs: feeds the pure sampler.

An adapter of the repin step (:mod:`.agent`). The sampling windows, the
votes and their rules are :mod:`nova_cacheaware.cachedomain.trials` (pure,
replayable); :class:`ShareSampler` adds what the agent's loop needs: the
clock, sampling each snapshot once (``--dump-state`` asks again) and the
log lines. Without counters (no PMU, or ``[agent] counters = False``) the
agent builds none: it works on declared workloads.
:meth:`ShareSampler.to_dict` is what ``--dump-state`` shows of it.
"""

import logging
import time

from nova_cacheaware.cachedomain import trials

LOG = logging.getLogger(__name__)


class ShareSampler(trials.Sampler):
    """:class:`~.trials.Sampler` on the agent's clock.

    :param domain_set: the host's cache domains (what All-share means).
    :param clock: ``() -> seconds`` (monotonic).
    """

    def __init__(self, domain_set, config=None, window_passes=5,
                 interval_s=600.0, clock=time.monotonic):
        super().__init__(domain_set.domains, config=config,
                         window_passes=window_passes, interval_s=interval_s)
        self.clock = clock
        self._seen = None    # the last snapshot sampled

    def observe(self, snapshot):
        """Record the snapshot's samples and vote, once per snapshot."""
        if snapshot is self._seen:
            return
        self._seen = snapshot
        for uuid, result in self.record(snapshot.instances, snapshot.specs,
                                        snapshot.counters):
            LOG.info('instance %s classified %s (%s: CPI test p=%s, '
                     'effect=%s, MPKI=%s)', uuid, result.state.vm_class,
                     result.source, result.p_value, result.effect,
                     result.mpki)

    def window(self, snapshot, plan_input, plan, decisions):
        """This pass's sampling window (a :class:`~.trials.Trial`, or None)."""
        started = len(self.history)
        trial = self.step(decisions, plan_input, plan, snapshot.specs,
                          self.clock())
        if len(self.history) > started:
            LOG.info('sampling %s %s-share for %d passes%s', trial.uuid,
                     trial.mode, self.window_passes,
                     ' in %s' % trial.domain if trial.domain else '')
        return trial
