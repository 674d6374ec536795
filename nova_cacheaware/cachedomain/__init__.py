"""Cache domains (study 000): All-share, Clean, and which domain a VM gets.

Pure. The planner of the ``plan`` contract (:mod:`.planner`, its types in
:mod:`.model`): an exact search (:mod:`.search`, :mod:`.search_state`,
:mod:`.transport`) and a heuristic (:mod:`.heuristic`, :mod:`.moves`),
incremental replanning (:mod:`.incremental`, :mod:`.replan`) and the
tie-breaks on oversubscribed hosts (:mod:`.fair_share`,
:mod:`.throughput`). The memory-bound classifier (:mod:`.memclass`,
:mod:`.stats`) and the agent's sampling trials (:mod:`.trials`); the
agent's repinning decisions (:mod:`.repinning`). Which domain of a host
an instance gets: the rule the scheduler orders domains by
(:mod:`.choice`) and the agent's choice with it (:mod:`.assignment`,
replayed from :mod:`.choice_doc`). Adapters: the agent's loop
(:mod:`nova_cacheaware.agent`) and the scheduler plugins
(:mod:`nova_cacheaware.scheduler`).
"""
