"""The agent's choice of a cache domain for instances holding host room.

The per-host provider model (``[placement] provider_model = host``): an
instance's allocation names the host's one cache provider, not a domain,
so the agent chooses the domain - with the scheduler's rule, seed and
order (:mod:`nova_cacheaware.cachedomain.choice`), so that the
scheduler's prediction of the domain is the agent's choice - and
publishes what its choice counted. Pure.
"""

import dataclasses
import typing as ty

from nova_cacheaware.cachedomain import choice as domain_choice


@dataclasses.dataclass(frozen=True)
class HostHeld:
    """An instance whose allocation holds All-share room of the *host*.

    The per-host provider model (``[placement] provider_model = host``):
    the allocation names the host's one cache provider, not a domain, so
    the agent chooses the domain. ``current`` is the domain the instance's
    live pins already lie in (None: none, or several); ``previous`` the
    domain the agent gave it before (None: never). ``order`` is Nova's
    creation order of the instance (its database id, read from the
    libvirt domain name; None: unknown): the order in which Nova's
    scheduler claimed the instances of one multi-create.
    ``clean_required``: the flavor asks ``cache_clean=required`` (its
    domain is then closed to other memory-bound instances).
    ``holds_slot``: its allocation holds a ``CUSTOM_CACHE_DOMAIN_MEMBOUND``
    slot (a ``required`` instance, or a ``preferred`` one that claimed a
    free Clean place): Placement counted a Clean place for it.
    """

    uuid: str
    vcpus: int
    memory_bound: bool
    current: ty.Optional[str] = None
    previous: ty.Optional[str] = None
    order: ty.Optional[int] = None
    clean_required: bool = False
    holds_slot: bool = False


def arrival_key(vm):
    """Sort key placing new instances in Nova's claim order.

    Nova's scheduler claims the instances of a multi-create in the order
    the conductor then creates them (ascending database id), and predicts
    each one's domain counting the earlier ones: placing them in that
    order makes the agent's choice the prediction. Instances without an
    order follow, in uuid order.
    """
    return (vm.order is None, vm.order or 0, vm.uuid)


def assign_domains(capacity, instances, base=None):
    """``{uuid: domain id or None}`` for the host-held instances.

    :param capacity: ``{domain id: vCPUs it holds All-share}`` (its usable
        CPUs times the host's allocation ratio, rounded down).
    :param instances: :class:`HostHeld` values.
    :param base: ``{domain id: (vCPUs, memory-bound VMs)}`` already there
        that hold no host room (pinned by the planner, say): they count
        against room and Clean like the live state the scheduler sees.

    An instance keeps the domain it had (``previous``, else the one its
    pins lie in after an agent restart) while that domain exists and it
    may still join it (room, and :func:`closed_to`, counting the instances
    kept before it, not ``base``): moving a running VM is never free, and
    the scheduler counted it there; but two claims that raced must not
    both stay in a domain only one of them fits, or a memory-bound one
    beside a ``required`` one. The others are placed one at a time in
    Nova's claim order (:func:`arrival_key`) with the scheduler's rule and
    seed
    (``domain_choice.order_domains``), so that with the same knowledge the
    scheduler's prediction is this choice - but instances holding a Clean
    slot go first (Placement counted a Clean place for each), and take
    back a place a slot-less one took in an earlier pass
    (:func:`_displace`). ``None``: no domain it may join has room (it
    stays on Nova's CPUs), see :func:`closed_to`.
    """
    out = {}
    tally = _Tally(capacity, base)
    # Homes are checked against each other only: what the planner pinned
    # without host room (``base``) never evicts an instance holding room.
    homes = _Tally(capacity, None)
    fresh = []
    for vm in sorted(instances,
                     key=lambda vm: (not vm.holds_slot,) + arrival_key(vm)):
        home = vm.previous if vm.previous in capacity else (
            vm.current if vm.current in capacity else None)
        if home is None or not homes.may_join(vm, home):
            fresh.append(dataclasses.replace(vm, previous=None,
                                             current=None))
        else:
            out[vm.uuid] = home
            tally.add(vm, home)
            homes.add(vm, home)
    _place_new(tally, fresh, out)
    return out


