"""The contention probe's pure logic: exact tables and properties."""

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware.topology import domains
from nova_cacheaware.topology import sysfs
from nova_cacheaware_evaluation.cmd import probe
from nova_cacheaware_evaluation.probe import analysis as cp
from tests.fixtures import machines
from tests.fixtures import sysfs_tree

MIB = 1024 * 1024


class WorkingSetsTest(testtools.TestCase):

    def test_table(self):
        for cache, factors, expected in [
                (32 * MIB, (0.125, 0.5, 2), ((0.125, 4 * MIB),
                                             (0.5, 16 * MIB),
                                             (2.0, 64 * MIB))),
                # 14080 KiB (Xeon Silver 4210): whole pages already.
                (14080 * 1024, (0.5,), ((0.5, 7208960),)),
                # Rounded down to a page, and never under one page.
                (10000, (0.5, 3), ((0.5, 4096), (3.0, 28672))),
                (10000, (0.01,), ((0.01, 4096),))]:
            self.assertEqual(expected, cp.working_sets(cache, factors))

    def test_refused(self):
        for cache, factors, fragment in [
                (0, (0.5,), 'cache size'),
                (None, (0.5,), 'cache size'),
                (MIB, (0,), 'factors must be > 0'),
                (MIB, (-1,), 'factors must be > 0'),
                (10000, (0.1, 0.2), 'give the same size')]:
            e = self.assertRaises(exception.InvalidInput, cp.working_sets,
                                  cache, factors)
            self.assertIn(fragment, str(e))


def _cpus(name, domain_id=None):
    topology = sysfs.read_topology(
        sysfs_tree.cached_tree(name, machines.ALL[name]))
    return cp.choose_cpus(domains.cache_domains(topology).domains,
                          topology.core_of(), domain_id)


class ChooseCpusTest(testtools.TestCase):
    """Named real machines -> exact CPUs."""

    def test_named_machines(self):
        # name: (domain, alone, same, sibling?, other domain, its CPU)
        for name, expected in {
                # Two L2 domains on one node.
                'q6600': ('L2-0', 0, 1, False, 'L2-1', 2),
                # One L3: no different-domain co-run; not the HT sibling 10.
                'xeon-silver-4210': ('L3-0', 0, 1, False, None, None),
                # Two sockets, one L3 each on its own node: the far one.
                'xeon-x5690-x2': ('L3-0', 0, 2, False, 'L3-1', 1),
                # 8 CCXs, node 0 has two: the other CCX of the same node.
                'threadripper-2990wx': ('L3-0', 0, 1, False, 'L3-1', 4),
                'epyc-7713': ('L3-0', 0, 1, False, 'L3-1', 8),
                # P-core L2 domains are one core each: the first E-core
                # cluster is the first domain of two physical cores.
                'core-i9-12900k': ('L2-8', 16, 17, False, 'L2-0', 0),
                # No cache information: packages.
                'kvm-2s-nocache': ('pkg-0', 0, 1, False, 'pkg-1', 2),
        }.items():
            c = _cpus(name)
            self.assertEqual(expected, (c.domain, c.alone, c.same,
                                        c.same_is_smt_sibling,
                                        c.different_domain, c.different),
                             name)

    def test_chosen_domain_of_one_core_uses_its_sibling(self):
        c = _cpus('core-i9-12900k', 'L2-0')
        self.assertEqual((0, 1, True, 'L2-1', 2),
                         (c.alone, c.same, c.same_is_smt_sibling,
                          c.different_domain, c.different))
        self.assertEqual(('alone', 'same', 'different'), c.placements())

    def test_unknown_domain(self):
        e = self.assertRaises(exception.InvalidInput, _cpus, 'q6600', 'L3-0')
        self.assertIn("no cache domain 'L3-0' (domains: L2-0, L2-1)",
                      str(e))

    def test_one_cpu(self):
        one = domains.CacheDomain('L3-0', 3, (0,), 1024, (0,))
        e = self.assertRaises(exception.InvalidInput, cp.choose_cpus,
                              [one], {0: (0,)})
        self.assertIn('needs a second CPU', str(e))

    def test_one_cpu_per_domain_measures_different_only(self):
        ds = [domains.CacheDomain('a', 2, (0,), 1024, (0,)),
              domains.CacheDomain('b', 2, (1,), 1024, (0,))]
        c = cp.choose_cpus(ds, {0: (0,), 1: (1,)})
        self.assertEqual(('alone', 'different'), c.placements())
        self.assertIsNone(c.co_cpu('same'))


