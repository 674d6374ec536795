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
from tests.unit.policy.test_declared_schemas import _edit
from tests.unit.policy.test_declared_schemas import mutate
from tests.unit.policy.test_declared_schemas import outcome
from tests.unit.sim.legacy import access as old_access

ACCESS = {'pattern': 'hotcold', 'exponent': 1.2, 'hot_files': 0.3,
          'hot_share': 0.9, 'hot_reads': 500, 'scan_share': 0.2,
          'drift_reads': 7.0}


class SameAsOldWalkerTest(testtools.TestCase):

    def _same(self, new, old, data, base):
        doc = mutate(data, base, data.draw(st.integers(0, 4)))
        self.assertEqual(outcome(old, doc), outcome(new, doc), doc)

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_access(self, data):
        self._same(access.access_from_dict, old_access.access_from_dict,
                   data, ACCESS)

    def test_bases_are_valid(self):
        for parse, doc in ((access.access_from_dict, ACCESS),):
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
