"""Gather every option group for oslo-config-generator.

Add a module's name to ``_MODULES`` when it defines ``list_opts()``.
"""

import importlib

_MODULES = (
    'agent',
    'balloon',
    'nova',
    'numa_balance',
    'placement',
    'reporting',
    'scheduler',
    'topology',
    'vcpu_sizing',
)

# The groups in the agent's own configuration file.
_AGENT_MODULES = ('agent', 'balloon', 'nova', 'numa_balance', 'placement',
                  'reporting', 'topology', 'vcpu_sizing')


def list_opts():
    """Return ``[(group, [opts]), ...]`` for oslo-config-generator."""
    return _gather(_MODULES)


def list_agent_opts():
    """The options of ``nova-cacheaware-agent``'s configuration file."""
    return _gather(_AGENT_MODULES)


def _gather(modules):
    result = []
    for name in modules:
        module = importlib.import_module('nova_cacheaware.conf.' + name)
        for group, opts in module.list_opts().items():
            result.append((group, opts))
    return result
