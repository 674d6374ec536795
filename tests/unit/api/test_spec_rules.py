"""Rules between extra specs (what Nova's one-key validators cannot see)."""

import itertools

import testtools

from nova_cacheaware.api import flavor_specs
from nova_cacheaware.api import spec_rules
from nova_cacheaware.contracts import extra_specs as specs
from nova_cacheaware import exception

MIN_ABOVE_RAM = ("cacheaware:memory_min_mb=4096 is above the flavor's RAM "
                 '(2048 MB): the balloon floor must be at most the RAM')
CLEAN_NOT_ALL = ('cacheaware:cache_clean=required with workload=memory '
                 'needs cache_share=all (it has any): Placement can keep a '
                 'domain Clean only for a VM that lives in one domain')


class ContradictionsTest(testtools.TestCase):

    def test_table(self):
        table = [
            ('no cacheaware key', {'hw:cpu_policy': 'shared'}, []),
            ('min at RAM', {'cacheaware:memory_min_mb': '2048'}, []),
            ('min above RAM', {'cacheaware:memory_min_mb': '4096'},
             [MIN_ABOVE_RAM]),
            ('clean, memory, share any (explicit)',
             {'cacheaware:cache_clean': 'required',
              'cacheaware:workload': 'memory',
              'cacheaware:cache_share': 'any'}, [CLEAN_NOT_ALL]),
            ('clean, memory, share left to its default',
             {'cacheaware:cache_clean': 'required',
              'cacheaware:workload': 'memory'}, [CLEAN_NOT_ALL]),
            ('clean, not declared memory-bound',
             {'cacheaware:cache_clean': 'required',
              'cacheaware:workload': 'auto'}, []),
            ('both at once',
             {'cacheaware:cache_clean': 'required',
              'cacheaware:workload': 'memory',
              'cacheaware:memory_min_mb': '4096'},
             [MIN_ABOVE_RAM, CLEAN_NOT_ALL]),
            ('a bad single key comes first and alone',
             {'cacheaware:cache_share': 'some',
              'cacheaware:memory_min_mb': '4096'},
             ["invalid input: cacheaware:cache_share must be one of all, "
              "any, not 'some'"]),
        ]
        for name, extra_specs, expected in table:
            self.assertEqual(expected,
                             spec_rules.contradictions(extra_specs, 2048),
                             name)

    def test_what_flavor_set_writes_is_never_contradictory(self):
        # Every combination compute_specs accepts passes the rules.
        choices = [spec.choices for spec in specs.VOCABULARY
                   if spec.choices]
        keys = [spec.key for spec in specs.VOCABULARY if spec.choices]
        for values in itertools.product(*choices):
            options = dict(zip(keys, values), memory_min_mb='1024')
            try:
                change = flavor_specs.compute_specs(options, 4,
                                                    ram_mb=1024)
            except exception.InvalidInput:
                continue
            self.assertEqual([], spec_rules.contradictions(change.set, 1024),
                             options)


class AuditTest(testtools.TestCase):
    """``flavor check``'s view: contradictions, then the Placement keys."""

    def test_table(self):
        good = flavor_specs.compute_specs(
            {'cache_share': 'all', 'workload': 'memory',
             'cache_clean': 'required'}, 4).set
        fix = 'rewrite it with "nova-cacheaware flavor set"'
        table = [
            ('written by flavor set', good, 4, []),
            ('no cacheaware key', {'resources:VCPU': '0'}, 4, []),
            ('vCPUs changed since', good, 8,
             ['needs resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU=8 (has 4): '
              + fix]),
            ('all-share by hand', {'cacheaware:cache_share': 'all',
                                   'group_policy': 'isolate'}, 4,
             ['needs resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU=4 (missing): '
              + fix,
              'needs trait_CACHE:CUSTOM_CACHEAWARE_AGENT=required (missing): '
              + fix]),
            ('stale slot', dict(good, **{'cacheaware:cache_clean': 'off'}),
             4, ['has resources_CACHE:CUSTOM_CACHE_DOMAIN_MEMBOUND=1, which '
                 'its cacheaware: keys do not ask for: ' + fix]),
            ('contradiction only', dict(
                good, **{'cacheaware:memory_min_mb': '4096'}), 4,
             [MIN_ABOVE_RAM]),
        ]
        for name, extra_specs, vcpus, expected in table:
            self.assertEqual(expected,
                             flavor_specs.audit(extra_specs, vcpus, 2048),
                             name)
