"""The ``balloon`` capability: hit-ratio memory ballooning on this host.

Thin: it reads domains and guest reports, and applies what the pure
:func:`nova_cacheaware.balloon.policy.decide_round` decides.  Only
instances whose flavor has ``cacheaware:memory_policy=hit_ratio`` are
touched.  Every ``[balloon] interval_s`` (its own clock), for each of them:

1. collect the report of the guest helper started in the previous round
   (``guest-exec`` through the QEMU guest agent) and validate it against the
   previous accepted report (:mod:`nova_cacheaware.balloon.guest_report`);
   a rejected report is logged and the VM keeps its memory;
2. start the helper again (``helper_path sample_s``), without waiting;
3. decide the round and apply it with ``setMemoryFlags(LIVE)``.

With ``[balloon] report_interval_s`` (study 002's gamma) a VM's report is
used only when its own next report time (``next_report_s`` of the round
that used the last one) has come; until then it keeps its memory and its
helper run stays in flight. Rounds still come every ``interval_s`` (delta),
so a report time is rounded up to the next round.

A guest whose agent does not answer is moved back towards its flavor RAM.
When an instance opts out (a resize to another flavor) and when the agent
stops, every managed instance gets its flavor RAM back.  The operator guide
is doc/source/admin/balloon.rst.
"""

import collections
import dataclasses
import logging
import time

from nova_cacheaware.agent import capability
from nova_cacheaware.agent import guest_agent as ga_mod
from nova_cacheaware.agent import hypervisor as hv_mod
from nova_cacheaware.balloon import guest_report
from nova_cacheaware.balloon import model
from nova_cacheaware.balloon import policy
from nova_cacheaware.balloon import view
from nova_cacheaware import exception

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class _Vm:
    """What the capability remembers about one managed instance."""

    flavor_mib: int = 0
    token: object = None
    silent: bool = False
    previous: object = None
    state: dict = dataclasses.field(default_factory=dict)
    last: dict = dataclasses.field(default_factory=dict)
    #: The last balloon target this agent set (None: never).
    target_mib: object = None
    #: The guest's last size claim that was not believed (logged once).
    doubted_mib: object = None
    #: Clock time from which its next report is used (None: now).
    due: object = None


