"""The simulated year of rebalance audits: its cloud, audits and counts."""

import heapq

import testtools

from nova_cacheaware_evaluation.sim import cloud
from nova_cacheaware_evaluation.sim import contention
from nova_cacheaware_evaluation.sim import rebalance_year as year

#: Two domains of two CPUs per host.
PAIRS = ((0, 1), (2, 3))
#: The classifier said memory-bound 1950 s after boot.
MEMORY_AT_1950 = ((1950.0, 'memory'),)
OTHER_AT_1950 = ((1950.0, 'other'),)


def small_cloud(hosts=2):
    """A cloud of ``hosts`` hosts of :data:`PAIRS`, at day 1."""
    state = year.Cloud(year.YearSpec(hosts=hosts, domains=PAIRS))
    state.now_s = year.DAY_S
    return state


def put(state, host, vm_id, vcpus, workload, home, flavor='auto',
        changes=MEMORY_AT_1950):
    """A guest on ``host`` in domain ``home``, as the agent placed it."""
    guest = cloud.Guest(contention.SimVM(vm_id, vcpus, workload),
                        cloud.request(flavor, vcpus), 0.0, changes)
    guest.home = home
    state.hosts[host].guests[vm_id] = guest
    state.where[vm_id] = host
    state.truth[vm_id] = workload
    return guest


def dirty_host(state):
    """Host 0: two memory-bound servers in domain 0, a CPU-bound in 1."""
    put(state, 0, 'vm-a', 1, 'memory', 0)
    put(state, 0, 'vm-b', 1, 'memory', 0)
    put(state, 0, 'vm-c', 2, 'cpu', 1, changes=OTHER_AT_1950)


class BudgetTest(testtools.TestCase):
    """``migrations_per_100_servers``, rounded up as the strategy does."""

    def test_table(self):
        for servers, per_100, expected in (
                (0, 1, 0), (1, 1, 1), (100, 1, 1), (101, 1, 2),
                (400, 0.25, 1), (401, 0.25, 2), (250, 0, 0), (30, 5, 2)):
            self.assertEqual(expected, year.budget_of(servers, per_100),
                             (servers, per_100))


class SpecTest(testtools.TestCase):

    def test_arrival_rate_keeps_the_load(self):
        # 0.85 of 300 x 16 CPUs, 2.25 vCPUs a server, 60 days each.
        self.assertAlmostEqual(0.85 * 4800 / (2.25 * 60),
                               year.YearSpec().arrivals_per_day)


class CleanTest(testtools.TestCase):
    """Clean is judged on the real workloads, not the agent's classes."""

    def test_two_memory_bound_in_one_domain_are_not_clean(self):
        state = small_cloud()
        dirty_host(state)
        put(state, 1, 'vm-d', 1, 'memory', 1)
        self.assertEqual({'vm-d'}, state.clean())
        self.assertEqual(3, state.memory_bound())
        self.assertEqual(4, state.domains())

    def test_a_cpu_bound_neighbour_does_not_make_dirty(self):
        state = small_cloud()
        put(state, 0, 'vm-a', 1, 'memory', 0)
        put(state, 0, 'vm-c', 1, 'cpu', 0, changes=OTHER_AT_1950)
        self.assertEqual({'vm-a'}, state.clean())


