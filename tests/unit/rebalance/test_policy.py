"""The rebalance decision (issue 33): tables over named topologies."""

import dataclasses

import testtools

from nova_cacheaware.contracts import rebalance_snapshot as rs
from nova_cacheaware.rebalance import model as rm
from nova_cacheaware.rebalance import policy as rebalance
from tests.unit.rebalance import fixtures as f


def moves(plan):
    """``[(server, source, destination, domain)]`` of a plan."""
    return [(m.server, m.source, m.destination, m.domain)
            for m in plan.moves]


def replace_servers(snap, change):
    """``snap`` with ``change(server)`` applied to every server."""
    return dataclasses.replace(snap, hosts=tuple(
        dataclasses.replace(h, servers=tuple(change(s) for s in h.servers))
        for h in snap.hosts))


class SituationTableTest(testtools.TestCase):
    """The four situations of the issue, and nothing to improve."""

    TABLE = [
        # (name, snapshot, budget, moves, score before, score after)
        ('Dirty after classification: one of the two moves to an Empty '
         'L2 of the other Q6600 (both 1 vCPU: the smaller uuid)',
         f.DIRTY, 3, [('m1', 'a', 'b', 'L2-1')],
         rm.Score(0, 4), rm.Score(2, 4)),
        ('a lost race: the server waiting on Nova\'s CPUs moves itself '
         '(moving c1 instead frees the same room but re-places w too)',
         f.RACE, 3, [('w', 'a', 'b', 'L2-1')],
         rm.Score(1, 3), rm.Score(1, 4)),
        ('fragmentation: a cpu-bound server joins a Clean CCX of z1 so '
         'that a whole 8-vCPU CCX of z2 is Empty for the refused request',
         f.FRAGMENTED, 3, [('c2', 'z2', 'z1', 'L3-3')],
         rm.Score(6, 8, 0), rm.Score(6, 8, 1)),
        ('a storm on a crowded host: the storming server goes to a host '
         'whose pCPUs hold every vCPU',
         f.STORM, 3, [('s', 'a', 'b', 'L2-0')],
         rm.Score(0, 2, 0, 0), rm.Score(0, 2, 0, 1)),
        ('Dirty E-core cluster: a 2-vCPU server fits a P-core L2',
         f.ECORE, 3, [('m1', 'e1', 'e2', 'L2-2')],
         rm.Score(0, 9), rm.Score(2, 9)),
        ('nothing can improve: an empty plan',
         f.SETTLED, 3, [], rm.Score(3, 6), rm.Score(3, 6)),
        ('a 4-vCPU server fits no P-core L2: an empty plan',
         f.ECORE_WIDE, 3, [], rm.Score(0, 8), rm.Score(0, 8)),
        ('budget 0: an empty plan', f.DIRTY, 0, [],
         rm.Score(0, 4), rm.Score(0, 4)),
    ]

    def test_table(self):
        for name, snap, budget, expected, before, after in self.TABLE:
            plan = rebalance.plan_moves(snap, budget)
            self.assertEqual(expected, moves(plan), name)
            self.assertEqual((before, after), (plan.before, plan.after),
                             name)
            if plan.moves:
                self.assertEqual(after, plan.moves[-1].score, name)

    def test_move_carries_numa_node_vcpus_and_reason(self):
        move = rebalance.plan_moves(f.FRAGMENTED, 1).moves[0]
        self.assertEqual((1, 4, 'room'),
                         (move.numa_node, move.vcpus, move.reason))

    def test_reasons(self):
        for snap, reason in ((f.DIRTY, 'clean'), (f.RACE, 'all_share'),
                             (f.STORM, 'relieved'), (f.ECORE, 'clean')):
            self.assertEqual([reason], [m.reason for m in rebalance.plan_moves(
                snap, 3).moves])

    def test_budget_bounds_the_plan(self):
        # Two Dirty hosts and one Empty-rich host: one move each.
        snap = f.two_dirty_q6600s_and_an_empty_zen()
        self.assertEqual([('a1', 'a', 'z')],
                         [m[:3] for m in moves(rebalance.plan_moves(snap,
                                                                    1))])
        plan = rebalance.plan_moves(snap, 5)
        self.assertEqual([('a1', 'a', 'z'), ('b1', 'b', 'z')],
                         [m[:3] for m in moves(plan)])
        self.assertEqual(rm.Score(4, 6), plan.after)


