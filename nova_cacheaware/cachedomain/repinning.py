"""Repinning (study 000): the agent's pinning decisions, pure.

Typed snapshot in (the running instances, their flavor extra specs, the
domains the agent may plan on, the instances holding a domain in
Placement, the VMs the classifier found memory-bound), desired state out:
the ``plan`` input (:class:`~.cachedomain_model.PlanInput`, kept typed)
and, from the planner's :class:`~.cachedomain_model.Plan`, one
:class:`Decision` per instance. No I/O, no CONF, no clock: every decision
replays offline from ``nova-cacheaware-agent --dump-state`` with
``nova-cacheaware plan``.

An instance is anything with ``uuid``, ``live`` (``{vcpu: cpus}`` live
pins), ``ours`` (the vCPUs the agent pinned) and ``nova`` (``allowed``
``{vcpu: cpus}``, ``dedicated``, ``nova_pinned``, ``name``,
``instance_name``): the agent's :class:`~nova_cacheaware.agent.hypervisor.
Instance`.

Safety rules (see doc/source/admin/agent.rst):

1. Only floating instances (``hw:cpu_policy`` shared or absent) can move.
   Dedicated ones (Nova pinned every vCPU to one CPU, or the flavor says
   ``dedicated``/``mixed``) are audited and reported, never touched.
2. A floating instance can move only if Nova allows every vCPU on every CPU
   the planner may choose (the union of the domains); otherwise it goes to
   the planner as unmovable, with the reason in the decision.
   Full-NUMA instances (``cacheaware:numa=full``) are never moved either:
   their pins belong to the ``numa_balance`` capability.
3. Domains are restricted to the CPUs usable for floating guests.
4. Desired pins are only ever within Nova's allowed CPUs, never empty; the
   actuator checks that again before it acts.
5. A floating instance whose Placement allocation holds a cache-domain
   provider ("held") is pinned to that domain, whatever the planner would
   choose: Placement promised it that domain's capacity. It goes to the
   planner as unmovable inside the domain, so it counts against it.
6. A domain holding a ``cache_clean=required`` instance is *closed*
   (:class:`Closed`): the planner does not see it, so it never pins
   another memory-bound instance there, and a memory-bound instance left
   on Nova's CPUs floats over the allowed CPUs of the other domains (over
   its pins as they are when there are none) - its cache is the required
   instance's promise. An instance holding host room that found no domain
   (``waiting``) still waits on every CPU: its pins inside one domain
   would read as its home at the next domain choice.
"""

import dataclasses
import typing as ty

from nova_cacheaware.cachedomain import model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware.cachedomain import replan as allshare_replan
from nova_cacheaware.contracts import cache_state
from nova_cacheaware.contracts import extra_specs
from nova_cacheaware import exception
from nova_cacheaware.topology import cpulist

WORKLOADS = ('memory', 'cpu', 'io')
WORKLOAD_SPEC = extra_specs.WORKLOAD
CPU_POLICY_SPEC = 'hw:cpu_policy'
NUMA_SPEC = extra_specs.NUMA
#: Why the repin planner leaves full-NUMA instances alone.
FULL_NUMA_REASON = 'full-NUMA: CPUs are handed off by numa_balance'

KEEP = 'keep'
REPIN = 'repin'
RESTORE = 'restore'
AUDIT = 'audit'

#: The plan when no domain has a usable CPU: nothing placed, nothing moved.
NO_PLAN = model.Plan(vms={}, domains={}, unplaced=())


@dataclasses.dataclass(frozen=True)
class Closed:
    """Domains closed to every memory-bound instance the agent places.

    Each holds a ``cache_clean=required`` instance: no other memory-bound
    instance may be pinned into it, or float over its CPUs. ``domains``:
    those ``plan`` domains (usable CPUs); ``vms``: ``{uuid: model.VM}`` of
    the instances held in them, planned as unmovable there and left out
    of the planner's input (:func:`close_domains`).
    """

    domains: ty.Tuple[model.Domain, ...] = ()
    vms: ty.Mapping[str, model.VM] = dataclasses.field(default_factory=dict)

    @property
    def cpus(self):
        """The CPUs of the closed domains."""
        return frozenset(c for d in self.domains for c in d.cpus)


