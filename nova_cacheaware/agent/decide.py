"""The repinning planner's wiring, and the old path of its decisions.

The decisions themselves are pure and live in
:mod:`nova_cacheaware.policy.repinning` (typed snapshot in, desired state
out; the safety rules are there); :func:`default_planner` is the single
place where the agent is wired to the planner. The other names are
re-exported for the modules and tools that still import them from here.
"""

from nova_cacheaware import exception
from nova_cacheaware.policy import repinning

# Old path of the policy's names (nova_cacheaware.agent.decide.REPIN, ...).
WORKLOADS = repinning.WORKLOADS
WORKLOAD_SPEC = repinning.WORKLOAD_SPEC
CPU_POLICY_SPEC = repinning.CPU_POLICY_SPEC
NUMA_SPEC = repinning.NUMA_SPEC
FULL_NUMA_REASON = repinning.FULL_NUMA_REASON
KEEP, REPIN, RESTORE, AUDIT = (repinning.KEEP, repinning.REPIN,
                               repinning.RESTORE, repinning.AUDIT)
PlannerError = repinning.PlannerError
Decision = repinning.Decision
workload_of = repinning.workload_of
is_dedicated = repinning.is_dedicated
usable_domains = repinning.usable_domains
movability = repinning.movability
held_pinning = repinning.held_pinning
build_plan_input = repinning.build_plan_input
decisions_from_plan = repinning.decisions_from_plan
audit_dedicated = repinning.audit_dedicated
previous_section = repinning.previous_section


class PlannerUnavailable(exception.CacheAwareError):
    """The pure planner module is not installed."""

    msg_fmt = ('the cache-domain planner is not available (%(reason)s); '
               'install a nova-cacheaware that ships '
               'nova_cacheaware.policy.cachedomain')


def default_planner(objective='contract'):
    """The real planner: a :class:`~.repinning.Planner`.

    ``objective``: the ``plan`` input's ``objective`` (``[agent]
    plan_objective``). The planner takes the typed ``plan`` input and
    returns the typed plan (``nova-cacheaware plan`` is the same on
    JSON); its ``previous()`` is the ``previous`` section ``--dump-state``
    writes after an incremental replan.
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
    return repinning.Planner(objective)
