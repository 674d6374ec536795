"""``[nova]``: how the agent reaches the Nova API (keystoneauth options)."""

from oslo_config import cfg

nova_group = cfg.OptGroup(
    'nova',
    title='Nova API client',
    help='Credentials and endpoint the agent uses to read flavor extra '
         'specs of its instances (only with [agent] spec_source = nova).')

nova_opts = [
    cfg.StrOpt('region_name', help='Region of the Nova endpoint.'),
    cfg.StrOpt('interface', default='internal',
               choices=['public', 'internal', 'admin'],
               help='Endpoint interface in the service catalog.'),
]


def _ks_loading():
    from keystoneauth1 import loading as ks_loading
    return ks_loading


def register_opts(conf):
    """Register ``[nova]``: keystoneauth session and auth options."""
    # A fresh OptGroup per ConfigOpts: oslo.config shares the _opts of
    # a registered group object between every conf it is registered
    # on, so the password plugin options (auth_url required) that
    # keystoneauth adds to one conf would leak into all others.
    conf.register_group(cfg.OptGroup(nova_group.name, title=nova_group.title,
                                     help=nova_group.help))
    conf.register_opts(nova_opts, group=nova_group.name)
    ks = _ks_loading()
    ks.register_session_conf_options(conf, nova_group.name)
    ks.register_auth_conf_options(conf, nova_group.name)


def list_opts():
    """Options for oslo-config-generator (password auth shown)."""
    ks = _ks_loading()
    opts = (nova_opts + ks.get_session_conf_options()
            + ks.get_auth_common_conf_options()
            + ks.get_auth_plugin_conf_options('password'))
    return {nova_group: opts}