#: No domain closed.
NOTHING_CLOSED = Closed()


class PlannerError(exception.CacheAwareError):
    """The planner returned something that breaks the plan contract."""

    msg_fmt = 'planner output is not usable: %(reason)s'


@dataclasses.dataclass(frozen=True)
class Decision:
    """What the agent decided for one instance, and why."""

    uuid: str
    name: str
    workload: str
    movable: bool
    reason: str
    action: str
    current: ty.Dict[int, ty.Tuple[int, ...]]
    desired: ty.Dict[int, ty.Tuple[int, ...]]
    allowed: ty.Dict[int, ty.Tuple[int, ...]]
    domains: ty.Tuple[str, ...] = ()
    share: str = ''
    nova_pinned: bool = False

    def changes(self):
        """``{vcpu: cpus}`` for the vCPUs whose pinning must change."""
        if self.action not in (REPIN, RESTORE):
            return {}
        return {v: cpus for v, cpus in sorted(self.desired.items())
                if tuple(cpus) != tuple(self.current.get(v, ()))}


def workload_of(specs):
    """The ``plan`` workload for an instance's flavor extra specs.

    A declared ``memory``/``cpu``/``io`` is taken as is; ``auto``, absent or
    unknown values give ``unknown`` (the classifier's job).
    """
    value = (specs or {}).get(WORKLOAD_SPEC, 'auto')
    return value if value in WORKLOADS else 'unknown'


def is_dedicated(instance, specs):
    """True if Nova owns this instance's pinning (dedicated or mixed)."""
    policy = (specs or {}).get(CPU_POLICY_SPEC, 'shared')
    return policy in ('dedicated', 'mixed') or instance.nova.dedicated


def usable_domains(domain_set, usable_cpus):
    """``plan`` domains, JSON form: each cache domain cut to usable CPUs.

    Domains left with no usable CPU are dropped.
    """
    return [{'id': d.id, 'cpus': list(d.cpus)}
            for d in plan_domains(domain_set, usable_cpus)]


def plan_domains(domain_set, usable_cpus):
    """:func:`usable_domains` typed: a tuple of ``plan`` domains."""
    usable = set(usable_cpus)
    out = []
    for domain in domain_set.domains:
        cpus = tuple(sorted(set(domain.cpus) & usable))
        if cpus:
            out.append(model.Domain(id=domain.id, cpus=cpus))
    return tuple(out)


def movability(instance, specs, domain_cpus):
    """``(movable, reason)`` for one instance under the safety rules."""
    if is_dedicated(instance, specs):
        return False, 'dedicated: Nova pinned each vCPU to one CPU'
    if (specs or {}).get(NUMA_SPEC) == 'full':
        return False, FULL_NUMA_REASON
    missing = set()
    for cpus in instance.nova.allowed.values():
        missing |= set(domain_cpus) - set(cpus)
    if missing:
        return False, ('Nova does not allow CPUs %s'
                       % cpulist.format_cpulist(missing))
    return True, 'floating'


def _plan_current(live, domain_cpus, movable):
    """``current`` as the planner may see it, or False to leave the VM out.

    The ``plan`` contract only knows CPUs of the domains. An unmovable VM
    with a CPU outside them lies inside no domain, so it cannot count
    against any domain's capacity: it is left out of the plan. A movable
    VM's CPUs are cut to the domains; if a vCPU has none left, ``current``
    is None (the planner then assumes all CPUs).
    """
    if not movable:
        if all(set(cpus) <= domain_cpus for cpus in live.values()):
            return {v: tuple(sorted(cpus)) for v, cpus in live.items()} \
                or None
        return False
    cut = {v: tuple(sorted(set(cpus) & domain_cpus))
           for v, cpus in live.items()}
    if not all(cut.values()):
        return None
    return cut or None


