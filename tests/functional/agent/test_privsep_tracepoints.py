"""KVM tracepoints through the REAL privsep daemon (a separate process).

Needs root, as test_privsep_counters.py does. The thread counted is a
``nobody`` child's that runs a tiny KVM guest through ``/dev/kvm`` (the
file descriptor opened here and passed down, as libvirt hands QEMU its
devices): a vCPU thread of another user, as QEMU's are.

Two daemons:

* started as the agent starts it: where tracefs is not mounted (this
  project's CI host) the agent's :class:`~nova_cacheaware.vcpu_sizing.spin.
  KvmExitCounter` asks the daemon, learns that there is no ``kvm:kvm_exit``
  tracepoint, and says so once;
* started by a ``[nova_cacheaware_privileged] helper_command`` that mounts
  tracefs in a mount namespace of the daemon's own (nothing changes for
  the host): the daemon reads the tracepoints' ids, opens them on the
  vCPU thread, sets the filters and reads the counts. ``kvm:kvm_pio``
  fires once per port write of the guest, on every KVM host (also where
  ``kvm:kvm_exit`` does not: a KVM without hardware virtualization, such
  as this project's CI host), so the counts are known exactly.
"""

import os
import shutil
import sys

import fixtures
from oslo_config import cfg

from nova_cacheaware import privsep
from nova_cacheaware.privsep import tracepoint
from nova_cacheaware.vcpu_sizing import spin as vcpu_spin
from tests.functional.agent import test_privsep_counters as counters_test

# A guest of one vCPU in real mode: "out 0x10, al; jmp back", run N times
# on the main thread after a line on stdin; it prints its thread id first
# and "done" after the N exits to its VMM.
KVM_CHILD = '''
import fcntl, mmap, struct, sys, threading, ctypes
kvm = int(sys.argv[1])
vm = fcntl.ioctl(kvm, 0xAE01, 0)                     # KVM_CREATE_VM
mem = mmap.mmap(-1, 0x1000, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
mem[0:4] = bytes.fromhex('e610ebfc')
addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
fcntl.ioctl(vm, 0x4020AE46, struct.pack('=IIQQQ', 0, 0, 0, 0x1000, addr))
vcpu = fcntl.ioctl(vm, 0xAE41, 0)                    # KVM_CREATE_VCPU
size = fcntl.ioctl(kvm, 0xAE04, 0)                   # KVM_GET_VCPU_MMAP_SIZE
run = mmap.mmap(vcpu, size)
sregs = bytearray(0x138)
fcntl.ioctl(vcpu, 0x8138AE83, sregs)                 # KVM_GET_SREGS
struct.pack_into('=QIH', sregs, 0, 0, 0xffff, 0)     # cs: base 0
fcntl.ioctl(vcpu, 0x4138AE84, bytes(sregs))
regs = bytearray(0x90)
struct.pack_into('=QQ', regs, 0x80, 0, 2)            # rip 0, rflags
fcntl.ioctl(vcpu, 0x4090AE82, bytes(regs))           # KVM_SET_REGS
print(threading.get_native_id(), flush=True)
n = int(sys.stdin.readline())
for _ in range(n):
    fcntl.ioctl(vcpu, 0xAE80, 0)                     # KVM_RUN
    assert struct.unpack_from('=I', run, 8)[0] == 2  # KVM_EXIT_IO
print('done', flush=True)
sys.stdin.read()
'''
EXITS = 300
# The daemon in a mount namespace of its own, with tracefs mounted.
TRACEFS_HELPER = (
    "unshare --mount --propagation private sh -c 'mount -t tracefs nodev "
    "/sys/kernel/tracing && exec %s -m oslo_privsep.daemon \"$@\"' "
    "privsep-helper" % sys.executable)


def tracefs_mounted():
    """True when this process sees a mounted tracefs."""
    return any(os.path.exists(os.path.join(root, 'events'))
               for root in tracepoint.TRACEFS_ROOTS)


