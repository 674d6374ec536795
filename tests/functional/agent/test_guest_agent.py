"""The guest-agent adapter against a real Linux guest on QEMU TCG."""

import uuid as uuid_mod

from nova_cacheaware.agent import guest_agent
from nova_cacheaware.agent import hypervisor
from tests.functional.agent import base


class GuestAgentTest(base.QemuTestCase):
    """A guest with two guest NUMA nodes and the guest agent."""

    def test_vcpus_exec_and_files(self):
        uuid = self.define_linux(vcpus=4, memory_mib=320,
                                 numa=[('0-1', 160), ('2-3', 160)])
        ga = guest_agent.GuestAgent(self.hv, timeout_s=5)
        self.assertTrue(ga.wait(uuid, 120), 'guest agent never answered')

        every, online, offlinable = ga.vcpus(uuid)
        self.assertEqual({0, 1, 2, 3}, set(every))
        self.assertEqual({0, 1, 2, 3}, set(online))
        self.assertEqual({1, 2, 3}, set(offlinable))   # never vCPU 0
        ga.set_vcpus(uuid, [2, 3], online=False)
        self.assertEqual({0, 1}, set(ga.vcpus(uuid)[1]))
        ga.set_vcpus(uuid, [3], online=True)
        self.assertEqual({0, 1, 3}, set(ga.vcpus(uuid)[1]))

        ga.write_file(uuid, '/run/cacheaware-test', '2.5\n')
        code, out, err = ga.exec(uuid, '/bin/cat', ['/run/cacheaware-test'])
        self.assertEqual((0, '2.5\n', ''), (code, out, err))
        code, out, _ = ga.exec(uuid, '/bin/sh', ['-c', 'exit 3'])
        self.assertEqual((3, ''), (code, out))
        # Two guest NUMA nodes, as the domain said.
        code, out, _ = ga.exec(uuid, '/bin/ls', ['/sys/devices/system/node'])
        self.assertEqual(['node0', 'node1'],
                         sorted(w for w in out.split() if w.startswith('n')))

    def test_no_guest_agent_is_unavailable_not_a_crash(self):
        uuid = self.define(1, cpuset='0-1')      # SeaBIOS only, no agent
        ga = guest_agent.GuestAgent(self.hv, timeout_s=1)
        self.assertFalse(ga.ping(uuid))
        self.assertRaises(guest_agent.GuestAgentUnavailable, ga.vcpus, uuid)
        self.assertRaises(guest_agent.GuestAgentUnavailable, ga.set_vcpus,
                          uuid, [0], True)
        self.assertRaises(hypervisor.DomainGone, ga.vcpus,
                          str(uuid_mod.uuid4()))
