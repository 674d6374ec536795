"""The Watcher strategy ``cache_rebalance`` (goal ``cache_isolation``).

Loaded by Watcher's decision engine from the ``watcher_strategies`` entry
point. An audit:

1. ``pre_execute``: checks Watcher's compute model (and that it carries
   the flavors' extra specs: ``[compute_model]
   enable_extended_attributes``), reads each usable host's view from its
   agent, Placement's per-server limits on those hosts (``max_unit``),
   Nova's server groups and the ``cache_clean=required`` requests
   Nova's scheduler refused lately (:mod:`.sources`), and builds the
   rebalance snapshot (:func:`.snapshot.build`, pure);
2. ``do_execute``: runs :func:`nova_cacheaware.rebalance.policy.plan_moves`
   with the audit's migration budget and turns each move, in order, into
   a Watcher ``migrate`` action (``migration_type: live``, the move's
   destination host), which the ``cache_rebalance`` planner
   (:mod:`.planner`) chains one after the other: Nova's scheduler, with
   this project's filters, still checks each destination when the
   applier migrates;
3. ``post_execute``: the efficacy indicators of :mod:`.goal` and one log
   line per move (its reason and the domain the destination's agent will
   pin the server into).

Nothing to improve gives an empty solution: a successful audit with no
action. The operator page is ``doc/source/admin/watcher.rst``.
"""

import dataclasses
import datetime
import json
import logging
import math

from oslo_config import cfg
from oslo_log import log
from watcher.common import exception
from watcher.common import nova_helper
from watcher.common import placement_helper
from watcher.decision_engine.strategy.strategies import base

from nova_cacheaware.contracts import rebalance_snapshot
from nova_cacheaware.rebalance import policy as rebalance
from nova_cacheaware.watcher import goal
from nova_cacheaware.watcher import planner
from nova_cacheaware.watcher import snapshot
from nova_cacheaware.watcher import sources

LOG = log.getLogger(__name__)

NAME = 'cache_rebalance'
LIVE = 'live'
#: The default budget: migrations per 100 audited servers (rounded up).
PER_100_SERVERS = 1.0
#: Refused ``required`` requests of the last day count (a daily audit's).
REFUSED_WITHIN_HOURS = 24.0