class KvmTracepointTest(counters_test.DaemonTestCase):

    def setUp(self):
        super().setUp()
        if not os.path.exists('/dev/kvm'):
            self.skipTest('no /dev/kvm here')
        self.kvm = os.open('/dev/kvm', os.O_RDWR)
        self.addCleanup(os.close, self.kvm)
        self.logs = self.useFixture(fixtures.FakeLogger())

    def guest(self):
        """The vCPU thread of a ``nobody`` child: (process, thread id)."""
        child, tid = self.vcpu_thread(
            code=KVM_CHILD.replace('int(sys.argv[1])', str(self.kvm)),
            pass_fds=(self.kvm,))
        return child, tid

    def run_guest(self, child, exits=EXITS):
        child.stdin.write(b'%d\n' % exits)
        child.stdin.flush()
        self.assertEqual(b'done\n', child.stdout.readline())

    def with_tracefs(self):
        """Start this test's daemon in a namespace where tracefs is."""
        if tracefs_mounted():
            return
        if shutil.which('unshare') is None:
            self.skipTest('no tracefs mounted and no unshare(1)')
        cfg.CONF.set_override('helper_command', TRACEFS_HELPER,
                              group=privsep.CFG_SECTION)
        self.addCleanup(cfg.CONF.clear_override, 'helper_command',
                        group=privsep.CFG_SECTION)

    def test_no_tracefs_is_said_once_by_the_daemon(self):
        if tracefs_mounted():
            self.skipTest('tracefs is mounted here')
        _, tid = self.guest()
        counter = vcpu_spin.KvmExitCounter()
        self.addCleanup(counter.close)
        self.assertFalse(counter.available())
        self.assertEqual('no kvm:kvm_exit tracepoint: no events/kvm/kvm_exit '
                         'under /sys/kernel/tracing or /sys/kernel/debug/'
                         'tracing (tracefs not mounted, or what defines the '
                         'tracepoint not loaded)', counter.unsupported)
        self.assertEqual({}, counter.sample({'vm/0': tid}))
        self.assertFalse(counter.available())
        self.assertEqual(1, self.logs.output.count(
            'KVM exits are not counted'))
        # The daemon answered: a process of its own, root with the
        # context's capabilities only, not this one.
        pid = self.daemon_pid()
        self.assertNotEqual(os.getpid(), pid)
        self.assertEqual(set(privsep.perf_capabilities()),
                         _effective_capabilities(pid))

    def test_port_writes_counted_and_filtered_in_the_daemon(self):
        self.with_tracefs()
        child, tid = self.guest()
        handle, dropped = tracepoint.open_group(tid, {
            'pio': ('kvm:kvm_pio', None),
            'port_16': ('kvm:kvm_pio', ('port', 16)),
            'port_17': ('kvm:kvm_pio', ('port', 17)),
            'exits': ('kvm:kvm_exit', None)})
        self.addCleanup(tracepoint.close_groups, [handle])
        self.assertEqual({}, dropped)
        pid = self.daemon_pid()
        self.assertEqual(4, self.perf_fds(pid))
        self.assertEqual(0, self.perf_fds(os.getpid()))
        self.assertEqual(set(privsep.perf_capabilities()),
                         _effective_capabilities(pid))
        before = tracepoint.read_groups([handle])['counts'][handle]
        self.run_guest(child)
        after = tracepoint.read_groups([handle])['counts'][handle]
        moved = {name: after[name] - before[name] for name in after}
        # Every exit to the VMM is a port write: at least as many
        # kvm_exit events where the CPU virtualizes in hardware (timer
        # interrupts exit too), none under a software KVM (no VM exits).
        exits = moved.pop('exits')
        self.assertTrue(exits == 0 or exits >= EXITS, exits)
        self.assertEqual({'pio': EXITS, 'port_16': EXITS, 'port_17': 0},
                         moved)
        self.assertEqual(1, tracepoint.close_groups([handle]))
        self.assertEqual(0, self.perf_fds(pid))

    def test_the_agent_counter_through_the_daemon(self):
        self.with_tracefs()
        child, tid = self.guest()
        counter = vcpu_spin.KvmExitCounter()
        self.addCleanup(counter.close)
        self.assertTrue(counter.available(), counter.unsupported)
        first = counter.sample({'vm/0': tid})
        self.run_guest(child)
        second = counter.sample({'vm/0': tid})
        self.assertEqual(set(counter.events), set(second['vm/0']))
        exits = second['vm/0']['exits'] - first['vm/0']['exits']
        self.assertTrue(exits == 0 or exits >= EXITS, exits)
        self.assertIsNone(counter.unsupported)
        events = len(counter.events)
        self.assertEqual(events, self.perf_fds(self.daemon_pid()))
        counter.sample({})                 # the vCPU is gone
        self.assertEqual(0, self.perf_fds(self.daemon_pid()))
        self.assertEqual(0, self.logs.output.count(
            'KVM exits are not counted'))


def _effective_capabilities(pid):
    with open('/proc/%d/status' % pid) as f:
        eff = [line.split()[1] for line in f if line.startswith('CapEff:')][0]
    return {bit for bit in range(64) if int(eff, 16) >> bit & 1}
