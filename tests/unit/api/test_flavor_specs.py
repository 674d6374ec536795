"""The ``cacheaware:`` options -> flavor extra specs mapping."""

import itertools

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware.api import flavor_specs as fs
from nova_cacheaware import exception

VCPU_KEY = 'resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU'
MEMBOUND_KEY = 'resources_CACHE:CUSTOM_CACHE_DOMAIN_MEMBOUND'
AGENT_KEY = 'trait_CACHE:CUSTOM_CACHEAWARE_AGENT'


def _apply(current, change):
    result = dict(current)
    result.update(change.set)
    for key in change.unset:
        del result[key]
    return result


class TestExactSpecs(testtools.TestCase):

    def test_all_share_memory_bound_clean(self):
        change = fs.compute_specs({'cache_share': 'all', 'workload': 'memory',
                                   'cache_clean': 'required'}, 4)
        self.assertEqual({
            'cacheaware:cache_share': 'all',
            'cacheaware:workload': 'memory',
            'cacheaware:cache_clean': 'required',
            VCPU_KEY: '4',
            MEMBOUND_KEY: '1',
            AGENT_KEY: 'required',
            'group_policy': 'none'}, change.set)
        self.assertEqual((), change.unset)
        self.assertEqual((), change.warnings)

    def test_all_share_only(self):
        change = fs.compute_specs({'cache_share': 'all'}, 8)
        self.assertEqual({'cacheaware:cache_share': 'all', VCPU_KEY: '8',
                          AGENT_KEY: 'required', 'group_policy': 'none'},
                         change.set)

    def test_any_share_writes_only_the_namespace(self):
        change = fs.compute_specs({'workload': 'cpu', 'vcpu_sizing': 'apply',
                                   'memory_policy': 'hit_ratio',
                                   'memory_min_mb': 512, 'numa': 'full'}, 2)
        self.assertEqual({'cacheaware:workload': 'cpu',
                          'cacheaware:vcpu_sizing': 'apply',
                          'cacheaware:memory_policy': 'hit_ratio',
                          'cacheaware:memory_min_mb': '512',
                          'cacheaware:numa': 'full'}, change.set)

    def test_existing_group_policy_is_kept(self):
        change = fs.compute_specs({'cache_share': 'all'}, 2,
                                  current={'group_policy': 'isolate'})
        self.assertNotIn('group_policy', change.set)

    def test_show_specs_lines(self):
        change = fs.compute_specs({'cache_share': 'all'}, 2)
        self.assertEqual([
            '--property cacheaware:cache_share=all',
            '--property group_policy=none',
            '--property resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU=2',
            '--property trait_CACHE:CUSTOM_CACHEAWARE_AGENT=required'],
            change.as_properties())

    def test_options_merge_with_the_flavor(self):
        current = _apply({}, fs.compute_specs({'cache_share': 'all'}, 4))
        change = fs.compute_specs({'workload': 'memory',
                                   'cache_clean': 'required'}, 4, current)
        self.assertEqual({'cacheaware:workload': 'memory',
                          'cacheaware:cache_clean': 'required',
                          MEMBOUND_KEY: '1'}, change.set)

    def test_back_to_any_removes_the_placement_keys(self):
        current = _apply({'hw:mem_page_size': 'large'}, fs.compute_specs(
            {'cache_share': 'all', 'workload': 'memory',
             'cache_clean': 'required'}, 4))
        change = fs.compute_specs({'cache_share': 'any',
                                   'cache_clean': 'preferred'}, 4, current)
        self.assertEqual({'cacheaware:cache_share': 'any',
                          'cacheaware:cache_clean': 'preferred'},
                         change.set)
        self.assertEqual((MEMBOUND_KEY, VCPU_KEY, AGENT_KEY),
                         tuple(sorted(change.unset)))
        after = _apply(current, change)
        self.assertEqual('large', after['hw:mem_page_size'])
        self.assertEqual('none', after['group_policy'])

    def test_clean_off_drops_only_membound(self):
        current = _apply({}, fs.compute_specs(
            {'cache_share': 'all', 'workload': 'memory',
             'cache_clean': 'required'}, 4))
        change = fs.compute_specs({'cache_clean': 'off'}, 4, current)
        self.assertEqual({'cacheaware:cache_clean': 'off'}, change.set)
        self.assertEqual((MEMBOUND_KEY,), change.unset)

    def test_warnings(self):
        change = fs.compute_specs({'cache_share': 'all'}, 4,
                                  current={'hw:cpu_policy': 'dedicated'})
        self.assertEqual(1, len(change.warnings))
        self.assertIn('dedicated', change.warnings[0])
        change = fs.compute_specs({'cache_share': 'all',
                                   'workload': 'memory'}, 4)
        self.assertIn('Dirty', change.warnings[0])

    def test_bad_input(self):
        cases = [
            ({'cache_share': 'some'}, 4, None),
            ({'workload': 'gpu'}, 4, None),
            ({'cache_clean': 'yes'}, 4, None),
            ({'vcpu_sizing': 'on'}, 4, None),
            ({'memory_policy': 'dynamic'}, 4, None),
            ({'numa': 'half'}, 4, None),
            ({'memory_min_mb': 127}, 4, None),
            ({'memory_min_mb': 'lots'}, 4, None),
            ({'memory_min_mb': 4096}, 4, 2048),
            ({'llc_ways': '4'}, 4, None),
            ({'workload': 'memory', 'cache_clean': 'required'}, 4, None),
            ({'cache_share': 'all'}, 0, None),
            ({'cache_share': 'all'}, True, None),
        ]
        for options, vcpus, ram in cases:
            self.assertRaises(exception.InvalidInput, fs.compute_specs,
                              options, vcpus, ram_mb=ram)

    def test_bad_value_in_the_flavor_is_reported(self):
        self.assertRaises(exception.InvalidInput, fs.compute_specs,
                          {'numa': 'full'}, 4,
                          {'cacheaware:cache_share': 'every'})


