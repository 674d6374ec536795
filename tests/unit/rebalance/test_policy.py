"""The rebalance decision (issue 33): tables over named topologies."""

import dataclasses

import testtools

from nova_cacheaware.cachedomain import assignment as da
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


def one_domain(name, cpus, *servers):
    """A host with one cache domain of ``cpus`` vCPUs."""
    return f.host(name, [{'id': 'L3-0', 'cpus': list(range(cpus))}],
                  servers)


class TieBreakTableTest(testtools.TestCase):
    """Step 7: among moves of an equal score, which server moves."""

    def test_table(self):
        def required(uuid, vcpus, domain='L3-0', **kw):
            return f.mem(uuid, vcpus, domain, cache_clean='required', **kw)

        table = [
            # (name, servers on a's one domain, b's domain vCPUs, moves)
            ('a Clean required server and a memory-bound one the agent '
             'keeps apart (on Nova\'s CPUs): the other one moves, though '
             'larger', [required('r', 1), f.mem('x', 2)], 4,
             [('x', 'a', 'b', 'L3-0')]),
            ('the same, the other pinned beside it by a race',
             [required('r', 1), f.mem('x', 2, 'L3-0')], 4,
             [('x', 'a', 'b', 'L3-0')]),
            ('the required one is the only move that reaches the score: '
             'the other does not fit b',
             [required('r', 1), f.mem('x', 3, 'L3-0')], 2,
             [('r', 'a', 'b', 'L3-0')]),
            ('the other may not move (opted out): the required one moves',
             [required('r', 1), f.mem('x', 2, opt_out=True)], 4,
             [('r', 'a', 'b', 'L3-0')]),
            ('neither required: fewer vCPUs',
             [f.mem('p', 2, 'L3-0'), f.mem('q', 1, 'L3-0')], 4,
             [('q', 'a', 'b', 'L3-0')]),
            ('neither required, as large: fewer servers re-placed, then '
             'the smaller uuid',
             [f.mem('q', 1, 'L3-0'), f.mem('p', 1, 'L3-0')], 4,
             [('p', 'a', 'b', 'L3-0')]),
            ('a required server larger than the other: the other moves',
             [required('r', 2), f.mem('x', 1)], 4,
             [('x', 'a', 'b', 'L3-0')]),
        ]
        for name, servers, cpus, expected in table:
            snap = f.snapshot(one_domain('a', 4, *servers),
                              one_domain('b', cpus))
            plan = rebalance.plan_moves(snap, 3)
            self.assertEqual(expected, moves(plan), name)
            self.assertEqual(2, plan.after.clean, name)

    def test_key(self):
        self.assertEqual(
            [(False, -1), (True, -4), (True, -1), (True, -1)],
            [rebalance.tie_break(s) for s in (
                f.mem('r', 1, cache_clean='required'), f.mem('p', 4),
                f.cpu('c', 1), f.mem('o', 1, cache_clean='off'))])


