"""The Watcher strategy, run by Watcher's own machinery in-process.

The strategy is loaded by name through Watcher's strategy loader
(stevedore over the ``watcher_strategies`` entry point, as the decision
engine does), its goal through Watcher's goal loader; it runs
``execute()`` on Watcher compute models (``ModelRoot`` with
``ComputeNode`` and ``Instance`` elements) with the audit's parameters
checked and defaulted by Watcher's validator; its actions are checked
against Watcher's ``migrate`` action schema. Only the strategy's own I/O
edge (:mod:`nova_cacheaware.watcher.sources`) answers fixed host views.
"""

import datetime
import json
import logging
import types
import uuid

import fixtures
import jsonschema
from oslo_config import cfg
import testtools
from watcher.applier.loading import default as action_loading
from watcher.common import exception as watcher_exception
from watcher.common import utils as watcher_utils
from watcher.decision_engine.loading import default as loading
from watcher.decision_engine.model import element
from watcher.decision_engine.model import model_root
from watcher import objects as watcher_objects

from nova_cacheaware.contracts import rebalance_snapshot as rs
from nova_cacheaware.rebalance import policy as rebalance
from nova_cacheaware.watcher import snapshot
from nova_cacheaware.watcher import sources
from nova_cacheaware.watcher import strategy as ca_strategy
from tests.unit.watcher import views as v

U = v.UUIDS


class FixedSource:
    """The strategy's edge answering fixed views, groups and refusals.

    ``refused``: the vCPUs of refused ``required`` requests, or an
    exception the source raises when asked for them; ``limits``:
    ``{host: sources.Limits}`` Placement's answer.
    """

    def __init__(self, host_views, groups=(), refused=(), limits=None):
        self.views = {view.host: view for view in host_views}
        self.groups = tuple(groups)
        self.refused = refused
        self.limits = limits or {}
        self.asked = None
        self.refused_since = None
        self.limits_asked = None

    def host_views(self, hosts):
        self.asked = sorted(hosts)
        return sources.Views(
            tuple(self.views[h] for h in self.asked if h in self.views),
            {h: 'no agent' for h in self.asked if h not in self.views})

    def server_groups(self):
        return self.groups

    def placement_limits(self, nodes):
        self.limits_asked = dict(nodes)
        return {h: self.limits[h] for h in nodes if h in self.limits}

    def refused_requests(self, since):
        self.refused_since = since
        if isinstance(self.refused, Exception):
            raise self.refused
        return tuple(self.refused)


def watcher_conf():
    """A parsed private config for Watcher's loaders (no files)."""
    conf = cfg.ConfigOpts()
    conf([], project='watcher', default_config_files=[])
    return conf


def load_strategy():
    """The strategy as Watcher's decision engine loads it, by name."""
    loader = loading.DefaultStrategyLoader()
    loader.conf = watcher_conf()
    return loader.load('cache_rebalance')


