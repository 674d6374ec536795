#!/usr/bin/env python3
# nova-cacheaware libvirt qemu hook: keep live migration safe from our pins.
#
# nova-cacheaware-agent repins floating vCPUs live only. A live migration of a
# non-NUMA guest carries those <vcpupin> elements to the destination, whose
# CPU ids may not exist or may be outside Nova's allowed set there, and the
# migration would fail. libvirt runs this hook on the destination before the
# incoming domain is defined:
#
#     qemu <domain name> migrate begin -     (domain XML on stdin)
#
# and uses what it prints on stdout as the domain XML. We drop exactly the
# <vcpupin> elements the agent recorded as its own (in its metadata element,
# with nova_cpuset="" meaning "Nova wrote no pin for this vCPU"), keep Nova's
# <vcpu cpuset> and any pin Nova wrote itself (NUMA-pinned and dedicated
# guests: Nova rewrites those for the destination), and drop the agent's
# metadata. The destination agent re-pins after the "migrated" event.
#
# Standalone on purpose: only the Python standard library, no project
# imports. Fails open: any problem leaves the XML unchanged (exit 0, nothing
# printed), because a failing hook would fail the migration itself.
#
# Installed by "nova-cacheaware install-hook" (as /etc/libvirt/hooks/qemu,
# or as /etc/libvirt/hooks/qemu.d/nova-cacheaware next to another program's
# hook); the installer recognises this file by the marker on line 2.

import sys
from xml.etree import ElementTree

AGENT_NS = 'http://openstack.org/xmlns/nova-cacheaware/agent/1.0'
OPERATIONS = ('migrate',)


def _register_prefixes(xml):
    # Keep the document's namespace prefixes (nova:, ...) on output.
    import io
    for _event, (prefix, uri) in ElementTree.iterparse(
            io.StringIO(xml), events=('start-ns',)):
        if prefix:
            ElementTree.register_namespace(prefix, uri)


def strip_agent_pins(xml):
    """Return the XML without the agent's live pins, or None if unchanged."""
    _register_prefixes(xml)
    root = ElementTree.fromstring(xml)
    metadata = root.find('metadata')
    if metadata is None:
        return None
    ours = metadata.find('{%s}pins' % AGENT_NS)
    if ours is None:
        return None
    agent_only = {int(v.get('id')) for v in ours.findall('{%s}vcpu' % AGENT_NS)
                  if not v.get('nova_cpuset')}
    cputune = root.find('cputune')
    if cputune is not None:
        for pin in cputune.findall('vcpupin'):
            if int(pin.get('vcpu', -1)) in agent_only:
                cputune.remove(pin)
        if len(cputune) == 0 and not (cputune.text or '').strip():
            root.remove(cputune)
    metadata.remove(ours)
    if len(metadata) == 0:
        root.remove(metadata)
    return ElementTree.tostring(root, encoding='unicode')


def main(argv, stdin, stdout, stderr):
    """Hook entry point: argv as libvirt passes it, XML on stdin."""
    if len(argv) < 3 or argv[2] not in OPERATIONS:
        return 0
    xml = stdin.read()
    try:
        new = strip_agent_pins(xml)
    except Exception as e:  # fail open: never fail the migration
        stderr.write('nova-cacheaware hook: left %s unchanged: %s\n'
                     % (argv[1], e))
        return 0
    if new is not None:
        stdout.write(new)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv, sys.stdin, sys.stdout, sys.stderr))
