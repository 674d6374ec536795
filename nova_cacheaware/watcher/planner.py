"""The Watcher planner ``cache_rebalance``: the plan's migrations in order.

Watcher's default ``weight`` planner runs two migrations at a time
(``[watcher_planners.weight] parallelization``, ``migrate: 2``); the
rebalance plan is a sequence, each move predicted on the region the moves
before it left (a move may use the room an earlier one freed), so this
planner, the ``weight`` planner with one migration at a time, chains them:
each migration starts once the one before it succeeded, and a failure
stops the rest. ``[watcher_planners.cache_rebalance] parallelization``
still overrides it. Loaded by Watcher from the ``watcher_planners`` entry
point; the strategy names it (:mod:`.strategy`).
"""

from watcher.decision_engine.planner import weight

NAME = 'cache_rebalance'


class SequentialPlanner(weight.WeightPlanner):
    """Watcher's weight planner, one live migration at a time."""

    parallelization = dict(weight.WeightPlanner.parallelization, migrate=1)