def node_uuid(host):
    """The compute node uuid of test host ``host``."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, host))


def compute_model(placed, nova_changes=None, disabled=(), cpu_ratio=1.0):
    """A Watcher model: Q6600 hosts, servers ``{host: [names]}``."""
    model = model_root.ModelRoot()
    model.extended_attributes_enabled = True
    for host in sorted(placed):
        node = element.ComputeNode(
            uuid=node_uuid(host), hostname=host,
            memory=8192, memory_mb_reserved=0, disk=100,
            disk_gb_reserved=0, vcpus=4, vcpu_reserved=0, memory_ratio=1.0,
            vcpu_ratio=cpu_ratio, disk_ratio=1.0,
            status='disabled' if host in disabled else 'enabled')
        model.add_node(node)
        for name in placed[host]:
            fields = dict(
                uuid=U[name], name=name, memory=512, disk=1,
                vcpus=v.vcpus(name), metadata={}, project_id=str(
                    uuid.UUID(int=99)), host=host,
                hypervisor_hostname=host, flavor_extra_specs=v.specs(name))
            fields.update((nova_changes or {}).get(name, {}))
            instance = element.Instance(**fields)
            model.add_instance(instance)
            model.map_instance(instance, node)
    return model


def run(model, host_views, groups=(), refused=(), limits=None,
        **parameters):
    """Execute the loaded strategy as an audit does; its solution."""
    strategy = load_strategy()
    strategy._compute_model = model
    strategy.state_source = FixedSource(host_views, groups, refused, limits)
    watcher_utils.StrictDefaultValidatingDraft4Validator(
        strategy.get_schema()).validate(parameters)
    strategy.input_parameters.update(parameters)
    return strategy, strategy.execute()


def round_to_s(delta):
    """``delta`` to the second (the audit ran a moment ago)."""
    return datetime.timedelta(seconds=round(delta.total_seconds()))


def actions(solution):
    """``[(server name, source, destination)]`` of the live migrations."""
    out = []
    for action in solution.actions:
        params = action['input_parameters']
        assert action['action_type'] == 'migrate', action
        assert params['migration_type'] == 'live', action
        out.append((v.NAMES[params['resource_id']], params['source_node'],
                    params['destination_node']))
    return out


#: Host a: m1 and m2 (an ``auto`` flavor, both classified memory-bound)
#: share L2-0 (Dirty), c1 fills L2-1; host b: c2 in L2-0, L2-1 Empty.
DIRTY = ({'a': ['m1', 'm2', 'c1'], 'b': ['c2']},
         (v.q6600('a', {'m1': 'L2-0', 'm2': 'L2-0', 'c1': 'L2-1'}),
          v.q6600('b', {'c2': 'L2-0'})))
#: Every memory-bound server Clean, every server All-share.
SETTLED = ({'a': ['m1', 'c1'], 'b': ['m2', 'c2']},
           (v.q6600('a', {'m1': 'L2-0', 'c1': 'L2-1'}),
            v.q6600('b', {'m2': 'L2-0', 'c2': 'L2-1'})))


#: Every memory-bound server Clean, every domain holding one server with
#: a vCPU free: a refused 2-vCPU ``required`` request fits once one server
#: joins another host's cpu-bound ``k`` server.
CROWDED = ({'a': ['m1', 'k1'], 'b': ['m2', 'k2']},
           (v.q6600('a', {'m1': 'L2-0', 'k1': 'L2-1'}),
            v.q6600('b', {'m2': 'L2-0', 'k2': 'L2-1'})))


def dirty_region(pairs):
    """``pairs`` hosts each with a Dirty pair, as many with an Empty L2."""
    names = iter(('m1', 'm2', 'm3', 'm4', 'm5', 'm6'))
    cpus = iter(('c1', 'c2', 'c3', 'c4'))
    placed, host_views = {}, []
    for i in range(pairs):
        pair = (next(names), next(names))
        placed['d%d' % i] = list(pair)
        host_views.append(v.q6600('d%d' % i, dict.fromkeys(pair, 'L2-0')))
        cpu = next(cpus)
        placed['e%d' % i] = [cpu]
        host_views.append(v.q6600('e%d' % i, {cpu: 'L2-0'}))
    return placed, tuple(host_views)


class StrategyTest(testtools.TestCase):

    def test_loaded_by_entry_point_with_its_goal(self):
        strategy = load_strategy()
        self.assertIsInstance(strategy, ca_strategy.CacheRebalance)
        self.assertEqual(('cache_rebalance', 'cache_isolation'),
                         (strategy.name, strategy.goal.name))
        goal = loading.DefaultGoalLoader().load('cache_isolation')
        self.assertEqual(['instance_migrations_count', 'instances_count',
                          'clean_servers_gained',
                          'all_share_servers_gained'],
                         [s.name for s in
                          goal.efficacy_specification.indicators_specs])

    def test_a_dirty_pair_one_live_migration_to_the_empty_domain(self):
        strategy, solution = run(compute_model(DIRTY[0]), DIRTY[1])
        self.assertEqual([('m1', 'a', 'b')], actions(solution))
        self.assertEqual([{
            'action_type': 'migrate',
            'input_parameters': {
                'migration_type': 'live', 'source_node': 'a',
                'destination_node': 'b', 'resource_name': 'm1',
                'resource_id': U['m1']}}], solution.actions)
        self.assertEqual(['a', 'b'], strategy.state_source.asked)
        indicators = {i.name: i.value for i in solution.efficacy_indicators}
        self.assertEqual({'instance_migrations_count': 1,
                          'instances_count': 4, 'clean_servers_gained': 2,
                          'all_share_servers_gained': 0}, indicators)
        self.assertEqual([('servers_improved_per_migration', 2.0)],
                         [(i.name, i.value)
                          for i in solution.global_efficacy])
        # Watcher's model follows the plan.
        self.assertEqual('b', strategy.compute_model.get_node_by_instance_uuid(
            U['m1']).hostname)

    def test_actions_pass_watchers_migrate_schema(self):
        _strategy, solution = run(compute_model(DIRTY[0]), DIRTY[1])
        loader = action_loading.DefaultActionLoader()
        loader.conf = watcher_conf()
        for action in solution.actions:
            migrate = loader.load(action['action_type'])
            migrate.input_parameters = action['input_parameters']
            self.assertTrue(migrate.validate_parameters())

    def test_the_planner_chains_the_migrations_in_order(self):
        placed, host_views = dirty_region(3)
        strategy, solution = run(compute_model(placed), host_views,
                                 migrations_per_100_servers=100)
        watcher_objects.register_all()  # as Watcher's services do at start
        loader = loading.DefaultPlannerLoader()
        loader.conf = watcher_conf()
        planner = loader.load(strategy.planner)
        self.assertEqual('cache_rebalance', strategy.planner)
        weighted = planner.get_sorted_actions_by_weight(
            None, types.SimpleNamespace(id=1), solution)
        graph = planner.compute_action_graph(weighted)
        by_uuid = {a.uuid: a for a in graph.nodes()}
        # The solution's order, each migration the only parent of the next.
        chain = [a for a in graph.nodes() if not a.parents]
        while len(chain) < len(graph.nodes()):
            chain.extend(a for a in graph.nodes()
                         if a.parents == [chain[-1].uuid])
        self.assertEqual(solution.actions, [
            {'action_type': a.action_type,
             'input_parameters': a.input_parameters} for a in chain])
        self.assertEqual([1] * (len(chain) - 1),
                         [len(a.parents) for a in chain[1:]])
        self.assertEqual(3, len(by_uuid))

    def test_nothing_to_improve_is_an_empty_solution(self):
        _strategy, solution = run(compute_model(SETTLED[0]), SETTLED[1])
        self.assertEqual([], solution.actions)
        self.assertEqual(0, {i.name: i.value for i in
                             solution.efficacy_indicators}[
                                 'instance_migrations_count'])

    def test_budget(self):
        placed, host_views = dirty_region(3)
        table = [
            # (parameters, migrations): 9 servers
            ({}, 1),   # one per 100 servers, rounded up
            ({'migrations_per_100_servers': 100}, 3),
            ({'migrations_per_100_servers': 100, 'max_migrations': 2}, 2),
            ({'migrations_per_100_servers': 0}, 0),
        ]
        for parameters, expected in table:
            _strategy, solution = run(compute_model(placed), host_views,
                                      **parameters)
            self.assertEqual(expected, len(solution.actions), parameters)

    def test_actions_are_the_plan_in_order(self):
        placed, host_views = dirty_region(3)
        strategy, solution = run(compute_model(placed), host_views,
                                 migrations_per_100_servers=100)
        plan = rebalance.plan_moves(strategy.audited.snapshot, 9)
        self.assertEqual([(v.NAMES[m.server], m.source, m.destination)
                          for m in plan.moves], actions(solution))
        self.assertEqual(3, len(plan.moves))

    def test_the_logged_snapshot_replays_the_plan(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.watcher.strategy', level=logging.DEBUG,
            format='%(message)s'))
        placed, host_views = dirty_region(2)
        _strategy, solution = run(compute_model(placed), host_views,
                                  migrations_per_100_servers=100)
        line = next(line for line in log.output.splitlines()
                    if line.startswith('Cache rebalance snapshot: '))
        snap = rs.snapshot_from_dict(json.loads(line.split(': ', 1)[1]))
        self.assertEqual(actions(solution), [
            (v.NAMES[m.server], m.source, m.destination)
            for m in rebalance.plan_moves(snap, 6).moves])
        self.assertEqual(2, len(solution.actions))

    def test_anti_affinity_is_never_broken(self):
        # m1 and c2 (on b) are anti-affine: m2 moves to b instead.
        groups = (snapshot.ServerGroup('g', 'anti-affinity',
                                       (U['m1'], U['c2'])),)
        _strategy, solution = run(compute_model(DIRTY[0]), DIRTY[1], groups)
        self.assertEqual([('m2', 'a', 'b')], actions(solution))
        # Both anti-affine with c2: nowhere to go.
        groups = (snapshot.ServerGroup('g', 'anti-affinity',
                                       (U['m1'], U['m2'], U['c2'])),)
        _strategy, solution = run(compute_model(DIRTY[0]), DIRTY[1], groups)
        self.assertEqual([], actions(solution))

    def test_affinity_members_stay(self):
        groups = (snapshot.ServerGroup('g', 'affinity', (U['m1'], U['c1'])),)
        _strategy, solution = run(compute_model(DIRTY[0]), DIRTY[1], groups)
        self.assertEqual([('m2', 'a', 'b')], actions(solution))

    def test_opted_out_servers_are_never_moved(self):
        table = [
            # (opt-out of m1 / m2, the actions)
            ({'m1': {'metadata': {'cacheaware:rebalance': 'no'}}},
             [('m2', 'a', 'b')]),
            ({'m1': {'flavor_extra_specs': dict(
                v.AUTO, **{'cacheaware:rebalance': 'no'})}},
             [('m2', 'a', 'b')]),
            ({'m1': {'metadata': {'cacheaware:rebalance': 'no'}},
              'm2': {'flavor_extra_specs': dict(
                  v.AUTO, **{'cacheaware:rebalance': 'no'})}}, []),
            ({'m1': {'flavor_extra_specs': {}},
              'm2': {'flavor_extra_specs': {}}}, []),
            ({'m1': {'watcher_exclude': True}}, [('m2', 'a', 'b')]),
        ]
        for changes, expected in table:
            _strategy, solution = run(compute_model(DIRTY[0], changes),
                                      DIRTY[1])
            self.assertEqual(expected, actions(solution), changes)

    def test_a_disabled_destination_is_not_used(self):
        _strategy, solution = run(compute_model(DIRTY[0], disabled=('b',)),
                                  DIRTY[1])
        self.assertEqual([], actions(solution))

    def test_needs_the_flavors_extra_specs_in_the_model(self):
        model = compute_model(DIRTY[0])
        model.extended_attributes_enabled = False
        error = self.assertRaises(watcher_exception.WatcherException, run,
                                  model, DIRTY[1])
        self.assertIn('enable_extended_attributes', str(error))

    def test_no_view_at_all_fails_the_audit(self):
        error = self.assertRaises(watcher_exception.WatcherException, run,
                                  compute_model(DIRTY[0]), ())
        self.assertIn('got no host view from nova-cacheaware-api (2 hosts '
                      'asked; a: no agent)', str(error))

    def test_room_is_made_for_a_refused_required_request(self):
        strategy, solution = run(compute_model(CROWDED[0]), CROWDED[1],
                                 refused=(2,))
        # m1 joins k2, cpu-bound (Clean there too; of the equal moves the
        # smallest uuid's): host a's L2-0 is Empty for the 2-vCPU request,
        # every server still Clean and All-share.
        self.assertEqual([('m1', 'a', 'b')], actions(solution))
        self.assertEqual((2,), strategy.audited.snapshot.pending)
        self.assertEqual((0, 1), (strategy.plan.before.room,
                                  strategy.plan.after.room))
        self.assertEqual(strategy.plan.before.clean,
                         strategy.plan.after.clean)
        asked = strategy.state_source.refused_since
        self.assertEqual(datetime.timedelta(hours=24), round_to_s(
            datetime.datetime.now(datetime.timezone.utc) - asked))

    def test_without_refused_requests_nothing_moves(self):
        _strategy, solution = run(compute_model(CROWDED[0]), CROWDED[1])
        self.assertEqual([], solution.actions)

    def test_refused_requests_window_zero_does_not_ask_nova(self):
        strategy, solution = run(compute_model(CROWDED[0]), CROWDED[1],
                                 refused=(2,), refused_within_hours=0)
        self.assertEqual([], solution.actions)
        self.assertIsNone(strategy.state_source.refused_since)

    def test_window_is_the_parameter(self):
        strategy, _solution = run(compute_model(CROWDED[0]), CROWDED[1],
                                  refused_within_hours=1.5)
        self.assertEqual(datetime.timedelta(hours=1.5), round_to_s(
            datetime.datetime.now(datetime.timezone.utc)
            - strategy.state_source.refused_since))

    def test_nova_unreadable_audit_goes_on_without_refusals(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.watcher.strategy'))
        strategy, solution = run(
            compute_model(DIRTY[0]), DIRTY[1],
            refused=sources.NovaUnreadable('cannot list the ERROR servers '
                                           'from Nova: HTTP 503'))
        self.assertEqual([('m1', 'a', 'b')], actions(solution))
        self.assertEqual((), strategy.audited.snapshot.pending)
        self.assertIn('Cache rebalance audit plans without the refused '
                      'cache_clean=required requests: cannot list the '
                      'ERROR servers from Nova: HTTP 503', log.output)

    def test_priority_parameter(self):
        # b's Empty L2-1 is the room of a refused 2-vCPU request, or the
        # place that makes m1 and m2 Clean.
        table = [
            # (parameters, moves)
            ({}, []),
            ({'priority': 'required'}, []),
            ({'priority': 'clean'}, [('m1', 'a', 'b')]),
        ]
        for parameters, expected in table:
            strategy, solution = run(compute_model(DIRTY[0]), DIRTY[1],
                                     refused=(2,), **parameters)
            self.assertEqual(expected, actions(solution), parameters)
            self.assertEqual(parameters.get('priority', 'required'),
                             strategy.audited.snapshot.priority)

    def test_unknown_priority_is_refused_as_watcher_does(self):
        error = self.assertRaises(jsonschema.ValidationError, run,
                                  compute_model(DIRTY[0]), DIRTY[1],
                                  priority='fast')
        self.assertIn("'fast' is not one of ['required', 'clean']",
                      str(error))

    def test_unknown_parameter_is_refused_as_watcher_does(self):
        self.assertRaises(watcher_exception.AuditParameterNotAllowed, run,
                          compute_model(DIRTY[0]), DIRTY[1], budget=3)


class PlacementLimitsTest(testtools.TestCase):
    """Placement's ``max_unit`` at allocation ratio 4.0 (CI's devcloud).

    A Q6600 L2 of 2 CPUs holds 8 vCPUs at ratio 4.0; Placement gives one
    server at most the compute node's CPUs (4) and, with per-domain
    providers, the domain's (2).
    """

    #: m1 and m2 grown to 3 vCPUs: Dirty in a's L2-0 (6 of 8 vCPUs); c2
    #: down to 1, so that b's 4 pCPUs hold it and one of them.
    WIDE = {'m1': {'vcpus': 3}, 'm2': {'vcpus': 3}, 'c2': {'vcpus': 1}}

    def test_limits_are_asked_for_the_viewed_hosts(self):
        limits = {'b': sources.Limits(4, {'L2-1': 2})}
        strategy, _solution = run(
            compute_model(DIRTY[0], cpu_ratio=4.0), DIRTY[1][:1] + (
                v.q6600('b', {'c2': 'L2-0'}),), limits=limits)
        self.assertEqual({'a': node_uuid('a'), 'b': node_uuid('b')},
                         strategy.state_source.limits_asked)
        a, b = strategy.audited.snapshot.hosts
        self.assertEqual((None, [None, None]),
                         (a.max_unit, [d.max_unit for d in a.domains]))
        self.assertEqual((4, [(8, None), (8, 2)]), (
            b.max_unit, [(d.capacity, d.max_unit) for d in b.domains]))

    def test_no_move_placement_refuses(self):
        table = [
            # (b's limits, actions)
            (None, [('m1', 'a', 'b')]),
            (sources.Limits(4, {}), [('m1', 'a', 'b')]),
            # A compute node of 2 CPUs, or 2-CPU domain providers.
            (sources.Limits(2, {}), []),
            (sources.Limits(4, {'L2-0': 2, 'L2-1': 2}), []),
        ]
        for limits, expected in table:
            _strategy, solution = run(
                compute_model(DIRTY[0], self.WIDE, cpu_ratio=4.0), DIRTY[1],
                limits=None if limits is None else {'b': limits})
            self.assertEqual(expected, actions(solution), limits)

    def test_no_room_counted_that_placement_refuses(self):
        # Each k server leaves a 7-vCPU room: the refused 4-vCPU request
        # fits as it is, unless Placement gives no server 4 vCPUs there.
        for limits, room in ((None, 1), (sources.Limits(4, {}), 1),
                             (sources.Limits(2, {}), 0)):
            strategy, solution = run(
                compute_model(CROWDED[0], cpu_ratio=4.0), CROWDED[1],
                refused=(4,), limits=limits and {'a': limits, 'b': limits})
            self.assertEqual(([], room, room), (
                solution.actions, strategy.plan.before.room,
                strategy.plan.after.room), limits)
