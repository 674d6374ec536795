"""Full-NUMA hand-off: exact tables for study 003's cases, properties."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware.numa_balance import model as nm
from nova_cacheaware.numa_balance import policy as nb

# Two host nodes of four CPUs (the study's 2-node Xeon, scaled down).
HOST = {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}
NODES = {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}
MEM = {0: 1024, 1: 1024}


def vm(vid, use=None, free=None, vmem=None, balloon=None, max_mib=None,
       nodes=NODES, mem=MEM, min_mib=0):
    return nm.VM(vid, nodes, dict(mem), dict(use or {}), free,
                 dict(vmem or {}), balloon, max_mib, min_mib)


def dev(requested, size=1024):
    return nm.VirtioMem(requested, size)


class DivisionTest(testtools.TestCase):

    def test_even_split_at_start(self):
        r = nb.balance(HOST, [vm('a'), vm('b')])
        self.assertEqual({0: {'a': (0, 2), 'b': (1, 3)},
                          1: {'a': (4, 6), 'b': (5, 7)}}, r.cpus)
        self.assertEqual((0, 1, 4, 5), r.online['a'])
        self.assertEqual((0, 1, 4, 5), r.online['b'])
        self.assertEqual((0, 2), r.pins['a'][3])     # offline, same set
        self.assertEqual((5, 7), r.pins['b'][6])
        self.assertEqual([], r.cpu_moves)

    def test_busy_vm_takes_one_cpu_of_the_busy_node(self):
        cur = {'a': {0: (0, 1), 1: (4, 5)}, 'b': {0: (2, 3), 1: (6, 7)}}
        r = nb.balance(HOST, [vm('a', use={0: 2.0, 1: 0.1}),
                              vm('b', use={0: 0.2, 1: 0.1})], cur)
        self.assertEqual([(0, 'b', 'a', 3)], r.cpu_moves)
        self.assertEqual({'a': (0, 1, 3), 'b': (2,)}, r.cpus[0])
        self.assertEqual({'a': (4, 5), 'b': (6, 7)}, r.cpus[1])
        self.assertEqual((0, 1, 2, 4, 5), r.online['a'])
        self.assertEqual((0, 4, 5), r.online['b'])

    def test_giver_keeps_its_floor(self):
        cur = {'a': {0: (0, 1, 2), 1: (4, 5)}, 'b': {0: (3,), 1: (6, 7)}}
        r = nb.balance(HOST, [vm('a', use={0: 3.0}), vm('b')], cur)
        self.assertEqual([], r.cpu_moves)
        self.assertEqual({'a': (0, 1, 2), 'b': (3,)}, r.cpus[0])

    def test_no_move_when_both_busy(self):
        cur = {'a': {0: (0, 1), 1: (4, 5)}, 'b': {0: (2, 3), 1: (6, 7)}}
        r = nb.balance(HOST, [vm('a', use={0: 2.0}),
                              vm('b', use={0: 1.9})], cur)
        self.assertEqual([], r.cpu_moves)

    def test_giver_that_would_turn_busy_gives_nothing(self):
        # b uses 1.0 of 2 CPUs: with 1 left it would be busy at once.
        cur = {'a': {0: (0, 1), 1: (4, 5)}, 'b': {0: (2, 3), 1: (6, 7)}}
        r = nb.balance(HOST, [vm('a', use={0: 2.0}),
                              vm('b', use={0: 1.0})], cur)
        self.assertEqual([], r.cpu_moves)

    def test_new_vm_gets_its_floor_from_the_richest(self):
        cur = {'a': {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}}
        r = nb.balance(HOST, [vm('a'), vm('b')], cur)
        self.assertEqual({'a': (0, 1, 2), 'b': (3,)}, r.cpus[0])
        self.assertEqual({'a': (4, 5, 6), 'b': (7,)}, r.cpus[1])

    def test_cpus_left_by_a_gone_vm_go_to_the_busiest(self):
        cur = {'a': {0: (0,), 1: (4,)},
               'gone': {0: (1, 2, 3), 1: (5, 6, 7)}}
        r = nb.balance(HOST, [vm('a', use={0: 1.0}), vm('b')], cur)
        self.assertEqual({'a': (0, 2, 3), 'b': (1,)}, r.cpus[0])

    def test_memoryless_node_has_no_floor(self):
        # Threadripper-like: guest node 1 has no memory.
        host = {0: (0, 1, 4), 1: (2, 3)}
        nodes = {0: (0, 1), 1: (2, 3)}
        vms = [vm(v, nodes=nodes, mem={0: 512, 1: 0}) for v in 'abc']
        r = nb.balance(host, vms)
        self.assertEqual({'a': (2,), 'b': (3,), 'c': ()}, r.cpus[1])
        self.assertEqual((2, 3), r.pins['c'][2])     # offline: whole node

    def test_floors_that_do_not_fit_are_an_error(self):
        host = {0: (0,), 1: (1,)}
        nodes = {0: (0,), 1: (1,)}
        e = self.assertRaises(
            exception.InvalidInput, nb.balance, host,
            [vm('a', nodes=nodes), vm('b', nodes=nodes)])
        self.assertIn('host node 0 has 1 usable CPUs for 2', str(e))

    def test_not_a_full_mirror_is_an_error(self):
        e = self.assertRaises(exception.InvalidInput, nb.balance, HOST,
                              [vm('a', nodes={0: (0, 1)}, mem={0: 1})])
        self.assertIn('not a full mirror', str(e))

    def test_without_per_node_floors_a_small_host_still_divides(self):
        # Two host CPUs, two VMs of two guest nodes: b's vCPU 0 lives in
        # guest node 1, so each keeps one CPU and nothing is shared.
        host = {0: (0,), 1: (1,)}
        a_nodes = {0: (0, 1), 1: (2, 3)}
        b_nodes = {0: (2, 3), 1: (0, 1)}
        low = nm.Thresholds(per_node_floor=False)
        alone = nb.balance(host, [vm('a', nodes=a_nodes)], thresholds=low)
        self.assertEqual({0: {'a': (0,)}, 1: {'a': (1,)}}, alone.cpus)
        self.assertEqual((0, 2), alone.online['a'])
        both = nb.balance(host, [vm('a', nodes=a_nodes),
                                 vm('b', nodes=b_nodes)],
                          {'a': {0: (0,), 1: (1,)}}, low)
        self.assertEqual({0: {'a': (0,), 'b': ()}, 1: {'a': (), 'b': (1,)}},
                         both.cpus)
        self.assertEqual((0,), both.online['a'])
        self.assertEqual((0,), both.online['b'])
        self.assertEqual((1,), both.pins['a'][2])    # offline, whole node
        again = nb.balance(host, [vm('a', nodes=a_nodes, use={0: 1.0})],
                           {'a': {0: (0,), 1: ()}}, low)
        self.assertEqual({0: {'a': (0,)}, 1: {'a': (1,)}}, again.cpus)

    def test_busy_vm_without_a_cpu_on_a_node_takes_one_there(self):
        host = {0: (0, 1), 1: (2, 3)}
        nodes = {0: (0, 1), 1: (2, 3)}
        low = nm.Thresholds(per_node_floor=False)
        cur = {'a': {0: (0,), 1: ()}, 'b': {0: (1,), 1: (2, 3)}}
        r = nb.balance(host, [vm('a', nodes=nodes, use={0: 1.0}),
                              vm('b', nodes=nodes)], cur, low)
        self.assertEqual([(1, 'b', 'a', 3)], r.cpu_moves)


class OutsideAllowedTest(testtools.TestCase):

    def test_first_vcpu_outside_names_the_reason(self):
        allowed = {'a': {0: (0, 1), 1: (0, 1)}, 'b': {0: (2, 3)}}
        self.assertEqual({}, nb.outside_allowed(
            {'a': {0: (0,), 1: (1,)}, 'b': {0: (2, 3)}}, allowed))
        self.assertEqual(
            {'a': 'Nova does not allow CPUs 2-3 for vCPU 1'},
            nb.outside_allowed({'a': {0: (0,), 1: (2, 3)},
                                'b': {0: (3,)}}, allowed))


class MemoryTest(testtools.TestCase):

    def test_virtio_mem_moves_on_the_takers_busiest_node(self):
        a = vm('a', use={0: 0.1, 1: 3.5}, free=300,
               vmem={0: dev(0), 1: dev(0)})
        b = vm('b', free=1500, vmem={0: dev(512), 1: dev(512)})
        r = nb.balance(HOST, [a, b], thresholds=nm.Thresholds(step_mib=400))
        self.assertEqual([nm.MemoryMove('b', 'a', 400, 1)], r.memory_moves)
        self.assertEqual({'a': {1: 400}, 'b': {1: 112}}, r.virtio_mem)
        self.assertEqual({}, r.balloon)

    def test_balloon_when_there_is_no_virtio_mem(self):
        a = vm('a', free=100, balloon=1024, max_mib=2048)
        b = vm('b', free=1500, balloon=2048, max_mib=2048)
        r = nb.balance(HOST, [a, b])
        self.assertEqual([nm.MemoryMove('b', 'a', 400, None)],
                         r.memory_moves)
        self.assertEqual({'a': 1424, 'b': 1648}, r.balloon)

    def test_no_giver_with_spare_memory(self):
        a = vm('a', free=100, balloon=1024, max_mib=2048)
        b = vm('b', free=700, balloon=2048, max_mib=2048)  # 700-400 < 400
        self.assertEqual([], nb.balance(HOST, [a, b]).memory_moves)

    def test_giver_never_below_min(self):
        a = vm('a', free=100, balloon=1024, max_mib=2048)
        b = vm('b', free=1500, balloon=1024, max_mib=2048, min_mib=800)
        self.assertEqual([], nb.balance(HOST, [a, b]).memory_moves)

    def test_taker_never_above_its_device(self):
        a = vm('a', use={0: 1}, free=100, vmem={0: dev(900)})
        b = vm('b', free=1500, vmem={0: dev(900)})
        self.assertEqual([], nb.balance(HOST, [a, b]).memory_moves)


@st.composite
def scenarios(draw):
    n_nodes = draw(st.integers(1, 3))
    host, cpu = {}, 0
    for n in range(n_nodes):
        k = draw(st.integers(1, 4))
        host[n] = tuple(range(cpu, cpu + k))
        cpu += k + draw(st.integers(0, 1))      # holes: unusable CPUs
    vms = []
    n_vms = draw(st.integers(0, 4))
    for i in range(n_vms):
        nodes, v = {}, 0
        for n in range(n_nodes):
            k = draw(st.integers(1, 4))
            nodes[n] = tuple(range(v, v + k))
            v += k
        mem = {n: draw(st.sampled_from([0, 512])) for n in nodes}
        use = {n: draw(st.floats(0, 4)) for n in nodes}
        vmem = {n: dev(draw(st.integers(0, 1024)))
                for n in nodes if draw(st.booleans())}
        vms.append(vm('vm%d' % i, use=use, nodes=nodes, mem=mem,
                      free=draw(st.none() | st.integers(0, 2000)),
                      vmem=vmem, balloon=draw(st.sampled_from([None, 1024])),
                      max_mib=2048, min_mib=draw(st.integers(0, 1500))))
    current = {}
    for v in vms:
        current[v.id] = {n: tuple(draw(st.sets(st.integers(0, cpu + 1),
                                               max_size=4)))
                         for n in host}
    return host, vms, current, nm.Thresholds(
        per_node_floor=draw(st.booleans()), busy=draw(st.floats(0.1, 1)),
        max_cpu_moves=draw(st.integers(0, 2)))


class PropertyTest(testtools.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(scenarios())
    def test_invariants(self, scenario):
        host, vms, current, limits = scenario
        try:
            r = nb.balance(host, vms, current, limits)
        except exception.InvalidInput as e:
            # Only when the floors do not fit a node.
            self.assertIn('usable CPUs for', str(e))
            return
        self.assertEqual(r, nb.balance(host, list(reversed(vms)), current,
                                       limits))
        by_id = {v.id: v for v in vms}
        for node, division in r.cpus.items():
            used = [c for cpus in division.values() for c in cpus]
            self.assertEqual(len(used), len(set(used)))       # disjoint
            self.assertLessEqual(set(used), set(host[node]))
            for vid, cpus in division.items():
                vmx = by_id[vid]
                self.assertLessEqual(len(cpus), len(vmx.nodes[node]))
                if node in vmx.floor_nodes(limits.per_node_floor):
                    self.assertGreaterEqual(len(cpus), 1)
            self.assertLessEqual(
                len([m for m in r.cpu_moves if m[0] == node]),
                limits.max_cpu_moves)
        for vmx in vms:
            online = set(r.online[vmx.id])
            self.assertIn(0, online)                  # Linux keeps vCPU 0
            for node, vcpus in vmx.nodes.items():
                mine = r.cpus[node][vmx.id]
                on = online & set(vcpus)
                # Never more running vCPUs than CPUs held: no double use.
                self.assertEqual(len(mine), len(on))
                for v in vcpus:
                    self.assertTrue(r.pins[vmx.id][v])
                    self.assertLessEqual(set(r.pins[vmx.id][v]),
                                         set(host[node]))
                    if v in on:
                        self.assertEqual(mine, r.pins[vmx.id][v])
        self.assertLessEqual(len(r.memory_moves), 1)
        for move in r.memory_moves:
            giver = by_id[move.giver]
            self.assertGreaterEqual(giver.total_mib() - move.mib,
                                    giver.min_mib)
        for vid, per_node in r.virtio_mem.items():
            for node, mib in per_node.items():
                self.assertTrue(
                    0 <= mib <= by_id[vid].virtio_mem[node].size_mib)
        for vid, mib in r.balloon.items():
            self.assertTrue(0 < mib <= by_id[vid].max_mib)
