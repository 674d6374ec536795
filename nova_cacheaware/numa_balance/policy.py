"""Full-NUMA hand-off (study 003's ``balanced``), as a pure function.

Every full-NUMA VM mirrors the host: guest node *n* runs on host node *n*.
To keep the guests' NUMA-aware schedulers from running two threads on one
physical CPU, each host node's usable CPUs are divided between the VMs
(disjoint sets) and in every guest node only as many vCPUs are online as
the VM holds CPUs of that host node. :func:`balance` computes that division
for one pass, over the values of :mod:`.model` (no I/O, no CONF, no clock;
the inputs are not modified):

0. **Validate** (:func:`validate`): thresholds in range, no CPU in two
   host nodes, no VM twice, every VM a full mirror of the host nodes, no
   vCPU in two guest nodes, no negative use, virtio-mem devices within
   their size; otherwise
   :class:`~nova_cacheaware.exception.InvalidInput`.

Steps 1 to 4 run on each host node, in ascending node order:

1. **Keep** the current division where it is still valid: CPUs still usable
   on the node, not claimed by an earlier VM, at most one CPU per vCPU of
   the guest node (the lowest CPUs kept when there are more).
2. **Floors**: a VM holds at least one CPU of every node whose guest node
   has memory (and of the node holding vCPU 0, which Linux cannot take
   offline; only that node with ``per_node_floor`` off). Missing floors are
   served from free CPUs, then from the VM holding most CPUs above its
   floor. If the floors alone do not fit a node,
   :class:`~nova_cacheaware.exception.InvalidInput` names it: the scheme
   cannot run there without double use.
3. **Free CPUs** go, one at a time, to the VM with most use per held CPU
   while it has vCPUs left on the node.
4. **Hand-off**: at most ``max_cpu_moves`` times, the busiest VM whose use
   per held CPU is at or over ``busy`` takes one CPU from the least busy
   VM that stays under ``busy`` after giving it (so a CPU never bounces
   back the next pass) and keeps its floor.

Then, for the whole host:

5. **Pins** (:func:`_pins`): online vCPUs are the lowest ids of each guest
   node, as many as the VM holds CPUs of that host node; every vCPU of a
   guest node (online or not) is pinned to the VM's whole set on that
   node, or to the whole node where the VM holds none (its vCPUs there are
   all offline).
6. **Memory**: a VM with free memory under ``low_free_mib`` takes
   ``step_mib`` from a VM that keeps at least ``low_free_mib + step_mib``
   free after giving and stays at or above its ``min_mib``. Per node
   (virtio-mem) on the node where the taker's CPU use is highest, when
   both VMs have a device there with room; otherwise whole VM (balloon)
   when both have balloon room. One move per pass.

The adapter checks the pins against what Nova allows with
:func:`outside_allowed` before it acts.

Orderings and tie-breaks (the result is deterministic: the same input
gives the same output, whatever the order of the VMs given):

* VMs are taken in id order; in step 1 an earlier VM keeps a CPU two VMs
  claim;
* step 2: a floor comes from the lowest free CPU; without one, the donor
  is the VM with most CPUs above its floor, the highest id on ties, and
  gives its highest CPU;
* step 3: the lowest free CPU goes to the VM with most use per held CPU,
  then fewest CPUs held, then the lowest id (a VM holding no CPU on the
  node is ranked by its use per CPU held on all nodes);
* step 4: the taker is the VM with most use per held CPU, the lowest id
  on ties; the giver the VM with least use per held CPU, the lowest id on
  ties; the giver's highest CPU moves;
* step 6: takers from the least free memory up, givers from the most free
  memory down, the lowest id on ties in both; the taker's node is the one
  where it uses most CPU, the lowest node on ties; the first pair that
  can move wins.
"""

from nova_cacheaware import exception
from nova_cacheaware.numa_balance import model
from nova_cacheaware.topology import cpulist


def _bad(reason):
    return exception.InvalidInput(reason='numa balance: ' + reason)


