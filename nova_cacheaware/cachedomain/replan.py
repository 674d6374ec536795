"""Replan after one arrival or departure: incremental, or the full plan.

:func:`replan` is what the agent calls when the memory-bound VMs of a host
changed by exactly one since its last plan. On hosts that the full plan
solves by the heuristic (more than ``cachedomain.REFINE_MAX_VMS`` movable
memory-bound VMs) it runs
:func:`~nova_cacheaware.cachedomain.incremental.incremental` (moves at
most ``MAX_MOVES`` VMs placed before) and keeps it when it meets the
threshold (:func:`~nova_cacheaware.cachedomain.incremental.acceptable`:
placed count optimal, no VM split beyond its minimum span) and the dirt
threshold (:func:`~nova_cacheaware.cachedomain.incremental.dirt_within`:
at most ``DIRT_BOUND`` dirtier than the greedy phase of the full plan, a
few milliseconds); otherwise, and on smaller hosts, the full
:func:`~nova_cacheaware.cachedomain.planner.plan`.
"""

from nova_cacheaware.cachedomain import heuristic as allshare_heuristic
from nova_cacheaware.cachedomain import incremental as allshare_incremental
from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

MAX_MOVES = allshare_incremental.MAX_MOVES
DIRT_BOUND = allshare_incremental.DIRT_BOUND


def change(previous, plan_input):
    """Domains touched by one memory-bound arrival or departure, or None.

    None unless ``previous`` and ``plan_input`` (both
    :class:`~nova_cacheaware.cachedomain.model.PlanInput`) have the
    same domains, ratio and objective (``contract``) and their movable
    memory-bound VMs differ by exactly one VM (the others may have moved:
    the agent applied the last plan). A departure touches the domains the
    departed VM's CPUs touched; an arrival none yet.
    """
    if previous is None or plan_input.objective != 'contract':
        return None
    if (previous.domains != plan_input.domains
            or previous.max_vcpus_per_cpu != plan_input.max_vcpus_per_cpu
            or previous.objective != plan_input.objective):
        return None

    def memory(doc):
        return {vm.id: vm for vm in doc.vms if vm.memory_bound}

    before, after = memory(previous), memory(plan_input)
    gone = set(before) - set(after)
    new = set(after) - set(before)
    if len(gone) + len(new) != 1:
        return None
    if any(before[v].movable != after[v].movable
           or before[v].vcpus != after[v].vcpus for v in set(before) & set(
               after)):
        return None
    if new:
        return frozenset()
    vm = before[gone.pop()]
    index = previous.domain_index
    return frozenset(index[c] for cpus in previous.pinning_now(vm).values()
                     for c in cpus)


def replan(plan_input, previous, unplaced=(), max_moves=MAX_MOVES,
           dirt_bound=DIRT_BOUND):
    """The plan for ``plan_input`` after one change since ``previous``.

    ``previous``: the last plan's input; ``unplaced``: the ids it left
    unplaced; ``dirt_bound``: the dirt threshold (None: no dirt check,
    the behaviour before it existed). Returns ``(plan, incremental)``:
    ``incremental`` is True when the incremental plan was used, False
    when the full plan ran.
    """
    touched = change(previous, plan_input)
    inst, movable = cachedomain.build_instance(plan_input)
    if touched is not None and len(movable) > cachedomain.REFINE_MAX_VMS:
        unplaced = frozenset(unplaced)
        skip = {n for n, vm in enumerate(movable) if vm.id in unplaced}
        placements = allshare_incremental.incremental(
            inst, touched, allshare_heuristic.greedy_place, skip, max_moves)
        if placements is not None and allshare_incremental.acceptable(
                inst, placements) and _clean_enough(inst, placements,
                                                    dirt_bound):
            return cachedomain.assemble(plan_input, movable,
                                        placements), True
    return cachedomain.plan(plan_input), False


def _clean_enough(inst, placements, bound):
    """The dirt threshold against the full plan's greedy phase."""
    if bound is None:
        return True
    reference = allshare_heuristic.greedy(inst)
    return allshare_incremental.dirt_within(inst, placements, reference,
                                            bound)


#: The ``previous`` section: ``input`` and ``unplaced`` only.
SECTION = schema.Check(
    lambda value: (isinstance(value, dict)
                   and not set(value) - {'input', 'unplaced'}),
    '"previous" must be an object with "input" and "unplaced" only')
#: Its fields, in the order they are checked (each message a whole line).
SECTION_SCHEMA = {
    'unplaced': (schema.Check(
        lambda value: (isinstance(value, list)
                       and all(isinstance(v, str) for v in value)),
        '"previous.unplaced" must be a list of VM ids', convert=frozenset),
        frozenset()),
    'input': (schema.Check(
        lambda value: isinstance(value, dict) and 'previous' not in value,
        '"previous.input" must be a plan input without "previous"'),
        schema.AS_NULL),
}


def _invalid(message):
    return exception.InvalidInput(reason=message)


def previous_from_dict(doc):
    """The ``previous`` section of a ``plan`` input: ``(input, unplaced)``.

    None when ``doc`` has no ``previous``. The section is what the agent's
    ``--dump-state`` writes after an incremental replan: ``{"input": <plan
    input>, "unplaced": [ids]}``. Raises
    :class:`~nova_cacheaware.exception.InvalidInput` naming the problem.
    """
    section = doc.get('previous') if isinstance(doc, dict) else None
    if section is None:
        return None
    with schema.reraise(_invalid):
        SECTION.check(section, 'previous', 'previous')
        values = schema.fields(section, SECTION_SCHEMA, 'previous')
    # The inner plan input words its own problems.
    return (cachedomain_model.input_from_dict(values['input']),
            values['unplaced'])


def plan_from_dict(doc):
    """Plan a JSON ``plan`` input as the agent did: replan or full plan.

    With a ``previous`` section, :func:`replan` against it (what the agent
    ran right after one arrival or departure); without, the full plan.
    """
    plan_input = cachedomain_model.input_from_dict(doc)
    previous = previous_from_dict(doc)
    if previous is None:
        return cachedomain.plan(plan_input)
    return replan(plan_input, previous[0], previous[1])[0]
