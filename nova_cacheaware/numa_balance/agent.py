"""Agent capability ``numa_balance``: full-NUMA CPU and memory hand-off.

For the instances whose flavor says ``cacheaware:numa=full`` (their guest
NUMA nodes mirror the host's), each pass:

1. **observes** the guest NUMA cells, virtio-mem devices and balloon from
   the live domain XML, the guest's free memory from the balloon
   statistics, the online vCPUs through the QEMU guest agent, and CPU use
   per guest node from the pass's per-vCPU CPU time;
2. **decides** with :func:`nova_cacheaware.numa_balance.policy.balance`;
3. **acts** in an order that never lets two running vCPUs share a CPU:
   first every vCPU to go offline is offlined in its guest, then vCPUs are
   pinned (metadata recorded first, as the repin actuator does), then new
   vCPUs are onlined; memory moves shrink the giver before the taker grows.

Memory moves per node through virtio-mem (``updateDeviceFlags`` with a new
``<requested>``, live) where both domains have a device on the node, else
through the balloon (``setMemoryFlags``, live, whole VM). Nova's libvirt
driver never creates virtio-mem devices (nor ``<maxMemory>`` slots except
for vPMEM), so Nova-created domains only ever use the balloon; see
doc/source/admin/full-numa.rst.

A VM whose guest agent does not answer, whose guest nodes do not mirror the
host nodes, or whose pins Nova would not allow leaves the scheme: its vCPUs
get Nova's CPUs back (and all vCPUs online where the agent answers). The
same happens to every member when the agent stops (:meth:`release`).
"""

import dataclasses
import logging
import time
import typing as ty

from nova_cacheaware.agent import capability
from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import guest_agent as ga_mod
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware import exception
from nova_cacheaware.numa_balance import model
from nova_cacheaware.numa_balance import policy
from nova_cacheaware.numa_balance import shapes as numa_shapes
from nova_cacheaware.topology import cpulist

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class _Member:
    allowed: ty.Dict[int, ty.Tuple[int, ...]]
    nova_pinned: bool
    balloon_mib: int
    virtio_mem: ty.Dict[int, int]