def held_pinning(instance, held, domains):
    """``(domain id, cpus)`` an instance holding a domain is pinned to.

    ``domains``: the ``plan`` domains. None when ``held`` names no domain
    for it, the domain has no usable CPU here, or Nova does not allow every
    vCPU on all of its CPUs.
    """
    domain_id = (held or {}).get(instance.uuid)
    cpus = {d.id: d.cpus for d in domains}.get(domain_id)
    if not cpus:
        return None
    if any(not set(cpus) <= set(allowed)
           for allowed in instance.nova.allowed.values()):
        return None
    return domain_id, cpus


#: Why a per-host-model instance that found no domain is on Nova's CPUs.
WAITING_REASON = ('holds room of the host in Placement; no cache domain it '
                  'may join has room: Nova\'s CPUs until one has')


def close_domains(domain_set, usable_cpus, instances, specs_by_uuid,
                  held, closed, classified=frozenset()):
    """The :class:`Closed` domains among ``closed`` (domain ids).

    ``closed``: the domains holding a ``cache_clean=required`` instance
    (the agent's choice, or Placement's allocations). Domains without a
    usable CPU are left out; the instances held in the others (as
    :func:`held_pinning` reads ``held``) go with them, planned as
    unmovable there.
    """
    if not closed:
        return NOTHING_CLOSED
    every = plan_domains(domain_set, usable_cpus)
    domains = tuple(d for d in every if d.id in closed)
    if not domains:
        return NOTHING_CLOSED
    every_cpu = {c for d in every for c in d.cpus}
    vms = {}
    for instance in instances:
        specs = specs_by_uuid.get(instance.uuid, {})
        if not movability(instance, specs, every_cpu)[0]:
            continue
        pinned = held_pinning(instance, held, domains)
        if pinned is None:
            continue
        vms[instance.uuid] = model.VM(
            id=instance.uuid, vcpus=len(instance.nova.allowed),
            workload=('memory' if instance.uuid in classified
                      else workload_of(specs)),
            current={v: pinned[1] for v in instance.nova.allowed},
            movable=False)
    return Closed(domains=domains, vms=vms)


def with_closed(plan, closed, decisions):
    """``plan`` with the :class:`Closed` domains' states added.

    The planner does not see them; the host's report and Placement must
    (every domain of the host is in the live state). A closed domain's
    memory-bound VMs are every memory-bound ``decisions`` entry that
    lies in it: the instances held there, and one left floating over it
    (no other CPU allowed).
    """
    if not closed.domains:
        return plan
    domains = dict(plan.domains)
    for domain in closed.domains:
        members = tuple(sorted(d.uuid for d in decisions
                               if d.workload == 'memory'
                               and domain.id in d.domains))
        domains[domain.id] = model.DomainPlan(
            state=cache_state.cache_state(len(members)), memory_vms=members)
    return dataclasses.replace(plan, domains=domains)


def _touched(domains, pins):
    """``(domain ids, share)`` of the ``domains`` that ``pins`` reach."""
    cpus = set().union(*pins.values()) if pins else set()
    touched = tuple(d.id for d in domains if cpus & set(d.cpus))
    if not touched:
        return (), ''
    return touched, (model.SHARE_ALL if len(touched) == 1
                     else model.SHARE_PARTIAL)


