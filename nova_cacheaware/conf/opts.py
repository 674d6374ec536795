"""Gather every option group for oslo-config-generator.

Add a module's name to ``_MODULES`` when it defines ``list_opts()``.
"""

import importlib

_MODULES = (
    'placement',
    'scheduler',
    'topology',
)


def list_opts():
    """Return ``[(group, [opts]), ...]`` for oslo-config-generator."""
    result = []
    for name in _MODULES:
        module = importlib.import_module('nova_cacheaware.conf.' + name)
        for group, opts in module.list_opts().items():
            result.append((group, opts))
    return result