class SummaryTest(testtools.TestCase):

    def test_table(self):
        for values, expected in [
                ([3, 1, 2], (3, 2.0, 1.0, 3.0, 1.0)),
                ([1, 2, 3, 4], (4, 2.5, 1.0, 4.0, 1.2)),
                ([5], (1, 5.0, 5.0, 5.0, 0.0))]:
            s = cp.summarise(values)
            self.assertEqual(expected, (s.n, s.median, s.low, s.high,
                                        s.spread))

    def test_refused(self):
        self.assertRaises(ValueError, cp.summarise, [])
        self.assertRaises(ValueError, cp.summarise, [1.0, 0.0])


def _samples(**cells):
    """chase_05_same=[...] -> {('chase', 0.5, 'same'): [...]}."""
    out = {}
    for key, values in cells.items():
        kernel, factor, placement = key.split('_')
        out[(kernel, float(factor.replace('p', '.')), placement)] = values
    return out


class MatrixTest(testtools.TestCase):

    def test_exact(self):
        m = cp.slowdown_matrix(_samples(
            chase_0p5_alone=[10, 10, 12], chase_0p5_same=[20, 22, 24],
            chase_0p5_different=[10, 11, 12]))
        self.assertEqual(cp.Summary(3, 10.0, 10.0, 12.0),
                         m.alone[('chase', 0.5)])
        same = m.cell('chase', 0.5, 'same')
        self.assertEqual((2.2, 20 / 12, 2.4),
                         (same.slowdown, same.low, same.high))
        diff = m.cell('chase', 0.5, 'different')
        self.assertEqual((1.1, 10 / 12, 1.2),
                         (diff.slowdown, diff.low, diff.high))
        self.assertEqual(['same', 'different'],
                         [c.placement for c in m.cells])
        self.assertIsNone(m.cell('stream', 0.5, 'same'))

    def test_missing_alone(self):
        self.assertRaises(ValueError, cp.slowdown_matrix,
                          _samples(chase_0p5_same=[1.0]))

    def test_select_samples(self):
        kept, dropped = cp.select_samples(
            {('chase', 0.5, 'alone'): [(10.0, 0.9), (30.0, 0.2)],
             ('chase', 0.5, 'same'): [(20.0, 0.1)]}, 0.5)
        self.assertEqual({('chase', 0.5, 'alone'): [10.0],
                          ('chase', 0.5, 'same'): []}, kept)
        self.assertEqual({('chase', 0.5, 'alone'): 1,
                          ('chase', 0.5, 'same'): 1}, dropped)

    @hypothesis.given(
        alone=st.lists(st.floats(1, 1000), min_size=1, max_size=12),
        co=st.lists(st.floats(1, 1000), min_size=1, max_size=12),
        scale=st.floats(0.01, 100))
    def test_band_holds_the_median_and_ignores_the_unit(self, alone, co,
                                                        scale):
        m = cp.slowdown_matrix({('stream', 2.0, 'alone'): alone,
                                ('stream', 2.0, 'same'): co})
        c = m.cell('stream', 2.0, 'same')
        self.assertLessEqual(c.low, c.slowdown * (1 + 1e-12))
        self.assertLessEqual(c.slowdown, c.high * (1 + 1e-12))
        scaled = cp.slowdown_matrix(
            {('stream', 2.0, 'alone'): [v * scale for v in alone],
             ('stream', 2.0, 'same'): [v * scale for v in co]}).cell(
                 'stream', 2.0, 'same')
        self.assertAlmostEqual(c.slowdown, scaled.slowdown, delta=1e-9
                               * c.slowdown)

    @hypothesis.given(values=st.lists(st.floats(1, 1000), min_size=1,
                                      max_size=12))
    def test_same_samples_are_never_faster_beyond_noise(self, values):
        m = cp.slowdown_matrix({('chase', 0.5, 'alone'): values,
                                ('chase', 0.5, 'same'): list(values)})
        c = m.cell('chase', 0.5, 'same')
        self.assertEqual(1.0, c.slowdown)
        self.assertFalse(c.faster_beyond_noise())
        self.assertFalse(c.slower_beyond_noise())


