"""``openstack cacheaware server show``."""

from openstack import exceptions as sdk_exc
from osc_lib.command import command
from osc_lib import exceptions

from nova_cacheaware.osc.v1 import host as host_cmd

FIELDS = ('uuid', 'host', 'class', 'isolation', 'domain', 'pins', 'vcpus',
          'spin_storm', 'pcpu_estimate', 'sizing', 'balloon')


class ShowServer(command.ShowOne):
    """Show a server's cache domain, pins, class, sizing, balloon (admin).

    The server is looked up in Nova (name or id); its host is Nova's
    ``OS-EXT-SRV-ATTR:host`` (admin), or ``--host``.
    """

    def get_parser(self, prog_name):
        """``SERVER [--all-projects] [--host HOST]``."""
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>',
                            help='server name or id')
        parser.add_argument('--all-projects', action='store_true',
                            help='find a server name in every project '
                                 '(admin), as openstack server list '
                                 '--all-projects does')
        parser.add_argument('--host', metavar='<host>',
                            help='the server\'s compute host (default: '
                                 'Nova\'s, else the live state\'s)')
        return parser

    def take_action(self, parsed_args):
        """Nova for the id and host, then ``GET /v1/servers/{id}``."""
        uuid, host = self._resolve(parsed_args)
        doc = self.app.client_manager.cacheaware.server(
            uuid, host=parsed_args.host or host)
        wrap = {'sizing': host_cmd.DictColumn, 'balloon': host_cmd.DictColumn}
        return FIELDS, tuple(wrap[f](doc.get(f)) if f in wrap else doc.get(f)
                             for f in FIELDS)

    def _resolve(self, parsed_args):
        compute = self.app.client_manager.compute
        try:
            server = compute.find_server(
                parsed_args.server, ignore_missing=False,
                all_projects=parsed_args.all_projects)
        except sdk_exc.SDKException as e:
            raise exceptions.CommandError('server %s: %s' % (
                parsed_args.server, e)) from None
        return server.id, getattr(server, 'compute_host', None)
