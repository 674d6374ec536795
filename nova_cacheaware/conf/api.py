"""``[cacheaware_api]``: how ``nova-cacheaware-api`` serves and checks."""

from oslo_config import cfg

from nova_cacheaware.conf import groups

api_group = cfg.OptGroup(
    'cacheaware_api',
    title='nova-cacheaware-api',
    help='The authenticated read API behind openstack cacheaware.')

api_opts = [
    cfg.StrOpt('auth_strategy',
               default='keystone',
               choices=[('keystone', 'keystonemiddleware auth_token checks '
                                     'every request ([keystone_authtoken])'),
                        ('noauth', 'no authentication: the X-Roles header '
                                   'is believed (tests only)')],
               help='How callers are authenticated.'),
    cfg.HostAddressOpt('bind_host',
                       default='127.0.0.1',
                       help='Address the nova-cacheaware-api command '
                            'listens on (a WSGI server in front: its own).'),
    cfg.PortOpt('bind_port',
                default=8797,
                help='Port the nova-cacheaware-api command listens on.'),
]


def register_opts(conf):
    """Register ``[cacheaware_api]`` on ``conf``."""
    groups.register(conf, api_group, api_opts)


def list_opts():
    """``{group: opts}`` for oslo-config-generator."""
    return {api_group: api_opts}
