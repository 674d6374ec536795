"""The cloud simulator: operator flavors, bounds, optimum, classifier."""

import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware_evaluation.sim import cache_scenario
from nova_cacheaware_evaluation.sim import classifier_trace
from nova_cacheaware_evaluation.sim import cloud
from nova_cacheaware_evaluation.sim import cloud_run
from nova_cacheaware_evaluation.sim import contention
from nova_cacheaware_evaluation.sim import optimum

EPYC = [tuple(range(i, i + 4)) for i in range(0, 16, 4)]
Q6600 = [(0, 1), (2, 3)]


def guest(vm_id, vcpus, workload, flavor='plain', changes=()):
    return cloud.Guest(contention.SimVM(vm_id, vcpus, workload),
                       cloud.request(flavor, vcpus), 0.0, changes)


def place(host, g, config):
    if g.req.group:
        g.home = host.choose_domain(g)
    host.guests[g.vm.id] = g
    cloud.replan(host, config, 0.0)
    return g


class RequestTest(testtools.TestCase):
    """The flavors are what ``nova-cacheaware flavor set`` writes."""

    def test_required(self):
        r = cloud.request('required', 2)
        self.assertEqual((True, True, True),
                         (r.group, r.membound, r.cacheaware.clean_required))

    def test_preferred_and_off_claim_no_slot(self):
        for flavor, wanted in (('preferred', True), ('off', False)):
            r = cloud.request(flavor, 4)
            self.assertEqual((True, False, False, wanted),
                             (r.group, r.membound,
                              r.cacheaware.clean_required,
                              r.cacheaware.clean_wanted))

    def test_plain_has_no_keys(self):
        r = cloud.request('plain', 1)
        self.assertEqual((False, False, False),
                         (r.cacheaware.present, r.group, r.membound))

    def test_auto_all_share(self):
        r = cloud.request('auto', 2)
        self.assertEqual(('auto', True, False, True),
                         (r.cacheaware.workload, r.group, r.membound,
                          r.cacheaware.clean_wanted))


class WeigherFormulaTest(testtools.TestCase):

    def test_matches_the_scheduler_weigher(self):
        from nova_cacheaware.contracts import host_state as hs
        from nova_cacheaware.scheduler import weights
        # (memory-bound VMs per domain, vCPUs used per domain, expected)
        # on 4-CPU domains, for a 2-vCPU instance.
        table = [
            ((0, 0, 0, 0), (0, 0, 0, 0), cloud.contention_score(4, 0, 4)),
            ((1, 1, 1, 0), (1, 1, 1, 0), cloud.contention_score(1, 3, 4)),
            ((3, 3, 3, 0), (3, 3, 3, 0), cloud.contention_score(1, 9, 4)),
            # A domain that cpu-bound VMs filled is no Clean place.
            ((0, 0, 0, 0), (4, 3, 0, 0), cloud.contention_score(2, 0, 4)),
        ]
        for memory, used, expected in table:
            host = cloud.Host(0, [range(4 * d, 4 * d + 4) for d in range(4)])
            rows = [('d%03d' % d, memory[d], memory[d], used[d], 4)
                    for d in range(4)]
            host.rows = lambda rows=rows: rows
            state = hs.HostCacheState(
                host='h', timestamp=None, agent_healthy=True,
                domains=tuple(hs.DomainState(
                    'd%d' % d, hs.domain_state(memory[d]),
                    tuple('m%d-%d' % (d, i) for i in range(memory[d])), 4,
                    vcpus_used=used[d]) for d in range(4)))
            self.assertEqual(expected, weights.contention_score(state, 2))
            self.assertEqual(expected, host.contention(2))


