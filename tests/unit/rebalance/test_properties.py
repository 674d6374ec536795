"""The rebalance decision's rules, on random small regions (hypothesis).

Every plan is replayed move by move on a fresh
:class:`~nova_cacheaware.rebalance.model.Region` and checked against
the rules of :mod:`nova_cacheaware.rebalance.policy`; on regions small
enough for an exhaustive search it is compared with the optimum of the
same budget (:mod:`.rebalance_optimum`).
"""

from unittest import mock

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware.cachedomain import assignment as da
from nova_cacheaware.rebalance import model as rm
from nova_cacheaware.rebalance import policy as rebalance
from nova_cacheaware.scheduler import domain_order
from tests.unit.rebalance import fixtures as f
from tests.unit.rebalance import optimum as rebalance_optimum
from tests.unit.rebalance import strategies as rst


def statuses(region):
    """``{uuid: (Clean, All-share, pCPUs fine)}`` of the whole region."""
    out = {}
    for host_view in region.views.values():
        out.update(host_view.status)
    return out


def domain_use(region, host, domain):
    """vCPUs of the servers placed in ``domain`` of ``host``."""
    return sum(s.vcpus for u, s in region.members[host].items()
               if region.placed[u] == domain)


def filter_reason(region, name, server):
    """The scheduler's ``room_reason`` for ``server`` on host ``name``.

    Its live state as the agents leave it: per domain the servers not
    found CPU-bound, the vCPUs placed there, the domains holding a
    server whose flavor asks a Clean guarantee (closed to a request
    whose flavor wants Clean); Placement's ``max_unit`` drops the domains
    too small for it.
    """
    host = region.hosts[name]
    rows, closed = [], set()
    for d in host.domains:
        there = [s for u, s in region.members[name].items()
                 if region.placed[u] == d.id]
        if rm.largest_server(host, d) < server.vcpus:
            continue
        memory = sum(s.workload != 'cpu' for s in there)
        rows.append((d.id, memory, memory, sum(s.vcpus for s in there),
                     d.capacity))
        if any(s.flavor_clean_required for s in there):
            closed.add(d.id)
    return domain_order.room_reason(
        rows, server.vcpus, server.flavor_clean_required,
        closed=frozenset(closed) if server.flavor_clean_wanted
        else frozenset()) if rows else 'no domain Placement gives'


class FilterRuleTest(testtools.TestCase):
    """The model's room rule is the scheduler's, on any rows."""

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6),
                                         st.integers(1, 6), st.booleans()),
                               max_size=4),
                      st.integers(1, 4), st.booleans())
    def test_room_refused_is_room_reason(self, raw, vcpus, required):
        rows = [('d%d' % n, m, used, cap)
                for n, (m, used, cap, _c) in enumerate(raw)]
        closed = frozenset('d%d' % n for n, row in enumerate(raw) if row[3])
        self.assertEqual(
            domain_order.room_reason(
                [(d, m, m, used, cap) for d, m, used, cap in rows], vcpus,
                required, closed=closed) is not None,
            rm.room_refused(rows, vcpus, required, closed))


class PlanRulesTest(testtools.TestCase):

    def _replay(self, snap, plan):
        region = rm.Region(snap)
        self.assertEqual(plan.before, region.score)
        first = statuses(region)
        score = region.score
        for index, move in enumerate(plan.moves):
            server = region.servers[move.server]
            self.assertTrue(server.cache_aware and not server.opt_out,
                            move)
            self.assertNotIn(snap.group_policy(server.group),
                             ('affinity', 'soft-affinity'))
            self.assertEqual(move.source, region.host_of[move.server])
            if snap.group_policy(server.group) == 'anti-affinity':
                self.assertFalse(any(
                    s.group == server.group
                    for s in region.members[move.destination].values()))
            # Nova's filter admits it there: the scheduler's own rule.
            self.assertIsNone(filter_reason(region, move.destination,
                                            server), move)
            trial = region.trial(move.server, move.destination)
            # A move helps, or makes the place the next one helps with
            # (step 9): it keeps the rules and the score.
            chained = move.reason == 'place'
            self.assertEqual((not chained, True, move.domain, move.score),
                             (trial.helps, trial.keeps_rules, trial.domain,
                              trial.score))
            if chained:
                self.assertEqual(score, move.score)
                self.assertNotEqual('place', plan.moves[index + 1].reason)
            region.commit(trial)
            host = region.hosts[move.destination]
            capacity = {d.id: d.capacity for d in host.domains}
            # Placement's max_unit admits it there.
            domain = next(d for d in host.domains if d.id == move.domain)
            self.assertLessEqual(server.vcpus,
                                 rm.largest_server(host, domain), move)
            self.assertLessEqual(
                domain_use(region, move.destination, move.domain),
                capacity[move.domain], move)
            if not chained:
                self.assertGreater(move.score, score)
            score = move.score
        self.assertEqual(plan.after, region.score)
        self.assertFalse(rm.worse(first, statuses(region)))

    @hypothesis.settings(max_examples=80, deadline=None)
    @hypothesis.given(rst.snapshots(max_hosts=4), st.integers(0, 4))
    def test_every_plan_keeps_the_rules(self, snap, budget):
        plan = rebalance.plan_moves(snap, budget)
        self.assertLessEqual(len(plan.moves), budget)
        self.assertGreaterEqual(plan.after, plan.before)
        self._replay(snap, plan)

    def test_named_plans_keep_the_rules(self):
        for snap in (f.DIRTY, f.RACE, f.FRAGMENTED, f.STORM, f.ECORE):
            self._replay(snap, rebalance.plan_moves(snap, 3))


