"""Contention fixed across hosts: which live migrations restore the most.

Pure: :mod:`.policy` (``plan_moves``: the ordered live migrations within
a budget that restore the most Clean and All-share servers) on
:mod:`.model` (the decision's values, and the region it plays moves on
with each host's agent's own domain choice). The Watcher strategy
(:mod:`nova_cacheaware.watcher`) is its adapter; ``nova-cacheaware
rebalance`` replays it from a region snapshot.
"""
