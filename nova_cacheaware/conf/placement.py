"""``[placement]``: how the agent reaches the Placement API.

The standard keystoneauth session, auth and adapter options, exactly as
Nova's own ``[placement]`` group has them, so a compute node's existing
``nova.conf`` section can be copied as it is. The version options of the
adapter are left out: the microversions are the code's business.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

DEFAULT_SERVICE_TYPE = 'placement'
_ADAPTER_VERSION_OPTS = ('version', 'min_version', 'max_version')

placement_group = cfg.OptGroup(
    'placement',
    title='Placement Service Options',
    help="""
Configuration options for connecting to the Placement API service.

The agent writes the cache domain providers with these credentials: the
user needs Placement's admin role (the default policy), like nova-compute's.
For a Placement deployed with ``[api] auth_strategy = noauth2`` (tests
only), use ``auth_type = admin_token``, ``token = admin`` and ``endpoint``.
""")


#: Our own options in ``[placement]`` (next to the keystoneauth ones).
model_opts = [
    cfg.StrOpt('provider_model',
               default='host',
               choices=[
                   ('host', 'one child provider per compute node, '
                            '"<compute node>:cacheaware", holding the '
                            'host\'s cache counts; the agent chooses the '
                            'domain'),
                   ('domain', 'one child provider per cache domain, '
                              '"<compute node>:cacheaware:<domain>"; '
                              'Placement chooses the domain'),
               ],
               help="""
How the agent describes this host's cache domains to Placement.

``host`` (the default): one child provider per compute node, with the
host's cache counts (the usable CPUs of its domains, ``max_unit`` kept at
the largest room one domain has left; one memory-bound slot per domain,
``reserved`` for the domains that are no longer Clean). Placement then
checks a claim against the host's counts, the agent chooses the domain on
the host, and every ``GET /allocation_candidates`` in the region reads two
providers per cache-aware host instead of one per domain plus one (6 to 16
times cheaper at 16 domains per host, see the evaluation page "Placement:
provider models at cloud scale").

``domain``: one child provider per cache domain: Placement itself proves at
claim time that one domain has room and which domain is Clean, even for
two schedulers racing within one agent period, at the cost above for every
request of the region. Reasonable for small regions.

Switching is done by the agent at its next start: ``domain`` -> ``host``
moves every allocation held on the domain providers to the host provider in
one atomic ``POST /reshaper`` (the agent's user needs Placement's
``service`` role, as nova-compute's has) and deletes the domain providers;
``host`` -> ``domain`` keeps the host provider, fully reserved, until the
instances that hold it are gone.
"""),
    cfg.BoolOpt('domain_traits',
                default=True,
                help="""
Put the traits ``CUSTOM_CACHEAWARE_DOMAIN`` and ``CUSTOM_CACHE_L<level>`` on
every cache domain provider (True), or keep the domain providers without
traits (False, the "lean" model).

No request that nova-cacheaware writes needs these traits: the resource
classes alone select the domain providers. But every
``GET /allocation_candidates`` (with or without cache keys) reads the traits
of every provider of every candidate tree, and a request with the cache
group reads them twice; with 16 domains per host the lean model lowered
Placement's CPU time by 10-15 % per request in our measurement (see the
evaluation page "Placement: allocation candidates"). Set it to False in
large regions unless something of yours queries these traits; the agent
then removes them (and only them) at its next sync.
"""),
]


def _adapter_opts():
    opts = [opt for opt in ks_loading.get_adapter_conf_options(
        include_deprecated=False) if opt.dest not in _ADAPTER_VERSION_OPTS]
    cfg.set_defaults(opts, valid_interfaces=['internal', 'public'],
                     service_type=DEFAULT_SERVICE_TYPE)
    return opts


def register_opts(conf):
    """Register the ``[placement]`` keystoneauth options on ``conf``.

    Safe to call on a ``conf`` where Nova already registered its own
    ``[placement]`` group: options that exist are left alone.
    """
    # A fresh OptGroup per ConfigOpts: oslo.config shares the _opts of
    # a registered group object between every conf it is registered
    # on, so the password plugin options (auth_url required) that
    # keystoneauth adds to one conf would leak into all others.
    conf.register_group(cfg.OptGroup(placement_group.name,
                                     title=placement_group.title,
                                     help=placement_group.help))
    group = placement_group.name
    for register in (ks_loading.register_session_conf_options,
                     ks_loading.register_auth_conf_options):
        try:
            register(conf, group)
        except cfg.DuplicateOptError:
            pass
    for opt in _adapter_opts() + model_opts:
        try:
            conf.register_opt(opt, group=group)
        except cfg.DuplicateOptError:
            pass


class _WithoutVersionOpts(object):
    """A ``[placement]`` group view where the version options are None.

    keystoneauth's adapter loader reads ``version``/``min_version``/
    ``max_version``, which this group does not register (Nova registers
    unsettable placeholders for them; registering ours too would clash
    with Nova's in a process that loads both).
    """

    def __init__(self, group_attr):
        self._group_attr = group_attr

    def __getattr__(self, name):
        if name in _ADAPTER_VERSION_OPTS:
            return None
        return getattr(self._group_attr, name)


def adapter_conf_view(conf, group='placement'):
    """``{group: view}`` to hand to ``load_adapter_from_conf_options``."""
    return {group: _WithoutVersionOpts(conf[group])}


def list_opts():
    """Options for oslo-config-generator."""
    return {
        placement_group: (
            ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_auth_plugin_conf_options('password') +
            ks_loading.get_auth_plugin_conf_options('v3password') +
            _adapter_opts() + model_opts)
    }