class RefusedRequestOrderTest(testtools.TestCase):
    """The snapshot's ``priority``: rooms for refused requests, or Clean."""

    def test_score_order(self):
        table = [
            # (priority, lower, higher)
            # Rooms for refused requests first, then Clean.
            ('required', (9, 9, 0, 9), (0, 0, 1, 0)),
            ('required', (4, 9, 1, 5), (5, 0, 1, 0)),
            # Clean plus room first.
            ('clean', (4, 9, 0, 5), (3, 0, 2, 0)),
            # Equal sums: a request's room is not given for one Clean.
            ('clean', (5, 0, 0, 0), (4, 0, 1, 0)),
            # A room is worth one Clean server, not two.
            ('clean', (0, 0, 1, 0), (2, 0, 0, 0)),
            # Then All-share, then storms relieved, in both.
            ('required', (5, 1, 0, 9), (5, 2, 0, 0)),
            ('clean', (5, 1, 0, 9), (5, 2, 0, 0)),
            ('required', (5, 2, 0, 0), (5, 2, 0, 1)),
            # Without refused requests: Clean, All-share, relieved.
            ('required', (4, 9, 0, 9), (5, 0, 0, 0)),
            ('clean', (4, 9, 0, 9), (5, 0, 0, 0)),
        ]
        for priority, lower, higher in table:
            first = priority == 'required'
            lower = rm.Score(*lower, required_first=first)
            higher = rm.Score(*higher, required_first=first)
            self.assertLess(lower, higher, (priority, lower, higher))
            self.assertGreater(higher, lower)
            self.assertNotEqual(lower, higher)
        self.assertEqual(rm.Score(1, 2, 3, 4), rm.Score(1, 2, 3, 4))

    def crowded(self, pending, dirty=3, priority='required'):
        # z1's L3-0 holds ``dirty`` memory-bound servers (Dirty), its
        # other CCXs are full; z2's L3-3 is the region's only Empty
        # domain.
        return f.snapshot(
            f.zen('z1', *(f.mem('m%d' % n, 2, 'L3-0')
                          for n in range(1, dirty + 1)),
                  *(f.cpu('c%d' % n, 8, 'L3-%d' % n) for n in (1, 2, 3))),
            f.zen('z2', *(f.cpu('d%d' % n, 8, 'L3-%d' % n)
                          for n in (0, 1, 2))),
            pending=pending, priority=priority)

    def test_no_running_server_takes_the_room_a_request_needs(self):
        for priority in ('required', 'clean'):
            # Without a refused request, m1 moves to the Empty CCX: one
            # more Clean server (m2 and m3 stay Dirty together).
            plan = rebalance.plan_moves(self.crowded((), priority=priority),
                                        3)
            self.assertEqual([('m1', 'z1', 'z2', 'L3-3')], moves(plan))
            self.assertEqual((rm.Score(0, 9), rm.Score(1, 9)),
                             (plan.before, plan.after))
            # With a refused 8-vCPU request, that CCX is its room: the
            # move would trade the request's Clean for m1's, and is not
            # made.
            plan = rebalance.plan_moves(
                self.crowded((8,), priority=priority), 3)
            self.assertEqual([], moves(plan), priority)
            self.assertEqual(rm.Score(0, 9, 1), plan.after)

    def test_a_dirty_pair_and_a_refused_request_for_the_one_room(self):
        # Moving m1 makes two servers Clean and takes the request's room.
        required = rebalance.plan_moves(self.crowded((8,), 2), 3)
        self.assertEqual(([], rm.Score(0, 8, 1)),
                         (moves(required), required.after))
        clean = rebalance.plan_moves(
            self.crowded((8,), 2, priority='clean'), 3)
        self.assertEqual(([('m1', 'z1', 'z2', 'L3-3')], rm.Score(2, 8, 0)),
                         (moves(clean), clean.after))
        self.assertEqual('clean', clean.moves[0].reason)