def _place_new(tally, fresh, out):
    """Place the ``fresh`` instances (slot holders first) into ``out``."""
    yielding = set()
    placed = []
    while fresh:
        vm = fresh.pop(0)
        order = domain_choice.order_domains(
            tally.loads(), vm.vcpus, vm.memory_bound, vm.uuid,
            best_fit=True)
        if vm.uuid in yielding:
            # It gave its place to a slot holder: joining another one would
            # only move the Dirt. Beside instances without a slot, or none.
            order = [d for d in order if not any(
                m.holds_slot and m.memory_bound for m in tally.members[d])]
        first = order[0] if order else None
        if first is not None and not tally.may_join(vm, first):
            first = None
        # Not Clean there: a place a slot-less instance took comes first,
        # then one a slot holder placed in this pass can leave for another
        # Clean place.
        yielded = (_displace(tally, vm) if first is None
                   or tally.memory[first] else None)
        if yielded is None and (first is None or tally.memory[first]):
            first = _reseat(tally, vm, placed, out) or first
        if yielded is not None:
            first, leaving = yielded
            tally.remove(leaving, first)
            out[leaving.uuid] = None
            yielding.add(leaving.uuid)
            fresh.append(dataclasses.replace(leaving, previous=None,
                                             current=None))
        out[vm.uuid] = first
        if first is not None:
            tally.add(vm, first)
            placed.append(vm)


def _reseat(tally, vm, placed, out):
    """A Clean place for slot holder ``vm`` made by moving one placed now.

    Slot holders are placed one at a time, each in the domain the rule
    ranks first, so an early small one may take the only Empty domain a
    later big one fits while a smaller Empty domain would have held it
    (domains of 1 and 3 vCPUs, slot holders of 1 then 2 vCPUs). Each holds
    a Clean place Placement counted: a slot holder placed earlier in this
    pass (``placed``: not yet running there) that is alone in a domain
    where ``vm`` fits without it moves to an Empty domain it fits, the
    lowest id first, if one exists. Returns the domain freed for ``vm``
    (the mover is already counted in its new one), or None.
    """
    if not (vm.memory_bound and vm.holds_slot):
        return None
    for domain in sorted(tally.capacity):
        bound = [m for m in tally.members[domain] if m.memory_bound]
        if (len(bound) != 1 or tally.memory[domain] != 1
                or not bound[0].holds_slot or bound[0] not in placed
                or not tally.may_join(vm, domain, leaving=bound[0])):
            continue
        mover = bound[0]
        for target in sorted(tally.capacity):
            if (target != domain and tally.memory[target] == 0
                    and tally.may_join(mover, target)):
                tally.remove(mover, domain)
                tally.add(mover, target)
                out[mover.uuid] = target
                return domain
    return None


class _Tally:
    """The domains' load while :func:`assign_domains` places instances."""

    def __init__(self, capacity, base):
        self.capacity = capacity
        self.used = {d: 0 for d in capacity}
        self.memory = {d: 0 for d in capacity}
        self.required = {d: 0 for d in capacity}
        self.members = {d: [] for d in capacity}
        for domain, (vcpus, memory_bound) in (base or {}).items():
            if domain in capacity:
                self.used[domain] += vcpus
                self.memory[domain] += memory_bound

    def loads(self):
        """The ``DomainLoad`` of every domain, in id order."""
        return [domain_choice.DomainLoad(
            provider=d, memory_bound=self.memory[d],
            vcpus_used=self.used[d], vcpus_total=self.capacity[d],
            holds_required=self.required[d] > 0)
            for d in sorted(self.capacity)]

    def may_join(self, vm, domain, leaving=None):
        """Room for ``vm`` in ``domain`` (without ``leaving``), not closed."""
        used, memory = self.used[domain], self.memory[domain]
        if leaving is not None:
            used -= leaving.vcpus
            memory -= int(leaving.memory_bound)
        return (used + vm.vcpus <= self.capacity[domain]
                and not closed_to(vm, memory, self.required[domain]))

    def add(self, vm, domain, sign=1):
        """Count ``vm`` in ``domain`` (``sign`` -1: no longer)."""
        if sign > 0:
            self.members[domain].append(vm)
        else:
            self.members[domain].remove(vm)
        self.used[domain] += sign * vm.vcpus
        self.memory[domain] += sign * int(vm.memory_bound)
        self.required[domain] += sign * int(vm.clean_required)

    def remove(self, vm, domain):
        """``vm`` leaves ``domain``."""
        self.add(vm, domain, sign=-1)


