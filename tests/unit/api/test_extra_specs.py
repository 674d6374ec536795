"""The Nova validators mirror the vocabulary; Nova's registry loads them."""

import testtools

from nova.api.validation.extra_specs import validators
from nova import exception as nova_exc

from nova_cacheaware.api import extra_specs
from nova_cacheaware.contracts import extra_specs as specs


class ValidatorsTest(testtools.TestCase):

    def test_one_validator_per_key_with_description(self):
        got = {v.name: v for v in extra_specs.register()}
        self.assertEqual([s.name for s in specs.VOCABULARY], list(got))
        for validator in got.values():
            self.assertTrue(validator.description)

    def test_nova_registry_uses_entry_point(self):
        # Nova finds the namespace through the installed entry point.
        validators.validate('cacheaware:cache_share', 'all')
        validators.validate('cacheaware:memory_min_mb', '512')
        for name, value in (('cacheaware:cache_share', 'some'),
                            ('cacheaware:memory_min_mb', '64'),
                            ('cacheaware:nope', '1')):
            self.assertRaises(nova_exc.ValidationError,
                              validators.validate, name, value)
