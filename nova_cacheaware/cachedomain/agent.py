"""Repinning in the agent: sample counters, classify, plan, act.

The repin step of every pass of :class:`~nova_cacheaware.agent.service.
Agent`: the pure rules are :mod:`.repinning` (decisions), :mod:`.planner`
(the ``plan`` contract) and :mod:`.trials` (sampling windows); this step
holds their state between passes and calls the adapters it is given: the
planner, the actuator (:class:`~nova_cacheaware.agent.actuator.Actuator`),
the counter source (:mod:`.counters`) and the classifier
(:class:`~.sampling.ShareSampler`).

Repinning is the agent's fixed first step, not an entry-point capability:
the pass's Placement writes (held domains, ``MEMBOUND`` reserved), its
host report, the describe RPC, the metrics and the ``--once`` and
``--dump-state`` outputs are made of its plan and decisions, which a
:class:`~nova_cacheaware.agent.capability.Capability`'s report does not
carry; and it must run before the capabilities (it leaves the full-NUMA
instances to ``numa_balance``). So the agent imports it, and this module
imports nothing of :mod:`nova_cacheaware.agent` (the packages would import
each other): what it needs of the host (its cache domains, the CPUs usable
now, what Placement holds, the vCPU thread ids) comes in as arguments.
"""

import logging

from nova_cacheaware.cachedomain import counters
from nova_cacheaware.cachedomain import model
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.cachedomain import trials
from nova_cacheaware.topology import cpulist

LOG = logging.getLogger(__name__)


class RepinStep:
    """Repinning's part of the agent's pass, with its state between passes.

    ``planner``: ``(PlanInput) -> Plan`` (:class:`~.repinning.Planner`);
    ``actuator`` applies :class:`~.repinning.Decision` changes;
    ``counter_source`` counts vCPU threads (a :class:`~.counters.
    CounterSource`; None: no counters); ``classifier``: the run-time
    classifier of ``auto`` VMs (None: declared workloads only).
    """

    def __init__(self, planner, actuator, counter_source=None,
                 classifier=None, max_vcpus_per_cpu=1.0):
        self.planner = planner
        self.actuator = actuator
        self.counter_source = counter_source or counters.NoCounterSource()
        self.classifier = classifier
        self.max_vcpus_per_cpu = max_vcpus_per_cpu
        self._last_counts = {}

    def sample_counters(self, instances, thread_ids):
        """``{"<uuid>/<vcpu>": derived}`` since the previous sample.

        ``thread_ids``: ``() -> {key: tid}`` of the instances' vCPU threads,
        called only for a source that counts threads (a QEMU monitor
        command per instance).
        """
        source = self.counter_source
        if not source.available():
            return {}
        if source.per_thread:
            counts = source.sample(thread_ids())
        else:
            # A replayed trace needs no thread ids (no QEMU monitor).
            counts = source.sample_instances(instances)
        out = {}
        for key, now in counts.items():
            before = self._last_counts.get(key)
            if before:
                out[key] = derived(before, now)
        self._last_counts = counts
        return out

    def plan_input(self, snapshot, domain_set, usable, held,
                   waiting=frozenset(), closed=frozenset()):
        """The ``plan`` input, ``{uuid: (movable, reason)}`` and the closed.

        ``usable``: the CPUs usable now; ``held``: ``{uuid: domain id}``
        held in Placement; ``waiting``: host-held instances that found no
        domain (:func:`~.repinning.build_plan_input`); ``closed``: the
        domains holding a ``cache_clean=required`` instance, kept from the
        planner (:func:`~.repinning.close_domains`).
        """
        # The classifier's verdicts go in as a set of memory-bound uuids.
        classified = frozenset()
        if self.classifier is not None:
            self.classifier.observe(snapshot)
            classified = frozenset(self.classifier.memory_bound())
        shut = repinning.close_domains(
            domain_set, usable, snapshot.instances, snapshot.specs, held,
            closed, classified=classified)
        plan_input, why = repinning.build_plan_input(
            domain_set, usable, snapshot.instances, snapshot.specs,
            self.max_vcpus_per_cpu, held=held, classified=classified,
            waiting=waiting, closed=shut)
        return plan_input, why, shut

    def decide(self, snapshot, domain_set, usable, held,
               chosen=frozenset(), waiting=frozenset(), closed=frozenset()):
        """Plan input, plan and per-instance decisions (all typed).

        The decisions are :mod:`~.repinning`'s; the classifier's sampling
        window, if one runs, gives its VM the window's pins for this pass
        instead of the plan's. ``chosen``: the instances whose held domain
        the agent chose (per-host model); ``closed``: the domains holding
        a ``cache_clean=required`` instance. The plan returned has every
        domain, the closed ones too (:func:`~.repinning.with_closed`).
        """
        plan_input, why, shut = self.plan_input(
            snapshot, domain_set, usable, held, waiting, closed)
        if plan_input.domains:
            plan = self.planner(plan_input)
        elif shut.domains:
            # Every usable domain holds a required instance: nothing to
            # plan, the held instances are still pinned to theirs.
            plan = repinning.NO_PLAN
        else:
            # No usable CPU in any domain: nothing can be planned or moved.
            LOG.warning('no usable cache domain (check [agent] '
                        'cpu_shared_set); nothing is moved')
            plan = repinning.NO_PLAN
            why = {u: (False, 'no usable cache domain') for u in why}
        decisions = repinning.decisions_from_plan(
            plan_input, plan, snapshot.instances, why, held=held,
            chosen=chosen, waiting=waiting, closed=shut)
        if self.classifier is not None:
            # Sampling windows: an 'auto' VM briefly in the other mode.
            trial = self.classifier.window(snapshot, plan_input, plan,
                                           decisions)
            decisions = trials.with_trial(decisions, trial,
                                          plan_input.domains)
        return (plan_input, repinning.with_closed(plan, shut, decisions),
                decisions)

    def act(self, snapshot, decisions):
        """Apply ``decisions``; ``(ApplyResult, problems)``.

        ``problems``: dedicated instances whose live pins left Nova's
        (logged, never touched).
        """
        problems = [p for p in (repinning.audit_dedicated(d)
                                for d in decisions
                                if d.action == repinning.AUDIT) if p]
        for problem in problems:
            LOG.warning('%s', problem)
        result = self.actuator.apply(decisions)
        self.actuator.forget_others(i.uuid for i in snapshot.instances)
        return result, problems

    def state_document(self, snapshot, domain_set, usable, held,
                       waiting=frozenset(), closed=frozenset()):
        """The ``plan`` input document with the ``"agent"`` section.

        Planned as the last pass did (classified VMs as memory, the VMs
        holding a domain in Placement fixed there), under the planner's
        ``objective``; with ``previous`` when the last plan was
        incremental. ``nova-cacheaware plan --input`` replays it.
        """
        plan_input, why, shut = self.plan_input(
            snapshot, domain_set, usable, held, waiting, closed)
        with_objective = getattr(self.planner, 'with_objective', None)
        if with_objective is not None:
            plan_input = with_objective(plan_input)
        doc = model.input_to_dict(plan_input)
        # Always written: the plan command replays under this objective
        # whatever [agent] plan_objective's default is.
        doc['objective'] = plan_input.objective
        doc['agent'] = {
            'usable_cpus': list(usable),
            'cache_level': domain_set.level,
            # Left out of the plan input: each holds a required instance.
            'closed_domains': [d.id for d in shut.domains],
            'instances': {
                i.uuid: {
                    'name': i.nova.instance_name or i.nova.name,
                    'flavor': i.nova.flavor,
                    'allowed': {str(v): list(c)
                                for v, c in sorted(i.nova.allowed.items())},
                    'nova_pinned': i.nova.nova_pinned,
                    'dedicated': i.nova.dedicated,
                    'movable_reason': why[i.uuid][1],
                    'holds_domain': held.get(i.uuid),
                    'extra_specs': snapshot.specs.get(i.uuid, {}),
                    'spec_error': snapshot.spec_errors.get(i.uuid),
                    'vcpu_stats': {str(v): s for v, s in sorted(
                        snapshot.stats.get(i.uuid, {}).items())},
                } for i in snapshot.instances},
            'counters': snapshot.counters,
        }
        previous = getattr(self.planner, 'previous', None)
        if previous is not None and previous() is not None:
            # The last plan was incremental: replay it against its input.
            doc['previous'] = previous()
        return doc

    def close(self):
        """Release the counter source (the agent stops)."""
        self.counter_source.close()