class HostTest(testtools.TestCase):

    def test_required_needs_a_domain_without_memory_vm(self):
        host = cloud.Host(0, Q6600)
        agent = cloud.CONFIGS['required']
        first = place(host, guest('a', 1, 'memory', 'required'), agent)
        place(host, guest('b', 2, 'cpu'), agent)
        self.assertEqual(0, first.home)
        self.assertEqual([(0, 1)], first.allowed)
        # 3 of 4 vCPUs used: Domain 1 (Empty, no held vCPU) takes a
        # 1-vCPU claim; nothing takes 2 vCPUs (Nova's VCPU room).
        self.assertTrue(host.admits(cloud.request('required', 1)))
        self.assertFalse(host.admits(cloud.request('required', 2)))
        self.assertFalse(host.admits(cloud.request('plain', 2)))

    def test_memory_slots_run_out(self):
        host = cloud.Host(0, EPYC)
        config = cloud.CONFIGS['required']
        for n in range(4):
            place(host, guest('m%d' % n, 1, 'memory', 'required'), config)
        self.assertEqual(0, host.membound_free())
        self.assertFalse(host.admits(cloud.request('required', 1)))
        self.assertTrue(host.admits(cloud.request('preferred', 1)))
        self.assertEqual([0, 1, 2, 3],
                         sorted(g.home for g in host.guests.values()))

    def test_classified_vm_is_pinned_after_its_verdict(self):
        host = cloud.Host(0, Q6600)
        verdict = ((600.0, 'memory'),)
        g = place(host, guest('x', 2, 'memory', changes=verdict),
                  cloud.CONFIGS['agent-auto'])
        self.assertEqual([(0, 1, 2, 3)] * 2, g.allowed)
        cloud.replan(host, cloud.CONFIGS['agent-auto'], 700.0)
        self.assertEqual(1, len(set(g.allowed)))
        self.assertEqual(2, len(g.allowed[0]))
        self.assertEqual(1, len(host.pinned_memory))
        self.assertEqual(1, host.membound_free())

    def test_weigher_sends_memory_to_the_empty_host(self):
        hosts = [cloud.Host(0, Q6600), cloud.Host(1, Q6600)]
        config = cloud.CONFIGS['preferred']
        place(hosts[0], guest('m', 1, 'memory', 'preferred'), config)
        place(hosts[1], guest('c', 1, 'cpu'), config)
        chosen = cloud.pick_host(hosts, cloud.request('preferred', 1))
        self.assertEqual(1, chosen.index)
        # Plain requests: Nova's spreading only (equal free vCPUs: first).
        self.assertEqual(0, cloud.pick_host(
            hosts, cloud.request('plain', 1)).index)


class UpperBoundTest(testtools.TestCase):

    def _spec(self):
        return {'sample_every': 1, 'warmup': 0}

    def test_exact_value(self):
        trace = [(0.0, contention.SimVM('a', 1, 'memory'), 10.0, True),
                 (1.0, contention.SimVM('b', 1, 'memory'), 10.0, True),
                 (2.0, contention.SimVM('c', 1, 'memory'), 10.0, True)]
        bound = cloud_run.upper_bound(trace, self._spec(), 2, 0.1)
        # Samples at t=0 (1 VM), 1 (2 VMs), 2 (3 VMs: 2 Clean + 1/1.1).
        self.assertEqual(round((1 + 2 + 2 + 1 / 1.1) / 6, 4),
                         bound['memory_perf'])
        self.assertEqual(round(5 / 6, 4), bound['memory_clean'])

    @settings(max_examples=30, deadline=None)
    @given(st.lists(st.tuples(st.integers(1, 2),
                              st.sampled_from(['memory', 'cpu']),
                              st.integers(0, 2)), min_size=1, max_size=5),
           st.integers(0, 1000))
    def test_no_placement_beats_the_bound(self, vms, seed):
        """Per slice: at most one Clean memory VM per domain."""
        sims, allowed = [], {}
        everything = (0, 1, 2, 3)
        for n, (vcpus, workload, where) in enumerate(vms):
            vm = contention.SimVM('v%d' % n, vcpus, workload)
            sims.append(vm)
            cpus = everything if where == 2 else Q6600[where]
            allowed[vm.id] = [cpus] * vcpus
        model = contention.Model(dirty_all=0.2)
        stats = contention.simulate_host(Q6600, sims, allowed, 30,
                                         contention.new_rng(seed), model)
        mem = [stats[v.id] for v in sims if v.workload == 'memory']
        m = len(mem)
        ok = min(m, len(Q6600))
        self.assertLessEqual(sum(s.clean_slices for s in mem), ok * 30)
        self.assertLessEqual(sum(s.performance for s in mem),
                             ok + (m - ok) / 1.2 + 1e-9)


