"""The vcpu_sizing capability against real libvirt and a real guest agent.

test:/// gives affinities, caps and other domains from libvirt's test
driver (whose domains have no guest agent); the QEMU tests boot a real TCG
Linux guest with qemu-ga and check what ``apply`` did inside it.
"""

import uuid as uuid_mod

import fixtures

from nova_cacheaware.agent import capability
from nova_cacheaware.agent import guest_agent
from nova_cacheaware.agent import reporting
from nova_cacheaware.cmd import agent as agent_cmd
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.vcpu_sizing import agent as vcpu_sizing
from nova_cacheaware.vcpu_sizing import view as vcpu_sizing_view
from tests.fixtures import nova_domains
from tests.functional.agent import base

FOUR = base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))
RECOMMEND = {'cacheaware:vcpu_sizing': 'recommend'}
APPLY = {'cacheaware:vcpu_sizing': 'apply'}


class Bus(reporting.StatePublisher):
    def __init__(self):
        self.sent = []

    def publish(self, state):
        self.sent.append(state)


class SizingMixin:

    def other(self, vcpus, cpuset, quota=None):
        """A running non-Nova domain on ``cpuset`` (it still uses pCPUs)."""
        uuid = str(uuid_mod.uuid4())
        xml = nova_domains.domain_xml('nca-o-%s' % uuid[:8], vcpus,
                                      cpuset=cpuset, uuid=uuid,
                                      kind=self.kind, nova=False,
                                      quota=quota)
        dom = self.hv.connection().defineXML(xml)
        self.addCleanup(self._remove, uuid)
        self.mine.add(uuid)
        dom.create()
        return uuid

    def sizing(self, **kw):
        ga = guest_agent.GuestAgent(self.hv, timeout_s=2)
        kw.setdefault('stable_passes', 1)
        kw.setdefault('hysteresis', 0.0)
        kw.setdefault('apply_when', vcpu_sizing.ALWAYS)
        return vcpu_sizing.VcpuSizing(self.hv, ga, **kw)

    def sizing_metadata(self, uuid):
        xml = vcpu_sizing_view.LibvirtView(self.hv).metadata(uuid)
        return None if xml is None else vcpu_sizing_view.parse_metadata(xml)


class TestDriverTest(SizingMixin, base.AgentTestCase):

    def test_estimates_follow_live_pins_caps_and_other_domains(self):
        vm = self.define(2, pins={0: '0-1', 1: '0-1'}, extra=RECOMMEND)
        conf = agent_cmd.make_conf([])
        (cap,) = capability.load(['vcpu_sizing'], conf, self.hv)
        self.assertIsInstance(cap, vcpu_sizing.VcpuSizing)
        agent = self.agent(FOUR)
        agent.capabilities = (cap,)
        agent.publisher = bus = Bus()

        def estimate():
            one = agent.reconcile()
            return one.capabilities['vcpu_sizing']

        self.assertEqual(2.0, estimate()['vms'][vm]['available_pcpus'])
        # Another domain on the same two pCPUs halves it.
        other = self.other(2, '0-1')
        report = estimate()
        self.assertEqual(1.0, report['vms'][vm]['available_pcpus'])
        self.assertEqual([other], report['others'])
        # A capped domain there too: it takes 2 x 0.25, A shares the rest.
        capped = self.other(2, '0-1', quota=25000)
        report = estimate()
        self.assertEqual({'0': 0.25, '1': 0.25},
                         report['affinity']['vms'][capped]['caps'])
        self.assertEqual(0.75, report['vms'][vm]['available_pcpus'])
        self.assertEqual(1, report['vms'][vm]['recommended_vcpus'])
        # Live pins count, not the definition: move the other away.
        self.hv.pin_vcpu(other, 0, (4, 5))
        self.hv.pin_vcpu(other, 1, (4, 5))
        report = estimate()
        self.assertEqual(1.5, report['vms'][vm]['available_pcpus'])
        self.assertEqual(2, report['vms'][vm]['recommended_vcpus'])
        # test:/// has no guest agent: reported, nothing else changes.
        self.assertEqual('not answering', report['vms'][vm]['guest_agent'])
        self.assertEqual('recommend', self.sizing_metadata(vm)[0])
        # Published for the scheduler: the affinity document and estimate.
        published = bus.sent[-1].sections['vcpu_sizing']
        self.assertEqual(pcpu_est.EstimateRequest.from_dict(
            report['affinity']), published.affinity)
        self.assertEqual({vm, other, capped}, set(published.affinity.vms))
        self.assertEqual(1.5, published.vms[vm].pcpu_estimate)
        self.assertTrue(any('vcpu_sizing' in line for line in
                            cap.format_report(report)))