class PerformanceTest(testtools.TestCase):
    """The memory-bound servers' speed by the contention model."""

    def test_a_dirty_pair_each_runs_at_one_over_one_plus_dirty(self):
        state = small_cloud()
        dirty_host(state)
        put(state, 1, 'vm-d', 1, 'memory', 1)
        model = contention.Model(dirty_all=0.25, split_mem=4.0)
        # vm-a and vm-b share domain 0 (1 / 1.25 each), vm-d is Clean;
        # the CPU-bound vm-c counts for nothing.
        self.assertAlmostEqual(2 / 1.25 + 1, state.performance(model))
        # Four domains for three: all Clean is possible.
        self.assertAlmostEqual(3.0, state.performance_optimum(model))

    def test_a_server_in_no_domain_runs_partial(self):
        state = small_cloud()
        put(state, 0, 'vm-a', 1, 'memory', None)
        model = contention.Model(dirty_all=0.25, split_mem=4.0)
        self.assertAlmostEqual(0.25, state.performance(model))
        self.assertAlmostEqual(1.0, state.performance_optimum(model))

    def test_two_full_dirty_domains_are_the_best_there_is(self):
        state = small_cloud(hosts=1)
        # Four 1-vCPU memory-bound servers in two domains of two CPUs:
        # two pairs is the only way to seat them (packing against
        # spreading: clean_bound's test).
        for i, home in enumerate((0, 0, 1, 1)):
            put(state, 0, 'vm-%d' % i, 1, 'memory', home)
        model = contention.Model(dirty_all=0.25)
        self.assertAlmostEqual(4 / 1.25, state.performance(model))
        self.assertAlmostEqual(4 / 1.25, state.performance_optimum(model))
        self.assertEqual(0, state.optimum())
        self.assertEqual(0, state.optimum_in_pairs())

    def test_in_pairs_the_optimum_packs_no_third(self):
        state = year.Cloud(year.YearSpec(hosts=1))
        state.now_s = year.DAY_S
        # Six 1-vCPU memory-bound servers in four domains of four CPUs,
        # seated as the agents seat them: two pairs, two alone. Packing
        # three into one domain would keep three Clean.
        for i, home in enumerate((0, 0, 1, 1, 2, 3)):
            put(state, 0, 'vm-%d' % i, 1, 'memory', home)
        self.assertEqual({'vm-4', 'vm-5'}, state.clean())
        self.assertEqual(3, state.optimum())
        self.assertEqual(2, state.optimum_in_pairs())


class SeenClassTest(testtools.TestCase):
    """What the audit's snapshot says of each server's class."""

    def test_table(self):
        state = small_cloud()
        declared = put(state, 0, 'vm-r', 1, 'memory', 0, flavor='required',
                       changes=())
        found = put(state, 0, 'vm-m', 1, 'memory', 1)
        cpu = put(state, 1, 'vm-c', 1, 'cpu', 0, changes=OTHER_AT_1950)
        for guest, at, expected in ((declared, 10.0, 'memory'),
                                    (found, 1949.0, 'unknown'),
                                    (found, 1950.0, 'memory'),
                                    (cpu, 1949.0, 'unknown'),
                                    (cpu, 1950.0, 'cpu')):
            self.assertEqual(expected, year.seen_class(guest, at),
                             (guest.vm.id, at))

    def test_snapshot(self):
        state = small_cloud()
        dirty_host(state)
        put(state, 1, 'vm-r', 2, 'memory', 1, flavor='required', changes=())
        snap = year.snapshot(state, year.DAY_S, pending=(2,))
        self.assertEqual(['h0000', 'h0001'], [h.name for h in snap.hosts])
        # declared: the flavor's workload, as watcher.snapshot fills it
        # (an auto server found CPU-bound still wants Clean to the
        # filter, not to the agent).
        self.assertEqual(
            [('vm-a', 'memory', 'preferred', 'd000', 'auto'),
             ('vm-b', 'memory', 'preferred', 'd000', 'auto'),
             ('vm-c', 'cpu', 'preferred', 'd001', 'auto')],
            [(s.uuid, s.workload, s.cache_clean, s.domain, s.declared)
             for s in snap.hosts[0].servers])
        self.assertEqual([True, False, False], [
            snap.hosts[0].servers[2].flavor_clean_wanted,
            snap.hosts[0].servers[2].agent_clean_wanted,
            snap.hosts[0].servers[2].wants_clean])
        self.assertEqual([('vm-r', 'memory', 'required', 'd001', 'memory')],
                         [(s.uuid, s.workload, s.cache_clean, s.domain,
                           s.declared) for s in snap.hosts[1].servers])
        self.assertEqual((2,), snap.pending)
        self.assertEqual([2, 2], [d.capacity for d in snap.hosts[0].domains])


def homes(state, host):
    """``{vm id: domain}`` of the guests of ``host``."""
    return {k: g.home for k, g in sorted(state.hosts[host].guests.items())}


def raced_host(state):
    """Host 0 as a race left it.

    An ``auto`` memory-bound server beside a ``required`` one in domain
    0, domain 1 full (a CPU-bound server).
    """
    put(state, 0, 'vm-r', 1, 'memory', 0, flavor='required', changes=())
    put(state, 0, 'vm-a', 1, 'memory', 0)
    put(state, 0, 'vm-c', 2, 'cpu', 1, changes=OTHER_AT_1950)