class OptimumTest(testtools.TestCase):

    def _scenario(self, seed):
        return cache_scenario.load_scenario({
            'seed': seed, 'host': 'q6600',
            'cloud': {'hosts': 1, 'arrivals': 4, 'mean_lifetime': 3.0,
                      'mix': {'memory': 2, 'cpu': 1},
                      'sizes': {'1': 1, '2': 1}, 'sample_every': 1,
                      'slices': 10},
            'configs': ['nova-shared', 'spread-cache']})

    def test_symmetry_keeps_one_labelling(self):
        scenario = self._scenario(1)
        trace = [(0.0, contention.SimVM('a', 1, 'memory'), 9.0, True)]
        got = list(optimum.placements(scenario, trace))
        # Domain 1 is domain 0 relabelled: float or domain 0 only.
        self.assertEqual([{'a': (0, 0)}, {'a': (0, None)}], got)

    def test_optimum_beats_static_peers_and_stays_under_bound(self):
        for seed in (1, 2, 3):
            out = optimum.small_case(self._scenario(seed))
            best = out['optimum']['memory_perf']
            self.assertLessEqual(best, out['upper_bound']['memory_perf'])
            for name in ('nova-shared', 'spread-cache'):
                self.assertGreaterEqual(
                    best, out['configs'][name]['memory_perf'], name)


class ClassifierTraceTest(testtools.TestCase):

    def test_schedule(self):
        s = classifier_trace.Schedule()
        self.assertEqual(650.0, s.cycle_s)
        self.assertAlmostEqual(50 / 650, s.trial_fraction)
        self.assertRaises(ValueError, classifier_trace.Schedule, passes=0)

    def test_noiseless_delays(self):
        model = contention.Model()
        # 2 vCPUs: 10 All-share samples per trial, one vote per cycle,
        # dwell 3: the third vote, 1950 s after boot. 1 vCPU: 5 samples
        # a trial, votes at 680, 1960 and 2640 s.
        for vcpus, when in ((2, 1950.0), (4, 1950.0), (1, 2640.0)):
            for workload, verdict in (('memory', 'memory'),
                                      ('cpu', 'other')):
                self.assertEqual(
                    [(when, verdict)], classifier_trace.trajectory(
                        workload, vcpus, 20000, model, 0.0,
                        random.Random(1)))

    def test_class_at(self):
        changes = [(100.0, 'memory'), (900.0, 'other')]
        self.assertEqual('undecided', classifier_trace.class_at(changes, 50))
        self.assertEqual('memory', classifier_trace.class_at(changes, 100))
        self.assertEqual('other', classifier_trace.class_at(changes, 1e6))

    @settings(max_examples=20, deadline=None)
    @given(st.sampled_from(['memory', 'cpu', 'io']), st.integers(1, 4),
           st.floats(0.0, 1.0), st.integers(0, 10 ** 6))
    def test_trajectory_alternates_and_stays_in_horizon(
            self, workload, vcpus, sigma, seed):
        changes = classifier_trace.trajectory(
            workload, vcpus, 8000, contention.Model(split_mem=1.3), sigma,
            random.Random(seed))
        times = [t for t, _c in changes]
        self.assertEqual(sorted(times), times)
        self.assertTrue(all(0 < t <= 8000 for t in times))
        classes = [c for _t, c in changes]
        self.assertTrue(all(a != b for a, b in zip(classes, classes[1:])))

    def test_confusion_shape(self):
        out = classifier_trace.confusion(contention.Model(), 0.0,
                                         [1000, 3000], vms=3)
        self.assertEqual({'undecided': 1.0}, out['memory'][1000])
        self.assertEqual({'memory': 1.0}, out['memory'][3000])
        self.assertEqual({'other': 1.0}, out['cpu'][3000])
        self.assertEqual({'ever_memory': 1.0, 'first_memory_s': 1950.0},
                         out['delay']['memory'])