class CacheRebalance(base.BaseStrategy):
    """Live-migrate servers to restore Clean and All-share cache domains."""

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        # One migration at a time, in the plan's order (:mod:`.planner`).
        self.planner = planner.NAME
        #: The edge the audit reads through (:class:`.sources.ApiSource`
        #: when None: built on first use, never in the constructor).
        self.state_source = None
        self.audited = None
        self.plan = None

    @classmethod
    def get_name(cls):
        return NAME

    @classmethod
    def get_display_name(cls):
        return 'Cache-aware rebalance (nova-cacheaware)'

    @classmethod
    def get_translatable_display_name(cls):
        return 'Cache-aware rebalance (nova-cacheaware)'

    @classmethod
    def get_goal_name(cls):
        return goal.NAME

    @classmethod
    def get_schema(cls):
        return {
            'type': 'object',
            'properties': {
                'migrations_per_100_servers': {
                    'description': 'Live migrations one audit may plan '
                                   'per 100 audited servers (rounded up).',
                    'type': 'number', 'minimum': 0,
                    'default': PER_100_SERVERS},
                'max_migrations': {
                    'description': 'At most this many live migrations per '
                                   'audit, whatever the servers\' count '
                                   '(0: no cap beyond the one above).',
                    'type': 'integer', 'minimum': 0, 'default': 0},
                'refused_within_hours': {
                    'description': 'Make room for the cache_clean='
                                   'required requests Nova refused '
                                   '(servers in ERROR with No valid host) '
                                   'in this many hours before the audit '
                                   '(0: do not ask Nova).',
                    'type': 'number', 'minimum': 0,
                    'default': REFUSED_WITHIN_HOURS},
                'priority': {
                    'description': 'What a plan serves first: "required" '
                                   '(rooms for the refused cache_clean='
                                   'required requests, then Clean servers) '
                                   'or "clean" (Clean servers, each '
                                   'refused request that fits counted as '
                                   'one).',
                    'type': 'string',
                    'enum': list(rebalance_snapshot.PRIORITIES),
                    'default': rebalance_snapshot.DEFAULT_PRIORITY},
            },
        }

    @classmethod
    def get_config_opts(cls):
        # No Watcher datasource: the cache state comes from the agents.
        return [
            cfg.StrOpt('api_endpoint',
                       help='URL of nova-cacheaware-api; unset: the '
                            'cache-aware endpoint of the service catalog.'),
            cfg.StrOpt('api_interface', default='internal',
                       help='Catalog interface of nova-cacheaware-api.'),
            cfg.StrOpt('api_region_name',
                       help='Catalog region of nova-cacheaware-api.'),
            cfg.FloatOpt('api_timeout', default=30.0, min=1.0,
                         help='Seconds to wait for one host\'s view.'),
        ]

    def budget(self, servers):
        """The most live migrations this audit may plan."""
        params = self.input_parameters
        rate = params.get('migrations_per_100_servers', PER_100_SERVERS)
        cap = params.get('max_migrations', 0)
        budget = int(math.ceil(rate * servers / 100.0 - 1e-9))
        return min(budget, cap) if cap else budget

    def pre_execute(self):
        self._pre_execute()
        model = self.compute_model
        if not model.extended_attributes_enabled:
            raise exception.WatcherException(
                message='the cache_rebalance strategy needs the flavors\' '
                        'extra specs in the compute model: set '
                        '[compute_model] enable_extended_attributes = true '
                        'in watcher.conf')
        hosts, servers = model_facts(model)
        source = self.state_source or self._api_source()
        views = source.host_views(h.name for h in hosts if h.usable)
        if views.failed and not views.views:
            # Knowing nothing is not "nothing to improve": fail the audit.
            host, reason = sorted(views.failed.items())[0]
            raise exception.WatcherException(
                message='the cache_rebalance strategy got no host view '
                        'from nova-cacheaware-api (%d hosts asked; %s: %s)'
                        % (len(views.failed), host, reason))
        hosts = with_limits(hosts, source.placement_limits(
            {h.name: h.uuid for h in hosts
             if h.uuid and h.name in {view.host for view in views.views}}))
        self.audited = snapshot.build(
            views.views, hosts, servers, source.server_groups(),
            self._refused(source),
            self.input_parameters.get(
                'priority', rebalance_snapshot.DEFAULT_PRIORITY))
        for name, reason in self.audited.left_out:
            LOG.info('Cache rebalance audit: %s left out: %s', name, reason)
        if LOG.isEnabledFor(logging.DEBUG):
            # One line that nova-cacheaware rebalance --input replays.
            LOG.debug('Cache rebalance snapshot: %s', json.dumps(
                rebalance_snapshot.snapshot_to_dict(self.audited.snapshot),
                sort_keys=True))

    def _refused(self, source):
        """The refused ``required`` requests to make room for, or ()."""
        hours = self.input_parameters.get('refused_within_hours',
                                          REFUSED_WITHIN_HOURS)
        if not hours:
            return ()
        since = (datetime.datetime.now(datetime.timezone.utc)
                 - datetime.timedelta(hours=hours))
        try:
            pending = source.refused_requests(since)
        except sources.NovaUnreadable as e:
            # Without them the audit still restores Clean: go on.
            LOG.warning('Cache rebalance audit plans without the refused '
                        'cache_clean=required requests: %s', e)
            return ()
        if pending:
            LOG.info('Cache rebalance audit: %d cache_clean=required '
                     'requests refused in the last %s hours (vCPUs %s)',
                     len(pending), hours, list(pending))
        return pending

    def _api_source(self):
        conf = self.config
        return sources.ApiSource(
            self.osc.session, nova_helper.NovaHelper().connection,
            endpoint=conf.get('api_endpoint'),
            interface=conf.get('api_interface'),
            region_name=conf.get('api_region_name'),
            timeout=conf.get('api_timeout'),
            placement=placement_helper.PlacementHelper().connection)

    def do_execute(self, audit=None):
        budget = self.budget(self.audited.servers)
        self.plan = rebalance.plan_moves(self.audited.snapshot, budget)
        model = self.compute_model
        for move in self.plan.moves:
            instance = model.get_instance_by_uuid(move.server)
            source = model.get_node_by_name(move.source)
            destination = model.get_node_by_name(move.destination)
            self.add_action_migrate(instance, LIVE, source, destination)
            model.migrate_instance(instance, source, destination)

    def post_execute(self):
        plan = self.plan
        self.solution.set_efficacy_indicators(
            instance_migrations_count=len(plan.moves),
            instances_count=self.audited.servers,
            clean_servers_gained=max(0, plan.after.clean - plan.before.clean),
            all_share_servers_gained=max(
                0, plan.after.all_share - plan.before.all_share))
        for move in plan.moves:
            LOG.info('Cache rebalance: live-migrate %s from %s to %s (%s; '
                     'its agent will pin it into %s)', move.server,
                     move.source, move.destination, move.reason, move.domain)
        if not plan.moves:
            LOG.info('Cache rebalance: nothing to improve among %d servers',
                     self.audited.servers)


def model_facts(model):
    """``(hosts, servers)`` of a Watcher compute model, for the snapshot."""
    hosts, servers = [], []
    for node in model.get_all_compute_nodes().values():
        hosts.append(snapshot.NovaHost(
            name=node.hostname,
            pcpus=max(0, node.vcpus - node.vcpu_reserved),
            cpu_ratio=node.vcpu_ratio,
            usable=node.status == 'enabled' and node.state == 'up',
            uuid=node.uuid))
        for instance in model.get_node_instances(node):
            servers.append(snapshot.NovaServer(
                uuid=instance.uuid, host=node.hostname,
                vcpus=instance.vcpus,
                extra_specs=dict(instance.flavor_extra_specs or {}),
                metadata=dict(instance.metadata or {}),
                state=instance.state, locked=instance.locked,
                excluded=instance.watcher_exclude))
    return hosts, servers


def with_limits(hosts, limits):
    """``hosts`` with the :class:`.sources.Limits` of those read."""
    return [dataclasses.replace(h, vcpu_max_unit=limits[h.name].vcpu,
                                domain_max_units=dict(
                                    limits[h.name].domains))
            if h.name in limits else h for h in hosts]