class VerdictTest(testtools.TestCase):

    def _verdict(self, min_gain=0.05, **cells):
        return cp.verdict(cp.slowdown_matrix(_samples(**cells)), min_gain)

    def test_pays_off(self):
        v = self._verdict(chase_0p5_alone=[10, 11], chase_0p5_same=[20, 22],
                          chase_0p5_different=[10, 12],
                          chase_2_alone=[50, 51], chase_2_same=[55, 56],
                          chase_2_different=[55, 56])
        self.assertEqual(cp.PAYS_OFF, v.code)
        self.assertEqual((('chase', 0.5),), v.evidence)
        self.assertTrue(v.dirty)
        self.assertEqual('a second copy in the same cache domain slows '
                         'chase at 0.5x by 2.00x against 1.05x in another '
                         'domain, beyond the noise', v.reason)

    def test_overlapping_bands_are_no_benefit(self):
        v = self._verdict(chase_0p5_alone=[10, 20], chase_0p5_same=[14, 16],
                          chase_0p5_different=[11, 13])
        self.assertEqual(cp.NO_BENEFIT, v.code)
        self.assertEqual((), v.evidence)

    def test_gain_under_min_gain_is_no_benefit(self):
        v = self._verdict(chase_0p5_alone=[100, 100],
                          chase_0p5_same=[104, 104],
                          chase_0p5_different=[101, 101])
        self.assertEqual(cp.NO_BENEFIT, v.code)
        v = self._verdict(0.02, chase_0p5_alone=[100, 100],
                          chase_0p5_same=[104, 104],
                          chase_0p5_different=[101, 101])
        self.assertEqual(cp.PAYS_OFF, v.code)

    def test_single_domain(self):
        v = self._verdict(stream_0p5_alone=[1.0, 1.1],
                          stream_0p5_same=[1.3, 1.4])
        self.assertEqual(cp.SINGLE_DOMAIN, v.code)
        self.assertTrue(v.dirty)
        self.assertEqual((('stream', 0.5),), v.evidence)
        self.assertIn('Dirty) costs more than the noise and 5 % (worst: '
                      'stream at 0.5x, 1.29x, noise band 1.18-1.40)',
                      v.reason)
        v = self._verdict(stream_0p5_alone=[1.0, 1.4],
                          stream_0p5_same=[1.3, 1.4])
        self.assertEqual(cp.SINGLE_DOMAIN, v.code)
        self.assertFalse(v.dirty)
        self.assertIn('within the noise', v.reason)

    def test_json_and_table(self):
        m = cp.slowdown_matrix(_samples(chase_0p5_alone=[10, 10],
                                        chase_0p5_same=[15, 15]))
        v = cp.verdict(m)
        self.assertEqual(
            {'alone': [{'kernel': 'chase', 'factor': 0.5, 'bytes': 4096,
                        'n': 2, 'median_ns': 10.0, 'low_ns': 10.0,
                        'high_ns': 10.0, 'spread': 0.0}],
             'matrix': [{'kernel': 'chase', 'factor': 0.5,
                         'placement': 'same', 'slowdown': 1.5, 'low': 1.5,
                         'high': 1.5}]},
            probe.matrix_to_dict(m, {0.5: 4096}))
        self.assertEqual({'code': 'single-domain', 'dirty': True,
                          'evidence': [{'kernel': 'chase', 'factor': 0.5}],
                          'reason': v.reason}, probe.verdict_to_dict(v))
        cpus = cp.ProbeCpus('L3-0', 0, 1, False, None, None)
        table = probe.format_table(m, v, cpus).splitlines()
        self.assertEqual('chase    0.5x   10.00 (spread 0 %)     '
                         '1.50x [1.50-1.50]', table[2])
