"""``nova-cacheaware topology``: print this host's cache/NUMA topology."""

from nova_cacheaware.cmd import common
from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import domains
from nova_cacheaware.topology import libvirt_caps
from nova_cacheaware.topology import report
from nova_cacheaware.topology import sysfs

NAME = 'topology'
HELP = 'Print the host CPU, NUMA and cache-domain topology.'


def configure(parser):
    """Add the topology options."""
    parser.add_argument('--sysfs-root', metavar='DIR', default='/sys',
                        help='directory standing in for /sys (default /sys)')
    parser.add_argument('--libvirt-uri', metavar='URI',
                        help='read libvirt host capabilities from URI '
                             'instead of sysfs (e.g. qemu:///system)')
    parser.add_argument('--level', default='auto',
                        choices=['auto', '1', '2', '3', '4'],
                        help='cache level of the domains (default auto)')
    parser.add_argument('--format', default='table',
                        choices=['table', 'json'],
                        help='output format (default table)')


def run(args):
    """Read the topology from the chosen source and print it."""
    if args.libvirt_uri:
        topology = libvirt_caps.read_topology(args.libvirt_uri)
    else:
        topology = sysfs.read_topology(args.sysfs_root)
    doc = report.to_report(topology, domains.parse_level(args.level))
    if args.format == 'json':
        common.dump_json(doc)
    else:
        print(format_table(doc, args.level))
    return 0


def _size(kib):
    if kib is None:
        return '-'
    if kib >= 1024 and kib % 1024 == 0:
        return '%d MiB' % (kib // 1024)
    return '%d KiB' % kib


def format_table(doc, requested_level='auto'):
    """Render a topology report for a person."""
    lines = ['Host topology (%s)' % doc['source'],
             'Online CPUs: %s (%d)' % (cpulist.format_cpulist(
                 doc['online_cpus']), len(doc['online_cpus'])),
             'Packages: %d   Physical cores: %d   SMT: %s' % (
                 len(doc['packages']), len(doc['smt_siblings']),
                 'yes' if any(len(g) > 1 for g in doc['smt_siblings'])
                 else 'no'),
             'NUMA nodes:']
    for node in doc['numa_nodes']:
        lines.append('  node %-3d CPUs %-20s %8d MiB%s' % (
            node['id'], cpulist.format_cpulist(node['cpus']) or '-',
            node['memory_mib'],
            '' if node['memory_mib'] else '  (memoryless)'))
    if doc['fallback']:
        heading = 'Cache domains: physical packages (no cache information)'
    else:
        heading = 'Cache domains: L%s%s' % (
            doc['cache_level'],
            ' (auto)' if requested_level == 'auto' else '')
    lines.append(heading)
    lines.append('  %-10s %-6s %-9s %-5s %-20s %s' % (
        'ID', 'LEVEL', 'SIZE', 'CPUS', 'CPU LIST', 'NUMA'))
    for d in doc['cache_domains']:
        lines.append('  %-10s %-6s %-9s %-5d %-20s %s' % (
            d['id'], 'L%d' % d['level'] if d['level'] else '-',
            _size(d['size_kib']), len(d['cpus']),
            cpulist.format_cpulist(d['cpus']),
            ','.join(map(str, d['numa_nodes'])) or '-'))
    return '\n'.join(lines)