def validate(host_nodes, vms, thresholds):
    """Raise :class:`InvalidInput` for input :func:`balance` cannot use."""
    if not 0 < thresholds.busy <= 1:
        raise _bad('busy threshold must be in (0, 1], got %r'
                   % thresholds.busy)
    if thresholds.step_mib <= 0 or thresholds.low_free_mib < 0:
        raise _bad('step_mib must be > 0 and low_free_mib >= 0')
    if thresholds.max_cpu_moves < 0:
        raise _bad('max_cpu_moves must be >= 0')
    seen_cpus = {}
    for node, cpus in host_nodes.items():
        for cpu in cpus:
            if cpu in seen_cpus:
                raise _bad('CPU %d is in host nodes %d and %d'
                           % (cpu, seen_cpus[cpu], node))
            seen_cpus[cpu] = node
    ids = set()
    for vm in vms:
        if vm.id in ids:
            raise _bad('VM %s given twice' % vm.id)
        ids.add(vm.id)
        if set(vm.nodes) != set(host_nodes):
            raise _bad('VM %s has guest nodes %s, the host has %s: not a '
                       'full mirror' % (vm.id, sorted(vm.nodes),
                                        sorted(host_nodes)))
        vcpus = [v for vs in vm.nodes.values() for v in vs]
        if len(vcpus) != len(set(vcpus)):
            raise _bad('VM %s has a vCPU in two guest nodes' % vm.id)
        if any(u < 0 for u in vm.use.values()):
            raise _bad('VM %s has negative CPU use' % vm.id)
        for node, dev in vm.virtio_mem.items():
            if node not in vm.nodes or not (
                    0 <= dev.requested_mib <= dev.size_mib):
                raise _bad('VM %s: bad virtio-mem device on node %s'
                           % (vm.id, node))


def _ratio(vm, node, held, totals):
    if held:
        return vm.use.get(node, 0.0) / held
    # No CPU on this node (floors off): the VM's use per CPU held on all
    # nodes says whether it wants one here.
    return sum(vm.use.values()) / max(1, totals.get(vm.id, 0))


def _can_give(vm, node, held, floor, busy):
    # After giving one CPU the VM keeps its floor and stays under the busy
    # threshold, so the CPU does not come straight back next pass.
    if held <= floor:
        return False
    use = vm.use.get(node, 0.0)
    if held == 1:
        return use == 0
    return use / (held - 1) < busy


def _divide_node(node, cpus, vms, current, thresholds, moves, totals):
    """Steps 1-4 on one host node; returns ``{vm: set(CPUs)}``."""
    usable = set(cpus)
    held = {}
    taken = set()
    for vm in vms:                     # 1. keep what is still valid
        mine = sorted((set(current.get(vm.id, {}).get(node, ()))
                       & usable) - taken)
        mine = mine[:len(vm.nodes[node])]
        held[vm.id] = set(mine)
        taken |= set(mine)
    free = usable - taken
    floors = {vm.id: (1 if node in vm.floor_nodes(thresholds.per_node_floor)
                      else 0) for vm in vms}
    need = sum(floors.values())
    if need > len(usable):
        raise _bad('host node %d has %d usable CPUs for %d full-NUMA VMs '
                   'that each need one' % (node, len(usable), need))
    _give_floors(vms, held, free, floors)  # 2. floors

    def ratio(v):
        return _ratio(v, node, len(held[v.id]), totals)

    while free:                        # 3. free CPUs
        wanting = [vm for vm in vms
                   if len(held[vm.id]) < len(vm.nodes[node])]
        if not wanting:
            break
        vm = min(wanting, key=lambda v: (-ratio(v), len(held[v.id]), v.id))
        cpu = min(free)
        free.discard(cpu)
        held[vm.id].add(cpu)
    for _ in range(thresholds.max_cpu_moves):     # 4. hand-off
        takers = [vm for vm in vms
                  if len(held[vm.id]) < len(vm.nodes[node])
                  and ratio(vm) >= thresholds.busy]
        givers = [vm for vm in vms
                  if _can_give(vm, node, len(held[vm.id]), floors[vm.id],
                               thresholds.busy)]
        if not takers or not givers:
            break
        taker = min(takers, key=lambda v: (-ratio(v), v.id))
        givers = [g for g in givers if g.id != taker.id]
        if not givers:
            break
        giver = min(givers, key=lambda v: (ratio(v), v.id))
        cpu = max(held[giver.id])
        held[giver.id].discard(cpu)
        held[taker.id].add(cpu)
        moves.append((node, giver.id, taker.id, cpu))
    return held


def _give_floors(vms, held, free, floors):
    """Step 2: every VM up to its floor, from ``free`` or the richest."""
    for vm in vms:
        if len(held[vm.id]) >= floors[vm.id]:
            continue
        if free:
            cpu = min(free)
            free.discard(cpu)
        else:
            donor = max((v for v in vms
                         if len(held[v.id]) > floors[v.id]),
                        key=lambda v: (len(held[v.id]) - floors[v.id],
                                       v.id))
            cpu = max(held[donor.id])
            held[donor.id].discard(cpu)
        held[vm.id].add(cpu)


