"""Nova API validators for the ``cacheaware:`` flavor extra specs.

Registered on the ``nova.api.extra_spec_validators`` entry point: with the
package installed next to nova-api, Nova (microversion 2.86+) refuses unknown
``cacheaware:`` keys and bad values with HTTP 400. The vocabulary itself
lives in :mod:`nova_cacheaware.contracts.extra_specs`.
"""

from nova.api.validation.extra_specs import base

from nova_cacheaware.contracts import extra_specs as specs


def _validator(spec):
    if spec.int_min is not None:
        value = {'type': int, 'min': spec.int_min}
    else:
        value = {'type': str, 'enum': list(spec.choices)}
    return base.ExtraSpecValidator(
        name=spec.name, description=spec.description, value=value)


EXTRA_SPEC_VALIDATORS = [_validator(spec) for spec in specs.VOCABULARY]


def register():
    """Entry point: the validators Nova adds to its extra-spec registry."""
    return EXTRA_SPEC_VALIDATORS