class NumaBalance(capability.Capability):
    """Hands CPUs and memory between full-NUMA instances."""

    name = 'numa_balance'

    def __init__(self, hypervisor, host_nodes, thresholds=None,
                 guest_agent=None, min_memory_mib=256,
                 clock=time.monotonic, dry_run=False):
        self.hypervisor = hypervisor
        self.host_nodes = {n: tuple(c) for n, c in host_nodes.items()}
        self.thresholds = thresholds or model.Thresholds()
        self.guest_agent = guest_agent or ga_mod.GuestAgent(hypervisor)
        self.min_memory_mib = min_memory_mib
        self._clock = clock
        self.dry_run = dry_run
        self._members = {}
        self._division = {}
        self._last_time = {}

    # -- observe --------------------------------------------------------------

    def _read(self, uuid):
        def read(dom):
            return dom.xml(), dom.memory_stats()

        xml, stats = self.hypervisor.on_domain(uuid, read)
        free = stats.get('usable', stats.get('unused'))
        return (numa_shapes.parse_guest(xml),
                None if free is None else int(free) // 1024,
                int(stats['actual']) // 1024 if 'actual' in stats else None)

    def _use(self, uuid, shape, stats, now):
        """Busy CPUs per guest node since the last pass (0 the first time)."""
        times = {v: s.get('time', 0) for v, s in stats.items()}
        before = self._last_time.get(uuid)
        self._last_time[uuid] = (now, times)
        return numa_shapes.node_use(shape.nodes, times, before, now)

    # -- one pass -----------------------------------------------------------

    def reconcile(self, snapshot):
        """Observe, balance and act for the full-NUMA instances."""
        report = {'vms': {}, 'left': {}, 'cpu_moves': [],
                  'memory_moves': [], 'timings': {}}
        instances = {i.uuid: i for i in snapshot.instances}
        full = {u for u, request in snapshot.requests.items()
                if u in instances and request.numa == 'full'}
        for uuid in sorted(set(self._members) - full):
            if uuid in instances:
                self._release_one(uuid, 'left the scheme')
                report['left'][uuid] = 'left the scheme'
            self._forget(uuid)
        now = self._clock()
        vms, shapes, online = {}, {}, {}
        for uuid in sorted(full):
            why = self._observe_one(instances[uuid], snapshot, now, vms,
                                    shapes, online)
            if why:
                report['left'][uuid] = why
                if uuid in self._members:
                    self._release_one(uuid, why)
                    self._forget(uuid)
        if self.dry_run:
            return self._dry_run(vms, report)
        result = None
        # Decision to done: balance, offline, pin, online.
        started = time.monotonic()
        for _ in range(len(vms) + 1):
            try:
                result = policy.balance(self.host_nodes, list(vms.values()),
                                        self._division, self.thresholds)
            except exception.InvalidInput as e:
                # Floors do not fit: leave every pin as it is and say so.
                LOG.error('%s', e)
                report['refused'] = str(e)
                return report
            bad = policy.outside_allowed(
                result.pins,
                {u: m.allowed for u, m in self._members.items()})
            if not bad:
                bad = self._offline(result, online)
            if not bad:
                break
            for uuid, why in bad.items():
                report['left'][uuid] = why
                self._release_one(uuid, why)
                self._forget(uuid)
                del vms[uuid]
        if result is None or not vms:
            return report
        self._pin(result, instances)
        self._online(result, online)
        report['timings']['cpu_s'] = round(time.monotonic() - started, 4)
        started = time.monotonic()
        for move in result.memory_moves:
            self._move_memory(move, result, shapes)
        if result.memory_moves:
            report['timings']['memory_s'] = round(
                time.monotonic() - started, 4)
        return self._describe(result, vms, report)

    def _dry_run(self, vms, report):
        # Decide only: report what a pass would do, touch nothing.
        try:
            result = policy.balance(self.host_nodes, list(vms.values()),
                                    self._division, self.thresholds)
        except exception.InvalidInput as e:
            report['refused'] = str(e)
            return report
        report['dry_run'] = True
        return self._describe(result, vms, report)

    def _describe(self, result, vms, report):
        """Keep the division for the next pass; fill ``report``."""
        self._division = {u: {n: result.cpus[n][u] for n in result.cpus}
                          for u in vms}
        report['cpu_moves'] = [list(m) for m in result.cpu_moves]
        report['memory_moves'] = [
            {'giver': m.giver, 'taker': m.taker, 'mib': m.mib,
             'node': m.node, 'kind': m.kind} for m in result.memory_moves]
        for uuid, vm in vms.items():
            report['vms'][uuid] = {
                'cpus': {str(n): list(result.cpus[n][uuid])
                         for n in sorted(result.cpus)},
                'online': list(result.online[uuid]),
                'use': {str(n): u for n, u in sorted(vm.use.items())},
                'free_mib': vm.free_mib}
        return report

    def _observe_one(self, instance, snapshot, now, vms, shapes, online):
        uuid = instance.uuid
        try:
            shape, free, actual = self._read(uuid)
        except hv.DomainGone:
            return 'domain gone'
        except exception.InvalidInput as e:
            return str(e)
        if sorted(shape.nodes) != sorted(self.host_nodes):
            return ('guest nodes %s do not mirror host nodes %s'
                    % (sorted(shape.nodes), sorted(self.host_nodes)))
        try:
            every, now_online, _ = self.guest_agent.vcpus(uuid)
        except ga_mod.GuestAgentError as e:
            return 'guest agent: %s' % e
        except hv.DomainGone:
            return 'domain gone'
        balloon = actual if actual is not None else shape.current_mib
        ballooned = shape.balloon and not shape.virtio_mem
        if uuid not in self._members:
            self._members[uuid] = _Member(
                allowed=dict(instance.nova.allowed),
                nova_pinned=instance.nova.nova_pinned,
                balloon_mib=balloon,
                virtio_mem={n: d.requested_mib
                            for n, d in shape.virtio_mem.items()})
        min_mib = max(self.min_memory_mib,
                      snapshot.requests[uuid].memory_min_mb or 0)
        vms[uuid] = model.VM(
            id=uuid, nodes=shape.nodes,
            node_memory_mib=shape.node_memory_mib,
            use=self._use(uuid, shape, snapshot.stats.get(uuid, {}), now),
            free_mib=free,
            virtio_mem={n: model.VirtioMem(d.requested_mib, d.size_mib)
                        for n, d in shape.virtio_mem.items()},
            # The balloon only where there is no virtio-mem: libvirt
            # counts plugged memory in the balloon's size, not its limit.
            balloon_mib=balloon if ballooned else None,
            max_mib=sum(shape.node_memory_mib.values()) if ballooned
            else None,
            min_mib=min_mib)
        shapes[uuid] = shape
        online[uuid] = set(now_online) & set(every)
        return ''

    # -- act ----------------------------------------------------------------

    def _offline(self, result, online):
        # Givers first: a CPU is handed over only after the vCPUs that ran
        # on it are offline in the giving guest.
        bad = {}
        for uuid in sorted(result.online):
            off = online[uuid] - set(result.online[uuid])
            if not off:
                continue
            try:
                self.guest_agent.set_vcpus(uuid, off, online=False)
            except (ga_mod.GuestAgentError, hv.DomainGone) as e:
                bad[uuid] = 'offlining vCPUs %s failed: %s' % (
                    cpulist.format_cpulist(off), e)
                continue
            online[uuid] -= off
        return bad

    def _pin(self, result, instances):
        for uuid, pins in sorted(result.pins.items()):
            member = self._members[uuid]
            live = instances[uuid].live
            changes = {v: c for v, c in pins.items()
                       if tuple(live.get(v, ())) != tuple(c)}
            if not changes:
                continue
            ours = {v for v, c in pins.items()
                    if tuple(c) != tuple(member.allowed.get(v, ()))}
            try:
                self.hypervisor.record_pins(uuid, domain_xml.
                                            agent_pins_metadata(
                                                member.allowed,
                                                member.nova_pinned, ours))
                for vcpu, cpus in sorted(changes.items()):
                    self.hypervisor.pin_vcpu(uuid, vcpu, cpus)
            except hv.DomainGone as e:
                LOG.info('%s', e)
            except Exception as e:   # one VM never stops the others
                LOG.error('pinning %s failed: %s', uuid, e)

    def _online(self, result, online):
        for uuid in sorted(result.online):
            on = set(result.online[uuid]) - online[uuid]
            if not on:
                continue
            try:
                self.guest_agent.set_vcpus(uuid, on, online=True)
            except (ga_mod.GuestAgentError, hv.DomainGone) as e:
                # Fewer vCPUs online than CPUs held: never double use;
                # retried next pass.
                LOG.warning('onlining vCPUs of %s failed: %s', uuid, e)

    def _move_memory(self, move, result, shapes):
        # The giver shrinks first, so host memory is never overcommitted.
        for uuid in (move.giver, move.taker):
            try:
                if move.node is None:
                    self.set_balloon(uuid, result.balloon[uuid])
                else:
                    self.set_virtio_mem(
                        uuid, shapes[uuid].virtio_mem[move.node],
                        result.virtio_mem[uuid][move.node])
            except Exception as e:
                LOG.error('memory move %s -> %s failed at %s: %s',
                          move.giver, move.taker, uuid, e)
                return

    def set_virtio_mem(self, uuid, device, mib):
        """Ask the virtio-mem ``device`` of ``uuid`` for ``mib`` MiB, live."""
        xml = numa_shapes.requested_xml(device.xml, mib)
        self.hypervisor.on_domain(uuid, lambda dom: dom.update_device(xml))
        LOG.info('virtio-mem of %s on node %d: %d MiB requested', uuid,
                 device.node, mib)

    def set_balloon(self, uuid, mib):
        """Set the balloon target of ``uuid`` to ``mib`` MiB, live."""
        self.hypervisor.on_domain(uuid, lambda dom: dom.set_memory_mib(mib))
        LOG.info('balloon of %s: %d MiB', uuid, mib)

    # -- release ------------------------------------------------------------

    def _forget(self, uuid):
        self._members.pop(uuid, None)
        self._division.pop(uuid, None)
        self._last_time.pop(uuid, None)

    def _release_one(self, uuid, why):
        """Nova's CPUs, every vCPU online, memory as at join; never raises."""
        member = self._members.get(uuid)
        if member is None or self.dry_run:
            return
        LOG.info('releasing %s from full-NUMA hand-off: %s', uuid, why)
        try:
            for vcpu, cpus in sorted(member.allowed.items()):
                self.hypervisor.pin_vcpu(uuid, vcpu, cpus)
            self.hypervisor.record_pins(uuid, domain_xml.agent_pins_metadata(
                member.allowed, member.nova_pinned, ()))
        except hv.DomainGone:
            return
        except Exception as e:
            LOG.error('restoring the CPUs of %s failed: %s', uuid, e)
        try:
            every, now_online, _ = self.guest_agent.vcpus(uuid)
            self.guest_agent.set_vcpus(uuid, set(every) - set(now_online),
                                       online=True)
        except (ga_mod.GuestAgentError, hv.DomainGone) as e:
            LOG.warning('cannot online the vCPUs of %s: %s', uuid, e)
        try:
            shape = self._read(uuid)[0]
            for node, mib in sorted(member.virtio_mem.items()):
                device = shape.virtio_mem.get(node)
                if device is not None and device.requested_mib != mib:
                    self.set_virtio_mem(uuid, device, mib)
            # Even at the join size: currentMemory lags QEMU's balloon.
            if shape.balloon and not shape.virtio_mem:
                self.set_balloon(uuid, member.balloon_mib)
        except hv.DomainGone:
            return
        except Exception as e:
            LOG.error('restoring the memory of %s failed: %s', uuid, e)

    def release(self):
        """Give every member its CPUs, vCPUs and memory back."""
        for uuid in sorted(self._members):
            self._release_one(uuid, 'agent stopping')
        for uuid in list(self._members):
            self._forget(uuid)

    # -- reporting ----------------------------------------------------------

    def host_state(self, report):
        """The division per VM (``Division``), for the host report.

        None when the balance was refused (the floors do not fit): the
        pins stayed as they were.
        """
        if 'refused' in report:
            return None
        return model.Division(
            vms={u: v['cpus'] for u, v in report['vms'].items()})

    def format_report(self, report):
        """One line per full-NUMA VM, and the moves."""
        lines = []
        if 'refused' in report:
            lines.append('numa balance refused, pins unchanged: %s'
                         % report['refused'])
        for uuid, vm in sorted(report.get('vms', {}).items()):
            lines.append('numa %s cpus %s online %s use %s free %s MiB'
                         % (uuid[:8], vm['cpus'], vm['online'], vm['use'],
                            vm['free_mib']))
        for move in report.get('cpu_moves', []):
            lines.append('numa cpu %d of node %d: %s -> %s'
                         % (move[3], move[0], move[1][:8], move[2][:8]))
        for move in report.get('memory_moves', []):
            lines.append('numa %s %d MiB (node %s): %s -> %s'
                         % (move['kind'], move['mib'], move['node'],
                            move['giver'][:8], move['taker'][:8]))
        for uuid, why in sorted(report.get('left', {}).items()):
            lines.append('numa %s left: %s' % (uuid[:8], why))
        return lines


def factory(conf, hypervisor):
    """Entry point: a :class:`NumaBalance` from ``[numa_balance]``."""
    group = conf.numa_balance
    return NumaBalance(
        hypervisor, numa_shapes.host_nodes_from_conf(conf),
        model.Thresholds(busy=group.busy_threshold,
                         low_free_mib=group.low_free_mib,
                         step_mib=group.step_mib,
                         max_cpu_moves=group.max_cpu_moves,
                         per_node_floor=group.per_node_floor),
        guest_agent=ga_mod.GuestAgent(
            hypervisor, timeout_s=group.guest_agent_timeout_s),
        min_memory_mib=group.min_memory_mib,
        dry_run=conf.agent.dry_run or getattr(conf, 'cli_dry_run', False))
