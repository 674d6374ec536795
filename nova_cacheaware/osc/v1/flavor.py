"""``openstack cacheaware flavor set|show|check``: the flavor commands.

The logic of ``nova-cacheaware flavor`` (:mod:`nova_cacheaware.cmd.
commands.flavor`, :mod:`~nova_cacheaware.api.flavor_specs`) with the
``openstack`` command's session: writes go through Nova's API at
microversion 2.86, where Nova runs the extra-spec validators.
"""

import contextlib

from cliff import columns
from osc_lib.command import command
from osc_lib import exceptions

from nova_cacheaware.api import flavor_specs
from nova_cacheaware.cmd.commands import flavor as flavor_cmd
from nova_cacheaware import exception


def nova(client_manager):
    """A python-novaclient client on the ``openstack`` command's session."""
    from novaclient import client as nova_client
    return nova_client.Client(
        flavor_cmd.COMPUTE_API_VERSION, session=client_manager.session,
        region_name=client_manager.region_name,
        endpoint_type=client_manager.interface)


def _errors(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except exception.CacheAwareError as e:
        raise exceptions.CommandError(str(e)) from None


class SetFlavor(command.Lister):
    """Write a flavor's cacheaware: specs and the Placement keys they need.

    Prints what was (or, with --dry-run, would be) set and unset.
    """

    def get_parser(self, prog_name):
        """``FLAVOR`` and one option per ``cacheaware:`` key."""
        parser = super().get_parser(prog_name)
        parser.add_argument('flavor', metavar='<flavor>',
                            help='flavor name or id')
        flavor_cmd.add_option_args(parser)
        parser.add_argument('--dry-run', action='store_true',
                            help='show what would change, write nothing')
        return parser

    def take_action(self, parsed_args):
        """Compute the specs, write them (unless --dry-run)."""
        options = flavor_cmd.given_options(parsed_args)
        if not options:
            raise exceptions.CommandError(
                'give at least one option (e.g. --cache-share all)')
        change = _errors(flavor_cmd.apply_to_flavor,
                         nova(self.app.client_manager), parsed_args.flavor,
                         options, dry_run=parsed_args.dry_run)
        for warning in change.warnings:
            self.log.warning('%s', warning)
        rows = [('set', k, v) for k, v in sorted(change.set.items())]
        rows += [('unset', k, None) for k in change.unset]
        return ('Action', 'Key', 'Value'), rows


class SpecsColumn(columns.FormattableColumn):
    """Extra specs: ``k='v'`` lines in a table, the dict in JSON."""

    def human_readable(self):
        """One ``key='value'`` per line."""
        return '\n'.join("%s='%s'" % kv for kv in sorted(self._value.items()))

    def machine_readable(self):
        """The dict."""
        return self._value


class ProblemsColumn(SpecsColumn):
    """Audit findings: one per line."""

    def human_readable(self):
        """One problem per line."""
        return '\n'.join(self._value)


class ShowFlavor(command.ShowOne):
    """Show a flavor's cache-aware specs and what is wrong with them."""

    def get_parser(self, prog_name):
        """``FLAVOR``."""
        parser = super().get_parser(prog_name)
        parser.add_argument('flavor', metavar='<flavor>',
                            help='flavor name or id')
        return parser

    def take_action(self, parsed_args):
        """Read the flavor and audit it."""
        from novaclient import utils as nova_utils
        with _cloud(parsed_args.flavor):
            flavor = nova_utils.find_resource(
                nova(self.app.client_manager).flavors, parsed_args.flavor)
            # novaclient's DictWithMeta: no YAML for a dict subclass.
            specs = dict(flavor.get_keys())
        problems = flavor_specs.audit(specs, flavor.vcpus, flavor.ram)
        return (('name', 'id', 'vcpus', 'ram', 'specs', 'problems'),
                (flavor.name, flavor.id, flavor.vcpus, flavor.ram,
                 SpecsColumn(specs), ProblemsColumn(problems)))


class CheckFlavor(command.Lister):
    """Audit the cache-aware specs of every flavor (public and private)."""

    def take_action(self, parsed_args):
        """One row per problem found."""
        with _cloud('list'):
            client = nova(self.app.client_manager)
            rows = [(f.name, f.id, problem)
                    for f in client.flavors.list(is_public=None)
                    for problem in flavor_specs.audit(f.get_keys(),
                                                      f.vcpus, f.ram)]
        return ('Flavor', 'ID', 'Problem'), rows


@contextlib.contextmanager
def _cloud(ref):
    """Nova/keystoneauth failures as one-line CommandErrors."""
    try:
        with flavor_cmd.cloud_errors(ref):
            yield
    except exception.CacheAwareError as e:
        raise exceptions.CommandError(str(e)) from None
