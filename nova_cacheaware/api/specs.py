"""Old path of :mod:`nova_cacheaware.contracts.extra_specs`.

Kept for the modules that still import ``nova_cacheaware.api.specs``:
every name is looked up in the contracts module (PEP 562). New code
imports the contracts package.
"""

from nova_cacheaware.contracts import extra_specs as _contract


def __getattr__(name):
    """The contracts module's ``name`` (AttributeError if it has none)."""
    return getattr(_contract, name)