def plain_best(region, snap):
    """Step 7 over every movable server and every destination, unpruned."""
    best = best_key = None
    for uuid in sorted(region.servers):
        if not rebalance.movable(region.servers[uuid], snap):
            continue
        for destination in rebalance._destinations(region, snap, uuid):
            trial = region.trial(uuid, destination)
            server = region.servers[uuid]
            key = (trial.score, server.cache_clean != 'required',
                   -server.vcpus, -rebalance._disturbed(region, trial))
            if trial.helps and (best_key is None or key > best_key):
                best, best_key = trial, key
    return best


def plain_greedy(snap, budget):
    """Steps 7-9 with :func:`plain_best`: the plan without pruning."""
    region = rm.Region(snap)
    memo = rebalance._Memo(region)
    moves = []
    while len(moves) < budget:
        best = plain_best(region, snap)
        chain = [best] if best is not None else []
        if best is None and len(moves) + 2 <= budget:
            # The chain's second move found without pruning, among every
            # move of the region (not only those touching its hosts).
            with mock.patch.object(
                    rebalance, '_best_trial',
                    lambda region, snap, _memo, touching: plain_best(
                        region, snap)):
                chain = rebalance._best_chain(region, snap, memo) or []
        if not chain:
            break
        for trial in chain:
            region.commit(trial)
            moves.append((trial.server, trial.destination, trial.domain))
    return moves


def agents_choice(host, servers, previous, fresh):
    """The agent's choice with every instance given to it (no shortcut)."""
    # An arriving server of a flavor without cacheaware: keys floats.
    previous = {u: None if u in fresh else d for u, d in previous.items()}
    held = [da.HostHeld(uuid=s.uuid, vcpus=s.vcpus,
                        memory_bound=s.agent_clean_wanted,
                        previous=previous[s.uuid],
                        clean_required=s.flavor_clean_required,
                        holds_slot=s.flavor_clean_required)
            for s in servers if s.cache_aware]
    base = {}
    for s in servers:
        if not s.cache_aware and previous[s.uuid] is not None:
            vcpus, memory = base.get(previous[s.uuid], (0, 0))
            base[previous[s.uuid]] = (vcpus + s.vcpus,
                                      memory + s.memory_bound)
    out = {s.uuid: previous[s.uuid] for s in servers if not s.cache_aware}
    out.update(da.assign_domains({d.id: d.capacity for d in host.domains},
                                 held, base))
    return out


class PruningTest(testtools.TestCase):
    """Candidates (step 3) and bounds lose nothing on small regions."""

    @hypothesis.settings(max_examples=80, deadline=None)
    @hypothesis.given(rst.snapshots(max_hosts=4), st.integers(1, 3))
    def test_plan_is_the_unpruned_greedy_plan(self, snap, budget):
        plan = rebalance.plan_moves(snap, budget)
        self.assertEqual(plain_greedy(snap, budget),
                         [(m.server, m.destination, m.domain)
                          for m in plan.moves])

    @hypothesis.settings(max_examples=150, deadline=None)
    @hypothesis.given(rst.hosts('h', 0), st.data())
    def test_settle_is_the_agents_choice(self, host, data):
        previous = {s.uuid: s.domain for s in host.servers}
        fresh = data.draw(st.sets(st.sampled_from(
            [s.uuid for s in host.servers] or ['none'])))
        self.assertEqual(
            agents_choice(host, host.servers, previous, fresh),
            rm.settle(host, host.servers, previous, fresh))

    @hypothesis.settings(max_examples=80, deadline=None)
    @hypothesis.given(rst.snapshots(max_hosts=4))
    def test_bound_holds_for_every_move(self, snap):
        region = rm.Region(snap)
        for uuid in sorted(region.servers):
            top = rebalance.bound(region, uuid)
            for destination in sorted(region.hosts):
                if destination == region.host_of[uuid]:
                    continue
                trial = region.trial(uuid, destination)
                if trial.keeps_rules:
                    self.assertLessEqual(
                        (trial.score,)
                        + rebalance.tie_break(region.servers[uuid]),
                        top[:3], (uuid, destination))