class BalloonCapability(capability.Capability):
    """Hit-ratio ballooning over the opted-in instances of the host.

    ``memory`` (:class:`~.view.LibvirtMemory`) and ``helper``
    (:class:`~.view.GuestHelper`)
    are the adapters; ``clock`` a monotonic clock in seconds.  The
    constructor does no I/O.
    """

    name = 'balloon'

    def __init__(self, params, memory, helper, floor_mib=256,
                 interval_s=10.0, max_change_mib_per_period=4096,
                 rate_period_s=60.0, dry_run=False, clock=time.monotonic):
        self.params = params
        self.memory = memory
        self.helper = helper
        self.floor_mib = floor_mib
        self.interval_s = interval_s
        self.max_change = max_change_mib_per_period
        self.rate_period_s = rate_period_s
        self.dry_run = dry_run
        self.clock = clock
        self._vms = {}
        self._next = None
        self._moves = collections.deque()  # (time, MiB moved)
        self._last_report = {'vms': {}}
        self.rounds = 0

    # -- the pass -----------------------------------------------------------

    def reconcile(self, snapshot):
        """Run a round when ``interval_s`` has passed; return the report."""
        now = self.clock()
        opted = self._opted_in(snapshot)
        self._forget_or_release(snapshot, opted)
        if self._next is not None and now < self._next:
            return dict(self._last_report, next_round_in_s=round(
                self._next - now, 1))
        self._next = now + self.interval_s
        inputs, memories = [], {}
        for uuid, request in sorted(opted.items()):
            vm_input = self._observe(uuid, request, memories, now)
            if vm_input is not None:
                inputs.append(vm_input)
        budget = self._budget(now)
        result = policy.decide_round(self.params, inputs, budget)
        report = {'round': self.rounds, 'held_mib': result.held_mib,
                  'moved_mib': 0, 'dry_run': self.dry_run, 'vms': {}}
        moved = moves = 0
        for vm_input in inputs:
            uuid = vm_input.id
            outcome = result.vms[uuid]
            vm = self._vms[uuid]
            vm.state = outcome.state
            if outcome.next_report_s is not None:
                vm.due = now + outcome.next_report_s
            if outcome.memory_mib != vm_input.memory_mib:
                if self._apply(uuid, outcome.memory_mib):
                    vm.target_mib = outcome.memory_mib
                    moved += abs(outcome.memory_mib - vm_input.memory_mib)
                    moves += 1
            stats = vm_input.stats
            report['vms'][uuid] = dict(
                vm.last, memory_mib=outcome.memory_mib,
                was_mib=vm_input.memory_mib, target_mib=outcome.target_mib,
                low_mib=outcome.low_mib, flavor_mib=vm_input.flavor_mib,
                hit_ratio=None if stats is None else stats.hit_ratio,
                next_report_in_s=(None if vm.due is None or vm.due <= now
                                  else round(vm.due - now, 1)))
        if moved:
            self._moves.append((now, moved))
        report['moved_mib'] = moved
        report['moves'] = moves
        self.rounds += 1
        self._last_report = report
        return report

    def _opted_in(self, snapshot):
        opted = {}
        for instance in snapshot.instances:
            if instance.uuid in snapshot.request_errors:
                LOG.warning('balloon: ignoring %s: %s', instance.uuid,
                            snapshot.request_errors[instance.uuid])
                continue
            request = snapshot.requests.get(instance.uuid)
            if request is not None and request.memory_policy == 'hit_ratio':
                opted[instance.uuid] = request
        return opted

    def _forget_or_release(self, snapshot, opted):
        alive = {i.uuid for i in snapshot.instances}
        for uuid in list(self._vms):
            if uuid in opted or uuid in snapshot.spec_errors:
                continue  # still ours, or unknown this pass: leave it be
            vm = self._vms.pop(uuid)
            if uuid in alive:
                LOG.info('balloon: %s opted out; restoring %d MiB',
                         uuid, vm.flavor_mib)
                self._restore(uuid, vm.flavor_mib, vm.target_mib)
            self.memory.forget(uuid)

    def _observe(self, uuid, request, memories, now=None):
        """A :class:`~.model.VmInput` for ``uuid`` (None: gone)."""
        try:
            mem = self.memory.read(uuid)
        except hv_mod.DomainGone:
            self._vms.pop(uuid, None)
            return None
        vm = self._vms.setdefault(uuid, _Vm())
        vm.flavor_mib = mem.flavor_mib
        floor = request.memory_min_mb or self.floor_mib
        memory = self._trusted_memory(uuid, vm, mem, floor)
        if vm.due is not None and now is not None and now < vm.due:
            # Not its time yet (adaptive interval): it keeps its memory.
            vm.last = {'status': model.PENDING}
            return model.VmInput(
                id=uuid, memory_mib=memory, flavor_mib=mem.flavor_mib,
                floor_mib=min(floor, mem.flavor_mib),
                used_mib=policy.bounded_used(mem.used_mib, memory),
                status=model.PENDING, state=vm.state)
        status, stats = self._collect(uuid, vm, mem)
        if vm.token is None:
            # Nothing in flight: measure over the coming interval.
            try:
                vm.token = self.helper.start(uuid)
                vm.silent = False
            except ga_mod.GuestAgentUnavailable as e:
                LOG.info('balloon: %s', e)
                vm.token = None
                vm.silent = True
                status = model.SILENT
            except (ga_mod.GuestAgentError, hv_mod.DomainGone) as e:
                LOG.warning('balloon: cannot start the helper: %s', e)
                vm.token = None
        vm.last = {'status': status}
        return model.VmInput(
            id=uuid, memory_mib=memory, flavor_mib=mem.flavor_mib,
            floor_mib=min(floor, mem.flavor_mib),
            used_mib=policy.bounded_used(mem.used_mib, memory),
            stats=stats, status=status, state=vm.state)

    def _trusted_memory(self, uuid, vm, mem, floor):
        """The VM's size for the round (see ``bounded_memory``)."""
        memory = policy.bounded_memory(
            mem.flavor_mib, floor, mem.current_mib, vm.target_mib)
        doubted = (vm.target_mib is None and memory != mem.current_mib)
        if doubted and vm.doubted_mib != mem.current_mib:
            LOG.warning('balloon: %s claims a balloon of %s MiB (flavor %d '
                        'MiB); assuming %d MiB', uuid, mem.current_mib,
                        mem.flavor_mib, memory)
            vm.doubted_mib = mem.current_mib
        return memory

    def _collect(self, uuid, vm, mem):
        """``(status, GuestStats or None)`` of the helper run in flight."""
        if vm.token is None:
            # Nothing in flight: the first round, or the last start failed.
            return (model.SILENT if vm.silent
                    else model.PENDING), None
        try:
            out = self.helper.collect(uuid, vm.token)
        except ga_mod.GuestAgentUnavailable as e:
            LOG.info('balloon: %s', e)
            vm.token = None
            vm.silent = True
            return model.SILENT, None
        except (ga_mod.GuestAgentError, hv_mod.DomainGone) as e:
            LOG.warning('balloon: %s', e)
            vm.token = None
            return model.INVALID, None
        if out is None:
            return model.PENDING, None
        vm.token = None
        try:
            doc = view.parse_line(out)
            # The flavor RAM, not the balloon's claim: no guest has more.
            stats = guest_report.validate_report(
                doc, mem.flavor_mib, vm.previous)
        except guest_report.InvalidGuestReport as e:
            LOG.warning('balloon: %s: %s; it keeps its memory', uuid, e)
            # A reboot also resets the counters: start afresh next round.
            vm.previous = None
            return model.INVALID, None
        vm.previous = stats
        return model.OK, stats

    def _budget(self, now):
        while self._moves and self._moves[0][0] <= now - self.rate_period_s:
            self._moves.popleft()
        return self.max_change - sum(m for _, m in self._moves)

    def _apply(self, uuid, mib):
        if self.dry_run:
            LOG.info('balloon: would set %s to %d MiB (dry run)', uuid, mib)
            return False
        try:
            self.memory.set(uuid, mib)
        except hv_mod.DomainGone:
            self._vms.pop(uuid, None)
            return False
        except Exception as e:  # one domain never stops the round
            LOG.warning('balloon: cannot set %s to %d MiB: %s', uuid, mib, e)
            return False
        LOG.info('balloon: %s -> %d MiB', uuid, mib)
        return True

    def _restore(self, uuid, flavor_mib, target_mib=None):
        if self.dry_run or not flavor_mib:
            return
        try:
            # A target we set below the flavor counts even when the guest
            # claims a full balloon.
            lowered = target_mib is not None and target_mib < flavor_mib
            if lowered or self.memory.read(uuid).current_mib < flavor_mib:
                self.memory.set(uuid, flavor_mib)
        except hv_mod.DomainGone:
            pass
        except Exception as e:
            LOG.warning('balloon: cannot restore %s to %d MiB: %s',
                        uuid, flavor_mib, e)

    # -- reporting and release ---------------------------------------------

    def host_state(self, report):
        """Memory held back from opted-in instances (``HeldMemory``)."""
        if not report or 'held_mib' not in report:
            return None
        return model.HeldMemory(held_mib=report['held_mib'],
                                instances=len(report.get('vms', {})))

    def format_report(self, report):
        """One line per managed instance for ``--once``."""
        lines = []
        for uuid, vm in sorted((report or {}).get('vms', {}).items()):
            ratio = vm.get('hit_ratio')
            lines.append('balloon: %s %s %d -> %d MiB (target %d, low %d, '
                         'flavor %d, hit ratio %s)' % (
                             uuid, vm.get('status'), vm['was_mib'],
                             vm['memory_mib'], vm['target_mib'],
                             vm['low_mib'], vm['flavor_mib'],
                             '-' if ratio is None else '%.3f' % ratio))
        return lines

    def release(self):
        """Give every managed instance its flavor RAM back."""
        for uuid, vm in sorted(self._vms.items()):
            self._restore(uuid, vm.flavor_mib, vm.target_mib)
        self._vms.clear()


