"""Full-NUMA hand-off latency on two real Linux guests (QEMU TCG).

Two guests with two guest NUMA nodes each (the test image of
tests/fixtures/linux_guest.py), booted in parallel on qemu:///system. The
host "nodes" are CPU 0 and CPU 1 (this benchmark needs only two CPUs).

Measured, ``--repeat`` times each, against study 003's figures (CPU
1.27-1.38 s, 400 MiB of memory 0.2-0.96 s):

* ``cpu move``: one CPU handed over, exactly the capability's four steps:
  offline the vCPU in the giver (guest agent), pin it, pin the taker's vCPU,
  online it in the taker (guest agent).
* ``cpu pass``: a whole ``numa_balance`` pass in which a VM joins (takes its
  floor CPU from the other) or leaves (the other takes the CPU back); it
  includes reading the XML, the statistics and the guest's vCPUs.
* ``virtio-mem 400 MiB``: ``<requested>`` 400 -> 0 on the giver and
  0 -> 400 on the taker, until both devices' plugged size (QMP ``qom-get
  size``) is there; and, apart, until libvirt's ``<current>`` shows it
  (QEMU throttles the size-change event libvirt listens to, 1 per second).
* ``balloon 400 MiB``: balloon target -400 MiB on the giver, +400 on the
  taker, until both balloons are there (QMP ``query-balloon``); and, apart,
  until libvirt's ``actual`` (``memoryStats``) shows it.

Usage: python benchmarks/numa_handoff.py [--repeat 5] [--json]
"""

import argparse
import concurrent.futures
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid as uuid_mod
import xml.etree.ElementTree as ET

import libvirt
import libvirt_qemu

from nova_cacheaware.agent import guest_agent
from nova_cacheaware.agent import hypervisor
from nova_cacheaware.agent import service
from nova_cacheaware.agent import specs
from nova_cacheaware.cachedomain import agent as repin_agent
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.numa_balance import agent as numa_balance
from nova_cacheaware.numa_balance import model
from nova_cacheaware.numa_balance import shapes as numa_shapes
from nova_cacheaware.topology import domains
from tests.fixtures import linux_guest

HOST = {0: (0,), 1: (1,)}
STUDY = {'cpu': (1.27, 1.38), 'memory': (0.2, 0.96)}


def boot(conn, tmp, name, cells, current_mib):
    uuid = str(uuid_mod.uuid4())
    log = os.path.join(tmp, '%s.log' % name)
    xml = linux_guest.domain_xml(
        'nca-bench-%s' % name, uuid, 4, sum(m for _, m in cells), log,
        numa=cells, current_mib=current_mib,
        virtio_mem=[(0, 512), (1, 512)])
    dom = conn.defineXML(xml)
    dom.create()
    return uuid


def wait(predicate, timeout_s=60, poll_s=0.005):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError('timed out')
        time.sleep(poll_s)