class ChainTableTest(testtools.TestCase):
    """Two moves where no single one helps: a Clean place made, then used.

    m1 and m2 share a's L2; b's only domain is full of cpu-bound c, which
    may join Clean m4 on d (a cpu-bound server dirties nothing), after
    which m1 has a Clean place on b.
    """

    def chain(self, *a_servers, d_servers=(f.mem('m4', 1, 'L3-0'),)):
        return f.snapshot(
            f.q6600('a', f.mem('m1', 1, 'L2-0'), f.mem('m2', 1, 'L2-0'),
                    *a_servers),
            f.host('b', [{'id': 'L2-0', 'cpus': [0, 1]}], [
                f.cpu('c', 2, 'L2-0')]),
            f.host('d', [{'id': 'L3-0', 'cpus': [0, 1, 2, 3]}],
                   list(d_servers)))

    def test_a_place_made_then_used(self):
        plan = rebalance.plan_moves(self.chain(f.cpu('ca', 2, 'L2-1')), 2)
        self.assertEqual([('c', 'b', 'd', 'L3-0'), ('m1', 'a', 'b', 'L2-0')],
                         moves(plan))
        self.assertEqual(['place', 'clean'],
                         [m.reason for m in plan.moves])
        # The first move keeps the score; the second gains both Clean.
        self.assertEqual([rm.Score(1, 5), rm.Score(3, 5)],
                         [m.score for m in plan.moves])
        self.assertEqual((rm.Score(1, 5), rm.Score(3, 5)),
                         (plan.before, plan.after))

    def test_clean_servers_whose_leaving_frees_a_place_are_not_tried(self):
        # Each k is Clean beside a cpu-bound server: its leaving would
        # leave a place for m1, but only by taking a Clean place it does
        # not have. As many of them as the chain search predicts, ahead
        # of c by size: c's chain is found all the same.
        decoys = [f.q6600('k%02d' % n, f.mem('k%02d' % n, 1, 'L2-0'),
                          f.cpu('kc%02d' % n, 1, 'L2-0'),
                          f.cpu('kf%02d' % n, 2, 'L2-1'))
                  for n in range(rebalance.CHAIN_CANDIDATES)]
        snap = self.chain(f.cpu('ca', 2, 'L2-1'))
        snap = dataclasses.replace(snap, hosts=snap.hosts + tuple(decoys))
        plan = rebalance.plan_moves(snap, 2)
        self.assertEqual([('c', 'b', 'd', 'L3-0'), ('m1', 'a', 'b', 'L2-0')],
                         moves(plan))

    def test_servers_the_agent_does_not_count_start_chains_first(self):
        # Each k is Clean alone in its L2 and may take r's free vCPU (a
        # room no request waits for), leaving a place for m1 or m2 - on a
        # host their soft-anti-affinity group already has a member on.
        # As many of them as the chain search predicts, ahead of c by
        # size: c, which the agent does not count against Clean and whose
        # leaving takes no room, is tried first.
        g = {'group': 'g'}
        decoys = [f.q6600('k%02d' % n, f.mem('k%02d' % n, 1, 'L2-0'),
                          f.cpu('kg%02d' % n, 2, 'L2-1', **g))
                  for n in range(rebalance.CHAIN_CANDIDATES)]
        snap = f.snapshot(
            f.q6600('a', f.mem('m1', 1, 'L2-0', **g),
                    f.mem('m2', 1, 'L2-0', **g), f.cpu('ca', 2, 'L2-1')),
            f.host('b', [{'id': 'L2-0', 'cpus': [0, 1]}],
                   [f.cpu('c', 2, 'L2-0')]),
            f.host('d', [{'id': 'L3-0', 'cpus': [0, 1, 2, 3]}],
                   [f.mem('m4', 1, 'L3-0')]),
            f.q6600('r', f.cpu('x', 1, 'L2-0'),
                    f.cpu('rg', 2, 'L2-1', **g)),
            *decoys, groups=(('g', 'soft-anti-affinity'),))
        plan = rebalance.plan_moves(snap, 2)
        self.assertEqual([('c', 'b', 'd', 'L3-0'), ('m1', 'a', 'b', 'L2-0')],
                         moves(plan))
        self.assertEqual(2, plan.after.clean - plan.before.clean)

    def test_no_chain_makes_a_clean_place_while_a_request_waits(self):
        # c's leaving would make b's domain a Clean place for m1, a
        # domain the next deletes may make a room: a refused 4-vCPU
        # request waits, which no move can seat. Rooms first: c and m1
        # stay. With Clean first the chain is made.
        snap = dataclasses.replace(
            self.chain(f.cpu('ca', 2, 'L2-1')), pending=(4,))
        plan = rebalance.plan_moves(snap, 4)
        self.assertEqual(([], rm.Score(1, 5)), (moves(plan), plan.after))
        plan = rebalance.plan_moves(
            dataclasses.replace(snap, priority='clean'), 4)
        self.assertEqual([('c', 'b', 'd', 'L3-0'), ('m1', 'a', 'b', 'L2-0')],
                         moves(plan))

    def test_a_room_for_the_smallest_request_no_room_holds(self):
        # Requests of 1 and 4 vCPUs: r's room holds the 1. Each decoy
        # domain would be a room for the 1 once its two servers left, as
        # many as the chain search predicts, ahead of p and q by size;
        # the 4 needs z's domain, which p's leaving makes one move from
        # a room: n's Clean nn goes beside q, and n's domain is one.
        l3 = [{'id': 'L3-0', 'cpus': [0, 1, 2, 3]}]
        decoys = [f.q6600('k%02d' % n, f.cpu('ka%02d' % n, 1, 'L2-0'),
                          f.cpu('kb%02d' % n, 1, 'L2-0'),
                          f.cpu('kf%02d' % n, 2, 'L2-1'))
                  for n in range(rebalance.CHAIN_CANDIDATES)]
        snap = f.snapshot(
            f.host('r', l3, [f.cpu('x', 2, 'L3-0')]),
            f.host('z', l3, [f.cpu('p', 2, 'L3-0'), f.cpu('q', 2, 'L3-0')]),
            f.host('m', l3, [f.mem('mm', 2, 'L3-0')]),
            f.host('n', l3, [f.mem('nn', 2, 'L3-0')]),
            *decoys, pending=(1, 4))
        plan = rebalance.plan_moves(snap, 4)
        self.assertEqual([('p', 'z', 'm', 'L3-0'), ('nn', 'n', 'z', 'L3-0')],
                         moves(plan))
        self.assertEqual(['place', 'room'], [m.reason for m in plan.moves])
        self.assertEqual((1, 2), (plan.before.room, plan.after.room))

    def test_no_chain_within_a_budget_of_one(self):
        plan = rebalance.plan_moves(self.chain(f.cpu('ca', 2, 'L2-1')), 1)
        self.assertEqual(([], rm.Score(1, 5)), (moves(plan), plan.after))

    def test_a_place_no_move_can_use_is_not_made(self):
        # m1 and m2 opted out: c's leaving would free a place nobody may
        # take, and c stays.
        snap = replace_servers(
            self.chain(f.cpu('ca', 2, 'L2-1')),
            lambda s: dataclasses.replace(s, opt_out=s.uuid in ('m1', 'm2')))
        plan = rebalance.plan_moves(snap, 4)
        self.assertEqual(([], rm.Score(1, 5)), (moves(plan), plan.after))

    def test_a_place_on_the_dirty_pairs_own_host_is_not_made(self):
        # The place c's leaving would free is on a itself: m1 cannot
        # migrate to its own host and a's agent keeps m1 where it is.
        snap = f.snapshot(
            f.q6600('a', f.mem('m1', 1, 'L2-0'), f.mem('m2', 1, 'L2-0'),
                    f.cpu('c', 2, 'L2-1')),
            f.host('d', [{'id': 'L3-0', 'cpus': [0, 1, 2, 3]}],
                   [f.mem('m4', 1, 'L3-0')]))
        plan = rebalance.plan_moves(snap, 4)
        self.assertEqual(([], rm.Score(1, 4)), (moves(plan), plan.after))