class RealGuestTest(SizingMixin, base.QemuTestCase):

    def test_apply_sizes_the_guest_and_release_restores(self):
        logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        vm = self.define_linux(vcpus=4, memory_mib=256, cpuset='0-1',
                               extra=APPLY)
        ga = guest_agent.GuestAgent(self.hv, timeout_s=5)
        self.assertTrue(ga.wait(vm, 120), 'guest agent never answered')
        cap = self.sizing()
        agent = self.agent(FOUR)
        agent.capabilities = (cap,)

        def run():
            return agent.reconcile().capabilities['vcpu_sizing']['vms'][vm]

        # Alone on 2 pCPUs: 2.0 -> vCPUs 2 and 3 go offline.
        entry = run()
        self.assertEqual((2.0, 2), (entry['available_pcpus'],
                                    entry['online']))
        self.assertEqual({0, 1}, set(ga.vcpus(vm)[1]))
        self.assertEqual(('apply', frozenset({2, 3})),
                         self.sizing_metadata(vm))
        code, out, _ = ga.exec(vm, '/bin/cat', ['/run/cacheaware/pcpus'])
        self.assertEqual((0, '2\navailable_pcpus 2.000\nmode apply\n'),
                         (code, out))
        code, out, _ = ga.exec(vm, '/usr/sbin/cacheaware-pcpus', [])
        self.assertEqual((0, '2\n'), (code, out))
        # A second domain with 4 vCPUs pinned onto the same pCPUs: 1.0.
        other = self.other(4, '0-1')
        entry = run()
        self.assertEqual((1.0, 1), (entry['available_pcpus'],
                                    entry['online']))
        self.assertEqual({0}, set(ga.vcpus(vm)[1]))
        # Its CPU cap, set live, is read back: 4 x 0.1 leaves 1.6 -> 2.
        self.hv.connection().lookupByUUIDString(other).setSchedulerParameters(
            {'vcpu_quota': 10000, 'vcpu_period': 100000})
        entry = run()
        self.assertEqual((1.6, 2), (entry['available_pcpus'],
                                    entry['online']))
        self.assertEqual({0, 1}, set(ga.vcpus(vm)[1]))
        # The agent stops: every vCPU online again, the record gone.
        agent.release_capabilities()
        self.assertEqual({0, 1, 2, 3}, set(ga.vcpus(vm)[1]))
        self.assertEqual(frozenset(), self.sizing_metadata(vm)[1]
                         if self.sizing_metadata(vm) else frozenset())
        self.assertIn('onlined vCPUs 2-3 again (agent stopping)',
                      logs.output)

    def test_guest_agent_not_answering_changes_nothing_then_restores(self):
        logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        vm = self.define_linux(vcpus=2, memory_mib=256, cpuset='0',
                               extra=APPLY)
        ga = guest_agent.GuestAgent(self.hv, timeout_s=5)
        self.assertTrue(ga.wait(vm, 120), 'guest agent never answered')
        cap = self.sizing()
        agent = self.agent(FOUR)
        agent.capabilities = (cap,)

        def run():
            return agent.reconcile().capabilities['vcpu_sizing']['vms'][vm]

        self.assertEqual(1, run()['online'])
        self.assertEqual({0}, set(ga.vcpus(vm)[1]))
        # The guest stops answering (paused): nothing changes, it is said.
        dom = self.hv.connection().lookupByUUIDString(vm)
        dom.suspend()
        for _ in range(2):
            entry = run()
            self.assertEqual('not answering', entry['guest_agent'])
            self.assertEqual('1', entry['offlined'])
        self.assertEqual(1, logs.output.count('stay offline until it'))
        # It answers again: the first pass gives the vCPU back.
        dom.resume()
        self.assertTrue(ga.wait(vm, 30))
        entry = run()
        self.assertEqual('restored (guest agent is back)', entry['action'])
        self.assertEqual({0, 1}, set(ga.vcpus(vm)[1]))