def _displace(tally, vm):
    """``(domain, instance)``: a Clean place ``vm`` may take from it, or None.

    Only for a memory-bound ``vm`` holding a slot (Placement counted a
    Clean place for it): a domain whose one memory-bound instance holds
    no slot and is not ``required`` (it took the place between two agent
    syncs), where ``vm`` fits once that instance leaves. That instance is
    then placed again like a new one, but only beside instances that hold
    no slot (it may share a domain, as ``preferred`` and ``auto`` allow,
    not with a slot holder: that would only move the Dirt), or waits on
    Nova's CPUs. The domain of the lowest id is taken, so that every pass
    chooses the same.
    """
    if not (vm.memory_bound and vm.holds_slot):
        return None
    for domain in sorted(tally.capacity):
        bound = [m for m in tally.members[domain] if m.memory_bound]
        if (tally.memory[domain] == 1 and len(bound) == 1
                and not bound[0].holds_slot
                and not bound[0].clean_required
                and tally.may_join(vm, domain, leaving=bound[0])):
            return domain, bound[0]
    return None


def closed_to(vm, memory_bound, required):
    """True when new instance ``vm`` must not join a domain.

    ``memory_bound`` and ``required``: the domain's memory-bound and
    ``cache_clean=required`` instances. A memory-bound instance never
    joins a required one, and a required one never joins a memory-bound
    one, even where that is the only room: the scheduler's filter refuses
    such a host for the same reason, so only a race gets here, and a
    newcomer left on Nova's CPUs gets the next domain that frees, where
    one pinned beside another would stay (instances keep their domain).
    """
    return bool((vm.memory_bound and required)
                or (vm.clean_required and memory_bound))


def required_holders(required, assigned):
    """``{domain id: n}``: ``cache_clean=required`` instances per domain.

    ``required``: the uuids of the instances whose flavor asks
    ``cache_clean=required``; ``assigned``: ``{uuid: domain id or None}``
    (the agent's choice, or the domains Placement names). What the agent
    publishes (payload 1.5 ``required_holders``) so that the scheduler
    keeps other memory-bound requests out of those domains. Domains
    without one are left out.
    """
    out = {}
    for uuid in required:
        domain = assigned.get(uuid)
        if domain is not None:
            out[domain] = out.get(domain, 0) + 1
    return out


def choice_loads(instances, assigned, base=None):
    """``{domain id: (vCPUs, Clean holders)}`` the agent's choice counts.

    ``instances`` are the :class:`HostHeld` values given to
    :func:`assign_domains`, ``assigned`` its answer (``{uuid: domain id
    or None}``), ``base`` as for it. The loads :func:`assign_domains`
    orders the next instance by: what the agent publishes (payload 1.4
    ``vcpus_used`` and ``clean_holders``) so that the scheduler predicts
    with the same inputs. Domains without any load are left out.
    """
    out = {d: tuple(v) for d, v in (base or {}).items()}
    for vm in instances:
        domain = assigned.get(vm.uuid)
        if domain is not None:
            vcpus, clean = out.get(domain, (0, 0))
            out[domain] = (vcpus + vm.vcpus, clean + int(vm.memory_bound))
    return out


def largest_room(capacity, assigned, vcpus_of, base=None):
    """The most vCPUs one more instance could get All-share in one domain.

    ``assigned`` is ``{uuid: domain id or None}``, ``vcpus_of`` gives each
    instance's vCPUs, ``base`` as for :func:`assign_domains`. What the
    agent writes as the host provider's ``max_unit`` (at least 1:
    Placement refuses 0).
    """
    used = {d: 0 for d in capacity}
    for domain, (vcpus, _memory) in (base or {}).items():
        if domain in used:
            used[domain] += vcpus
    for uuid, domain in assigned.items():
        if domain in used:
            used[domain] += vcpus_of[uuid]
    return max([1] + [capacity[d] - used[d] for d in capacity])
