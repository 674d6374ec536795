#!/usr/bin/env python3
"""Write the host map of the admin guide (``doc/source/admin/host-map``).

The devcloud's ``devcloud-fake-zen`` compute (``tools/devcloud/topologies/
fake-zen.json``: 16 CPUs, two NUMA nodes, four L3 domains) holding a set
of servers chosen to show every part of the picture: a Clean domain with a
``required`` server, a Dirty one with a server in a spin storm, an Empty
one with a cpu-bound server, servers floating unpinned and across two
domains. The document is constructed here, not read from an agent; the
uuids are fixed, so the SVG only changes when the renderer does.

    tools/host_map_example.py [--json FILE] [OUTPUT.svg]

``--json`` also writes the host-view document (replay it with
``nova-cacheaware host-map --input FILE --output OUT.svg``).
"""

import argparse
import json
import os
import sys
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from nova_cacheaware.status import host_map  # noqa: E402
from tests.fixtures import host_views  # noqa: E402

OUTPUT = os.path.join(ROOT, 'doc', 'source', 'admin',
                      'host-map-fake-zen.svg')


def _uuid(name):
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, 'host-map.example.%s' % name))


def document():
    """The host-view document of the example fake-zen host."""
    s = host_views.server
    servers = [
        s(_uuid('db-1'), 'L3-0', [0, 1, 8, 9], isolation='required',
          pcpu_estimate=4.0),
        s(_uuid('web-1'), 'L3-0', [0, 8], cls='cpu-bound', isolation='none',
          pcpu_estimate=1.5),
        s(_uuid('etl-1'), 'L3-1', [2, 3, 10, 11], isolation='preferred',
          storm=True, pcpu_estimate=2.1,
          sizing={'vcpus': 4, 'threads': 2}),
        s(_uuid('etl-2'), 'L3-1', [3, 11], isolation='preferred',
          pcpu_estimate=1.2),
        s(_uuid('cache-1'), 'L3-2', [4, 5, 12, 13], isolation='preferred',
          balloon={'target_mib': 3072, 'current_mib': 4096}),
        s(_uuid('build-1'), 'L3-3', [6, 7], cls='cpu-bound'),
        s(_uuid('batch-1'), None, None, cls='unknown', vcpus=4),
        s(_uuid('wide-1'), None, [0, 1, 2, 3], cls='cpu-bound', vcpus=4),
    ]
    return host_views.view(host_views.devcloud('fake-zen'), servers,
                           host='devcloud-fake-zen')


def main(argv=None):
    """Write the SVG (and, asked, the document)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('output', nargs='?', default=OUTPUT)
    parser.add_argument('--json', metavar='FILE')
    args = parser.parse_args(argv)
    doc = document()
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write('\n')
    with open(args.output, 'w') as f:
        f.write(host_map.render_svg(doc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