class ChainTest(testtools.TestCase):
    """Chains (step 9) only extend the plan single moves make."""

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(rst.snapshots(max_hosts=4), st.integers(1, 4))
    def test_the_plan_without_chains_is_a_prefix(self, snap, budget):
        plan = rebalance.plan_moves(snap, budget)
        with mock.patch.object(rebalance, 'CHAIN_CANDIDATES', 0):
            single = rebalance.plan_moves(snap, budget)
        self.assertEqual(single.moves, plan.moves[:len(single.moves)])
        self.assertGreaterEqual(plan.after, single.after)
        # What follows starts with a chain: a place, then the move using
        # it (then maybe single moves the chain made possible, and more
        # chains).
        rest = [m.reason for m in plan.moves[len(single.moves):]]
        if rest:
            self.assertEqual('place', rest[0])
        for reason, after in zip(rest, rest[1:] + [None]):
            if reason == 'place':
                self.assertNotIn(after, ('place', None))


class UndoTest(testtools.TestCase):
    """A committed trial taken back leaves the region as it was."""

    @staticmethod
    def state(region):
        return (region.score, region.total, dict(region.placed),
                dict(region.host_of), dict(region.views),
                +region.rooms, {n: dict(m) for n, m in
                                region.members.items()})

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(rst.snapshots(max_hosts=4))
    def test_undo_restores_the_region(self, snap):
        region = rm.Region(snap)
        before = self.state(region)
        for uuid in sorted(region.servers):
            for destination in sorted(region.hosts):
                if destination == region.host_of[uuid]:
                    continue
                kept = region.commit(region.trial(uuid, destination))
                region.undo(kept)
                self.assertEqual(before, self.state(region),
                                 (uuid, destination))


class OptimumTest(testtools.TestCase):
    """Greedy against the exhaustive optimum of the same budget.

    With a budget of one they are equal. On 1 500 random regions of 2-4
    hosts with budgets 1 and 2 (``benchmarks/rebalance_optimum_gap.py``)
    the greedy plan reached the optimum's score in 97.6 % and its Clean
    count in 99.1 %; where the optimum gained Clean servers, the greedy
    plan got 98.4 % of that gain on average. It misses chains: a first
    move that helps nothing alone (it makes room or pCPUs) followed by one
    that does - every move of a greedy plan must help. The worst case is
    recorded below: no gain where the optimum gains two Clean servers.
    """

    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(rst.snapshots(max_hosts=3), st.integers(1, 2))
    def test_greedy_never_beats_the_optimum(self, snap, budget):
        plan = rebalance.plan_moves(snap, budget)
        best = rebalance_optimum.optimum(snap, budget)
        self.assertLessEqual(plan.after, best)
        self.assertGreaterEqual(plan.after.clean, plan.before.clean)

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(rst.snapshots(max_hosts=4))
    def test_one_move_is_the_optimum_of_budget_one(self, snap):
        # The best single legal move either helps (the greedy plan takes
        # it) or does not (the optimum is then the region as it is).
        self.assertEqual(rebalance_optimum.optimum(snap, 1),
                         rebalance.plan_moves(snap, 1).after)

    def test_named_plans_are_optimal(self):
        for snap in (f.DIRTY, f.RACE, f.FRAGMENTED, f.STORM, f.ECORE,
                     f.SETTLED, f.ECORE_WIDE):
            self.assertEqual(rebalance_optimum.optimum(snap, 1),
                             rebalance.plan_moves(snap, 1).after)

    def test_a_chain_of_two_moves_reaches_the_optimum(self):
        # m1 and m2 share a's L2; b's only domain is full of c, which
        # may join Clean m4 on d (a cpu-bound server dirties nothing),
        # after which m1 has a Clean place on b. Neither move helps alone:
        # the plan's chain (step 9) finds what the exhaustive optimum does.
        snap = f.snapshot(
            f.q6600('a', f.mem('m1', 1, 'L2-0'), f.mem('m2', 1, 'L2-0'),
                    f.cpu('ca', 2, 'L2-1')),
            f.host('b', [{'id': 'L2-0', 'cpus': [0, 1]}], [
                f.cpu('c', 2, 'L2-0')]),
            f.host('d', [{'id': 'L3-0', 'cpus': [0, 1, 2, 3]}], [
                f.mem('m4', 1, 'L3-0')]))
        self.assertEqual(rm.Score(3, 5), rebalance.plan_moves(snap, 2).after)
        self.assertEqual(rm.Score(3, 5),
                         rebalance_optimum.optimum(snap, 2))

    def test_two_move_defragmentation(self):
        snap = f.zen_defragmentation()
        self.assertEqual(rebalance_optimum.optimum(snap, 2),
                         rebalance.plan_moves(snap, 2).after)
        self.assertEqual(1, rebalance.plan_moves(snap, 2).after.room)
