"""The devcloud's real OpenStack Watcher: configuration text.

Used by ``render.py`` when ``DEVCLOUD_WATCHER=1``. Watcher 17.0.0 from the
package registry (``tools/devcloud/requirements-watcher.txt``): watcher-api
served by ``tools/wsgi_serve.py`` (``watcher.wsgi.api``, which reads the
file given with ``--config-file``), ``watcher-decision-engine`` and
``watcher-applier`` as processes, its database on MariaDB next to the
others, the devcloud's RabbitMQ vhost, Keystone authentication with its
own ``watcher`` service user (admin in ``service``: Nova's live migration
and nova-cacheaware-api's host views are admin-only). The decision engine
loads nova-cacheaware's goal, strategy and planner from this checkout,
installed in the devcloud venv.
"""

#: Seconds between two rebuilds of Watcher's compute model from Nova
#: (Watcher's default is an hour; Nova's notifications update it between
#: rebuilds). A tempest scenario boots servers and audits within a minute.
MODEL_PERIOD_S = 10


def watcher_conf(v, authtoken):
    """``watcher.conf``; ``authtoken`` renders ``[keystone_authtoken]``."""
    return """\
[DEFAULT]
debug = {debug}
transport_url = {transport}
# The decision engine and the applier answer RPC as this host.
host = devcloud-watcher
[api]
host = 127.0.0.1
port = {watcher_port}
[database]
connection = {db}/{prefix}watcher?charset=utf8
[oslo_concurrency]
lock_path = {dc}/watcher/lock
[oslo_messaging_notifications]
driver = messagingv2
[watcher_clients_auth]
auth_type = password
auth_url = {keystone}
username = watcher
password = {service_password}
user_domain_name = Default
project_name = service
project_domain_name = Default
[nova]
valid_interfaces = public
region_name = RegionOne
# A live migration of a TCG guest takes seconds: poll it every second.
migration_interval = 1.0
[placement]
valid_interfaces = public
region_name = RegionOne
[keystone]
valid_interfaces = public
region_name = RegionOne
[collector]
# Only Nova: the devcloud has no Cinder (the storage collector would
# fail every period).
collector_plugins = compute
[watcher_cluster_data_model_collectors.compute]
period = {model_period}
[compute_model]
# The flavors' extra specs in the compute model: the cache_rebalance
# strategy refuses to run without them.
enable_extended_attributes = true
[watcher_decision_engine]
# Continuous audits of a test cloud: no need to look often.
continuous_audit_interval = 60
[watcher_strategies.cache_rebalance]
# The devcloud's nova-cacheaware-api (it is in the catalog too, as
# cache-aware; the strategy's default interface there is internal).
api_endpoint = {cacheaware_api}
api_timeout = 30
""".format(model_period=MODEL_PERIOD_S, **v) + authtoken(v, 'watcher')
