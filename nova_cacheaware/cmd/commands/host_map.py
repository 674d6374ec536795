"""``nova-cacheaware host-map``: draw a host-view document as SVG."""

from nova_cacheaware.cmd import common
from nova_cacheaware import exception
from nova_cacheaware.status import host_map

NAME = 'host-map'
HELP = ('Draw a host-view document (CPUs, cache domains, servers) as an '
        'SVG picture.')


def configure(parser):
    """Add the host-map options."""
    parser.add_argument('--input', metavar='FILE|-', required=True,
                        help='host-view JSON document (see '
                             'doc/source/admin/host-map.rst); "-" reads '
                             'standard input')
    parser.add_argument('--output', metavar='FILE|-', required=True,
                        help='SVG file to write; "-" writes standard output')


def write_file(path, text):
    """Write ``text`` to ``path``; an OS error becomes InvalidInput.

    The picture is rendered whole before the file is opened, so a bad
    document never truncates the last good picture.
    """
    try:
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
    except OSError as e:
        raise exception.InvalidInput(
            reason='%s: %s' % (path, e.strerror or e)) from None


def run(args):
    """Read and check the document, render it, write the SVG."""
    svg = host_map.render_svg(common.load_json_input(args.input))
    if args.output == '-':
        print(svg, end='')
    else:
        write_file(args.output, svg)
    return 0
