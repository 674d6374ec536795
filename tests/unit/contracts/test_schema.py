"""The declared-schema layer: one-line messages, exact values."""

from hypothesis import given
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import cpu_sets
from nova_cacheaware.contracts import limits
from nova_cacheaware.contracts import schema

R = schema.REQUIRED


class FieldTableTest(testtools.TestCase):

    def test_numbers(self):
        cases = [
            (schema.AMOUNT, 'x', '"k" must be a finite number, not \'x\''),
            (schema.AMOUNT, True, '"k" must be a finite number, not True'),
            (schema.AMOUNT, float('nan'),
             '"k" must be a finite number, not nan'),
            (schema.AMOUNT, -1, '"k" must not be negative (-1)'),
            (schema.RATIO, 1.5, '"k" must be between 0 and 1 (1.5)'),
            (schema.COUNT, 1.5, '"k" must be an integer (1.5)'),
            (schema.Number(2), 1, '"k" must be at least 2 (1)'),
        ]
        for field, value, message in cases:
            e = self.assertRaises(schema.SchemaError, field.check, value,
                                  'k', 'VM \'a\'')
            self.assertEqual("VM 'a': " + message, str(e))
        self.assertEqual(10 ** 400, schema.COUNT.check(10 ** 400, 'k', ''))
        self.assertEqual(0.25, schema.RATIO.check(0.25, 'k', ''))

    def test_text_and_choices(self):
        self.assertRaises(schema.SchemaError, schema.Text().check, '', 'id',
                          'w')
        e = self.assertRaises(schema.SchemaError,
                              schema.OneOf('AB', '"A" or "B"').check, 'C',
                              'mode', 'params')
        self.assertEqual('params: unknown "mode" \'C\' (expected "A" or "B")',
                         str(e))

    def test_cpu_lists(self):
        cpus = cpu_sets.CpuList()
        self.assertEqual((1, 3), cpus.check([3, 1], 'w'))
        self.assertEqual((1, 3, 4), cpus.check('3-4,1', 'w'))
        for value, message in (([True], 'True is not a pCPU number'),
                               ([limits.MAX_CPUS], '8192 is not a pCPU'),
                               ([2, 2], 'duplicate pCPU(s) [2]'),
                               ('0-3,3', 'is not a CPU list such as'),
                               (3, 'must be a list of pCPU numbers')):
            e = self.assertRaises(schema.SchemaError, cpus.check, value, 'w')
            self.assertIn(message, str(e))

    def test_vcpu_index(self):
        self.assertEqual(12, schema.vcpu_index('12', 'w'))
        for key in ('01', '+1', ' 1', '4096', 'x', 1):
            self.assertRaises(schema.SchemaError, schema.vcpu_index, key,
                              'w')

    def test_fields_defaults_missing_and_extra_keys(self):
        spec = {'a': (schema.COUNT, R), 'b': (schema.COUNT, 7)}
        self.assertEqual({'a': 1, 'b': 7},
                         schema.fields({'a': 1, 'zz': 'ignored'}, spec, 'w'))
        e = self.assertRaises(schema.SchemaError, schema.fields, {}, spec,
                              'w')
        self.assertEqual('w: missing "a"', str(e))
        e = self.assertRaises(schema.SchemaError, schema.fields, [], spec,
                              'w')
        self.assertEqual('w: must be a JSON object', str(e))
        e = self.assertRaises(schema.SchemaError, schema.only_keys,
                              {'a': 1, 'x': 2}, ('a',), 'w')
        self.assertEqual("w: unknown key(s) 'x' (allowed: a)", str(e))


class DeclaredWordingTest(testtools.TestCase):
    """Check, All, AS_NULL and the own-wording messages."""

    def test_check_formats_the_whole_line_and_converts(self):
        positive = schema.Check(lambda v: schema.is_number(v) and v > 0,
                                '%(where)s "%(key)s" must be > 0, not '
                                '%(value)r', float)
        self.assertEqual(2.0, positive.check(2, 'k', 'w'))
        e = self.assertRaises(schema.SchemaError, positive.check, True, 'k',
                              'w')
        self.assertEqual('w "k" must be > 0, not True', str(e))
        self.assertEqual(('w', 'k'), (e.where, e.what))

    def test_all_stops_at_the_first_failing_check(self):
        both = schema.All(
            schema.Check(schema.is_list, 'not a list'),
            schema.Check(lambda v: len(v) == 2, 'not a pair'),
            convert=tuple)
        self.assertEqual((1, 2), both.check([1, 2], 'k', 'w'))
        for value, message in (({}, 'not a list'), ([1], 'not a pair')):
            e = self.assertRaises(schema.SchemaError, both.check, value,
                                  'k', 'w')
            self.assertEqual(message, str(e))

    def test_as_null_checks_an_absent_key_as_none(self):
        spec = {'a': (schema.Text(), schema.AS_NULL),
                'b': (schema.BOOL, True)}
        e = self.assertRaises(schema.SchemaError, schema.fields, {}, spec,
                              'w')
        self.assertEqual('w: "a" must be a non-empty string', str(e))
        self.assertEqual({'a': 'x', 'b': True},
                         schema.fields({'a': 'x'}, spec, 'w'))
        e = self.assertRaises(schema.SchemaError, schema.fields,
                              {'a': 'x', 'b': 0}, spec, 'w')
        self.assertEqual('w: "b" must be true or false', str(e))

    def test_only_keys_in_a_documents_own_words(self):
        e = self.assertRaises(schema.SchemaError, schema.only_keys,
                              {'a': 1, 'z': 2, 'y': 3}, ('a',), 'w',
                              '%(where)s: unknown key %(key)r')
        self.assertEqual("w: unknown key 'y'", str(e))
        schema.only_keys({'a': 1}, ('a',), 'w', 'unused')

    def test_reraise_turns_the_error_into_the_callers(self):
        def fail():
            with schema.reraise(KeyError):
                schema.fields([], {}, 'w')
        e = self.assertRaises(KeyError, fail)
        self.assertEqual(('w: must be a JSON object',), e.args)
        self.assertIsNone(e.__cause__)

    def test_is_number(self):
        for value, expected in ((1, True), (10 ** 400, True), (0.5, True),
                                (True, False), (float('inf'), False),
                                (float('nan'), False), ('1', False)):
            self.assertEqual(expected, schema.is_number(value), value)