def factory(conf, hypervisor):
    """Entry point: the capability from ``[balloon]`` and ``[agent]``."""
    b = conf.balloon
    if b.sample_s >= b.interval_s:
        raise exception.InvalidInput(
            reason='[balloon] sample_s (%s) must be shorter than interval_s '
                   '(%s)' % (b.sample_s, b.interval_s))
    if b.min_report_interval_s > b.max_report_interval_s:
        raise exception.InvalidInput(
            reason='[balloon] min_report_interval_s (%s) must not exceed '
                   'max_report_interval_s (%s)' % (b.min_report_interval_s,
                                                   b.max_report_interval_s))
    params = model.RoundParams(
        policy=b.policy, pool_mib=b.pool_mib, margin_mib=b.margin_mib,
        max_step_mib=b.max_step_mib, threshold=b.threshold, alpha=b.alpha,
        beta=b.beta, interval_s=b.interval_s,
        report_interval_s=b.report_interval_s,
        min_report_s=b.min_report_interval_s,
        max_report_s=b.max_report_interval_s)
    guest = ga_mod.GuestAgent(hypervisor, timeout_s=b.guest_agent_timeout_s)
    return BalloonCapability(
        params, view.LibvirtMemory(hypervisor),
        view.GuestHelper(guest, b.helper_path, b.sample_s),
        floor_mib=b.floor_mib, interval_s=b.interval_s,
        max_change_mib_per_period=b.max_change_mib_per_period,
        rate_period_s=b.rate_period_s,
        dry_run=conf.agent.dry_run or getattr(conf, 'cli_dry_run', False))
