"""The agent against a real libvirtd + QEMU (TCG) on this machine.

Tiny disk-less SeaBIOS guests with Nova's metadata. The machine has two CPUs,
so the cache domains are {0} and {1} and every guest has one vCPU: the pins
still have to reach the real vCPU threads of QEMU.
"""

import os
import re
import shutil
import subprocess
import sys
import uuid as uuid_mod

from nova_cacheaware.cachedomain import repinning
from tests.functional.agent import base
from tests.unit.agent import test_migration_hook

TWO = base.domain_set((0,), (1,))
SOCKET = '/run/libvirt/libvirt-sock'


def allowed_list(tid):
    """``Cpus_allowed_list`` of a thread, read under its process."""
    with open('/proc/%d/status' % tid) as f:
        pid = int(re.search(r'^Tgid:\s*(\d+)', f.read(), re.M).group(1))
    with open('/proc/%d/task/%d/status' % (pid, tid)) as f:
        return re.search(r'^Cpus_allowed_list:\s*(\S+)', f.read(),
                         re.M).group(1)


class QemuAgentTest(base.QemuTestCase):

    def threads(self, uuid):
        return self.hv.vcpu_threads(uuid)

    def test_pins_reach_the_vcpu_threads_and_restart_is_idempotent(self):
        a = self.define(1, cpuset='0-1', workload='memory')
        b = self.define(1, cpuset='0-1', workload='memory')
        c = self.define(1, cpuset='0-1', workload='cpu')
        # c carries an old pin of ours; it is not memory-bound any more.
        self.pin_as_agent(c, 0, (1,))
        self.assertEqual('1', allowed_list(self.threads(c)[0]))

        one = self.agent(TWO).reconcile()
        self.assertEqual([], one.result.failed)
        self.assertEqual(3, one.result.repins)
        got = {d.uuid: d for d in one.decisions}
        self.assertEqual({'0', '1'}, {allowed_list(self.threads(u)[0])
                                      for u in (a, b)})
        self.assertEqual({('L2-0',), ('L2-1',)},
                         {got[u].domains for u in (a, b)})
        self.assertEqual('0-1', allowed_list(self.threads(c)[0]))
        self.assertEqual(1, len(self.live_pins(a)[0]))
        # What libvirt reports and what the kernel enforces agree.
        for u in (a, b, c):
            self.assertEqual(
                ','.join(map(str, self.live_pins(u)[0])).replace('0,1',
                                                                 '0-1'),
                allowed_list(self.threads(u)[0]))

        # A restarted agent: new connection, no memory, zero repins.
        again = self.agent(TWO, hv=self.make_hypervisor()).reconcile()
        self.assertEqual((0, []), (again.result.repins, again.result.failed))
        self.assertEqual(repinning.REPIN, {d.uuid: d for d in
                                           again.decisions}[a].action)
        self.assertEqual({}, {d.uuid: d for d in again.decisions}[a]
                         .changes())

    def test_domain_destroyed_mid_action(self):
        a = self.define(1, cpuset='0-1', workload='memory')
        b = self.define(1, cpuset='0-1', workload='memory')
        agent = self.agent(TWO)
        _, _, decisions = agent.decide(agent.observe())
        self.dom(a).destroy()
        result = agent.repin.actuator.apply(decisions)
        self.assertEqual([a], [f[0] for f in result.failed])
        self.assertEqual([(b, 0)], [s[:2] for s in result.succeeded])
        self.assertEqual(1, len(self.live_pins(b)[0]))
        # The next pass does not see the stopped domain at all.
        self.assertNotIn(a, [d.uuid for d in agent.reconcile().decisions])

    def test_hook_output_starts_where_foreign_pins_would_not(self):
        # A guest pinned by the agent on a bigger source host arrives with
        # <vcpupin cpuset='7'>: this 2-CPU host cannot start it. After the
        # hook it starts, and the agent pins it again (the "migrated" path).
        a = self.define(1, cpuset='0-1', workload='memory')
        self.agent(TWO).reconcile()
        live = self.dom(a).XMLDesc(0)
        self.assertIn('nova_cpuset=""', live)
        new_uuid = str(uuid_mod.uuid4())
        incoming = re.sub(r"<vcpupin vcpu='0' cpuset='\d+'/>",
                          "<vcpupin vcpu='0' cpuset='7'/>", live)
        incoming = re.sub(r'<uuid>[^<]+</uuid>', '<uuid>%s</uuid>'
                          % new_uuid, incoming)
        incoming = re.sub(r'<name>[^<]+</name>', '<name>nca-%s</name>'
                          % new_uuid[:8], incoming)
        incoming = re.sub(r" id='\d+'", '', incoming, count=1)
        self.assertIn("cpuset='7'", incoming)
        import libvirt
        conn = self.hv.connection()
        self.addCleanup(self._remove, new_uuid)
        self.mine.add(new_uuid)
        self.specs[new_uuid] = dict(base.MEMORY)
        self.dom(a).destroy()  # leave room: one guest per 1-CPU domain
        dom = conn.defineXML(incoming)
        self.assertRaises(libvirt.libvirtError, dom.create)
        dom.undefine()

        p = subprocess.run([sys.executable, '-I', test_migration_hook.HOOK,
                            'nca-%s' % new_uuid[:8], 'migrate', 'begin',
                            '-'], input=incoming, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual((0, ''), (p.returncode, p.stderr))
        self.assertNotIn('<vcpupin', p.stdout)
        dom = conn.defineXML(p.stdout)
        dom.create()
        self.assertEqual('0-1', allowed_list(self.threads(new_uuid)[0]))
        one = self.agent(TWO).reconcile()
        self.assertEqual(1, one.result.repins)
        self.assertEqual(1, len(allowed_list(self.threads(new_uuid)[0])))

    def test_reconnects_after_libvirtd_drops_the_client(self):
        # libvirtd ends our connection server-side (virt-admin
        # client-disconnect): what a libvirtd restart looks like to the
        # agent, without restarting the libvirtd other tests share (a real
        # restart: test_private_libvirtd.LibvirtdRestartTest).
        self.require(shutil.which('virt-admin')
                     and os.path.exists('/run/libvirt/libvirt-admin-sock'),
                     'virt-admin and the libvirtd admin socket')
        a = self.define(1, cpuset='0-1', workload='memory')
        agent = self.agent(TWO)
        agent.reconcile()
        old = self.hv.connection()
        self.assertGreater(self._disconnect_my_clients(), 0)
        one = agent.reconcile()
        self.assertIsNot(old, self.hv.connection())
        self.assertEqual([], one.result.failed)
        self.assertEqual([a], [d.uuid for d in one.decisions])

    def _disconnect_my_clients(self):
        out = subprocess.run(['virt-admin', 'srv-clients-list', 'libvirtd'],
                             capture_output=True, text=True,
                             check=True).stdout
        done = 0
        for line in out.splitlines()[2:]:
            if not line.strip():
                continue
            cid = line.split()[0]
            info = subprocess.run(['virt-admin', 'client-info', 'libvirtd',
                                   cid], capture_output=True,
                                  text=True).stdout
            if re.search(r'unix_process_id:\s*%d$' % os.getpid(), info,
                         re.M):
                subprocess.run(['virt-admin', 'client-disconnect',
                                'libvirtd', cid], capture_output=True,
                               check=True)
                done += 1
        return done