def build_plan_input(domain_set, usable_cpus, instances, specs_by_uuid,
                     max_vcpus_per_cpu=1.0, held=None,
                     classified=frozenset(), waiting=frozenset(),
                     closed=NOTHING_CLOSED):
    """The ``plan`` input, plus ``{uuid: (movable, reason)}``.

    Unmovable instances outside the domains (dedicated ones on
    ``cpu_dedicated_set``, for instance) are not in the input; their
    entry in the second value says why they stay. ``held`` is
    ``{uuid: domain id}`` of instances holding a domain in Placement: a
    floating one enters the plan as unmovable, inside that domain.
    ``classified``: uuids of ``auto`` VMs the classifier found
    memory-bound; they are planned as ``memory``. ``waiting``: uuids
    holding room of the host (per-host model) for which the agent found
    no domain they may join: the planner must not pin them into one (it
    knows neither the room nor who may share), so they enter as
    unmovable on Nova's CPUs, where :func:`decisions_from_plan` puts them.
    ``closed`` (:func:`close_domains`): domains the planner must not see,
    with the instances held in them.
    """
    shut = closed.cpus
    domains = tuple(d for d in plan_domains(domain_set, usable_cpus)
                    if d not in closed.domains)
    domain_cpus = {c for d in domains for c in d.cpus}
    vms = []
    why = {}
    for instance in sorted(instances, key=lambda i: i.uuid):
        specs = specs_by_uuid.get(instance.uuid, {})
        if instance.uuid in closed.vms:
            # close_domains took only floating ones; pinned there.
            why[instance.uuid] = (True, 'floating')
            continue
        movable, reason = movability(instance, specs, domain_cpus)
        why[instance.uuid] = (movable, reason)
        workload = ('memory' if instance.uuid in classified
                    else workload_of(specs))
        pinned = held_pinning(instance, held, domains) if movable else None
        if pinned is not None:
            movable, current = False, {v: pinned[1]
                                       for v in instance.nova.allowed}
        elif movable and instance.uuid in waiting:
            # The planner sees it over the open domains (it floats over
            # the closed ones too, which the planner does not see).
            allowed = ((shut and _within(instance.nova.allowed,
                                         domain_cpus))
                       or instance.nova.allowed)
            movable, current = False, _plan_current(
                allowed, domain_cpus, False)
            if current is False:
                continue
        else:
            current = _plan_current(instance.live, domain_cpus, movable)
            if current is False:
                continue
        vms.append(model.VM(id=instance.uuid,
                            vcpus=len(instance.nova.allowed),
                            workload=workload, current=current,
                            movable=movable))
    return model.PlanInput(domains=domains, vms=tuple(vms),
                           max_vcpus_per_cpu=float(max_vcpus_per_cpu)), why


def _pinning(result, uuid, vcpus):
    try:
        pinning = result.vms[uuid].pinning
        return {v: tuple(sorted(int(c) for c in pinning[v]))
                for v in range(vcpus)}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise PlannerError(reason='no pinning for every vCPU of %s (%s)'
                           % (uuid, e)) from None


def _within(pins, cpus):
    """``pins`` (``{vcpu: cpus}``) cut to the CPUs in ``cpus``.

    None when a vCPU would be left without a CPU: pins are never empty.
    """
    out = {v: tuple(c for c in pinned if c in cpus)
           for v, pinned in pins.items()}
    return out if all(out.values()) else None


#: Why a memory-bound instance with no place floats where it does.
NO_ROOM_REASON = 'memory-bound, no domain has room'
OUTSIDE_CLOSED_REASON = (NO_ROOM_REASON + ': Nova\'s CPUs outside the '
                         'cache_clean=required domains')


def _action(instance, vm, movable, reason, result, unplaced,
            open_cpus=None):
    """``(action, reason, desired)`` for an instance holding no domain.

    ``open_cpus``: with closed domains (:class:`Closed`), the CPUs of the
    others; None when none is closed.
    """
    current = dict(instance.live)
    if not movable:
        return (AUDIT if reason.startswith('dedicated') else KEEP), reason, \
            current
    if vm.workload == 'memory' and instance.uuid in unplaced:
        if open_cpus is not None:
            return _keep_out(instance, open_cpus)
        return KEEP, NO_ROOM_REASON, current
    if vm.workload == 'memory':
        return REPIN, 'memory-bound: All-share', _pinning(
            result, instance.uuid, vm.vcpus)
    return _restore(instance, '%s: Nova\'s CPUs' % vm.workload,
                    vm.workload)


