"""``nova-cacheaware flavor``: write or print a flavor's cache-aware specs.

``flavor check`` audits every flavor of the cloud
(:mod:`nova_cacheaware.cmd.commands.flavor_check`).

``flavor set FLAVOR [options]`` writes the ``cacheaware:`` keys and the
granular Placement keys that enforce them to a flavor through Nova's API
(python-novaclient; credentials from ``OS_*`` variables or ``clouds.yaml``
via ``--os-cloud``/``OS_CLOUD``). ``flavor show-specs --vcpus N [options]``
prints them as ``--property k=v`` lines for ``openstack flavor set``,
touching nothing. The mapping is :mod:`nova_cacheaware.api.flavor_specs`.
"""

import contextlib
import sys

from nova_cacheaware.api import flavor_specs
from nova_cacheaware.cmd.commands import flavor_check
from nova_cacheaware.cmd.commands import flavor_numa
from nova_cacheaware.cmd import common
from nova_cacheaware import exception

NAME = 'flavor'
HELP = 'Write or print the cache-aware extra specs of a flavor.'

# Nova API microversion: from 2.86 on, Nova validates every extra spec we
# write with its own validators (and ours, once installed).
COMPUTE_API_VERSION = '2.86'


class CloudRequestFailed(exception.CacheAwareError):
    """The cloud refused or could not serve a request."""

    msg_fmt = '%(reason)s'


def add_option_args(parser):
    """One option per ``cacheaware:`` key (also the OSC flavor set's)."""
    for option, (allowed, default) in flavor_specs.VOCABULARY.items():
        flag = '--' + option.replace('_', '-')
        if allowed is None:
            parser.add_argument(
                flag, dest=option, type=int, metavar='MB',
                help='%s%s (integer >= %d)'
                     % (flavor_specs.PREFIX, option,
                        flavor_specs.MEMORY_MIN_MB_FLOOR))
        else:
            parser.add_argument(
                flag, dest=option, choices=allowed,
                help='%s%s (default when unset: %s)'
                     % (flavor_specs.PREFIX, option, default))


def _add_cloud_args(parser):
    parser.add_argument(
        '--os-cloud', metavar='NAME',
        help='cloud in clouds.yaml (default: $OS_CLOUD, else the OS_* '
             'environment variables)')


def configure(parser):
    """Add the ``set``, ``show-specs``, ``numa-full`` and ``check`` actions."""
    actions = parser.add_subparsers(dest='flavor_action', metavar='ACTION')
    actions.required = True
    set_parser = actions.add_parser(
        'set', help='write the specs to a flavor through the Nova API',
        description='Write the cacheaware: keys and the Placement keys '
                    'that enforce them to FLAVOR (name or id).')
    set_parser.add_argument('flavor', metavar='FLAVOR',
                            help='flavor name or id')
    add_option_args(set_parser)
    set_parser.add_argument('--dry-run', action='store_true',
                            help='print what would change, write nothing')
    _add_cloud_args(set_parser)
    set_parser.set_defaults(flavor_func=run_set)
    flavor_numa.configure(actions, _add_cloud_args).set_defaults(
        flavor_func=run_numa_full)
    flavor_check.configure(actions, _add_cloud_args).set_defaults(
        flavor_func=run_check)
    show = actions.add_parser(
        'show-specs', help='print the specs without writing anything',
        description='Print the extra specs for a flavor with --vcpus vCPUs '
                    'as "--property k=v" lines (or JSON).')
    show.add_argument('--vcpus', type=int, required=True, metavar='N',
                      help="the flavor's vCPU count")
    show.add_argument('--ram-mb', type=int, metavar='MB',
                      help="the flavor's RAM (checks --memory-min-mb)")
    add_option_args(show)
    show.add_argument('--format', choices=['properties', 'json'],
                      default='properties',
                      help='"--property k=v" lines (default) or JSON')
    show.set_defaults(flavor_func=run_show_specs)


def given_options(args):
    """The ``cacheaware:`` options given on the command line."""
    return {option: getattr(args, option)
            for option in flavor_specs.VOCABULARY
            if getattr(args, option, None) is not None}


def run(args):
    """Dispatch to the chosen action."""
    return args.flavor_func(args)


def run_show_specs(args):
    """Print the specs for ``--vcpus`` without talking to any cloud."""
    change = flavor_specs.compute_specs(given_options(args), args.vcpus,
                                        ram_mb=args.ram_mb)
    for warning in change.warnings:
        sys.stderr.write('warning: %s\n' % warning)
    if args.format == 'json':
        common.dump_json(change.set)
    else:
        for line in change.as_properties():
            print(line)
    return 0