class DestinationRankTableTest(testtools.TestCase):
    """Which hosts a move is predicted to, when no Clean place is left."""

    def test_a_domain_already_dirty_before_one_a_newcomer_spoils(self):
        # No Clean place anywhere. On each b host m1 would join Clean bm
        # (spoiled: no move); on z the agent seats it beside x and y,
        # Dirty already, and m2 is Clean. z is ranked before the b hosts,
        # however many of them fill the destinations predicted.
        l3 = [{'id': 'L3-0', 'cpus': [0, 1, 2, 3]}]
        snap = f.snapshot(
            f.q6600('a', f.mem('m1', 1, 'L2-0'), f.mem('m2', 1, 'L2-0'),
                    f.cpu('c', 2, 'L2-1')),
            *(f.host('b%d' % n, l3, [f.mem('bm%d' % n, 1, 'L3-0')])
              for n in range(rebalance.DESTINATIONS_PER_SERVER)),
            f.host('z', l3, [f.mem('x', 1, 'L3-0'), f.mem('y', 1, 'L3-0')]))
        plan = rebalance.plan_moves(snap, 1)
        self.assertEqual([('m1', 'a', 'z', 'L3-0')], moves(plan))
        self.assertEqual((8, 9), (plan.before.clean, plan.after.clean))


