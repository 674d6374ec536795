"""Decide: turn observations into the ``plan`` input, call the planner, and
derive the per-instance pins the actuator may apply.

No I/O here. The planner is injected (``planner(doc) -> dict``) and speaks the
``nova-cacheaware plan`` JSON contract, so every decision can be replayed
offline from the snapshot written by ``nova-cacheaware-agent --dump-state``.

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
"""

import dataclasses
import typing as ty

from nova_cacheaware.api import specs as api_specs
from nova_cacheaware import exception
from nova_cacheaware.topology import cpulist

WORKLOADS = ('memory', 'cpu', 'io')
WORKLOAD_SPEC = api_specs.WORKLOAD
CPU_POLICY_SPEC = 'hw:cpu_policy'
NUMA_SPEC = api_specs.NUMA
#: Why the repin planner leaves full-NUMA instances alone.
FULL_NUMA_REASON = 'full-NUMA: CPUs are handed off by numa_balance'

KEEP = 'keep'
REPIN = 'repin'
RESTORE = 'restore'
AUDIT = 'audit'


class PlannerUnavailable(exception.CacheAwareError):
    """The pure planner module is not installed."""

    msg_fmt = ('the cache-domain planner is not available (%(reason)s); '
               'install a nova-cacheaware that ships '
               'nova_cacheaware.policy.cachedomain')


class PlannerError(exception.CacheAwareError):
    """The planner returned something that breaks the plan contract."""

    msg_fmt = 'planner output is not usable: %(reason)s'


def default_planner(objective='contract'):
    """The real planner: ``nova_cacheaware.policy.cachedomain``.

    ``objective``: the ``plan`` input's ``objective`` (``[agent]
    plan_objective``), set on every document that does not name one.

    This is the single place where the agent is wired to the pure policy.
    It returns a callable taking the ``plan`` input document and returning
    the ``plan`` output document, what ``nova-cacheaware plan`` does
    (``input_from_dict`` -> ``plan`` -> ``plan_to_dict``), except right
    after one memory-bound arrival or departure on a large host: then the
    incremental replan (``allshare_replan.replan``).
    """
    try:
        from nova_cacheaware.policy import cachedomain
    except ImportError as e:
        raise PlannerUnavailable(reason=str(e)) from None
    needed = ('input_from_dict', 'plan', 'plan_to_dict')
    missing = [n for n in needed if not hasattr(cachedomain, n)]
    if missing:
        raise PlannerUnavailable(
            reason='nova_cacheaware.policy.cachedomain lacks %s'
                   % ', '.join(missing))

    from nova_cacheaware.policy import allshare_replan
    last = {}

    def plan_document(doc):
        # After one memory-bound arrival or departure since the last plan,
        # replan incrementally (allshare_replan; the full plan otherwise).
        if 'objective' not in doc and objective != 'contract':
            doc = dict(doc, objective=objective)
        plan_input = cachedomain.input_from_dict(doc)
        if last:
            result, _ = allshare_replan.replan(
                plan_input, last['input'], last['plan'].unplaced)
            last['previous'] = previous_section(last['input'],
                                                last['plan'].unplaced)
        else:
            result = cachedomain.plan(plan_input)
            last['previous'] = None
        last.update(input=plan_input, plan=result)
        return cachedomain.plan_to_dict(result)

    def previous():
        # The "previous" section the last plan was made against (None: it
        # was a full plan), so that --dump-state replays it exactly.
        return last.get('previous')

    plan_document.previous = previous
    return plan_document


def previous_section(plan_input, unplaced):
    """The ``plan`` input's ``previous`` section: last input, its unplaced."""
    from nova_cacheaware.policy import cachedomain
    return {'input': cachedomain.input_to_dict(plan_input),
            'unplaced': sorted(unplaced)}


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
    """``plan`` domains: each cache domain cut to the usable CPUs.

    Domains left with no usable CPU are dropped.
    """
    usable = set(usable_cpus)
    out = []
    for domain in domain_set.domains:
        cpus = sorted(set(domain.cpus) & usable)
        if cpus:
            out.append({'id': domain.id, 'cpus': cpus})
    return out


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
    """``current`` as the planner may see it, or None to leave the VM out.

    The ``plan`` contract only knows CPUs of the domains. An unmovable VM
    with a CPU outside them lies inside no domain, so it cannot count
    against any domain's capacity: it is left out of the plan. A movable
    VM's CPUs are cut to the domains; if a vCPU has none left, ``current``
    is omitted (the planner then assumes all CPUs).
    """
    if not movable:
        if all(set(cpus) <= domain_cpus for cpus in live.values()):
            return {str(v): list(cpus) for v, cpus in sorted(live.items())}
        return None
    cut = {str(v): sorted(set(cpus) & domain_cpus)
           for v, cpus in sorted(live.items())}
    if not all(cut.values()):
        return {}
    return cut


def held_pinning(instance, held, domains):
    """``(domain id, cpus)`` an instance holding a domain is pinned to.

    None when ``held`` names no domain for it, the domain has no usable
    CPU here, or Nova does not allow every vCPU on all of its CPUs.
    """
    domain_id = (held or {}).get(instance.uuid)
    cpus = {d['id']: tuple(d['cpus']) for d in domains}.get(domain_id)
    if not cpus:
        return None
    if any(not set(cpus) <= set(allowed)
           for allowed in instance.nova.allowed.values()):
        return None
    return domain_id, cpus


