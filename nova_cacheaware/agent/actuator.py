"""Act: apply the difference between desired and current pins, safely.

Like kubelet's ``reconcileState``: only the vCPUs whose pinning differs are
touched, each change is checked against Nova's allowed CPUs first, and the
result lists successes and failures. A rate limit bounds the repins per
period; what it defers is picked up by the next reconcile.
"""

import collections
import dataclasses
import logging
import time
import typing as ty

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware import exception
from nova_cacheaware.topology import cpulist

LOG = logging.getLogger(__name__)


class UnsafePin(exception.CacheAwareError):
    """A pin was refused because it breaks a safety rule."""

    msg_fmt = 'refused to pin %(uuid)s vCPU %(vcpu)s: %(reason)s'


@dataclasses.dataclass
class ApplyResult:
    """What one :meth:`Actuator.apply` did; lists of ``(uuid, vcpu, x)``."""

    succeeded: ty.List[tuple] = dataclasses.field(default_factory=list)
    failed: ty.List[tuple] = dataclasses.field(default_factory=list)
    deferred: ty.List[tuple] = dataclasses.field(default_factory=list)
    dry_run: ty.List[tuple] = dataclasses.field(default_factory=list)

    @property
    def repins(self):
        """Number of vCPU pins sent to the hypervisor successfully."""
        return len(self.succeeded)


def check_safe(decision, vcpu, cpus):
    """Raise :class:`UnsafePin` unless ``cpus`` may be used for ``vcpu``."""
    if not decision.movable:
        raise UnsafePin(uuid=decision.uuid, vcpu=vcpu,
                        reason='the instance is not movable (%s)'
                               % decision.reason)
    if not cpus:
        raise UnsafePin(uuid=decision.uuid, vcpu=vcpu, reason='empty cpuset')
    allowed = decision.allowed.get(vcpu)
    if allowed is None:
        raise UnsafePin(uuid=decision.uuid, vcpu=vcpu,
                        reason='no such vCPU in Nova\'s definition')
    outside = set(cpus) - set(allowed)
    if outside:
        raise UnsafePin(uuid=decision.uuid, vcpu=vcpu,
                        reason='CPUs %s are outside Nova\'s allowed %s'
                               % (cpulist.format_cpulist(outside),
                                  cpulist.format_cpulist(allowed)))


class RateLimiter:
    """At most ``limit`` events in any window of ``period_s`` seconds."""

    def __init__(self, limit, period_s, clock=time.monotonic):
        self.limit = limit
        self.period_s = period_s
        self._clock = clock
        self._times = collections.deque()

    def allow(self):
        """Take one slot if one is free; False when the limit is reached."""
        now = self._clock()
        while self._times and now - self._times[0] >= self.period_s:
            self._times.popleft()
        if self.limit is not None and len(self._times) >= self.limit:
            return False
        self._times.append(now)
        return True


class Actuator:
    """Applies :class:`~.cachedomain.repinning.Decision` changes."""

    def __init__(self, hypervisor, rate_limiter=None, dry_run=False,
                 pin_records=None):
        self.hypervisor = hypervisor
        self.rate_limiter = rate_limiter or RateLimiter(None, 1.0)
        self.dry_run = dry_run
        #: :class:`~nova_cacheaware.agent.pin_record.PinRecords` the
        #: libvirt hook applies when a guest starts while the agent is
        #: down; None: no record.
        self.pin_records = pin_records

    def apply(self, decisions):
        """Apply every decision's changes; never raises for one instance."""
        result = ApplyResult()
        for decision in decisions:
            changes = decision.changes()
            if not changes:
                if not self.dry_run:
                    self._record(decision, decision.current)
                continue
            try:
                for vcpu, cpus in changes.items():
                    check_safe(decision, vcpu, cpus)
            except UnsafePin as e:
                LOG.error('%s', e)
                result.failed.append((decision.uuid, None, str(e)))
                continue
            if self.dry_run:
                for vcpu, cpus in changes.items():
                    LOG.info('dry run: would pin %s vCPU %d to %s',
                             decision.uuid, vcpu,
                             cpulist.format_cpulist(cpus))
                    result.dry_run.append((decision.uuid, vcpu, cpus))
                continue
            self._apply_one(decision, changes, result)
        return result

    def _apply_one(self, decision, changes, result):
        # Record which vCPUs carry our pins *before* pinning, so that a
        # migration starting in between never carries unrecorded pins. A
        # superset is harmless: the hook only drops pins Nova did not write.
        ours = {v for v, cpus in decision.current.items()
                if tuple(cpus) != tuple(decision.allowed.get(v, ()))}
        ours |= {v for v, cpus in decision.desired.items()
                 if tuple(cpus) != tuple(decision.allowed.get(v, ()))}
        try:
            self.hypervisor.record_pins(
                decision.uuid, domain_xml.agent_pins_metadata(
                    decision.allowed, decision.nova_pinned, ours))
        except hv.DomainGone as e:
            LOG.info('%s; skipping it', e)
            result.failed.append((decision.uuid, None, str(e)))
            return
        final = dict(decision.current)
        for vcpu, cpus in changes.items():
            if not self.rate_limiter.allow():
                result.deferred.append((decision.uuid, vcpu, cpus))
                continue
            try:
                self.hypervisor.pin_vcpu(decision.uuid, vcpu, cpus)
            except hv.DomainGone as e:
                LOG.info('%s; skipping it', e)
                result.failed.append((decision.uuid, vcpu, str(e)))
                return
            except Exception as e:  # one instance never stops the others
                LOG.error('pinning %s vCPU %d to %s failed: %s',
                          decision.uuid, vcpu, cpulist.format_cpulist(cpus),
                          e)
                result.failed.append((decision.uuid, vcpu, str(e)))
                continue
            LOG.info('pinned %s vCPU %d to %s (%s)', decision.uuid, vcpu,
                     cpulist.format_cpulist(cpus), decision.reason)
            result.succeeded.append((decision.uuid, vcpu, cpus))
            final[vcpu] = tuple(cpus)
        after = {v for v, cpus in final.items()
                 if tuple(cpus) != tuple(decision.allowed.get(v, ()))}
        self._record(decision, final)
        if after != ours:
            # Restored vCPUs are ours no more: forget them, so a later pin
            # by someone else is never taken for ours.
            try:
                self.hypervisor.record_pins(
                    decision.uuid, domain_xml.agent_pins_metadata(
                        decision.allowed, decision.nova_pinned, after))
            except hv.DomainGone as e:
                LOG.info('%s', e)
        if result.deferred:
            LOG.warning('rate limit reached: %d vCPU pins deferred to the '
                        'next reconcile', len(result.deferred))

    def _record(self, decision, pins):
        """Record the vCPUs of ``pins`` that carry our pins (not Nova's)."""
        if self.pin_records is None:
            return
        self.pin_records.write(decision.uuid, {
            v: cpus for v, cpus in pins.items()
            if tuple(cpus) != tuple(decision.allowed.get(v, ()))})

    def forget_others(self, present):
        """Drop the pin records of instances not in ``present`` (uuids)."""
        if self.pin_records is not None and not self.dry_run:
            self.pin_records.prune(set(present))