class SettleTableTest(testtools.TestCase):
    """Each host as its agent leaves it with no migration (step 1)."""

    def test_a_required_server_found_cpu_bound_keeps_its_domain_closed(self):
        # c's flavor says required (declared memory-bound) but the
        # classifier found it cpu-bound: its domain stays closed to the
        # memory-bound m, which waits on Nova's CPUs - as the agent's
        # own choice, given every instance, decides.
        host = f.host('h', [{'id': 'd0', 'cpus': [0, 1]}], [
            f.mem('m', 1, cache_clean='required'),
            f.cpu('c', 1, 'd0', cache_clean='required', declared='memory')])
        self.assertEqual({'m': None, 'c': 'd0'},
                         rm.settle(host, host.servers,
                                   {'m': None, 'c': 'd0'}))

    def test_passes_until_nothing_changes(self):
        # The agent's first pass leaves s22 on Nova's CPUs; its next
        # pass, with s20 and s21 kept in d2, seats it: the region starts
        # from there, so that no move is credited with it.
        host = f.host('h', [{'id': 'd0', 'cpus': [0]},
                            {'id': 'd1', 'cpus': [1]},
                            {'id': 'd2', 'cpus': [2, 3, 4, 5]}], [
            f.mem('s20', 2, cache_clean='required'),
            f.mem('s21', 2, cache_clean='off'),
            f.cpu('s22', 1, cache_clean='required', declared='memory')])
        first = rm.settle(host, host.servers, {})
        self.assertEqual({'s20': 'd2', 's21': 'd2', 's22': None}, first)
        still = rm.settle_still(host, host.servers)
        self.assertEqual({'s20': 'd2', 's21': 'd2', 's22': 'd0'}, still)
        self.assertEqual(still, rm.settle(host, host.servers, still))
        region = rm.Region(f.snapshot(host))
        self.assertEqual(still, region.placed)


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

    def test_two_move_defragmentation(self):
        # Freeing z2's CCX for the refused 8-vCPU request needs both
        # 4-vCPU servers gone; neither move helps alone: a chain (step
        # 9), each beside a memory-bound server of z1 (a cpu-bound server
        # dirties nothing), the second making the room.
        snap = f.zen_defragmentation()
        plan = rebalance.plan_moves(snap, 2)
        self.assertEqual([('c0', 'z2', 'z1', 'L3-3'),
                          ('c1', 'z2', 'z1', 'L3-0')], moves(plan))
        self.assertEqual(['place', 'room'], [m.reason for m in plan.moves])
        self.assertEqual(1, plan.after.room)
        # With one migration left no chain starts.
        self.assertEqual([], moves(rebalance.plan_moves(snap, 1)))


def limited(host, max_unit=None, domain_max_unit=None):
    """``host`` with Placement's ``max_unit`` on it and on every domain."""
    return dataclasses.replace(host, max_unit=max_unit, domains=tuple(
        dataclasses.replace(d, max_unit=domain_max_unit)
        for d in host.domains))


