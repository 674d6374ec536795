"""``nova-cacheaware flavor numa-full``: flavors that mirror a host's NUMA.

Reads a host topology (this host's sysfs, ``--sysfs-root``, a libvirt URI,
or a ``nova-cacheaware topology --format json`` file), derives the
``hw:numa_*`` + ``cacheaware:numa=full`` extra specs with
:mod:`nova_cacheaware.numa_balance.flavor`, prints them, and with
``--write FLAVOR`` writes them through Nova's API.
"""

import sys

from nova_cacheaware.cmd import common
from nova_cacheaware import exception
from nova_cacheaware.numa_balance import flavor as numa_flavor
from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import libvirt_caps
from nova_cacheaware.topology import report
from nova_cacheaware.topology import sysfs


def configure(actions, cloud_args):
    """Add the ``numa-full`` action to the ``flavor`` subparsers."""
    parser = actions.add_parser(
        'numa-full', help='derive (and write) specs mirroring a host NUMA '
                          'topology',
        description='Derive the hw:numa_* extra specs that give a guest '
                    'the NUMA shape of a host (study 003), print them, and '
                    'with --write write them to a flavor.')
    source = parser.add_mutually_exclusive_group()
    source.add_argument('--sysfs-root', metavar='DIR', default='/sys',
                        help='host topology from this sysfs tree '
                             '(default /sys: this host)')
    source.add_argument('--topology', metavar='FILE',
                        help='a "nova-cacheaware topology --format json" '
                             'document ("-" reads standard input)')
    source.add_argument('--libvirt-uri', metavar='URI',
                        help='host topology from libvirt capabilities')
    parser.add_argument('--ram-mb', type=int, metavar='MB',
                        help="the flavor's RAM (default with --write: the "
                             "flavor's own)")
    parser.add_argument('--usable-cpus', metavar='LIST',
                        help='host CPUs guests may use, e.g. Nova\'s '
                             'cpu_shared_set "2-31" (default: all online)')
    parser.add_argument('--memoryless', choices=numa_flavor.MEMORYLESS_MODES,
                        default='drop',
                        help='memoryless host nodes: drop their CPUs '
                             '(default) or merge them into the nearest '
                             'node with memory')
    parser.add_argument('--format', choices=['properties', 'json'],
                        default='properties',
                        help='"--property k=v" lines (default) or JSON')
    parser.add_argument('--write', metavar='FLAVOR',
                        help='write the specs to FLAVOR through Nova\'s API')
    parser.add_argument('--dry-run', action='store_true',
                        help='with --write: check and print, write nothing')
    cloud_args(parser)
    return parser


def _topology(args):
    if args.topology:
        return report.from_report(common.load_json_input(args.topology))
    if args.libvirt_uri:
        return libvirt_caps.read_topology(args.libvirt_uri)
    return sysfs.read_topology(args.sysfs_root)


def derive_from_args(args, ram_mb):
    """The :class:`numa_flavor.NUMAFlavor` for the chosen host and RAM."""
    usable = None
    if args.usable_cpus is not None:
        usable = cpulist.parse_cpulist(args.usable_cpus)
    nodes = numa_flavor.host_nodes_from_topology(_topology(args), usable)
    try:
        return numa_flavor.derive(nodes, ram_mb, args.memoryless)
    except numa_flavor.NUMAFlavorError as e:
        raise exception.InvalidInput(reason=str(e)) from None


def run(args, find_flavor):
    """Print the derived specs; write them when ``--write`` is given.

    ``find_flavor(args, ref)`` returns a novaclient flavor (injected by the
    ``flavor`` command, which owns the cloud connection).
    """
    flavor = None
    ram_mb = args.ram_mb
    if args.write:
        flavor = find_flavor(args, args.write)
        if ram_mb is not None and ram_mb != flavor.ram:
            raise exception.InvalidInput(
                reason='--ram-mb %d differs from flavor %s RAM %d MiB; Nova '
                       'needs hw:numa_mem.* to add up to the flavor RAM'
                       % (ram_mb, args.write, flavor.ram))
        ram_mb = flavor.ram
    if ram_mb is None or ram_mb < 1:
        raise exception.InvalidInput(
            reason='give --ram-mb (a positive number of MiB) or --write')
    shape = derive_from_args(args, ram_mb)
    for note in shape.notes:
        sys.stderr.write('note: %s\n' % note)
    if flavor is not None and flavor.vcpus != shape.vcpus:
        raise exception.InvalidInput(
            reason='flavor %s has %d vCPUs; this host shape needs %d '
                   '(create a flavor with --vcpus %d)'
                   % (args.write, flavor.vcpus, shape.vcpus, shape.vcpus))
    specs = shape.extra_specs()
    if args.format == 'json':
        common.dump_json(shape.to_dict())
    elif flavor is None:
        print('# flavor: --vcpus %d --ram %d' % (shape.vcpus, shape.ram_mib))
        for key, value in sorted(specs.items()):
            print('--property %s=%s' % (key, value))
    if flavor is not None:
        if not args.dry_run:
            flavor.set_keys(specs)
        if args.format != 'json':
            verb = 'would ' if args.dry_run else ''
            for key, value in sorted(specs.items()):
                print('%sset %s=%s' % (verb, key, value))
    return 0
