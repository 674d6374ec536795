"""Write the devcloud's configuration files from its environment.

Run by ``tools/devcloud.sh up`` with the devcloud venv's Python (so that
"is this filter importable" is asked of the interpreter that runs the
scheduler). Inputs are ``DEVCLOUD_*`` environment variables set by the
script; outputs go under ``$DEVCLOUD_DIR/etc`` plus ``clouds.yaml`` and
``openrc`` in ``$DEVCLOUD_DIR``. Rewriting is idempotent: same inputs, same
files.
"""

import importlib
import inspect
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import render_glance  # noqa: E402
import render_libvirt  # noqa: E402
import render_watcher  # noqa: E402

#: The first libvirt compute's agent config (tests and callers use it here).
agent_conf = render_libvirt.agent_conf

# Nova 34's default enabled_filters, plus NUMATopologyFilter (the fake
# computes report NUMA cells and the tests use hw:numa_nodes).
NOVA_FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter', 'NUMATopologyFilter']


def _env(name):
    return os.environ['DEVCLOUD_' + name]


def _load(dotted):
    """Import ``pkg.module.attr``; raise ImportError/AttributeError."""
    module, _, attr = dotted.rpartition('.')
    return getattr(importlib.import_module(module), attr)


def _classes(obj):
    """Classes named by a filter/weigher path: a class or a function."""
    if inspect.isclass(obj):
        return [obj]
    classes = list(obj())
    if not all(inspect.isclass(c) for c in classes):
        raise TypeError('it did not return a list of classes')
    return classes


def resolve_plugins(available, enabled, weighers):
    """Keep only the importable filter/weigher paths; say why for the rest.

    :returns: a dict with ``available_filters``, ``enabled_filters``,
        ``weight_classes`` (what goes to nova.conf) and ``notes``.
    """
    out = {'available_filters': ['nova.scheduler.filters.all_filters'],
           'enabled_filters': list(NOVA_FILTERS),
           'weight_classes': ['nova.scheduler.weights.all_weighers'],
           'notes': []}
    names = set()
    for path in available:
        try:
            names.update(c.__name__ for c in _classes(_load(path)))
        except Exception as e:  # any import-time failure means "leave out"
            out['notes'].append('filter path %s left out: %s: %s'
                                % (path, type(e).__name__, e))
            continue
        out['available_filters'].append(path)
    for name in enabled:
        if name in names:
            out['enabled_filters'].append(name)
        else:
            out['notes'].append('filter %s left out: not provided by any '
                                'importable available_filters path' % name)
    for path in weighers:
        try:
            _classes(_load(path))
        except Exception as e:
            out['notes'].append('weigher path %s left out: %s: %s'
                                % (path, type(e).__name__, e))
            continue
        out['weight_classes'].append(path)
    return out


def _split(value):
    return [v.strip() for v in value.split(',') if v.strip()]


#: Every rendered file is readable by its owner only: most carry a
#: password (clouds.yaml, openrc, the service and agent configs), and the
#: services all run as the devcloud's own user.
FILE_MODE = 0o600


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    # A file left by an older render keeps its mode through O_CREAT.
    os.fchmod(fd, FILE_MODE)
    with os.fdopen(fd, 'w') as f:
        f.write(text)


def _authtoken(v, user):
    return """
[keystone_authtoken]
www_authenticate_uri = {keystone}
auth_url = {keystone}
auth_type = password
username = {user}
password = {service_password}
user_domain_name = Default
project_name = service
project_domain_name = Default
region_name = RegionOne
service_token_roles_required = True
""".format(user=user, **v)


_ksa = render_libvirt.ksa


def api_conf(v):
    """nova-cacheaware-api's file: the bus, keystonemiddleware, policy."""
    return """\
[DEFAULT]
debug = {debug}
transport_url = {transport}
[oslo_messaging_notifications]
transport_url = {transport}
[cacheaware_api]
auth_strategy = keystone
""".format(**v) + _authtoken(v, 'cacheaware')


def online_cpus(path='/sys/devices/system/cpu/online'):
    """This machine's online CPUs as a cpulist (``0-1``)."""
    with open(path) as f:
        return f.read().strip()


def log_levels(debug_loggers):
    """``default_log_levels`` line with ``debug_loggers`` at DEBUG.

    ``debug_loggers`` is a comma-separated list of logger names; '' (none)
    keeps oslo.log's defaults.
    """
    loggers = _split(debug_loggers)
    if not loggers:
        return ''
    from oslo_log import _options
    return 'default_log_levels = %s\n' % ','.join(
        list(_options.DEFAULT_LOG_LEVELS) + ['%s=DEBUG' % n for n in loggers])