class FastPathTest(testtools.TestCase):
    """The memoised CPU-list check agrees with the plain one."""

    @given(st.lists(st.one_of(st.integers(-2, limits.MAX_CPUS + 2),
                              st.booleans(), st.floats(0, 4)),
                    max_size=6))
    def test_same_answer_as_check(self, value):
        cpus = cpu_sets.CpuList()
        try:
            want = cpus.check(value, 'w')
        except schema.SchemaError as e:
            want = str(e)
        seen = {}
        for _ in range(2):        # the second call may hit the memo
            try:
                got = cpus.check_fast(value, 'w', seen)
            except schema.SchemaError as e:
                got = str(e)
            self.assertEqual(want, got)


class ObjTest(testtools.TestCase):
    """Obj and ListOf: declared objects and arrays of them."""

    SPEC = {
        'n': (schema.Check(lambda v: v is None or schema.is_number(v),
                           '%(key)s: a number or null',
                           lambda v: v if v is None else float(v)), None),
        'pair': (schema.All(
            schema.Check(schema.is_list, 'not a list'),
            schema.Check(lambda v: len(v) == 2, 'not a pair'),
            convert=tuple), schema.AS_NULL),
        'count': (schema.COUNT, 0),
        'name': (schema.Text(), schema.REQUIRED),
    }

    @given(st.dictionaries(
        st.sampled_from(['n', 'pair', 'count', 'name', 'x']),
        st.one_of(st.none(), st.booleans(), st.integers(-1, 2),
                  st.floats(allow_nan=False), st.text(max_size=1),
                  st.lists(st.integers(0, 1), max_size=3))))
    def test_same_answer_as_fields(self, doc):
        def answer(parse):
            try:
                return parse(doc, self.SPEC, 'w')
            except schema.SchemaError as e:
                return str(e)
        prepared = schema.Obj(self.SPEC)
        self.assertEqual(answer(schema.fields), answer(
            lambda doc, spec, where: prepared.check(doc, 'k', where)))

    def test_all_of_checks_has_one_test(self):
        both = self.SPEC['pair'][0]
        self.assertEqual((True, False, False),
                         (both.test([1, 2]), both.test([1]), both.test(3)))
        self.assertFalse(hasattr(schema.All(schema.COUNT), 'test'))

    def test_make_message_and_lists(self):
        point = schema.Obj({'x': (schema.COUNT, 0), 'y': (schema.COUNT, 0)},
                           '%(key)s must be an object, not %(value)r',
                           make=lambda x, y: (x, y))
        self.assertEqual((1, 0), point.check({'x': 1, 'z': 'a'}, 'p', 'w'))
        e = self.assertRaises(schema.SchemaError, point.check, [], 'p', 'w')
        self.assertEqual('p must be an object, not []', str(e))
        points = schema.ListOf(point, '%(where)s: "%(key)s" must be a list')
        self.assertEqual(((1, 0), (0, 2)),
                         points.check([{'x': 1}, {'y': 2}], 'ps', 'w'))
        e = self.assertRaises(schema.SchemaError, points.check, {}, 'ps',
                              'w')
        self.assertEqual('w: "ps" must be a list', str(e))
        e = self.assertRaises(schema.SchemaError, points.check,
                              [{}, {'x': -1}, 1], 'ps', 'w')
        self.assertEqual('w: "x" must not be negative (-1)', str(e))
        # Items with a test: checked with it, kept as they are.
        names = schema.ListOf(schema.Check(
            lambda v: isinstance(v, str), '%(key)s: %(value)r is no name'),
            'a list')
        self.assertEqual(('a', 'b'), names.check(['a', 'b'], 'k', 'w'))
        e = self.assertRaises(schema.SchemaError, names.check, ['a', 1, 2],
                              'k', 'w')
        self.assertEqual('k: 1 is no name', str(e))
        self.assertEqual((), names.check([], 'k', 'w'))
