"""Building ``nova-cacheaware-api``: configuration, bus, auth, the app.

:func:`init_application` is the WSGI application factory (uWSGI, mod_wsgi,
``tools/wsgi_serve.py``): it reads ``$NOVA_CACHEAWARE_API_CONFIG`` (default
``/etc/nova-cacheaware/nova-cacheaware-api.conf``), starts the live-state
listener and wraps the app in keystonemiddleware's ``auth_token`` unless
``[cacheaware_api] auth_strategy = noauth``.
"""

import os

from oslo_config import cfg
from oslo_log import log as logging
from oslo_policy import opts as policy_opts

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import rpc as agent_rpc
from nova_cacheaware.conf import opts as conf_opts
from nova_cacheaware.status import agents
from nova_cacheaware.status import hosts
from nova_cacheaware.status import policy
from nova_cacheaware.status import wsgi
from nova_cacheaware import version

LOG = logging.getLogger(__name__)
CONFIG_ENV = 'NOVA_CACHEAWARE_API_CONFIG'
DEFAULT_CONFIG = '/etc/nova-cacheaware/nova-cacheaware-api.conf'
PROJECT = 'nova-cacheaware-api'


def make_conf(argv=(), config_files=None):
    """A parsed private ConfigOpts with the API service's options."""
    conf = cfg.ConfigOpts()
    conf_opts.register_api_opts(conf)
    logging.register_options(conf)
    for group, opts in policy_opts.list_opts():
        conf.register_opts(opts, group=group)
    conf(list(argv), project='nova-cacheaware', prog=PROJECT,
         version=version.version_string(),
         default_config_files=config_files)
    return conf


class Service:
    """The app and what it runs: the listener, the transports."""

    def __init__(self, conf, listen=True):
        self.conf = conf
        status = conf.cacheaware_status
        self.cache = hosts.StatusCache(
            conf.cacheaware_scheduler.host_state_ttl)
        self.rpc_transport = agent_rpc.transport(conf)
        self.listener = self.notify_transport = None
        if listen:
            self.notify_transport = notify.notification_transport(conf)
            self.listener = hosts.start(conf, self.notify_transport,
                                        self.cache)
        client = agents.AgentClient(self.rpc_transport,
                                    status.agent_rpc_topic,
                                    status.rpc_timeout)
        self.app = wsgi.StatusApp(self.cache, client,
                                  policy.enforcer(conf))

    def wrapped(self):
        """The app behind keystonemiddleware (unless noauth)."""
        if self.conf.cacheaware_api.auth_strategy == 'noauth':
            LOG.warning('[cacheaware_api] auth_strategy = noauth: callers '
                        'are not authenticated (tests only)')
            return self.app
        from keystonemiddleware import auth_token
        return auth_token.AuthProtocol(
            self.app, {'oslo_config_config': self.conf})

    def stop(self):
        """Stop the listener and release the transports."""
        if self.listener is not None:
            self.listener.stop()
            self.listener.wait()
        for transport in (self.notify_transport, self.rpc_transport):
            if transport is not None:
                transport.cleanup()


def init_application():
    """The WSGI application, configured from the environment's file."""
    path = os.environ.get(CONFIG_ENV, DEFAULT_CONFIG)
    conf = make_conf(config_files=[path] if os.path.exists(path) else [])
    logging.setup(conf, PROJECT)
    LOG.info('%s %s: live state on topic %s, agents on topic %s', PROJECT,
             version.version_string(),
             conf.cacheaware_scheduler.host_state_topic,
             conf.cacheaware_status.agent_rpc_topic)
    return Service(conf).wrapped()


def policy_enforcer():
    """The enforcer with the defaults (``oslo.policy.enforcer``).

    The entry point of ``oslopolicy-policy-generator`` and
    ``oslopolicy-checker``.
    """
    conf = make_conf(config_files=[])
    return policy.enforcer(conf)
