"""Which process reads which option group; the generator's namespaces.

One namespace per process (``setup.cfg`` ``oslo.config.opts``, the
generator files in ``etc/nova-cacheaware/``):

* ``nova_cacheaware.scheduler``: nova-scheduler (the groups go into
  ``nova.conf``), :data:`SCHEDULER_MODULES`;
* ``nova_cacheaware.agent``: ``nova-cacheaware-agent``'s own file,
  :data:`AGENT_MODULES`;
* ``nova_cacheaware.api``: ``nova-cacheaware-api``'s file,
  :data:`API_MODULES`;
* ``nova_cacheaware.state_relay``: ``nova-cacheaware-state-relay``'s
  file, :data:`RELAY_MODULES`;
* ``nova_cacheaware``: every group, for the configuration reference.

Add a module to a tuple when it defines ``register_opts(conf)`` and
``list_opts()``.
"""

import importlib

#: The groups nova-scheduler reads (the scheduler plugins).
SCHEDULER_MODULES = ('scheduler',)
#: The groups in the agent's own configuration file.
AGENT_MODULES = ('agent', 'balloon', 'nova', 'numa_balance', 'placement',
                 'privileged', 'reporting', 'status', 'topology',
                 'vcpu_sizing')
#: The groups of ``nova-cacheaware-api``'s file: the state topic and TTL
#: (``[cacheaware_scheduler]``), the describe RPC, how it serves.
API_MODULES = ('api', 'scheduler', 'status')
#: The groups of ``nova-cacheaware-state-relay``'s file.
RELAY_MODULES = ('state_relay',)
_MODULES = tuple(sorted(set(SCHEDULER_MODULES + AGENT_MODULES
                            + API_MODULES + RELAY_MODULES)))


def list_opts():
    """Every group, ``[(group, [opts]), ...]`` for oslo-config-generator."""
    return _gather(_MODULES)


def list_scheduler_opts():
    """The options nova-scheduler reads from ``nova.conf``."""
    return _gather(SCHEDULER_MODULES)


def list_agent_opts():
    """The options of ``nova-cacheaware-agent``'s configuration file."""
    return _gather(AGENT_MODULES)


def list_api_opts():
    """The options of ``nova-cacheaware-api``'s configuration file."""
    return _gather(API_MODULES)


def list_relay_opts():
    """The options of ``nova-cacheaware-state-relay``'s file."""
    return _gather(RELAY_MODULES)


def register_relay_opts(conf):
    """Register ``nova-cacheaware-state-relay``'s groups on ``conf``."""
    _register(conf, RELAY_MODULES)


def register_api_opts(conf):
    """Register ``nova-cacheaware-api``'s groups on ``conf``."""
    _register(conf, API_MODULES)


def register_scheduler_opts(conf):
    """Register the scheduler plugins' groups on ``conf``."""
    _register(conf, SCHEDULER_MODULES)


def register_agent_opts(conf):
    """Register the agent's groups on ``conf`` (its private ConfigOpts)."""
    _register(conf, AGENT_MODULES)


def _module(name):
    return importlib.import_module('nova_cacheaware.conf.' + name)


def _register(conf, modules):
    for name in modules:
        _module(name).register_opts(conf)


def _gather(modules):
    result = []
    for name in modules:
        for group, opts in _module(name).list_opts().items():
            result.append((group, opts))
    return result
