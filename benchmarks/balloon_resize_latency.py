"""How long a balloon resize takes to show on a real QEMU (TCG) guest.

Boots the test guest (tests/fixtures/linux_guest.py: 320 MiB flavor,
virtio balloon with 1 s statistics, qemu-ga) on qemu:///system and resizes
it ``--resizes`` times between 320 and 192 MiB with ``setMemoryFlags(LIVE)``
(what the ``balloon`` capability does). For each resize it measures how long
until

* the balloon's ``actual`` (``memoryStats``) reaches the target, and
* the guest's ``MemTotal`` (read through guest-exec) moved by the same
  amount;

polling every 50 ms (MemTotal: one guest-exec round trip per poll, about
100-200 ms under TCG, which bounds its resolution). Baseline in the same
run: the round trip of a guest-exec that reads ``/proc/meminfo`` without a
resize (what an unchanged MemTotal costs to observe).

Usage: PYTHONPATH=. python benchmarks/balloon_resize_latency.py
       [--resizes 10] [--json]
"""

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid as uuid_mod

import libvirt

from nova_cacheaware.agent import guest_agent
from nova_cacheaware.agent import hypervisor
from tests.fixtures import linux_guest

FLAVOR, LOW = 320, 192


def _mem_total(ga, uuid):
    _, out, _ = ga.exec(uuid, '/bin/grep', ['MemTotal', '/proc/meminfo'],
                        poll_s=0.02)
    return int(out.split()[1])


def measure(resizes):
    """Run the resizes; return the measurements as a dict."""
    hv = hypervisor.LibvirtHypervisor('qemu:///system')
    uuid = str(uuid_mod.uuid4())
    log_dir = tempfile.mkdtemp()
    os.chmod(log_dir, 0o755)
    xml = linux_guest.domain_xml('nca-bench-%s' % uuid[:6], uuid, 1, FLAVOR,
                                 os.path.join(log_dir, 'serial.log'))
    dom = hv.connection().defineXML(xml)
    dom.create()
    try:
        ga = guest_agent.GuestAgent(hv, timeout_s=5)
        if not ga.wait(uuid, 120):
            raise RuntimeError('guest agent never answered')
        baseline = []
        for _ in range(resizes):
            t = time.monotonic()
            _mem_total(ga, uuid)
            baseline.append(time.monotonic() - t)
        offset = FLAVOR * 1024 - _mem_total(ga, uuid)
        actual_s, total_s = [], []
        for i in range(resizes):
            target = LOW if i % 2 == 0 else FLAVOR
            start = time.monotonic()
            dom.setMemoryFlags(target * 1024, libvirt.VIR_DOMAIN_AFFECT_LIVE)
            seen_actual = seen_total = None
            while seen_actual is None or seen_total is None:
                now = time.monotonic() - start
                if now > 30:
                    raise RuntimeError('resize %d not seen in 30 s' % i)
                if (seen_actual is None and dom.memoryStats()['actual']
                        == target * 1024):
                    seen_actual = now
                if (seen_total is None and _mem_total(ga, uuid)
                        == target * 1024 - offset):
                    seen_total = time.monotonic() - start
                time.sleep(0.05)
            actual_s.append(seen_actual)
            total_s.append(seen_total)
    finally:
        dom.destroy()
        dom.undefine()
        hv.stop()

    def summary(xs):
        return {'median_s': round(statistics.median(xs), 3),
                'max_s': round(max(xs), 3), 'n': len(xs)}

    cpu = platform.processor() or platform.machine()
    return {'machine': '%s, %d CPUs' % (cpu, os.cpu_count()),
            'date': time.strftime('%Y-%m-%d'),
            'flavor_mib': FLAVOR, 'low_mib': LOW,
            'actual': summary(actual_s), 'mem_total': summary(total_s),
            'baseline_meminfo_read': summary(baseline)}


def main(argv=None):
    """Entry point."""
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--resizes', type=int, default=10)
    p.add_argument('--json', action='store_true')
    args = p.parse_args(argv)
    result = measure(args.resizes)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print('%s, %s: %d resizes %d <-> %d MiB' % (
        result['machine'], result['date'], args.resizes, FLAVOR, LOW))
    for key in ('actual', 'mem_total', 'baseline_meminfo_read'):
        r = result[key]
        print('  %-22s median %.3f s  max %.3f s' % (key, r['median_s'],
                                                     r['max_s']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
