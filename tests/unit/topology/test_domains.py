"""The cache-domain rules on hand-built topologies."""

import testtools

from nova_cacheaware import exception
from nova_cacheaware.topology import domains
from nova_cacheaware.topology import model


def _topology(cores, caches, threads=1, nodes=None):
    """``cores`` cores with ``threads`` each; sibling = cpu + cores."""
    cpus = tuple(model.CPU(id=c + t * cores, package=0, core=c,
                           siblings=tuple(c + k * cores
                                          for k in range(threads)))
                 for t in range(threads) for c in range(cores))
    nodes = nodes or (model.NumaNode(0, tuple(sorted(c.id for c in cpus)),
                                     1024),)
    return model.HostTopology(cpus=tuple(sorted(cpus, key=lambda c: c.id)),
                              numa_nodes=nodes, caches=tuple(caches))


def _cache(level, cpus, kind='unified', hw_id=None, size=1024):
    return model.Cache(level=level, kind=kind, cpus=tuple(cpus),
                       size_kib=size, hw_id=hw_id)


class AutoLevelTest(testtools.TestCase):

    def test_smt_only_sharing_is_not_cross_core(self):
        # L2 shared by two threads of one core does not count; L3 does.
        topo = _topology(2, [_cache(2, (0, 2)), _cache(2, (1, 3)),
                             _cache(3, (0, 1, 2, 3))], threads=2)
        self.assertEqual(3, domains.auto_level(topo))

    def test_lowest_shared_level_wins(self):
        topo = _topology(4, [_cache(2, (0, 1)), _cache(2, (2, 3)),
                             _cache(3, (0, 1, 2, 3))])
        self.assertEqual(2, domains.auto_level(topo))

    def test_one_shared_instance_is_enough(self):
        # Hybrid part: private P-core L2s and one shared E-core cluster.
        topo = _topology(4, [_cache(2, (0,)), _cache(2, (1,)),
                             _cache(2, (2, 3)), _cache(3, (0, 1, 2, 3))])
        self.assertEqual(2, domains.auto_level(topo))

    def test_nothing_shared_uses_last_level(self):
        topo = _topology(2, [_cache(1, (0,), 'data'), _cache(1, (1,), 'data'),
                             _cache(2, (0,)), _cache(2, (1,))])
        self.assertEqual(2, domains.auto_level(topo))
        result = domains.cache_domains(topo)
        self.assertEqual([(0,), (1,)], [d.cpus for d in result.domains])

    def test_instruction_caches_are_ignored(self):
        topo = _topology(2, [_cache(1, (0, 1), 'instruction'),
                             _cache(2, (0, 1))])
        self.assertEqual(2, domains.auto_level(topo))

    def test_no_caches_falls_back_to_packages(self):
        topo = _topology(2, [])
        self.assertIsNone(domains.auto_level(topo))
        result = domains.cache_domains(topo)
        self.assertTrue(result.fallback)
        self.assertEqual([('pkg-0', (0, 1))],
                         [(d.id, d.cpus) for d in result.domains])


class CacheDomainsTest(testtools.TestCase):

    def test_hw_ids_name_domains(self):
        topo = _topology(4, [_cache(3, (2, 3), hw_id=7),
                             _cache(3, (0, 1), hw_id=4)])
        result = domains.cache_domains(topo, 3)
        self.assertEqual([('L3-4', (0, 1)), ('L3-7', (2, 3))],
                         [(d.id, d.cpus) for d in result.domains])

    def test_index_names_without_hw_ids(self):
        topo = _topology(4, [_cache(3, (2, 3)), _cache(3, (0, 1))])
        result = domains.cache_domains(topo, 3)
        self.assertEqual(['L3-0', 'L3-1'], [d.id for d in result.domains])

    def test_uncovered_cpus_get_package_domain(self):
        topo = _topology(4, [_cache(3, (0, 1), hw_id=0)])
        result = domains.cache_domains(topo, 3)
        self.assertFalse(result.fallback)
        self.assertEqual([('L3-0', 3, (0, 1)), ('pkg-0', None, (2, 3))],
                         [(d.id, d.level, d.cpus) for d in result.domains])

    def test_unknown_level(self):
        topo = _topology(2, [_cache(2, (0, 1))])
        e = self.assertRaises(exception.UnknownCacheLevel,
                              domains.cache_domains, topo, 3)
        self.assertEqual('no level-3 cache on this host (levels present: 2)',
                         str(e))

    def test_parse_level(self):
        self.assertEqual(domains.AUTO, domains.parse_level('auto'))
        self.assertEqual(3, domains.parse_level('3'))
        for bad in ('0', '5', 'L3', '', 2.5):
            self.assertRaises(exception.InvalidInput, domains.parse_level,
                              bad)

    def test_split_siblings_are_refused(self):
        topo = _topology(2, [_cache(2, (0, 1)), _cache(2, (2, 3))],
                         threads=2)  # siblings are (0, 2) and (1, 3)
        e = self.assertRaises(exception.TopologyError,
                              domains.cache_domains, topo, 2)
        self.assertIn('SMT siblings [0, 2] are split', str(e))

    def test_overlapping_caches_are_refused(self):
        topo = _topology(3, [_cache(2, (0, 1)), _cache(2, (1, 2))])
        self.assertRaises(exception.TopologyError, domains.cache_domains,
                          topo, 2)

    def test_domain_numa_nodes(self):
        nodes = (model.NumaNode(0, (0, 1), 1024),
                 model.NumaNode(1, (2, 3), 0),
                 model.NumaNode(2, (), 4096))  # CPU-less (CXL) memory
        topo = _topology(4, [_cache(3, (0, 1, 2, 3), hw_id=0)], nodes=nodes)
        result = domains.cache_domains(topo)
        self.assertEqual((0, 1), result.domains[0].numa_nodes)
        self.assertEqual('L3-0', result.domain_of(3).id)
        self.assertRaises(KeyError, result.domain_of, 9)


class ModelTest(testtools.TestCase):

    def test_validate(self):
        topo = model.HostTopology(
            cpus=(model.CPU(0, 0, 0), model.CPU(0, 0, 1)),
            numa_nodes=(model.NumaNode(0, (0, 5), 0),),
            caches=(_cache(2, (0, 9)), _cache(1, (0,), 'weird')))
        problems = topo.validate()
        self.assertIn('duplicate CPU ids', problems)
        self.assertIn('L2 cache lists offline CPUs [9]', problems)
        self.assertIn("L1 cache has unknown kind 'weird'", problems)
        self.assertIn('NUMA node 0 lists offline CPUs', problems)

    def test_unified_preferred_over_data_for_same_cpus(self):
        topo = _topology(2, [_cache(2, (0, 1), 'data', size=1),
                             _cache(2, (0, 1), 'unified', size=2)])
        self.assertEqual(('unified',),
                         tuple(c.kind for c in topo.data_caches(2)))

    def test_queries(self):
        topo = _topology(2, [], threads=2)
        self.assertEqual((0, 1, 2, 3), topo.online_cpus())
        self.assertEqual(((0, 2), (1, 3)), topo.smt_siblings())
        self.assertEqual({0: (0, 1, 2, 3)}, topo.packages())
        self.assertEqual({(0, 0): (0, 1, 2, 3)}, topo.dies())
        self.assertEqual(0, topo.node_of(3))
        self.assertIsNone(topo.node_of(7))
        self.assertEqual(2, topo.cpu(2).id)
        self.assertRaises(KeyError, topo.cpu, 7)