def main():
    """Render every file; print the plugin resolution as JSON."""
    dc = _env('DIR')
    etc = os.path.join(dc, 'etc')
    v = {
        'dc': dc, 'venv': _env('VENV'), 'tools': _env('TOOLS'),
        'keystone': 'http://127.0.0.1:%s/v3' % _env('KEYSTONE_PORT'),
        'placement': 'http://127.0.0.1:%s' % _env('PLACEMENT_PORT'),
        'image': 'http://127.0.0.1:%s' % _env('IMAGE_PORT'),
        'network': 'http://127.0.0.1:%s' % _env('NETWORK_PORT'),
        'db': _env('DB_URL'), 'prefix': _env('DB_PREFIX'),
        'transport': _env('TRANSPORT_URL'),
        'admin_password': _env('ADMIN_PASSWORD'),
        'service_password': _env('SERVICE_PASSWORD'),
        'libvirt_uri': _env('LIBVIRT_URI'),
        'debug': os.environ.get('DEVCLOUD_DEBUG', '0') == '1',
        # The libvirt compute and its agent float guests on the same CPUs.
        'cpu_shared_set': os.environ.get('DEVCLOUD_CPU_SHARED_SET')
        or online_cpus(),
        'agent_period': os.environ.get('DEVCLOUD_AGENT_PERIOD', '3'),
        # Several workers: each its own process, listener and claim ledger.
        'scheduler_workers': os.environ.get('DEVCLOUD_SCHEDULER_WORKERS',
                                            '1'),
        # 1: this project's recommendation; Placement's default is 10.
        'conflict_retries': os.environ.get(
            'DEVCLOUD_PLACEMENT_CONFLICT_RETRIES', '1'),
        'log_levels': log_levels(os.environ.get('DEVCLOUD_DEBUG_LOGGERS',
                                                '')),
        # Nova's VCPU allocation ratio (unset: Nova's default).
        'cpu_ratio': ('cpu_allocation_ratio = %s\n' % os.environ[
            'DEVCLOUD_CPU_ALLOCATION_RATIO']
            if os.environ.get('DEVCLOUD_CPU_ALLOCATION_RATIO') else ''),
    }
    plugins = resolve_plugins(_split(_env('AVAILABLE_FILTERS')),
                              _split(_env('ENABLED_FILTERS')),
                              _split(_env('WEIGHERS')))

    _write(os.path.join(etc, 'keystone', 'keystone.conf'), """\
[DEFAULT]
debug = {debug}
[database]
connection = {db}/{prefix}keystone?charset=utf8
[token]
provider = fernet
[fernet_tokens]
key_repository = {dc}/keystone/fernet-keys
[fernet_receipts]
key_repository = {dc}/keystone/fernet-keys
[credential]
key_repository = {dc}/keystone/credential-keys
""".format(**v))

    _write(os.path.join(etc, 'placement', 'placement.conf'), """\
[DEFAULT]
debug = {debug}
[api]
auth_strategy = keystone
[placement_database]
connection = {db}/{prefix}placement?charset=utf8
# One Placement process serves both scheduler workers, every compute and
# agent: oslo.db's default pool (5 + 10 overflow) ran out in a
# concurrency-32 burst on 24 computes (HTTP 500 "QueuePool limit").
max_pool_size = 20
max_overflow = 40
[placement]
# No server-side retry of an allocation write after a provider generation
# conflict: Placement 16 retries inside the same database transaction and
# can then accept claims beyond capacity; Nova's scheduler retries the
# refused claim itself (doc/source/evaluation/placement-claim-race.rst).
allocation_conflict_retry_count = {conflict_retries}
""".format(**v) + _authtoken(v, 'placement'))

    fs = 'available_filters = ' + '\navailable_filters = '.join(
        plugins['available_filters'])
    nova = """\
[DEFAULT]
debug = {debug}
{log_levels}{cpu_ratio}transport_url = {transport}
state_path = {dc}/nova/state
compute_driver = fake.FakeDriver
my_ip = 127.0.0.1
# Each libvirt compute is its own availability zone (cloud.py zones): a
# resize of a real guest stays on its host.
allow_resize_to_same_host = True
instance_usage_audit = False
heal_instance_info_cache_interval = -1
[api]
auth_strategy = keystone
[wsgi]
api_paste_config = {dc}/etc/nova/api-paste.ini
[api_database]
connection = {db}/{prefix}nova_api?charset=utf8
[database]
connection = {db}/{prefix}nova?charset=utf8
[oslo_concurrency]
lock_path = {dc}/nova/lock
[conductor]
workers = 1
[scheduler]
workers = {scheduler_workers}
discover_hosts_in_cells_interval = 5
[filter_scheduler]
{fs}
enabled_filters = {enabled}
weight_classes = {weighers}
[quota]
instances = -1
cores = -1
ram = -1
[vnc]
enabled = False
[glance]
endpoint_override = {image}
[oslo_messaging_notifications]
driver = messagingv2
[notifications]
notification_format = versioned
[cacheaware_scheduler]
# Only devcloud-libvirt runs an agent; the fake computes have cache-domain
# providers but no agent to publish live state, so the scheduler's rule for
# silent agents (doc/source/admin/failure-modes.rst) would refuse them.
stale_host_state = trust_placement
""".format(fs=fs, enabled=','.join(plugins['enabled_filters']),
           weighers=','.join(plugins['weight_classes']), **v)
    nova += _authtoken(v, 'nova')
    nova += _ksa('placement', v)
    nova += _ksa('neutron', v, 'endpoint_override = %s\n' % v['network'])
    _write(os.path.join(etc, 'nova', 'nova.conf'), nova)
    shutil.copyfile(os.path.join(v['venv'], 'etc', 'nova', 'api-paste.ini'),
                    os.path.join(etc, 'nova', 'api-paste.ini'))

    if os.environ.get('DEVCLOUD_GLANCE', '1') == '1':
        _write(os.path.join(etc, 'glance', 'glance-api.conf'),
               render_glance.api_conf(v, _authtoken))
        shutil.copyfile(
            os.path.join(v['venv'], 'etc', 'glance', 'glance-api-paste.ini'),
            os.path.join(etc, 'glance', 'glance-api-paste.ini'))

    if os.environ.get('DEVCLOUD_WATCHER', '0') == '1':
        wv = dict(v, watcher_port=os.environ.get('DEVCLOUD_WATCHER_PORT',
                                                 '15322'),
                  cacheaware_api='http://127.0.0.1:%s' % os.environ.get(
                      'DEVCLOUD_CACHEAWARE_API_PORT', '15797'))
        _write(os.path.join(etc, 'watcher', 'watcher.conf'),
               render_watcher.watcher_conf(wv, _authtoken))

    computes = json.loads(_env('COMPUTES'))
    libvirts = [c for c in computes if c['driver'] == 'libvirt']
    for c in computes:
        conf = os.path.join(etc, 'nova', 'compute-%s.conf' % c['name'])
        text = """\
[DEFAULT]
host = {name}
state_path = {dc}/nova/{name}
[oslo_concurrency]
lock_path = {dc}/nova/{name}/lock
""".format(name=c['name'], **v)
        if c['driver'] == 'libvirt':
            text += render_libvirt.compute_conf(v, c, libvirts, conf)
        else:
            text += '[DEFAULT]\ncompute_driver = topofake.TopologyFakeDriver\n'
        _write(conf, text)

    _write(os.path.join(dc, 'clouds.yaml'), """\
clouds:
  devcloud:
    auth:
      auth_url: {keystone}
      username: admin
      password: {admin_password}
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    identity_api_version: 3
  devcloud-demo:
    auth:
      auth_url: {keystone}
      username: demo
      password: {admin_password}
      project_name: demo
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    identity_api_version: 3
""".format(**v))
    _write(os.path.join(dc, 'openrc'), """\
# Source me: admin credentials for the devcloud.
export OS_AUTH_URL={keystone}
export OS_USERNAME=admin
export OS_PASSWORD={admin_password}
export OS_PROJECT_NAME=admin
export OS_USER_DOMAIN_NAME=Default
export OS_PROJECT_DOMAIN_NAME=Default
export OS_REGION_NAME=RegionOne
export OS_IDENTITY_API_VERSION=3
export OS_CLOUD=
""".format(**v))
    _write(os.path.join(etc, 'nova-cacheaware', 'api.conf'), api_conf(v))
    for name, text in render_libvirt.agent_files(v, libvirts).items():
        _write(os.path.join(etc, 'nova-cacheaware', name), text)
    _write(os.path.join(etc, 'plugins.json'), json.dumps(plugins, indent=1))
    json.dump(plugins, sys.stdout)
    print()


if __name__ == '__main__':
    main()
