"""The ``balloon`` capability against real Linux guests on QEMU TCG.

The guest helper runs through the QEMU guest agent; page-cache misses come
from reading a loop device (a sparse file in the guest's tmpfs): its reads
are block I/O, so they count in ``read_bytes``, while reads of files in the
initramfs never do (hits).
"""

import time

from nova_cacheaware.agent import guest_agent
from nova_cacheaware.balloon import agent as balloon
from nova_cacheaware.balloon import model as balloon_model
from nova_cacheaware.balloon import view as balloon_view
from tests.functional.agent import base

HIT = {'cacheaware:memory_policy': 'hit_ratio'}
DSET = base.domain_set((0, 1))

# Streams a 1-GiB loop device: every read is a miss in a 320-MiB guest.
MISSES = ('insmod /mods/loop.ko; truncate -s 1G /run/disk; '
          'losetup /dev/loop0 /run/disk; '
          'while :; do dd if=/dev/loop0 of=/dev/null bs=1M 2>/dev/null; done')
# Re-reads a file of the initramfs: every read is a hit.
HITS = 'while :; do cat /bin/busybox >/dev/null; sleep 0.2; done'

# A guest helper that lies, a different way each run: 0 % with a big cache
# (it looks like it needs all it can get), NaN, then counters going back.
LIAR = r'''#!/bin/sh
n=$(cat /run/n 2>/dev/null || echo 0); echo $((n + 1)) > /run/n
sleep "$1"
up=$(cut -d. -f1 /proc/uptime)
tot=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
pg=$((n * 1000))
case $((n % 3)) in
0) ratio=; r=102400; f=102400; cache=$((tot / 2)) ;;
1) ratio='"hit_ratio": NaN, '; r=1; f=0; cache=0 ;;
2) ratio=; r=102400; f=102400; cache=0; up=1; pg=0 ;;
esac
printf '{"v": 1, %s"interval_s": %s, "uptime_s": %s, ' "$ratio" "$1" "$up"
printf '"read_kib": %s, "fetched_kib": %s, "pgpgin_kib": %s, ' $r $f $pg
printf '"mem_total_kib": %s, "mem_free_kib": 0, "cached_kib": %s, ' $tot $cache
printf '"buffers_kib": 0, "committed_as_kib": 1000}\n'
'''
HONEST = '#!/bin/sh\nexec /usr/sbin/cacheaware-guest-stats "$@"\n'


class BalloonQemuTest(base.QemuTestCase):

    def setUp(self):
        super().setUp()
        self.ga = guest_agent.GuestAgent(self.hv, timeout_s=5)

    def guests(self, *specs):
        """Start guests ``(flavor_mib, current_mib, extra)``; wait for them."""
        uuids = [self.define_linux(vcpus=1, memory_mib=f, current_mib=c,
                                   extra=dict(HIT, **e))
                 for f, c, e in specs]
        for uuid in uuids:
            self.assertTrue(self.ga.wait(uuid, 60), 'no guest agent')
        return uuids

    def capability(self, pool_mib,
                   helper_path='/usr/sbin/cacheaware-guest-stats'):
        params = balloon_model.RoundParams(pool_mib=pool_mib, margin_mib=32,
                                           max_step_mib=256)
        return balloon.BalloonCapability(
            params, balloon_view.LibvirtMemory(self.hv),
            balloon_view.GuestHelper(self.ga, helper_path, 1),
            floor_mib=128, interval_s=2.0)

    def actual_mib(self, uuid):
        return self.dom(uuid).memoryStats()['actual'] // 1024

    def mem_total_kib(self, uuid):
        _, out, _ = self.ga.exec(uuid, '/bin/grep', ['MemTotal',
                                                     '/proc/meminfo'])
        return int(out.split()[1])

    def run_until(self, agent, cap, done, timeout_s, check=None):
        """Agent passes every 0.5 s until ``done()``; the reports."""
        reports = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            report = cap.reconcile(agent.observe())
            if 'round' in report and 'next_round_in_s' not in report:
                reports.append(report)
            if check:
                check()
            if done():
                return reports
            time.sleep(0.5)
        self.fail('not done in %ss; last reports: %s' % (timeout_s,
                                                         reports[-2:]))

    def test_low_ratio_grows_full_ratio_shrinks_and_the_guest_agrees(self):
        low, full = self.guests((320, 224, {}), (320, 320, {}))
        offset = {u: self.actual_mib(u) * 1024 - self.mem_total_kib(u)
                  for u in (low, full)}
        self.ga.exec_start(low, '/bin/sh', ['-c', MISSES])
        self.ga.exec_start(full, '/bin/sh', ['-c', HITS])
        agent = self.agent(DSET)
        cap = self.capability(pool_mib=96)
        reports = self.run_until(
            agent, cap, lambda: (self.actual_mib(low) == 320
                                 and self.actual_mib(full) == 224),
            # TCG guests on a loaded 2-core machine report late.
            90)
        ratios = [r['vms'][u]['hit_ratio'] for r in reports
                  for u in (low,) if r['vms'][u]['status'] == 'ok']
        self.assertLess(max(ratios), 0.1)
        ok_full = [r['vms'][full]['hit_ratio'] for r in reports
                   if r['vms'][full]['status'] == 'ok']
        self.assertEqual(1.0, min(ok_full))
        # The guest sees the new size: MemTotal moved with `actual` (its
        # balloon driver hands pages back in steps: slow on loaded TCG).
        for uuid in (low, full):
            want = self.actual_mib(uuid) * 1024 - offset[uuid]
            deadline = time.monotonic() + 30
            while (self.mem_total_kib(uuid) != want
                   and time.monotonic() < deadline):
                time.sleep(0.2)
            self.assertEqual(want, self.mem_total_kib(uuid))
        cap.release()
        deadline = time.monotonic() + 30
        while self.actual_mib(full) != 320 and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(320, self.actual_mib(full))

    def test_lying_guest_gets_at_most_its_flavor_and_others_keep_floor(self):
        liar, victim = self.guests(
            (320, 224, {}),
            (320, 320, {'cacheaware:memory_min_mb': '256'}))
        self.ga.write_file(liar, '/run/helper', LIAR)
        self.ga.write_file(victim, '/run/helper', HONEST)
        for uuid in (liar, victim):
            self.ga.exec(uuid, '/bin/chmod', ['755', '/run/helper'])
        agent = self.agent(DSET)
        cap = self.capability(pool_mib=96, helper_path='/run/helper')

        def check():
            self.assertLessEqual(self.actual_mib(liar), 320)
            self.assertGreaterEqual(self.actual_mib(victim), 256)

        reports = self.run_until(agent, cap, lambda: cap.rounds >= 9, 40,
                                 check)
        statuses = [r['vms'][liar]['status'] for r in reports]
        self.assertIn('invalid', statuses)
        self.assertIn('ok', statuses)
        # The 0 % lie worked as far as it may: the victim's idle memory
        # down to its floor, never more than the liar's flavor RAM.
        self.assertEqual(256, self.actual_mib(victim))
        self.assertEqual(288, self.actual_mib(liar))