def build_plan_input(domain_set, usable_cpus, instances, specs_by_uuid,
                     max_vcpus_per_cpu=1.0, held=None):
    """The ``plan`` input document, plus ``{uuid: (movable, reason)}``.

    Unmovable instances outside the domains (dedicated ones on
    ``cpu_dedicated_set``, for instance) are not in the document; their
    entry in the second value says why they stay. ``held`` is
    ``{uuid: domain id}`` of instances holding a domain in Placement: a
    floating one enters the plan as unmovable, inside that domain.
    """
    domains = usable_domains(domain_set, usable_cpus)
    domain_cpus = {c for d in domains for c in d['cpus']}
    vms = []
    why = {}
    for instance in sorted(instances, key=lambda i: i.uuid):
        specs = specs_by_uuid.get(instance.uuid, {})
        movable, reason = movability(instance, specs, domain_cpus)
        why[instance.uuid] = (movable, reason)
        pinned = held_pinning(instance, held, domains) if movable else None
        if pinned is not None:
            vms.append({'id': instance.uuid,
                        'vcpus': len(instance.nova.allowed),
                        'workload': workload_of(specs), 'movable': False,
                        'current': {str(v): list(pinned[1]) for v in
                                    sorted(instance.nova.allowed)}})
            continue
        current = _plan_current(instance.live, domain_cpus, movable)
        if current is None:
            continue
        vm = {'id': instance.uuid, 'vcpus': len(instance.nova.allowed),
              'workload': workload_of(specs), 'movable': movable}
        if current:
            vm['current'] = current
        vms.append(vm)
    doc = {'domains': domains, 'max_vcpus_per_cpu': float(max_vcpus_per_cpu),
           'vms': vms}
    return doc, why


def _pinning(result, uuid, vcpus):
    try:
        pinning = result['vms'][uuid]['pinning']
        return {int(v): tuple(sorted(int(c) for c in pinning[str(v)]))
                for v in range(vcpus)}
    except (KeyError, TypeError, ValueError) as e:
        raise PlannerError(reason='no pinning for every vCPU of %s (%s)'
                           % (uuid, e)) from None


def decisions_from_plan(plan_input, result, instances, why, held=None,
                        chosen=frozenset()):
    """Per-instance :class:`Decision` from the planner's ``result``.

    * floating and holding a domain in Placement (``held``, as for
      :func:`build_plan_input`): repin every vCPU to that domain (for the
      uuids in ``chosen``, the per-host model: a domain the agent chose for
      the host room the instance holds);
    * unmovable: keep (dedicated ones: audit, never touched);
    * movable memory-bound and placed: repin to the planner's pinning;
    * movable memory-bound but unplaced: keep;
    * movable and not memory-bound: restore Nova's allowed CPUs on the
      vCPUs the agent pinned earlier (a VM declared memory-bound may change
      flavor, a classifier may change its mind); pins made by anyone else
      are kept.
    """
    if not isinstance(result, dict) or not isinstance(
            result.get('vms'), dict):
        raise PlannerError(reason='expected {"vms": {...}, ...}')
    unplaced = set(result.get('unplaced', ()))
    by_uuid = {vm['id']: vm for vm in plan_input['vms']}
    domains = plan_input['domains']
    out = []
    for instance in sorted(instances, key=lambda i: i.uuid):
        movable, reason = why[instance.uuid]
        vm = by_uuid.get(instance.uuid, {'workload': 'unknown',
                                         'vcpus': len(instance.nova.allowed)})
        allowed = dict(instance.nova.allowed)
        current = dict(instance.live)
        planned = result['vms'].get(instance.uuid, {})
        desired = current
        pinned = held_pinning(instance, held, domains) if movable else None
        if pinned is not None:
            action = REPIN
            reason = (('holds room of the host in Placement; the agent '
                       'chose %s' if instance.uuid in chosen else
                       'holds %s in Placement') % pinned[0])
            desired = {v: pinned[1] for v in allowed}
            planned = {'domains': [pinned[0]], 'share': 'all'}
        elif not movable:
            action = AUDIT if reason.startswith('dedicated') else KEEP
        elif vm['workload'] == 'memory' and instance.uuid in unplaced:
            action, reason = KEEP, 'memory-bound, no domain has room'
        elif vm['workload'] == 'memory':
            action, reason = REPIN, 'memory-bound: All-share'
            desired = _pinning(result, instance.uuid, vm['vcpus'])
        else:
            # Undo only pins the agent made; pins set by someone else
            # (an operator, another tool) are left alone.
            desired = {v: allowed[v] if v in instance.ours else cpus
                       for v, cpus in current.items()}
            action, reason = RESTORE, '%s: Nova\'s CPUs' % vm['workload']
            if any(cpus != allowed.get(v) for v, cpus in desired.items()):
                action = KEEP
                reason = ('%s: pins not made by the agent, left alone'
                          % vm['workload'])
        out.append(Decision(
            uuid=instance.uuid, name=instance.nova.instance_name
            or instance.nova.name, workload=vm['workload'], movable=movable,
            reason=reason, action=action, current=current,
            desired=dict(desired), allowed=allowed,
            domains=tuple(planned.get('domains', ())),
            share=planned.get('share', ''),
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