class PlacementLimitTableTest(testtools.TestCase):
    """No move, and no room, where Placement's ``max_unit`` refuses it.

    At allocation ratio 4.0 a domain of 4 CPUs holds 16 vCPUs, but the
    compute node's VCPU ``max_unit`` (its CPUs) and a per-domain
    provider's (the domain's CPUs) refuse any larger server.
    """

    def test_destinations(self):
        table = [
            # (name, b's max_unit, b's domain max_unit, moves, Clean after)
            ('no limit known: m1 moves to b', None, None,
             [('m1', 'a', 'b', 'L3-0')], 2),
            ('b\'s compute node takes no 3-vCPU server: nothing moves',
             2, None, [], 0),
            ('b\'s domain provider takes none either', None, 2, [], 0),
            ('both limits hold 3 vCPUs: m1 moves', 4, 3,
             [('m1', 'a', 'b', 'L3-0')], 2),
        ]
        for name, host_max, domain_max, expected, clean in table:
            snap = f.snapshot(
                limited(one_domain('a', 16, f.mem('m1', 3, 'L3-0'),
                                   f.mem('m2', 3, 'L3-0')), 4, 4),
                limited(one_domain('b', 8), host_max, domain_max))
            plan = rebalance.plan_moves(snap, 3)
            self.assertEqual(expected, moves(plan), name)
            self.assertEqual(clean, plan.after.clean, name)

    def test_rooms_for_refused_requests(self):
        table = [
            # (name, z1's max_unit, z2's max_unit, moves, rooms after)
            ('no limit known: c2 joins a Clean CCX of z1, z2\'s CCX is '
             'the room', None, None, [('c2', 'z2', 'z1', 'L3-3')], 1),
            ('z2 takes no 8-vCPU server: the room is made on z1 instead '
             '(m0 joins the cpu-bound c2, still Clean)', None, 4,
             [('m0', 'z1', 'z2', 'L3-2')], 1),
            ('z1 takes no 4-vCPU server and no 8-vCPU request: nothing',
             2, None, [], 0),
        ]
        for name, z1_max, z2_max, expected, room in table:
            z1, z2 = f.FRAGMENTED.hosts
            snap = dataclasses.replace(f.FRAGMENTED, hosts=(
                limited(z1, z1_max), limited(z2, z2_max)))
            plan = rebalance.plan_moves(snap, 3)
            self.assertEqual(expected, moves(plan), name)
            self.assertEqual(room, plan.after.room, name)

    def test_a_room_is_as_large_as_placement_lets_it_be(self):
        # An Empty 16-vCPU domain (4 CPUs at ratio 4.0).
        for host_max, domain_max, pending, room in (
                (None, None, (16,), 1), (8, None, (16,), 0),
                (8, None, (8,), 1), (None, 4, (8,), 0),
                (8, 4, (4, 4), 1), (None, None, (4, 4), 1)):
            snap = f.snapshot(limited(one_domain('a', 16), host_max,
                                      domain_max), pending=pending)
            self.assertEqual(room, rm.Region(snap).score.room,
                             (host_max, domain_max, pending))
        self.assertEqual(4, rm.largest_server(
            rs.Host('a', 4, max_unit=8), rs.Domain('d', 16, max_unit=4)))
        self.assertEqual(16, rm.largest_server(rs.Host('a', 4),
                                               rs.Domain('d', 16)))


def by_flavor(uuid, vcpus, workload, declared='auto', **kw):
    """A server whose flavor declares ``declared`` (class ``workload``)."""
    return rs.Server(uuid, vcpus, workload, declared=declared, **kw)


def by_class(snap):
    """``snap`` as a document without ``declared``: the class stands in."""
    return replace_servers(snap, lambda s: dataclasses.replace(
        s, declared=None))


