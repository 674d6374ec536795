"""The cacheaware: extra-spec vocabulary and parser."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import extra_specs as specs
from nova_cacheaware import exception


class ParseExtraSpecsTest(testtools.TestCase):

    def test_no_cacheaware_keys_gives_defaults_not_present(self):
        req = specs.parse_extra_specs({'hw:cpu_policy': 'shared',
                                       'resources:VCPU': '2'})
        self.assertEqual(specs.CacheAwareRequest(), req)
        self.assertFalse(req.present)
        self.assertFalse(req.all_share)

    def test_none_is_empty(self):
        self.assertEqual(specs.CacheAwareRequest(),
                         specs.parse_extra_specs(None))

    def test_every_key_parsed(self):
        req = specs.parse_extra_specs({
            'cacheaware:cache_share': 'all',
            'cacheaware:workload': 'memory',
            'cacheaware:cache_clean': 'required',
            'cacheaware:vcpu_sizing': 'apply',
            'cacheaware:memory_policy': 'hit_ratio',
            'cacheaware:memory_min_mb': ' 256 ',
            'cacheaware:numa': 'full'})
        self.assertEqual(specs.CacheAwareRequest(
            present=True, cache_share='all', workload='memory',
            cache_clean='required', vcpu_sizing='apply',
            memory_policy='hit_ratio', memory_min_mb=256, numa='full'), req)
        self.assertTrue(req.all_share)
        self.assertTrue(req.clean_required)
        self.assertTrue(req.clean_wanted)

    def test_defaults_match_vocabulary(self):
        req = specs.CacheAwareRequest()
        for spec in specs.VOCABULARY:
            self.assertEqual(spec.default, getattr(req, spec.key), spec.key)

    def test_derived_flags_table(self):
        # (workload, cache_clean) -> (may_be_memory_bound, clean_required,
        #                             clean_wanted)
        table = {
            ('memory', 'required'): (True, True, True),
            ('memory', 'preferred'): (True, False, True),
            ('memory', 'off'): (True, False, False),
            ('auto', 'required'): (True, False, True),
            ('auto', 'preferred'): (True, False, True),
            ('cpu', 'required'): (False, False, False),
            ('io', 'preferred'): (False, False, False),
        }
        for (workload, clean), expected in table.items():
            req = specs.parse_extra_specs({
                'cacheaware:workload': workload,
                'cacheaware:cache_clean': clean})
            self.assertEqual(expected, (req.may_be_memory_bound,
                                        req.clean_required,
                                        req.clean_wanted),
                             (workload, clean))

    def test_bad_input_names_key_and_allowed_values(self):
        cases = {
            'cacheaware:bogus': ('x', 'unknown extra spec cacheaware:bogus'),
            'cacheaware:cache_share': ('ALL', 'must be one of all, any'),
            'cacheaware:workload': ('', 'must be one of memory, cpu, io, '
                                        'auto'),
            'cacheaware:memory_min_mb': ('127', 'integer >= 128'),
            'cacheaware:numa': ('half', 'must be one of any, full'),
        }
        for key, (value, message) in cases.items():
            ex = self.assertRaises(exception.InvalidInput,
                                   specs.parse_extra_specs, {key: value})
            self.assertIn(message, str(ex))
            self.assertIn(key, str(ex))
        ex = self.assertRaises(exception.InvalidInput,
                               specs.parse_extra_specs,
                               {'cacheaware:memory_min_mb': '1.5e3'})
        self.assertIn("not '1.5e3'", str(ex))

    def test_validate_value_refuses_other_namespaces(self):
        self.assertRaises(exception.InvalidInput, specs.validate_value,
                          'hw:cpu_policy', 'shared')

    @settings(max_examples=200, deadline=None)
    @given(st.dictionaries(
        st.sampled_from([s.key for s in specs.VOCABULARY] + ['other']),
        st.text(max_size=12), max_size=8))
    def test_parser_accepts_exactly_the_vocabulary(self, raw):
        extra = {'cacheaware:' + k: v for k, v in raw.items()}
        by_key = {s.key: s for s in specs.VOCABULARY}

        def valid(key, value):
            spec = by_key.get(key)
            if spec is None:
                return False
            if spec.int_min is not None:
                try:
                    return int(value.strip()) >= spec.int_min
                except ValueError:
                    return False
            return value in spec.choices

        if all(valid(k, v) for k, v in raw.items()):
            req = specs.parse_extra_specs(extra)
            self.assertEqual(bool(raw), req.present)
        else:
            self.assertRaises(exception.InvalidInput,
                              specs.parse_extra_specs, extra)


class FlavorToolingAgreesTest(testtools.TestCase):

    def test_same_vocabulary_as_flavor_specs(self):
        from nova_cacheaware.api import flavor_specs
        ours = {s.key: (s.choices or None, s.default)
                for s in specs.VOCABULARY}
        self.assertEqual(flavor_specs.VOCABULARY, ours)
