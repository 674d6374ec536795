"""oslo.config options of nova-cacheaware, registered per process.

Each module defines one option group with ``register_opts(conf)`` and
``list_opts()``; :mod:`.opts` says which process reads which group and
gathers them for oslo-config-generator (one namespace per process).

Importing this package registers on the global ``cfg.CONF`` only what
nova-scheduler reads (``[cacheaware_scheduler]``): the scheduler plugins
import it, and nova-scheduler's ``CONF`` must not get the agent's groups
nor options of ours in Nova's own groups (``[placement]``). The agent
registers its groups on its own ``ConfigOpts``
(:func:`.opts.register_agent_opts`, ``nova_cacheaware.cmd.agent``).
"""

from oslo_config import cfg

from nova_cacheaware.conf import opts

CONF = cfg.CONF

opts.register_scheduler_opts(CONF)