def session_from_args(args):
    """A keystoneauth session and novaclient kwargs for the chosen cloud.

    ``clouds.yaml`` (``--os-cloud`` or ``$OS_CLOUD``) or the ``OS_*``
    environment, exactly as the ``openstack`` client reads them.
    """
    from keystoneauth1 import exceptions as ks_exc
    import openstack.config
    from openstack import exceptions as sdk_exc
    try:
        region = openstack.config.OpenStackConfig().get_one(
            cloud=args.os_cloud)
        session = region.get_session()
    except (sdk_exc.ConfigException, ks_exc.ClientException) as e:
        raise CloudRequestFailed(
            reason='cloud configuration: %s (set OS_CLOUD or the OS_* '
                   'variables)' % e) from None
    return session, {'region_name': region.get_region_name('compute'),
                     'endpoint_type': region.get_interface('compute')}


def nova_client(args):
    """A python-novaclient client for the chosen cloud."""
    from novaclient import client as nova_client_mod
    session, kwargs = session_from_args(args)
    return nova_client_mod.Client(COMPUTE_API_VERSION, session=session,
                                  **{k: v for k, v in kwargs.items() if v})


@contextlib.contextmanager
def cloud_errors(flavor_ref):
    """Turn novaclient/keystoneauth failures into :class:`CloudRequestFailed`.

    One line naming the flavor instead of a traceback: the cloud refused
    (e.g. Nova's validators, HTTP 400), the flavor was not found, or the
    cloud could not be reached.
    """
    from keystoneauth1 import exceptions as ks_exc
    from novaclient import exceptions as nova_exc
    try:
        yield
    except (nova_exc.ClientException, nova_exc.CommandError,
            ks_exc.ClientException) as e:
        raise CloudRequestFailed(
            reason='flavor %s: %s' % (flavor_ref, e)) from None


def find_flavor(args, flavor_ref):
    """The novaclient flavor named or numbered ``flavor_ref``."""
    from novaclient import utils as nova_utils
    with cloud_errors(flavor_ref):
        return _WritableFlavor(nova_utils.find_resource(
            nova_client(args).flavors, flavor_ref), flavor_ref)


class _WritableFlavor:
    """A novaclient flavor whose writes map failures to one-line errors."""

    def __init__(self, flavor, ref):
        self._flavor = flavor
        self._ref = ref
        self.vcpus = flavor.vcpus
        self.ram = flavor.ram

    def set_keys(self, specs):
        """Write extra specs; Nova's validators may refuse (HTTP 400)."""
        with cloud_errors(self._ref):
            self._flavor.set_keys(specs)


def list_flavors(args):
    """Every flavor of the cloud (public and private) with its extra specs."""
    with cloud_errors('list'):
        nova = nova_client(args)
        for flavor in nova.flavors.list(is_public=None):
            yield flavor, flavor.get_keys()


def run_check(args):
    """Audit every flavor's cache-aware specs (exit 1 when one is wrong)."""
    return flavor_check.run(args, list_flavors)


def run_numa_full(args):
    """Derive (and optionally write) full-NUMA specs for a host."""
    return flavor_numa.run(args, find_flavor)


def apply_to_flavor(nova, flavor_ref, options, dry_run=False):
    """Compute and (unless ``dry_run``) write the specs of one flavor.

    Returns the :class:`~nova_cacheaware.api.flavor_specs.SpecChange`.
    Nova's extra spec validators check the keys when they are written: a
    refusal (HTTP 400) leaves the flavor as it was.
    """
    from novaclient import utils as nova_utils
    with cloud_errors(flavor_ref):
        flavor = nova_utils.find_resource(nova.flavors, flavor_ref)
        current = flavor.get_keys()
        change = flavor_specs.compute_specs(options, flavor.vcpus, current,
                                            ram_mb=flavor.ram)
        if not dry_run:
            if change.set:
                flavor.set_keys(change.set)
            if change.unset:
                flavor.unset_keys(list(change.unset))
    return change


def run_set(args):
    """Write the specs to a flavor and print what changed."""
    options = given_options(args)
    if not options:
        raise exception.InvalidInput(
            reason='give at least one option (e.g. --cache-share all)')
    change = apply_to_flavor(nova_client(args), args.flavor, options,
                             dry_run=args.dry_run)
    for warning in change.warnings:
        sys.stderr.write('warning: %s\n' % warning)
    verb = 'would ' if args.dry_run else ''
    for key, value in sorted(change.set.items()):
        print('%sset %s=%s' % (verb, key, value))
    for key in change.unset:
        print('%sunset %s' % (verb, key))
    if not change.set and not change.unset:
        print('flavor %s already has these specs' % args.flavor)
    return 0