def summary(values):
    return {'median_s': round(statistics.median(values), 3),
            'min_s': round(min(values), 3), 'max_s': round(max(values), 3),
            'n': len(values)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args(argv)

    hv = hypervisor.LibvirtHypervisor('qemu:///system')
    conn = hv.connection()
    ga = guest_agent.GuestAgent(hv, timeout_s=5)
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    # a starts ballooned down to 320 of 720 MiB so it can grow by 400.
    a = boot(conn, tmp, 'a', [('0-1', 360), ('2-3', 360)], 320)
    b = boot(conn, tmp, 'b', [('2-3', 360), ('0-1', 360)], 720)
    uuids = (a, b)
    results = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            if not all(pool.map(lambda u: ga.wait(u, 180), uuids)):
                raise RuntimeError('guest agent never answered')
        spec = {a: {'cacheaware:numa': 'full'}, b: {}}
        agent = service.Agent(hv, domains.DomainSet(
            level=2, fallback=False, domains=(
                domains.CacheDomain('L2-0', 2, (0,), 2048, (0,)),
                domains.CacheDomain('L2-1', 2, (1,), 2048, (0,)))),
            repin_agent.RepinStep(repinning.Planner(), None),
            spec_source=specs.StaticSpecSource(spec))
        cap = numa_balance.NumaBalance(
            hv, HOST, model.Thresholds(per_node_floor=False),
            guest_agent=ga)

        # -- cpu pass: b joins (a gives CPU 1) / leaves (a takes it) --
        cap.reconcile(agent.observe())
        joins, leaves = [], []
        for _ in range(args.repeat):
            spec[b]['cacheaware:numa'] = 'full'
            t0 = time.monotonic()
            report = cap.reconcile(agent.observe())
            assert report['vms'][b]['cpus'] == {'0': [], '1': [1]}, report
            joins.append(time.monotonic() - t0)
            spec[b].pop('cacheaware:numa')
            t0 = time.monotonic()
            report = cap.reconcile(agent.observe())
            assert report['vms'][a]['cpus'] == {'0': [0], '1': [1]}, report
            leaves.append(time.monotonic() - t0)
        results['cpu pass, b joins'] = summary(joins)
        results['cpu pass, b leaves'] = summary(leaves)
        cap.release()

        # -- cpu move: host CPU 1 from a's vCPU 2 to b's vCPU 0 and back --
        for u in uuids:
            for v in range(4):
                hv.pin_vcpu(u, v, (0,))
        ga.set_vcpus(a, [1, 3], online=False)
        ga.set_vcpus(b, [1, 2, 3], online=False)
        hv.pin_vcpu(a, 2, (1,))
        moves = []
        for i in range(2 * args.repeat):
            giver, taker, gv, tv = ((a, b, 2, 1) if i % 2 == 0
                                    else (b, a, 1, 2))
            t0 = time.monotonic()
            ga.set_vcpus(giver, [gv], online=False)
            hv.pin_vcpu(giver, gv, (0,))
            hv.pin_vcpu(taker, tv, (1,))
            ga.set_vcpus(taker, [tv], online=True)
            moves.append(time.monotonic() - t0)
        results['cpu move (offline, pin, pin, online)'] = summary(moves)

        # -- 400 MiB through virtio-mem, on node 0 --
        def device(u, node=0):
            return numa_shapes.parse_guest(
                hv.lookup(conn, u).XMLDesc(0)).virtio_mem[node]

        def qmp(u, cmd, arguments=None):
            msg = {'execute': cmd}
            if arguments:
                msg['arguments'] = arguments
            return json.loads(libvirt_qemu.qemuMonitorCommand(
                hv.lookup(conn, u), json.dumps(msg), 0))['return']

        aliases = {}
        for u in uuids:
            xml = hv.lookup(conn, u).XMLDesc(0)
            for dev in ET.fromstring(xml).findall(
                    "devices/memory[@model='virtio-mem']"):
                if dev.findtext('target/node') == '0':
                    aliases[u] = dev.find('alias').get('name')

        def plugged(u):
            return qmp(u, 'qom-get', {
                'path': '/machine/peripheral/%s' % aliases[u],
                'property': 'size'}) // (1024 * 1024)

        cap.set_virtio_mem(b, device(b), 400)
        wait(lambda: device(b).current_mib == 400)
        vmem, vmem_libvirt = [], []
        for i in range(2 * args.repeat):
            giver, taker = (b, a) if i % 2 == 0 else (a, b)
            t0 = time.monotonic()
            cap.set_virtio_mem(giver, device(giver), 0)
            cap.set_virtio_mem(taker, device(taker), 400)
            wait(lambda: (plugged(giver), plugged(taker)) == (0, 400))
            vmem.append(time.monotonic() - t0)
            wait(lambda: (device(giver).current_mib, device(taker)
                          .current_mib) == (0, 400))
            vmem_libvirt.append(time.monotonic() - t0)
        results['virtio-mem 400 MiB'] = summary(vmem)
        results['virtio-mem 400 MiB (libvirt current)'] = summary(
            vmem_libvirt)

        # -- 400 MiB through the balloons --
        def actual(u):
            return hv.lookup(conn, u).memoryStats()['actual'] // 1024

        def balloon_now(u):
            return qmp(u, 'query-balloon')['actual'] // (1024 * 1024)

        # Unplug all virtio-mem first: the balloon covers boot memory only.
        for u in uuids:
            cap.set_virtio_mem(u, device(u), 0)
        wait(lambda: [plugged(u) for u in uuids] == [0, 0])
        target = {a: 320, b: 720}
        balloon, balloon_libvirt = [], []
        for i in range(2 * args.repeat):
            giver, taker = (b, a) if i % 2 == 0 else (a, b)
            wait(lambda: [balloon_now(u) for u in uuids] == [
                target[u] for u in uuids])
            target[giver] -= 400
            target[taker] += 400
            want = (target[giver], target[taker])
            t0 = time.monotonic()
            cap.set_balloon(giver, want[0])
            cap.set_balloon(taker, want[1])
            wait(lambda: (balloon_now(giver), balloon_now(taker)) == want)
            balloon.append(time.monotonic() - t0)
            wait(lambda: (actual(giver), actual(taker)) == want)
            balloon_libvirt.append(time.monotonic() - t0)
        results['balloon 400 MiB'] = summary(balloon)
        results['balloon 400 MiB (libvirt actual)'] = summary(
            balloon_libvirt)
    finally:
        for u in uuids:
            try:
                dom = conn.lookupByUUIDString(u)
                dom.destroy()
                dom.undefine()
            except libvirt.libvirtError:
                pass
        hv.stop()

    doc = {'machine': '%s, %d CPUs, %s' % (
        platform.processor() or platform.machine(), os.cpu_count(),
        platform.platform()), 'date': time.strftime('%Y-%m-%d'),
        'study_s': STUDY, 'results': results}
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    print('%s, %s' % (doc['machine'], doc['date']))
    for name, r in results.items():
        kind = 'memory' if 'MiB' in name else 'cpu'
        lo, hi = STUDY[kind]
        print('%-40s median %.3f s (min %.3f, max %.3f, n=%d); study '
              '%.2f-%.2f s: %.1fx faster' % (
                  name, r['median_s'], r['min_s'], r['max_s'], r['n'], lo,
                  hi, lo / max(r['median_s'], 1e-9)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
