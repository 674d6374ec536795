"""python-openstackclient plugin module (``openstack.cli.extension``).

The client talks to ``nova-cacheaware-api`` found in the catalog under
:data:`SERVICE_TYPE`, or at ``--os-cacheaware-url``
(``$OS_CACHEAWARE_URL``), with the session of the ``openstack`` command.
"""

import os

from osc_lib import utils

API_NAME = 'cacheaware'
API_VERSION_OPTION = 'os_cacheaware_api_version'
API_VERSIONS = {'1': 'nova_cacheaware.osc.client.Client'}
DEFAULT_API_VERSION = '1'
SERVICE_TYPE = 'cache-aware'


def make_client(instance):
    """The :class:`~nova_cacheaware.osc.client.Client` of the command."""
    cls = utils.get_client_class(API_NAME, instance._api_version[API_NAME],
                                 API_VERSIONS)
    config = instance.get_configuration()
    return cls(instance.session, endpoint=config.get('cacheaware_url'),
               region_name=instance.region_name,
               interface=instance.interface)


def build_option_parser(parser):
    """The plugin's global options."""
    parser.add_argument(
        '--os-cacheaware-api-version', metavar='<version>',
        default=utils.env('OS_CACHEAWARE_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='nova-cacheaware API version (default: %s)'
             % DEFAULT_API_VERSION)
    parser.add_argument(
        '--os-cacheaware-url', metavar='<url>',
        default=os.environ.get('OS_CACHEAWARE_URL'),
        help='nova-cacheaware-api endpoint, instead of the catalog\'s '
             '%s endpoint ($OS_CACHEAWARE_URL)' % SERVICE_TYPE)
    return parser