class AgentTest(testtools.TestCase):
    """The hosts' agents re-place their servers after every change.

    As the agent's pass does: ``assign_domains`` over every server
    holding host room, each with its flavor's rules and its domain.
    """

    def test_pass_moves_an_auto_one_off_a_required_domain(self):
        state = small_cloud()
        raced_host(state)
        self.assertEqual(set(), state.clean())
        # No other domain has room: it waits on Nova's CPUs.
        state.hosts[0].agent_choice()
        self.assertEqual({'vm-a': None, 'vm-c': 1, 'vm-r': 0},
                         homes(state, 0))
        self.assertEqual({'vm-r'}, state.clean())
        self.assertEqual(1, state.unseated())

    def test_departure_frees_a_domain_the_agent_uses(self):
        state = small_cloud()
        raced_host(state)
        heapq.heappush(state._ends, (0.5, 'vm-c'))
        state.depart_until(1.0)
        self.assertEqual({'vm-a': 1, 'vm-r': 0}, homes(state, 0))
        self.assertEqual({'vm-a', 'vm-r'}, state.clean())

    def test_migration_out_seats_a_waiting_server(self):
        state = small_cloud()
        raced_host(state)
        state.hosts[0].agent_choice()
        self.assertTrue(state.migrate('vm-c', 1))
        self.assertEqual({'vm-a': 1, 'vm-r': 0}, homes(state, 0))
        self.assertEqual({'vm-c': 0}, homes(state, 1))
        self.assertEqual({'vm-a', 'vm-r'}, state.clean())

    def test_boot_places_the_newcomer_and_keeps_the_others(self):
        state = small_cloud()
        put(state, 0, 'vm-a', 1, 'memory', 1)
        self.assertTrue(state.boot(year.Arrival(
            1.0, contention.SimVM('vm-n', 2, 'cpu'), 10.0, 'auto'),
            OTHER_AT_1950))
        # The host with the most free vCPUs (Nova's spreading) is host 1.
        self.assertEqual({'vm-n': 0}, homes(state, 1))
        self.assertEqual({'vm-a': 1}, homes(state, 0))

    def test_an_auto_server_found_cpu_bound_stays_beside_a_required_one(self):
        # The agent counts the class it found: an auto server found
        # CPU-bound is no memory-bound neighbour of a required one.
        state = small_cloud()
        put(state, 0, 'vm-r', 1, 'memory', 0, flavor='required', changes=())
        put(state, 0, 'vm-c', 1, 'cpu', 0, changes=OTHER_AT_1950)
        state.hosts[0].agent_choice()
        self.assertEqual({'vm-c': 0, 'vm-r': 0}, homes(state, 0))
        guest = state.hosts[0].guests['vm-c']
        self.assertFalse(state.hosts[0].clean_wanted(guest))

    def test_an_auto_server_not_classified_yet_leaves_a_required_one(self):
        state = small_cloud()
        put(state, 0, 'vm-r', 1, 'memory', 0, flavor='required', changes=())
        put(state, 0, 'vm-c', 1, 'cpu', 0, changes=((9e9, 'other'),))
        state.hosts[0].agent_choice()
        self.assertEqual({'vm-c': 1, 'vm-r': 0}, homes(state, 0))


class FilterTest(testtools.TestCase):
    """The filter closes a required server's domain to Clean-wanting ones."""

    def test_only_room_beside_required_refuses_auto(self):
        state = small_cloud()
        put(state, 0, 'vm-r', 1, 'memory', 0, flavor='required', changes=())
        put(state, 0, 'vm-c', 2, 'cpu', 1, changes=OTHER_AT_1950)
        host = state.hosts[0]
        self.assertEqual(frozenset({'d000'}), host.required_domains())
        self.assertFalse(host.admits(cloud.request('auto', 1)))
        self.assertFalse(host.admits(cloud.request('required', 1)))
        # A flavor without the cache group is not filtered.
        self.assertTrue(host.admits(cloud.request('plain', 1)))
        # The cache scenarios' hosts close none (their published figures).
        plain = cloud.Host(0, PAIRS)
        plain.guests = host.guests
        self.assertTrue(plain.admits(cloud.request('auto', 1)))


