"""The best plan with a budget, by exhaustive search (tests only).

Every sequence of at most ``budget`` live migrations that keeps the rules
of :func:`nova_cacheaware.rebalance.policy.plan_moves` (movable servers,
server groups, a domain at the destination, no server worse off) - but,
unlike the greedy plan, moves that do not help on their own are allowed:
the yardstick for the greedy plan on small snapshots. Exponential: a few
hosts and servers only.
"""

import copy

from nova_cacheaware.rebalance import model as rebalance_model
from nova_cacheaware.rebalance import policy as rebalance


def legal_trials(region, snapshot):
    """Every :class:`~.rebalance_model.Trial` that keeps the rules."""
    for uuid in sorted(region.servers):
        server = region.servers[uuid]
        if not rebalance.movable(server, snapshot):
            continue
        anti = snapshot.group_policy(server.group) in (
            'anti-affinity', 'soft-anti-affinity')
        for destination in sorted(region.hosts):
            if destination == region.host_of[uuid] or (anti and any(
                    s.group == server.group
                    for s in region.members[destination].values())):
                continue
            trial = region.trial(uuid, destination)
            if trial.keeps_rules:
                yield trial


def optimum(snapshot, budget):
    """The highest :class:`~.rebalance_model.Score` within ``budget``."""
    start = rebalance_model.Region(snapshot)
    best = [start.score]

    def search(region, left):
        best[0] = max(best[0], region.score)
        if not left:
            return
        for trial in list(legal_trials(region, snapshot)):
            child = copy.deepcopy(region)
            child.commit(trial)
            search(child, left - 1)

    search(start, budget)
    return best[0]
