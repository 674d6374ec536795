"""``openstack cacheaware host list`` and ``host show``."""

from cliff import columns
from osc_lib.command import command
from osc_lib import exceptions

from nova_cacheaware.cmd.commands import host_map as host_map_cmd
from nova_cacheaware import exception
from nova_cacheaware.status import host_map

LIST_COLUMNS = (
    ('host', 'Host'), ('model', 'Model'), ('domains', 'Domains'),
    ('empty', 'Empty'), ('clean', 'Clean'), ('dirty', 'Dirty'),
    ('servers', 'Servers'), ('agent_alive', 'Agent Alive'),
    ('agent_healthy', 'Agent Healthy'), ('state_age_s', 'State Age (s)'),
    ('generation', 'Generation'))
SHOW_FIELDS = ('version', 'host', 'model', 'generated_at', 'agent',
               'numa_nodes', 'domains', 'servers')


class DomainsColumn(columns.FormattableColumn):
    """A host's domains: one line each in a table, the list in JSON."""

    def human_readable(self):
        """``L3-0 [L3] NUMA 0 CPUs 0-7: Clean, servers ...``."""
        return '\n'.join(
            '%s [%s] NUMA %s CPUs %s: %s%s%s' % (
                d['id'], d['level'], d['numa_node'], d['cpus'], d['state'],
                ' SPIN STORM' if d['spin_storm'] else '',
                ', servers ' + ' '.join(d['servers']) if d['servers']
                else '')
            for d in self._value)

    def machine_readable(self):
        """The document's list."""
        return self._value


class ServersColumn(columns.FormattableColumn):
    """A host's servers: one line each in a table, the list in JSON."""

    def human_readable(self):
        """``uuid memory-bound in L3-0 pins 0-3 (isolation required)``."""
        return '\n'.join(server_line(s) for s in self._value)

    def machine_readable(self):
        """The document's list."""
        return self._value


class NodesColumn(DomainsColumn):
    """A host's NUMA nodes."""

    def human_readable(self):
        """``node 0: CPUs 0-15, domains L3-0 L3-1``."""
        return '\n'.join('node %s: CPUs %s, domains %s' % (
            n['id'], n['cpus'], ' '.join(n['domains'])) for n in self._value)


class DictColumn(DomainsColumn):
    """A small dict: ``k=v, ...`` in a table."""

    def human_readable(self):
        """``k=v`` pairs, sorted."""
        if self._value is None:
            return ''
        return ', '.join('%s=%s' % kv for kv in sorted(self._value.items()))


def server_line(s):
    """One server of a host view, for a table."""
    parts = [s['uuid'], s['class']]
    if s['domain']:
        parts.append('in %s' % s['domain'])
    parts.append('pins %s' % (s['pins'] or '-'))
    parts.append('%d vCPUs' % s['vcpus'])
    if s['isolation']:
        parts.append('isolation %s' % s['isolation'])
    if s['spin_storm']:
        parts.append('SPIN STORM')
    return ' '.join(parts)


class ListHost(command.Lister):
    """List the hosts of the live state (admin)."""

    def take_action(self, parsed_args):
        """``GET /v1/hosts``."""
        hosts = self.app.client_manager.cacheaware.hosts()
        return ([title for _, title in LIST_COLUMNS],
                [tuple(h.get(key) for key, _ in LIST_COLUMNS)
                 for h in hosts])


class ShowHost(command.ShowOne):
    """Show one host's NUMA nodes, cache domains and servers (admin)."""

    def get_parser(self, prog_name):
        """``HOST``."""
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='<host>',
                            help='compute host (Nova service host name)')
        return parser

    def take_action(self, parsed_args):
        """``GET /v1/hosts/{host}``."""
        view = self.app.client_manager.cacheaware.host(parsed_args.host)
        return show_view(view)


def show_view(view):
    """``(fields, values)`` of a host view for ShowOne."""
    wrap = {'agent': DictColumn, 'numa_nodes': NodesColumn,
            'domains': DomainsColumn, 'servers': ServersColumn}
    return (SHOW_FIELDS, tuple(wrap[f](view[f]) if f in wrap else view[f]
                               for f in SHOW_FIELDS))


class MapHost(command.Command):
    """Draw one host's CPUs, cache domains and servers as SVG (admin)."""

    def get_parser(self, prog_name):
        """``HOST --output FILE.svg``."""
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='<host>',
                            help='compute host (Nova service host name)')
        parser.add_argument('--output', metavar='<file>', required=True,
                            help='SVG file to write; "-" writes standard '
                                 'output')
        return parser

    def take_action(self, parsed_args):
        """``GET /v1/hosts/{host}``, then the host map renderer."""
        view = self.app.client_manager.cacheaware.host(parsed_args.host)
        try:
            svg = host_map.render_svg(view)
            if parsed_args.output == '-':
                self.app.stdout.write(svg)
            else:
                host_map_cmd.write_file(parsed_args.output, svg)
        except exception.InvalidInput as e:
            raise exceptions.CommandError(str(e)) from None
