#!/usr/bin/env python3
# nova-cacheaware libvirt qemu hook: keep live migration safe from our pins.
#
# Two operations:
#
# * "migrate": strip the agent's live pins from an incoming domain (below);
# * "started": put the vCPU threads of a guest QEMU has just started back
#   on the CPUs the agent last pinned them to (its record in
#   PIN_RECORD_DIR/<uuid>.json), so that a guest Nova restarts while the
#   agent is down keeps its cache domain. Applied with sched_setaffinity to
#   the threads QEMU names "CPU <n>/KVM" or "CPU <n>/TCG", only where the
#   recorded set lies inside what the domain XML allows that vCPU (its own
#   <vcpupin> if Nova wrote one, else <vcpu cpuset>): a stale record never
#   moves a vCPU where Nova forbids it. libvirt has set the threads'
#   affinity and cgroups before it runs the hook, and the hook must not
#   call libvirt back; the agent re-pins through libvirt when it is back.
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

import json
import os
import re
import sys
from xml.etree import ElementTree

AGENT_NS = 'http://openstack.org/xmlns/nova-cacheaware/agent/1.0'
OPERATIONS = ('migrate', 'started')
# Rewritten by "nova-cacheaware install-hook --pin-record-dir".
PIN_RECORD_DIR = '/var/lib/nova-cacheaware/pins'
PROC = '/proc'
_VCPU_THREAD = re.compile(r'^CPU (\d+)/(KVM|TCG)$')


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


def parse_cpulist(text):
    """CPU ids of a cpulist ("0-3,8,^2"), as a set."""
    cpus, excluded = set(), set()
    for part in (text or '').split(','):
        part = part.strip()
        if not part:
            continue
        target = cpus
        if part.startswith('^'):
            target, part = excluded, part[1:]
        if '-' in part:
            first, last = part.split('-', 1)
            target.update(range(int(first), int(last) + 1))
        else:
            target.add(int(part))
    return cpus - excluded


def recorded_pins(xml, record):
    """``(uuid, {vcpu: CPU ids})`` of ``record`` that the XML allows.

    ``record`` is the agent's JSON document, None when there is none; a
    vCPU whose recorded set is empty, or not inside what the domain allows
    it (its own <vcpupin>, else <vcpu cpuset>, else anything), is left out.
    """
    root = ElementTree.fromstring(xml)
    uuid = (root.findtext('uuid') or '').strip()
    if not record or record.get('uuid') != uuid:
        return uuid, {}
    vcpu = root.find('vcpu')
    domain_set = (parse_cpulist(vcpu.get('cpuset'))
                  if vcpu is not None and vcpu.get('cpuset') else None)
    nova_pins = {}
    cputune = root.find('cputune')
    if cputune is not None:
        for pin in cputune.findall('vcpupin'):
            nova_pins[int(pin.get('vcpu'))] = parse_cpulist(
                pin.get('cpuset'))
    count = int((vcpu.text or '0').strip()) if vcpu is not None else 0
    pins = {}
    for key, text in sorted((record.get('vcpus') or {}).items()):
        number = int(key)
        cpus = parse_cpulist(text)
        allowed = nova_pins.get(number, domain_set)
        if (cpus and number < count
                and (allowed is None or cpus <= allowed)):
            pins[number] = cpus
    return uuid, pins


def qemu_pid(uuid, proc=PROC):
    """The pid of the QEMU process running the guest ``uuid``, or None."""
    wanted = uuid.encode()
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, 'cmdline'), 'rb') as f:
                args = f.read().split(b'\0')
        except OSError:
            continue
        if b'-uuid' in args and wanted in args:
            return int(name)
    return None


def vcpu_threads(pid, proc=PROC):
    """``{vcpu: thread id}`` of a QEMU process, from its threads' names."""
    threads = {}
    tasks = os.path.join(proc, str(pid), 'task')
    for tid in os.listdir(tasks):
        try:
            with open(os.path.join(tasks, tid, 'comm')) as f:
                match = _VCPU_THREAD.match(f.read().strip())
        except OSError:
            continue
        if match:
            threads[int(match.group(1))] = int(tid)
    return threads


def restore_pins(xml, record_dir=PIN_RECORD_DIR, proc=PROC,
                 set_affinity=os.sched_setaffinity):
    """Apply the agent's record to a just-started guest; what was applied.

    Returns ``{vcpu: CPU ids}`` pinned (empty: no record, nothing the XML
    allows, or no such thread).
    """
    uuid = (ElementTree.fromstring(xml).findtext('uuid') or '').strip()
    if not uuid or '/' in uuid or uuid.startswith('.'):
        return {}
    try:
        with open(os.path.join(record_dir, uuid + '.json')) as f:
            record = json.load(f)
    except FileNotFoundError:
        return {}
    uuid, pins = recorded_pins(xml, record)
    if not pins:
        return {}
    pid = qemu_pid(uuid, proc)
    threads = vcpu_threads(pid, proc) if pid is not None else {}
    done = {}
    for number, cpus in sorted(pins.items()):
        if number in threads:
            set_affinity(threads[number], cpus)
            done[number] = cpus
    return done


def main(argv, stdin, stdout, stderr):
    """Hook entry point: argv as libvirt passes it, XML on stdin."""
    if len(argv) < 3 or argv[2] not in OPERATIONS:
        return 0
    xml = stdin.read()
    if argv[2] == 'started':
        try:
            restore_pins(xml)
        except Exception as e:  # fail open: never fail the start
            stderr.write('nova-cacheaware hook: no pins restored for %s: '
                         '%s\n' % (argv[1], e))
        # Nothing on stdout: libvirt ignores it for this operation.
        return 0
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