class FlavorRulesTest(testtools.TestCase):
    """The model counts servers as the agents and the filter do.

    An ``auto`` server found CPU-bound still wants Clean to the
    CacheDomainFilter, which reads only the flavor and closes a domain
    holding a ``required`` server to it; the agent's choice counts it as
    no memory-bound neighbour.
    """

    def required_beside(self, *more):
        # x (auto, found CPU-bound) leaving a's L2-0 makes the room a
        # refused 2-vCPU required request needs; b's only room is beside
        # r, a required server.
        return f.snapshot(
            f.q6600('a', by_flavor('x', 1, 'cpu', domain='L2-0'),
                    by_flavor('m', 2, 'memory', domain='L2-1')),
            f.q6600('b', by_flavor('r', 1, 'memory', 'memory',
                                   cache_clean='required', domain='L2-0'),
                    by_flavor('y', 2, 'memory', domain='L2-1')),
            *more, pending=(2,))

    def test_no_auto_server_is_sent_beside_a_required_one(self):
        snap = self.required_beside()
        # By class, x would go beside r: the filter refuses that.
        self.assertEqual([('x', 'a', 'b', 'L2-0')],
                         moves(rebalance.plan_moves(by_class(snap), 3)))
        region = rm.Region(snap)
        self.assertFalse(rm.filter_admits(region.views['b'],
                                          region.servers['x']))
        self.assertFalse(region.trial('x', 'b').keeps_rules)
        # r goes beside x instead: the agent and the live state count x as
        # no memory-bound neighbour, and b's L2-0 becomes the room.
        plan = rebalance.plan_moves(snap, 3)
        self.assertEqual([('r', 'b', 'a', 'L2-0')], moves(plan))
        self.assertEqual('room', plan.moves[0].reason)

    def test_it_goes_where_the_filter_lets_it(self):
        # c's L2-0 holds a server declared cpu (not Clean-wanting) that
        # the operator keeps: open to x.
        snap = self.required_beside(f.q6600(
            'c', by_flavor('k', 1, 'cpu', 'cpu', opt_out=True,
                           domain='L2-0'),
            by_flavor('z', 2, 'memory', domain='L2-1')))
        plan = rebalance.plan_moves(snap, 3)
        self.assertEqual([('x', 'a', 'c', 'L2-0')], moves(plan))
        self.assertEqual(('room', 1, 1), (plan.moves[0].reason,
                                          plan.before.room + 1,
                                          plan.after.room))

    def test_predicted_domain_is_the_agents_choice(self):
        # m1 leaves a Dirty pair for b, where neither c (declared cpu) nor
        # z (auto, found CPU-bound) counts against Clean to the agent:
        # both domains are Clean places, the agent's seed picks one.
        snap = f.snapshot(
            f.q6600('a', by_flavor('m1', 1, 'memory', domain='L2-0'),
                    by_flavor('m2', 1, 'memory', domain='L2-0'),
                    by_flavor('k', 2, 'cpu', 'cpu', domain='L2-1')),
            f.q6600('b', by_flavor('c', 1, 'cpu', 'cpu', domain='L2-0'),
                    by_flavor('z', 1, 'cpu', domain='L2-1')))
        plan = rebalance.plan_moves(snap, 3)
        self.assertEqual([('m1', 'a', 'b', 'L2-1')], moves(plan))
        self.assertEqual(('clean', 0, 2), (plan.moves[0].reason,
                                           plan.before.clean,
                                           plan.after.clean))
        # The agent's own choice on b once m1 arrived.
        held = [da.HostHeld(uuid=s.uuid, vcpus=s.vcpus,
                            memory_bound=s.agent_clean_wanted,
                            previous=None if s.uuid == 'm1' else s.domain,
                            clean_required=s.flavor_clean_required)
                for s in snap.hosts[1].servers + snap.hosts[0].servers[:1]]
        self.assertEqual('L2-1', da.assign_domains(
            {'L2-0': 2, 'L2-1': 2}, held, {})['m1'])
        # z counted against Clean (the agent before it read classes)
        # would have sent m1 beside c.
        held = [dataclasses.replace(vm, memory_bound=True)
                if vm.uuid == 'z' else vm for vm in held]
        self.assertEqual('L2-0', da.assign_domains(
            {'L2-0': 2, 'L2-1': 2}, held, {})['m1'])
