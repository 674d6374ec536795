"""oslo.config options of nova-cacheaware.

Each module defines one option group with ``register_opts(conf)`` and
``list_opts()``; :mod:`.opts` gathers them for oslo-config-generator.
"""

from oslo_config import cfg

from nova_cacheaware.conf import agent
from nova_cacheaware.conf import balloon
from nova_cacheaware.conf import nova
from nova_cacheaware.conf import numa_balance
from nova_cacheaware.conf import placement
from nova_cacheaware.conf import reporting
from nova_cacheaware.conf import scheduler
from nova_cacheaware.conf import topology
from nova_cacheaware.conf import vcpu_sizing

CONF = cfg.CONF

agent.register_opts(CONF)
balloon.register_opts(CONF)
nova.register_opts(CONF)
numa_balance.register_opts(CONF)
placement.register_opts(CONF)
reporting.register_opts(CONF)
scheduler.register_opts(CONF)
topology.register_opts(CONF)
vcpu_sizing.register_opts(CONF)
