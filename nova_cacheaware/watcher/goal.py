"""The Watcher goal ``cache_isolation`` and its efficacy indicators.

Loaded by Watcher from the ``watcher_goals`` entry point (this module
imports Watcher: it only runs inside Watcher's decision engine, API and
tests). None of Watcher's own goals fits: ``workload_balancing`` evens out
CPU or memory load across hosts (its indicators are a standard deviation),
``noisy_neighbor`` migrates a low-priority VM by last-level-cache
occupancy metrics that Nova no longer provides, and ``unclassified`` has no
indicators at all. This goal's indicators say what an operator reviews
before applying a plan: how many live migrations, and how many servers
become Clean and All-share (``doc/source/admin/watcher.rst``).
"""

from watcher.decision_engine.goal import base
from watcher.decision_engine.goal.efficacy import base as efficacy_base
from watcher.decision_engine.goal.efficacy import indicators
from watcher.decision_engine.solution import efficacy

NAME = 'cache_isolation'


class _Count(indicators.IndicatorSpecification):
    """An integer indicator of this goal (at least 0)."""

    NAME = DESCRIPTION = None

    def __init__(self):
        super().__init__(name=self.NAME, description=self.DESCRIPTION,
                         unit=None)

    @property
    def schema(self):
        return {'type': 'integer', 'minimum': 0}


class CleanServersGained(_Count):
    """Memory-bound servers that become Clean (alone in their domain)."""

    NAME = 'clean_servers_gained'
    DESCRIPTION = ('Memory-bound servers that the plan makes Clean (alone '
                   'in their cache domain), net.')


class AllShareServersGained(_Count):
    """Cache-aware servers that become All-share (pinned in one domain)."""

    NAME = 'all_share_servers_gained'
    DESCRIPTION = ('Servers of cache-aware flavors that the plan pins into '
                   'one cache domain (All-share), net.')


class CacheIsolationSpecification(efficacy_base.EfficacySpecification):
    """Migrations planned, servers audited, Clean and All-share gained."""

    def get_indicators_specifications(self):
        return [indicators.InstanceMigrationsCount(),
                indicators.InstancesCount(),
                CleanServersGained(),
                AllShareServersGained()]

    def get_global_efficacy_indicator(self, indicators_map=None):
        gained = 0
        migrations = 0
        if indicators_map:
            gained = (indicators_map.clean_servers_gained
                      + indicators_map.all_share_servers_gained)
            migrations = indicators_map.instance_migrations_count
        return [efficacy.Indicator(
            name='servers_improved_per_migration',
            description='Servers made Clean or All-share per live '
                        'migration of the plan (0 for an empty plan).',
            unit=None,
            value=float(gained) / migrations if migrations else 0.0)]


class CacheIsolation(base.Goal):
    """Cache isolation.

    Memory-bound servers alone in their cache domain (Clean) and servers
    of cache-aware flavors pinned into one domain (All-share), restored by
    live migration where boot-time placement went stale.
    """

    @classmethod
    def get_name(cls):
        return NAME

    @classmethod
    def get_display_name(cls):
        return 'Cache isolation'

    @classmethod
    def get_translatable_display_name(cls):
        return 'Cache isolation'

    @classmethod
    def get_efficacy_specification(cls):
        return CacheIsolationSpecification()