def _keep_out(instance, open_cpus):
    """``(action, reason, desired)``: Nova's CPUs in the open domains.

    A memory-bound instance with no place, kept off the closed domains.
    Only vCPUs on Nova's CPUs or on the agent's pins move; pins set by
    someone else are left alone, and so is every vCPU when Nova allows
    no CPU of an open domain (the reason says so).
    """
    allowed = instance.nova.allowed
    if any(v not in instance.ours and cpus != allowed.get(v)
           for v, cpus in instance.live.items()):
        return KEEP, ('%s; pins not made by the agent, left alone'
                      % NO_ROOM_REASON), dict(instance.live)
    inside = _within({v: allowed[v] for v in instance.live}, open_cpus)
    if inside is None:
        return KEEP, ('%s; Nova allows no CPU outside the '
                      'cache_clean=required domains' % NO_ROOM_REASON), \
            dict(instance.live)
    return REPIN, OUTSIDE_CLOSED_REASON, inside


def _restore(instance, reason, workload='memory-bound'):
    """``(action, reason, desired)``: back on Nova's CPUs, if ours."""
    # Undo only pins the agent made; pins set by someone else (an
    # operator, another tool) are left alone.
    allowed = instance.nova.allowed
    desired = {v: allowed[v] if v in instance.ours else cpus
               for v, cpus in instance.live.items()}
    if any(cpus != allowed.get(v) for v, cpus in desired.items()):
        return KEEP, ('%s: pins not made by the agent, left alone'
                      % workload), desired
    return RESTORE, reason, desired


def decisions_from_plan(plan_input, result, instances, why, held=None,
                        chosen=frozenset(), waiting=frozenset(),
                        closed=NOTHING_CLOSED):
    """Per-instance :class:`Decision` from the planner's :class:`~.Plan`.

    * floating and holding a domain in Placement (``held``, as for
      :func:`build_plan_input`): repin every vCPU to that domain (for the
      uuids in ``chosen``, the per-host model: a domain the agent chose for
      the host room the instance holds);
    * unmovable: keep (dedicated ones: audit, never touched);
    * movable memory-bound and placed: repin to the planner's pinning;
    * movable memory-bound but unplaced: keep; with ``closed`` domains
      (:class:`Closed`), Nova's allowed CPUs of the other domains;
    * movable and ``waiting`` (see :func:`build_plan_input`): restore
      Nova's allowed CPUs on the vCPUs the agent pinned;
    * movable and not memory-bound: restore Nova's allowed CPUs on the
      vCPUs the agent pinned earlier (a VM declared memory-bound may change
      flavor, a classifier may change its mind); pins made by anyone else
      are kept.
    """
    if not isinstance(result, model.Plan):
        raise PlannerError(reason='expected a Plan, not %s'
                           % type(result).__name__)
    unplaced = set(result.unplaced)
    if not plan_input.domains:
        # Every usable domain is closed: nothing was planned.
        unplaced.update(vm.id for vm in plan_input.vms)
    by_uuid = {vm.id: vm for vm in plan_input.vms}
    by_uuid.update(closed.vms)
    every_domain = plan_input.domains + closed.domains
    shut = closed.cpus
    open_cpus = frozenset(c for d in plan_input.domains for c in d.cpus)
    out = []
    for instance in sorted(instances, key=lambda i: i.uuid):
        movable, reason = why[instance.uuid]
        vm = by_uuid.get(instance.uuid) or model.VM(
            id=instance.uuid, vcpus=len(instance.nova.allowed),
            workload='unknown')
        planned = result.vms.get(instance.uuid)
        domains, share = ((planned.domains, planned.share) if planned
                          else ((), ''))
        pinned = (held_pinning(instance, held, every_domain)
                  if movable else None)
        if pinned is not None:
            action = REPIN
            reason = (('holds room of the host in Placement; the agent '
                       'chose %s' if instance.uuid in chosen else
                       'holds %s in Placement') % pinned[0])
            desired = {v: pinned[1] for v in instance.nova.allowed}
            domains, share = (pinned[0],), model.SHARE_ALL
        elif movable and instance.uuid in waiting:
            # Over every CPU, closed domains too: confined to the others,
            # its pins would read as a home there at the next choice.
            action, reason, desired = _restore(instance, WAITING_REASON)
            domains, share = (), ''
            if shut and vm.workload == 'memory':
                domains, share = _touched(every_domain, desired)
        else:
            action, reason, desired = _action(
                instance, vm, movable, reason, result, unplaced,
                open_cpus if shut else None)
            if shut:
                # The planner's domains leave the closed ones out.
                domains, share = _touched(every_domain, desired)
        out.append(Decision(
            uuid=instance.uuid, name=instance.nova.instance_name
            or instance.nova.name, workload=vm.workload, movable=movable,
            reason=reason, action=action, current=dict(instance.live),
            desired=dict(desired), allowed=dict(instance.nova.allowed),
            domains=tuple(domains), share=share,
            nova_pinned=instance.nova.nova_pinned))
    return out


