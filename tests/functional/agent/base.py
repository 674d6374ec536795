"""Agent functional tests: real libvirt (test:/// driver or libvirtd+QEMU)."""

import os
import uuid as uuid_mod

import fixtures
from oslo_config import cfg

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import hypervisor
from nova_cacheaware.agent import service
from nova_cacheaware.agent import specs
from nova_cacheaware.cachedomain import agent as repin_agent
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.topology import domains
from tests.fixtures import linux_guest
from tests.fixtures import nova_domains
from tests.functional import base

MEMORY = {'cacheaware:workload': 'memory'}
CPU = {'cacheaware:workload': 'cpu'}


def domain_set(*groups):
    """A DomainSet of L2 clusters over the given CPU groups."""
    return domains.DomainSet(level=2, fallback=False, domains=tuple(
        domains.CacheDomain('L2-%d' % i, 2, tuple(cpus), 2048, (0,))
        for i, cpus in enumerate(groups)))


class AgentTestCase(base.FunctionalTestCase):
    """Defines Nova-like domains; the agent sees only this test's ones."""

    uri = 'test:///default'
    kind = 'test'

    def setUp(self):
        super().setUp()
        # The agent's main() parses the global CONF for its privsep
        # daemon (privsep.init) with this test's config file: forget it
        # after the test, as a new process would.
        self.addCleanup(cfg.CONF.reset)
        self.mine = set()
        self.specs = {}
        self.hv = self.make_hypervisor()

    def make_hypervisor(self):
        h = hypervisor.LibvirtHypervisor(self.uri,
                                         domain_filter=self.mine.__contains__)
        self.addCleanup(h.stop)
        return h

    def define(self, vcpus, cpuset=None, pins=None, workload=None,
               extra=None, start=True):
        """Define (and start) a domain; returns its uuid."""
        uuid = str(uuid_mod.uuid4())
        name = 'nca-%s' % uuid[:8]
        xml = nova_domains.domain_xml(name, vcpus, cpuset=cpuset, pins=pins,
                                      uuid=uuid, kind=self.kind)
        self._define_mine(uuid, xml, workload, extra, start)
        return uuid

    def _define_mine(self, uuid, xml, workload, extra, start=True):
        # Define (and start) a domain this test owns, with its specs.
        # Through call(): an agent started in another thread may replace
        # the shared connection meanwhile.
        self.hv.call(lambda conn: conn.defineXML(xml))
        self.addCleanup(self._remove, uuid)
        spec = dict(extra or {})
        if workload:
            spec['cacheaware:workload'] = workload
        self.specs[uuid] = spec
        self.mine.add(uuid)
        if start:
            self.hv.call(lambda conn: conn.lookupByUUIDString(uuid).create())

    def _remove(self, uuid):
        import libvirt
        try:
            dom = self.hv.connection().lookupByUUIDString(uuid)
        except libvirt.libvirtError:
            return
        try:
            if dom.isActive():
                dom.destroy()
        except libvirt.libvirtError:
            pass
        try:
            dom.undefine()
        except libvirt.libvirtError:
            pass

    def pin_as_agent(self, uuid, vcpu, cpus):
        """Pin as an earlier agent pass did: metadata first, then the pin."""
        self.hv.record_pins(uuid, '<pins><vcpu id="%d" nova_cpuset=""/>'
                                  '</pins>' % vcpu)
        self.hv.pin_vcpu(uuid, vcpu, cpus)

    def dom(self, uuid):
        return self.hv.connection().lookupByUUIDString(uuid)

    def live_pins(self, uuid):
        """``{vcpu: cpus}`` as libvirt reports the live pinning.

        Through the adapter's ``call``: an agent running in another thread
        may replace the shared connection (its event subscription).
        """
        import libvirt
        flags = 0 if self.kind == 'test' else libvirt.VIR_DOMAIN_AFFECT_LIVE

        def read(conn):
            dom = conn.lookupByUUIDString(uuid)
            return {v: tuple(i for i, on in enumerate(m) if on)
                    for v, m in enumerate(dom.vcpuPinInfo(flags))}
        return self.hv.call(read)

    def agent(self, dset, hv=None, limit=None, dry_run=False, usable=None):
        hv = hv or self.hv
        act = actuator.Actuator(hv, actuator.RateLimiter(limit, 60.0),
                                dry_run=dry_run)
        return service.Agent(hv, dset,
                             repin_agent.RepinStep(repinning.Planner(), act),
                             spec_source=specs.StaticSpecSource(self.specs),
                             usable_cpus=usable)


class QemuTestCase(AgentTestCase):
    """Against the real libvirtd + QEMU (TCG) of qemu:///system."""

    uri = 'qemu:///system'
    kind = 'qemu'
    socket = '/run/libvirt/libvirt-sock'

    def setUp(self):
        self.require_qemu()
        super().setUp()

    def require_qemu(self):
        ok = (os.path.exists(self.socket) and os.path.exists(
            '/usr/bin/qemu-system-x86_64') and os.cpu_count() >= 2)
        self.require(ok, 'libvirtd with QEMU and two CPUs (qemu:///system)')

    def define_linux(self, vcpus=2, memory_mib=256, workload=None,
                     extra=None, **kw):
        """Define and start a real Linux guest (see linux_guest)."""
        uuid = str(uuid_mod.uuid4())
        log_dir = self.useFixture(fixtures.TempDir()).path
        os.chmod(log_dir, 0o755)
        self.serial_logs = getattr(self, 'serial_logs', {})
        self.serial_logs[uuid] = os.path.join(log_dir, 'serial.log')
        xml = linux_guest.domain_xml(
            'nca-%s' % uuid[:8], uuid, vcpus, memory_mib,
            self.serial_logs[uuid], **kw)
        self._define_mine(uuid, xml, workload, extra)
        return uuid