def derived(before, after):
    """What the classifier uses, between two cumulative samples.

    ``cpi`` (with cycles) and ``llc_mpki`` (LLC misses per kilo-instruction,
    with LLC misses), plus the raw ``instructions`` and ``llc_misses``
    deltas that windows of several samples add up
    (:class:`~.sampling.ShareSampler`). Nothing without an instruction
    count that moved.
    """
    d = {k: after[k] - before.get(k, 0) for k in after if k in before}
    out = {}
    if d.get('instructions', 0) > 0:
        out['instructions'] = d['instructions']
        if 'cycles' in d:
            out['cpi'] = d['cycles'] / d['instructions']
        if 'llc_misses' in d:
            out['llc_misses'] = d['llc_misses']
            out['llc_mpki'] = 1000.0 * d['llc_misses'] / d['instructions']
    return out


def format_decisions(decisions, result=None):
    """The decisions as a table for a person (``--once``)."""
    rows = [('INSTANCE', 'NAME', 'WORKLOAD', 'ACTION', 'CURRENT', 'DESIRED',
             'DOMAINS', 'REASON')]

    def pins(m):
        groups = {}
        for v, cpus in sorted(m.items()):
            groups.setdefault(cpulist.format_cpulist(cpus), []).append(v)
        return ' '.join('%s:%s' % (cpulist.format_cpulist(vs), cpus)
                        for cpus, vs in groups.items()) or '-'

    for d in decisions:
        action = d.action if d.changes() or d.action == repinning.AUDIT \
            else repinning.KEEP
        rows.append((d.uuid[:8], d.name[:16] or '-', d.workload, action,
                     pins(d.current), pins(d.desired),
                     ','.join(d.domains) or '-', d.reason))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths)) + '  ' + r[-1]
             for r in rows]
    if result is not None:
        lines.append('repins: %d ok, %d failed, %d deferred, %d dry-run'
                     % (len(result.succeeded), len(result.failed),
                        len(result.deferred), len(result.dry_run)))
    return '\n'.join(lines)


def decisions_document(decisions):
    """The decisions as JSON (``--dump-state``): ``{uuid: {workload, ...}}``.

    ``action`` is ``keep`` when nothing would change, as in the ``--once``
    table; ``current``/``desired`` are ``{vcpu: cpulist}``.
    """
    def pins(m):
        return {str(v): cpulist.format_cpulist(c)
                for v, c in sorted(m.items())}

    out = {}
    for d in decisions:
        action = (d.action if d.changes() or d.action == repinning.AUDIT
                  else repinning.KEEP)
        out[d.uuid] = {'name': d.name, 'workload': d.workload,
                       'movable': d.movable, 'action': action,
                       'domains': list(d.domains), 'reason': d.reason,
                       'current': pins(d.current),
                       'desired': pins(d.desired)}
    return out