class TestEveryCombination(testtools.TestCase):
    """All 24 cache_share x workload x cache_clean combinations."""

    def test_placement_keys_follow_the_rule(self):
        shares, _ = fs.VOCABULARY['cache_share']
        workloads, _ = fs.VOCABULARY['workload']
        cleans, _ = fs.VOCABULARY['cache_clean']
        seen = 0
        for share, workload, clean in itertools.product(shares, workloads,
                                                        cleans):
            options = {'cache_share': share, 'workload': workload,
                       'cache_clean': clean}
            clean_required = workload == 'memory' and clean == 'required'
            if clean_required and share != 'all':
                self.assertRaises(exception.InvalidInput, fs.compute_specs,
                                  options, 6)
                continue
            seen += 1
            got = fs.compute_specs(options, 6).set
            expected = {'cacheaware:' + k: v for k, v in options.items()}
            if share == 'all':
                expected.update({VCPU_KEY: '6', AGENT_KEY: 'required',
                                 'group_policy': 'none'})
                if clean_required:
                    expected[MEMBOUND_KEY] = '1'
            self.assertEqual(expected, got, options)
        self.assertEqual(23, seen)


_OPTION_VALUES = {opt: st.sampled_from(allowed) for opt, (allowed, _d)
                  in fs.VOCABULARY.items() if allowed}
_OPTION_VALUES['memory_min_mb'] = st.integers(128, 65536)
_OPTIONS = st.fixed_dictionaries({}, optional=_OPTION_VALUES)


def _valid(options, current=None):
    eff = fs.effective_options(options, current)
    return not (eff['workload'] == 'memory'
                and eff['cache_clean'] == 'required'
                and eff['cache_share'] != 'all')


class TestProperties(testtools.TestCase):

    @hypothesis.settings(max_examples=200, deadline=None)
    @hypothesis.given(first=_OPTIONS, second=_OPTIONS,
                      vcpus=st.integers(1, 256))
    def test_applying_twice_changes_nothing(self, first, second, vcpus):
        hypothesis.assume(_valid(first))
        current = _apply({'hw:numa_nodes': '1'},
                         fs.compute_specs(first, vcpus))
        hypothesis.assume(_valid(second, current))
        after = _apply(current, fs.compute_specs(second, vcpus, current))
        again = fs.compute_specs(second, vcpus, after)
        self.assertEqual({}, again.set)
        self.assertEqual((), again.unset)
        # The Placement keys depend only on the effective options.
        eff = fs.effective_options(second, after)
        self.assertEqual(eff['cache_share'] == 'all', VCPU_KEY in after)
        self.assertEqual(eff['cache_share'] == 'all', AGENT_KEY in after)
        self.assertEqual(
            eff['cache_share'] == 'all' and eff['workload'] == 'memory'
            and eff['cache_clean'] == 'required', MEMBOUND_KEY in after)
        if VCPU_KEY in after:
            self.assertEqual(str(vcpus), after[VCPU_KEY])
            self.assertIn('group_policy', after)
        self.assertEqual('1', after['hw:numa_nodes'])
