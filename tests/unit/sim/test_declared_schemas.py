"""The simulators' declared schemas accept and refuse what the old walkers did.

As ``tests/unit/policy/test_declared_schemas``: each property mutates a
valid scenario part at random and requires the same typed value or the
same one-line message from the declared schema and the old walker (kept
in ``legacy/``); the tables pin the exact messages.
"""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware import exception
from nova_cacheaware.sim import access
from nova_cacheaware.sim import estimator
from tests.unit.policy.test_declared_schemas import _edit
from tests.unit.policy.test_declared_schemas import mutate
from tests.unit.policy.test_declared_schemas import outcome
from tests.unit.sim.legacy import access as old_access
from tests.unit.sim.legacy import estimator as old_estimator

ACCESS = {'pattern': 'hotcold', 'exponent': 1.2, 'hot_files': 0.3,
          'hot_share': 0.9, 'hot_reads': 500, 'scan_share': 0.2,
          'drift_reads': 7.0}
ESTIMATOR = {'nonfile_mib_s': 2, 'readahead': 0.5, 'blind_vms': [2, 0, 2],
             'sample_s': 1.5, 'cache_extra_mib': 16.0}


class SameAsOldWalkerTest(testtools.TestCase):

    def _same(self, new, old, data, base):
        doc = mutate(data, base, data.draw(st.integers(0, 4)))
        self.assertEqual(outcome(old, doc), outcome(new, doc), doc)

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_access(self, data):
        self._same(access.access_from_dict, old_access.access_from_dict,
                   data, ACCESS)

    @settings(max_examples=400, deadline=None)
    @given(st.data(), st.integers(0, 4))
    def test_estimator(self, data, vms):
        # Wrapped so that the object itself can be replaced (by null too).
        self._same(
            lambda doc: estimator.estimator_from_dict(doc['estimator'], vms),
            lambda doc: old_estimator.estimator_from_dict(doc['estimator'],
                                                          vms),
            data, {'estimator': ESTIMATOR})

    def test_bases_are_valid(self):
        for parse, doc in ((access.access_from_dict, ACCESS),
                           (lambda d: estimator.estimator_from_dict(d, 3),
                            ESTIMATOR)):
            self.assertEqual('ok', outcome(parse, doc)[0])


class MessageTableTest(testtools.TestCase):
    """Exact one-line messages (what the CLI prints after its prefix)."""

    def _table(self, parse, cases):
        for doc, message in cases:
            e = self.assertRaises(exception.InvalidInput, parse, doc)
            self.assertEqual('invalid input: ' + message, str(e))

    def test_access(self):
        a = ACCESS
        self._table(access.access_from_dict, [
            ([], 'access: must be a JSON object'),
            (_edit(a, z=1, b=2), 'access: unknown key(s): b, z'),
            (_edit(a, pattern='lfu'),
             "access: unknown \"pattern\" 'lfu' (one of uniform, zipf, "
             'hotcold, scan, scan_mix, moving)'),
            (_edit(a, exponent=True),
             'access: "exponent" must be a number, not True'),
            (_edit(a, exponent=float('nan')),
             'access: "exponent" must be a number, not nan'),
            (_edit(a, exponent=5.5), 'access: "exponent" must be in 0..5 '
             '(5.5)'),
            (_edit(a, hot_share=-1),
             'access: "hot_share" must be in 0..1 (-1)'),
            (_edit(a, hot_reads=2.5),
             'access: "hot_reads" must be an integer (2.5)'),
            (_edit(a, hot_reads=-2.5),
             'access: "hot_reads" must be an integer (-2.5)'),
            (_edit(a, drift_reads=0),
             'access: "drift_reads" must be in 1..1000000000 (0)'),
        ])
        e = self.assertRaises(exception.InvalidInput,
                              access.access_from_dict, {'exponent': None},
                              'scenario: access[2]')
        self.assertEqual('invalid input: scenario: access[2]: "exponent" '
                         'must be a number, not None', str(e))

    def test_access_values(self):
        spec = access.access_from_dict({'exponent': 1, 'hot_reads': 3.0})
        self.assertEqual((1.0, float, 3, int),
                         (spec.exponent, type(spec.exponent),
                          spec.hot_reads, type(spec.hot_reads)))
        self.assertEqual(access.AccessSpec(), access.access_from_dict({}))

    def test_estimator(self):
        e, w = ESTIMATOR, 'scenario: "estimator": '
        self._table(lambda doc: estimator.estimator_from_dict(doc, 3), [
            ([], w + 'must be a JSON object'),
            (_edit(e, z=1, b=2), w + 'unknown key(s): b, z'),
            (_edit(e, blind_vms=[3]),
             w + '"blind_vms" must be a list of VM numbers 0..2'),
            (_edit(e, blind_vms=[True]),
             w + '"blind_vms" must be a list of VM numbers 0..2'),
            (_edit(e, blind_vms='a'),
             w + '"blind_vms" must be a list of VM numbers 0..2'),
            (_edit(e, sample_s=-1),
             w + '"sample_s" must be a non-negative number, not -1'),
            (_edit(e, sample_s=0), w + '"sample_s" must be positive'),
            (_edit(e, nonfile_mib_s=-1), w + '"nonfile_mib_s" must be a '
             'non-negative number, not -1'),
            (_edit(e, readahead='1'),
             w + '"readahead" must be a non-negative number, not \'1\''),
            (_edit(e, cache_extra_mib=float('inf')), w + '"cache_extra_mib"'
             ' must be a non-negative number, not inf'),
        ])

    def test_estimator_values(self):
        self.assertEqual(estimator.EstimatorModel(),
                         estimator.estimator_from_dict(None, 3))
        self.assertEqual(estimator.EstimatorModel(),
                         estimator.estimator_from_dict({}, 3))
        self.assertEqual(
            estimator.EstimatorModel(nonfile_mib_s=2.0, readahead=0.5,
                                     blind_vms=(0, 2), sample_s=1.5,
                                     cache_extra_mib=16.0),
            estimator.estimator_from_dict(ESTIMATOR, 3))