class RefusedRequestOrderTest(testtools.TestCase):
    """A refused ``required`` request that fits counts as a Clean server."""

    def test_score_order(self):
        table = [
            # (lower, higher)
            # Clean plus room first.
            (rm.Score(4, 9, 0, 5), rm.Score(3, 0, 2, 0)),
            # Equal sums: a request's room is not given for one Clean.
            (rm.Score(5, 0, 0, 0), rm.Score(4, 0, 1, 0)),
            # Then All-share, then storms relieved.
            (rm.Score(5, 1, 0, 9), rm.Score(5, 2, 0, 0)),
            (rm.Score(5, 2, 0, 0), rm.Score(5, 2, 0, 1)),
            # Without refused requests: Clean, All-share, relieved.
            (rm.Score(4, 9, 0, 9), rm.Score(5, 0, 0, 0)),
        ]
        for lower, higher in table:
            self.assertLess(lower, higher)
            self.assertGreater(higher, lower)
            self.assertNotEqual(lower, higher)
        self.assertEqual(rm.Score(1, 2, 3, 4), rm.Score(1, 2, 3, 4))

    def crowded(self, pending):
        # z1's L3-0 holds three memory-bound servers (Dirty), its other
        # CCXs are full; z2's L3-3 is the region's only Empty domain.
        return f.snapshot(
            f.zen('z1', f.mem('m1', 2, 'L3-0'), f.mem('m2', 2, 'L3-0'),
                  f.mem('m3', 2, 'L3-0'),
                  *(f.cpu('c%d' % n, 8, 'L3-%d' % n) for n in (1, 2, 3))),
            f.zen('z2', *(f.cpu('d%d' % n, 8, 'L3-%d' % n)
                          for n in (0, 1, 2))),
            pending=pending)

    def test_no_running_server_takes_the_room_a_request_needs(self):
        # Without a refused request, m1 moves to the Empty CCX: one more
        # Clean server (m2 and m3 stay Dirty together).
        plan = rebalance.plan_moves(self.crowded(()), 3)
        self.assertEqual([('m1', 'z1', 'z2', 'L3-3')], moves(plan))
        self.assertEqual((rm.Score(0, 9), rm.Score(1, 9)),
                         (plan.before, plan.after))
        # With a refused 8-vCPU request, that CCX is its room: the move
        # would trade the request's Clean for m1's, and is not made.
        plan = rebalance.plan_moves(self.crowded((8,)), 3)
        self.assertEqual([], moves(plan))
        self.assertEqual(rm.Score(0, 9, 1), plan.after)


class RuleTableTest(testtools.TestCase):
    """Servers that must not move, and moves that must not happen."""

    def test_opted_out_and_not_cache_aware_servers_stay(self):
        for change in (lambda s: dataclasses.replace(s, opt_out=True),
                       lambda s: dataclasses.replace(s, cache_aware=False)):
            snap = replace_servers(f.DIRTY, change)
            self.assertEqual([], moves(rebalance.plan_moves(snap, 3)))

    def test_affinity_members_are_never_moved(self):
        for policy in ('affinity', 'soft-affinity'):
            snap = dataclasses.replace(
                replace_servers(f.DIRTY, lambda s: dataclasses.replace(
                    s, group='g' if s.memory_bound else None)),
                groups=(('g', policy),))
            self.assertEqual([], moves(rebalance.plan_moves(snap, 3)),
                             policy)

    def test_anti_affinity_keeps_members_apart(self):
        # m1 and c2 (on b) share an anti-affinity group: m1 may not join
        # b, so m2 moves instead.
        snap = dataclasses.replace(
            replace_servers(f.DIRTY, lambda s: dataclasses.replace(
                s, group='g' if s.uuid in ('m1', 'c2') else None)),
            groups=(('g', 'anti-affinity'),))
        self.assertEqual([('m2', 'a', 'b', 'L2-1')],
                         moves(rebalance.plan_moves(snap, 3)))

    def test_a_clean_server_is_never_made_dirty(self):
        # The storming server is Clean on a; b's only room is beside a
        # memory-bound server: relieving the storm would make both Dirty.
        def snap(neighbour):
            return f.snapshot(
                f.q6600('a', f.mem('s', 1, 'L2-0', storm=True),
                        f.cpu('c0', 1, 'L2-0'), f.cpu('c1', 2, 'L2-1'),
                        rs.Server('x', 2, 'cpu', cache_aware=False)),
                f.q6600('b', neighbour('m', 1, 'L2-0'),
                        f.cpu('c', 2, 'L2-1'), pcpus=8))
        self.assertEqual([], moves(rebalance.plan_moves(snap(f.mem), 3)))
        # The same room beside a cpu-bound server relieves it.
        self.assertEqual([('s', 'a', 'b', 'L2-0')],
                         moves(rebalance.plan_moves(snap(f.cpu), 3)))

        # Not beside a server the agent has not classified yet: it may be
        # memory-bound ("maybe Clean" never turns false either).
        def unknown(uuid, vcpus, domain):
            return rs.Server(uuid, vcpus, 'unknown', domain=domain)
        self.assertEqual([], moves(rebalance.plan_moves(snap(unknown), 3)))

    def test_required_server_never_displaces_a_clean_one(self):
        # r (required) would take p's Clean L2 on b by the agent's rule,
        # leaving p on Nova's CPUs: refused; m2 joining p is Dirty.
        def snap(neighbour):
            return f.snapshot(
                f.q6600('a', f.mem('r', 1, 'L2-0', cache_clean='required'),
                        f.mem('m2', 1, 'L2-0'), f.cpu('c1', 2, 'L2-1')),
                f.q6600('b', neighbour('p', 1, 'L2-0'),
                        f.cpu('c', 2, 'L2-1')))
        self.assertEqual([], moves(rebalance.plan_moves(snap(f.mem), 3)))
        # Beside a cpu-bound server one of them moves: m2, the smaller
        # uuid (r leaving would make m2 Clean just as well).
        self.assertEqual([('m2', 'a', 'b', 'L2-0')],
                         moves(rebalance.plan_moves(snap(f.cpu), 3)))

    def test_two_move_defragmentation_is_not_found(self):
        # Freeing z2's CCX needs both 4-vCPU servers gone; neither move
        # helps alone, so the greedy plan stops (the optimum with a
        # budget of 2 frees it: see test_rebalance_properties).
        snap = f.zen_defragmentation()
        self.assertEqual([], moves(rebalance.plan_moves(snap, 2)))
