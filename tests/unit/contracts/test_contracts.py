"""The contracts package: defined once, a leaf."""

import ast
import os
import uuid

import testtools

from nova_cacheaware.api import flavor_specs
from nova_cacheaware import contracts
from nova_cacheaware.contracts import cache_state
from nova_cacheaware.contracts import extra_specs
from nova_cacheaware.contracts import placement
from nova_cacheaware import exception

ROOT = os.path.dirname(contracts.__file__)
ALLOWED_PREFIXES = ('nova_cacheaware.contracts', 'nova_cacheaware.exception')


class LeafTest(testtools.TestCase):

    def test_imports_only_stdlib_exception_and_itself(self):
        found = set()
        for name in sorted(os.listdir(ROOT)):
            if not name.endswith('.py'):
                continue
            with open(os.path.join(ROOT, name)) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    found.update('%s.%s' % (node.module, a.name)
                                 for a in node.names)
                elif isinstance(node, ast.Import):
                    found.update(a.name for a in node.names)
        ours = sorted(n for n in found if n.startswith('nova_cacheaware'))
        self.assertEqual(
            [], [n for n in ours if not n.startswith(ALLOWED_PREFIXES)])


class CacheStateTest(testtools.TestCase):

    def test_table(self):
        for count, state in ((-1, 'empty'), (0, 'empty'), (1, 'clean'),
                             (2, 'dirty'), (7, 'dirty')):
            self.assertEqual(state, cache_state.cache_state(count))
        self.assertEqual(('empty', 'clean', 'dirty'),
                         cache_state.DOMAIN_STATES)


class PlacementNamesTest(testtools.TestCase):

    def test_domain_provider_uuid_is_the_published_uuid5(self):
        root = '9a6b3c1e-7f0a-4f7e-9c55-1d2b3c4d5e6f'
        self.assertEqual(
            str(uuid.uuid5(uuid.UUID(root), 'cacheaware:L3-0')),
            placement.domain_provider_uuid(root, 'L3-0'))

    def test_provider_names(self):
        self.assertEqual('cn1:cacheaware:L3-1',
                         placement.domain_provider_name('cn1', 'L3-1'))
        self.assertEqual('cn1:cacheaware',
                         placement.host_provider_name('cn1'))
        self.assertEqual('CUSTOM_CACHE_L3', placement.cache_level_trait(3))

    def test_custom_names_on_the_wire(self):
        self.assertEqual(
            ('CUSTOM_CACHE_DOMAIN_VCPU', 'CUSTOM_CACHE_DOMAIN_MEMBOUND',
             'CUSTOM_CACHEAWARE_DOMAIN', 'CUSTOM_CACHEAWARE_AGENT',
             'CUSTOM_CACHE_L'),
            (placement.RC_DOMAIN_VCPU, placement.RC_DOMAIN_MEMBOUND,
             placement.TRAIT_DOMAIN, placement.TRAIT_AGENT,
             placement.TRAIT_CACHE_LEVEL_PREFIX))


class OneValidationTest(testtools.TestCase):
    """``flavor set`` and the validators refuse with the same sentence."""

    def _both(self, option, value):
        errors = []
        for call in (lambda: extra_specs.validate_value(
                extra_specs.PREFIX + option, value),
                lambda: flavor_specs.effective_options({option: value})):
            try:
                call()
            except exception.InvalidInput as e:
                errors.append(str(e))
        return errors

    def test_same_message_for_bad_enum_and_bad_int(self):
        for option, value in (('workload', 'gpu'), ('memory_min_mb', '64'),
                              ('memory_min_mb', 'x')):
            first, second = self._both(option, value)
            self.assertEqual(first, second)
            self.assertIn(extra_specs.PREFIX + option, first)

    def test_int_written_back_normalised(self):
        self.assertEqual(
            '256', flavor_specs.effective_options(
                {'memory_min_mb': ' 256 '})['memory_min_mb'])
