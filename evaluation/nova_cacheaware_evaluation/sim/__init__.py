"""Simulators of the cache, balloon, NUMA and cloud experiments.

The ``nova-cacheaware simulate`` commands and the evaluation
(doc/source/evaluation/).
"""