def _memory_move(vms, thresholds):
    """Step 6: at most one :class:`~.model.MemoryMove`, or None."""
    step, low = thresholds.step_mib, thresholds.low_free_mib
    takers = sorted((vm for vm in vms
                     if vm.free_mib is not None and vm.free_mib < low),
                    key=lambda v: (v.free_mib, v.id))
    for taker in takers:
        givers = sorted(
            (vm for vm in vms if vm.id != taker.id
             and vm.free_mib is not None and vm.free_mib - step >= low
             and vm.total_mib() - step >= vm.min_mib),
            key=lambda v: (-v.free_mib, v.id))
        # The node where the taker computes most gets the memory.
        nodes = sorted(taker.nodes, key=lambda n: (-taker.use.get(n, 0.0),
                                                   n))
        for giver in givers:
            for node in nodes[:1]:
                t, g = taker.virtio_mem.get(node), giver.virtio_mem.get(node)
                if (t is not None and g is not None
                        and t.requested_mib + step <= t.size_mib
                        and g.requested_mib >= step):
                    return model.MemoryMove(giver.id, taker.id, step, node)
            if (taker.balloon_mib is not None
                    and giver.balloon_mib is not None
                    and taker.max_mib is not None
                    and taker.balloon_mib + step <= taker.max_mib
                    and giver.balloon_mib - step > 0):
                return model.MemoryMove(giver.id, taker.id, step, None)
    return None


def _pins(vm, host_nodes, cpus):
    online, pins = [], {}
    for node, vcpus in sorted(vm.nodes.items()):
        mine = tuple(sorted(cpus[node].get(vm.id, ())))
        online.extend(sorted(vcpus)[:len(mine)])
        target = mine or tuple(sorted(host_nodes[node]))
        for v in vcpus:
            pins[v] = target
    return tuple(sorted(online)), pins


def balance(host_nodes, vms, current=None, thresholds=model.Thresholds()):
    """One pass of the hand-off; returns a :class:`Result`.

    ``host_nodes``: ``{node: (usable CPUs)}``; ``vms``: :class:`VM` list;
    ``current``: ``{vm: {node: (CPUs)}}`` from the previous pass (missing:
    start from an even division). Inputs are not modified.
    """
    validate(host_nodes, vms, thresholds)
    vms = sorted(vms, key=lambda v: v.id)
    current = current or {}
    moves = []
    cpus = {}
    totals = {vm.id: sum(len(set(c) & set(host_nodes.get(n, ())))
                         for n, c in current.get(vm.id, {}).items())
              for vm in vms}
    for node in sorted(host_nodes):
        held = _divide_node(node, host_nodes[node], vms, current,
                            thresholds, moves, totals)
        cpus[node] = {vid: tuple(sorted(c)) for vid, c in sorted(
            held.items())}
    online, pins = {}, {}
    for vm in vms:
        online[vm.id], pins[vm.id] = _pins(vm, host_nodes, cpus)
    memory_moves, virtio_mem, balloon = [], {}, {}
    move = _memory_move(vms, thresholds) if vms else None
    if move is not None:
        memory_moves.append(move)
        by_id = {vm.id: vm for vm in vms}
        for vid, sign in ((move.giver, -1), (move.taker, 1)):
            vm = by_id[vid]
            if move.node is None:
                balloon[vid] = vm.balloon_mib + sign * move.mib
            else:
                virtio_mem.setdefault(vid, {})[move.node] = (
                    vm.virtio_mem[move.node].requested_mib + sign * move.mib)
    return model.Result(cpus=cpus, online=online, pins=pins,
                        cpu_moves=moves, memory_moves=memory_moves,
                        virtio_mem=virtio_mem, balloon=balloon)


def outside_allowed(pins, allowed):
    """``{vm: why}`` for the VMs whose pins leave the CPUs Nova allows.

    ``pins`` is ``{vm: {vcpu: cpus}}`` (:attr:`Result.pins`), ``allowed``
    ``{vm: {vcpu: cpus}}`` as Nova defined them; the first vCPU outside
    names the reason.
    """
    bad = {}
    for vm, vm_pins in pins.items():
        vm_allowed = allowed[vm]
        for vcpu, cpus in sorted(vm_pins.items()):
            outside = set(cpus) - set(vm_allowed.get(vcpu, ()))
            if outside:
                bad[vm] = ('Nova does not allow CPUs %s for vCPU %d'
                           % (cpulist.format_cpulist(outside), vcpu))
                break
    return bad