class AuditTest(testtools.TestCase):
    """The strategy's moves applied as Watcher's applier and Nova would."""

    def test_dirty_host_one_move_makes_both_clean(self):
        state = small_cloud()
        dirty_host(state)
        moves = year.strategy_moves(state, year.DAY_S, 1)
        self.assertEqual(1, len(moves))
        self.assertEqual(1, moves[0][1])
        self.assertIn(moves[0][0], ('vm-a', 'vm-b'))
        result = year.apply_plan(state, moves)
        self.assertEqual((1, 1, 0, 0), (result.planned, result.moved,
                                        result.failed, result.worse))
        self.assertEqual({'vm-a', 'vm-b'}, state.clean())
        self.assertEqual(1, state.where[moves[0][0]])

    def test_nothing_to_improve_plans_nothing(self):
        state = small_cloud()
        put(state, 0, 'vm-a', 1, 'memory', 0)
        put(state, 1, 'vm-b', 1, 'memory', 0)
        self.assertEqual([], year.strategy_moves(state, year.DAY_S, 5))
        self.assertEqual([], year.clairvoyant_moves(state, 2))

    def test_no_budget_no_move(self):
        state = small_cloud()
        dirty_host(state)
        self.assertEqual([], year.strategy_moves(state, year.DAY_S, 0))
        self.assertEqual([], year.clairvoyant_moves(state, 0))

    def test_refused_migration_stops_the_plan_and_moves_nothing(self):
        state = small_cloud()
        dirty_host(state)
        # Host 1 is full: 4 vCPUs of CPU-bound servers.
        put(state, 1, 'vm-x', 2, 'cpu', 0, changes=OTHER_AT_1950)
        put(state, 1, 'vm-y', 2, 'cpu', 1, changes=OTHER_AT_1950)
        result = year.apply_plan(state, [('vm-a', 1), ('vm-b', 1)])
        self.assertEqual((2, 0, 1, 0), (result.planned, result.moved,
                                        result.failed, result.worse))
        self.assertEqual(0, state.where['vm-a'])
        self.assertEqual(0, state.hosts[0].guests['vm-a'].home)
        self.assertEqual(set(), state.clean())

    def test_worse_counts_a_server_a_move_made_dirty(self):
        state = small_cloud()
        put(state, 0, 'vm-a', 1, 'memory', 0)
        put(state, 1, 'vm-b', 1, 'memory', 0)
        put(state, 1, 'vm-c', 1, 'memory', 1)
        # vm-a joins a host whose two domains each hold one: it shares.
        result = year.apply_plan(state, [('vm-a', 1)])
        self.assertEqual((1, 0), (result.moved, result.failed))
        self.assertEqual(2, result.worse)
        self.assertEqual(1, len(state.clean()))

    def test_clairvoyant_finds_the_move(self):
        state = small_cloud()
        dirty_host(state)
        moves = year.clairvoyant_moves(state, 1)
        self.assertEqual(1, len(moves))
        year.apply_plan(state, moves)
        self.assertEqual({'vm-a', 'vm-b'}, state.clean())


class YearTest(testtools.TestCase):
    """A short year on a small cloud: the counts add up, runs repeat."""

    def setUp(self):
        super().setUp()
        spec = year.YearSpec(hosts=4, days=20, warmup_days=30,
                             mix=(('cpu', 2), ('io', 1), ('memory', 7)))
        self.world = year.world(spec, contention.Model(dirty_all=0.087),
                                0.075, 7)

    def test_counts(self):
        for per_100 in (0, 1):
            got = year.run(self.world, per_100)
            days = got['days']
            self.assertEqual(20, len(days))
            self.assertEqual(got['moved'], sum(d['moved'] for d in days))
            self.assertEqual(got['refused_required'],
                             sum(d['refused_required'] for d in days))
            for d in days:
                self.assertLessEqual(d['performance'],
                                     d['performance_optimum'])
                self.assertLessEqual(d['performance_optimum'],
                                     d['memory_bound'])
                self.assertLessEqual(d['clean'], d['bound'])
                if d['optimum_in_pairs'] is not None:
                    self.assertLessEqual(d['optimum_in_pairs'],
                                         d['optimum'])
                self.assertLessEqual(d['clean_before'], d['bound'])
                self.assertLessEqual(d['moved'], d['budget'])
                self.assertEqual(min(d['memory_bound'], 16), d['bound'])
            if per_100 == 0:
                self.assertEqual(0, got['moved'])

    def test_repeatable(self):
        self.assertEqual(year.run(self.world, 1), year.run(self.world, 1))