def audit_dedicated(decision):
    """A problem string if a dedicated instance's live pins left Nova's."""
    drift = {v: cpus for v, cpus in decision.current.items()
             if tuple(cpus) != tuple(decision.allowed.get(v, ()))}
    if not drift:
        return ''
    return ('dedicated instance %s: live pins %s differ from Nova\'s %s '
            '(changed outside Nova; the agent does not touch it)'
            % (decision.uuid,
               {v: cpulist.format_cpulist(c) for v, c in drift.items()},
               {v: cpulist.format_cpulist(decision.allowed[v])
                for v in drift if v in decision.allowed}))


class Planner:
    """The repinning planner: the ``plan`` contract, typed, with memory.

    ``planner(plan_input) -> Plan`` is what ``nova-cacheaware plan`` does
    (:func:`~.cachedomain.plan`), except right after one memory-bound
    arrival or departure on a large host: then the incremental replan
    (:func:`~.allshare_replan.replan`) from the last input and plan.
    ``objective``: the ``plan`` input's ``objective`` (``[agent]
    plan_objective``), set on every input that names the default.
    """

    def __init__(self, objective='contract'):
        self.objective = objective
        self._last = {}

    def with_objective(self, plan_input):
        """``plan_input`` with the planner's objective if it names the default.

        What is planned, and what ``--dump-state`` records for the replay.
        """
        if self.objective != 'contract' and plan_input.objective == 'contract':
            return dataclasses.replace(plan_input, objective=self.objective)
        return plan_input

    def __call__(self, plan_input):
        """The :class:`~.cachedomain_model.Plan` for ``plan_input``."""
        plan_input = self.with_objective(plan_input)
        last = self._last
        if last:
            result, _ = allshare_replan.replan(
                plan_input, last['input'], last['plan'].unplaced)
            last['previous'] = previous_section(last['input'],
                                                last['plan'].unplaced)
        else:
            result = cachedomain.plan(plan_input)
            last['previous'] = None
        last.update(input=plan_input, plan=result)
        return result

    def previous(self):
        """The ``previous`` section the last plan was made against.

        None: it was a full plan. ``--dump-state`` writes it so that the
        ``plan`` command replays an incremental plan exactly.
        """
        return self._last.get('previous')


def previous_section(plan_input, unplaced):
    """The ``plan`` input's ``previous`` section: last input, its unplaced."""
    return {'input': model.input_to_dict(plan_input),
            'unplaced': sorted(unplaced)}
