"""The agent against private libvirtds: a real restart, a real migration.

The shared qemu:///system daemon can be neither restarted nor migrated to
(other tests use it, and it is one host), so these tests start their own
daemons with :class:`tests.fixtures.private_libvirtd.PrivateLibvirtd`. The
guests are the tiny disk-less SeaBIOS TCG guests of ``nova_domains``.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import fixtures

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import hypervisor
from nova_cacheaware.agent import pin_record
from tests.fixtures import nova_domains
from tests.fixtures import private_libvirtd
from tests.functional.agent import base
from tests.functional.agent import test_faults
from tests.functional.agent import test_qemu

TWO = test_qemu.TWO
WAIT = 30.0


def wait_for(predicate, what, timeout=WAIT):
    """Poll ``predicate`` until it is true; fail with ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('timed out waiting for %s' % what)
        time.sleep(0.1)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class PrivateLibvirtdTestCase(base.AgentTestCase):
    """An AgentTestCase whose ``uri`` is a private libvirtd of its own."""

    kind = 'qemu'

    def setUp(self):
        self.require(private_libvirtd.available() and os.cpu_count() >= 2,
                     'root, libvirtd, QEMU, unshare/nsenter, cgroup v1 '
                     'cpuset and two CPUs (private libvirtd)')
        # Started before AgentTestCase.setUp opens self.hv on self.uri;
        # fixtures clean up in reverse, so guests go before their daemon.
        self.libvirtd = self.start_libvirtd()
        self.uri = self.libvirtd.uri
        super().setUp()

    def start_libvirtd(self, **kw):
        return self.useFixture(private_libvirtd.PrivateLibvirtd(**kw))


class LibvirtdRestartTest(PrivateLibvirtdTestCase):

    def test_agent_reconnects_and_resubscribes_after_a_restart(self):
        a = self.define(1, cpuset='0-1', workload='memory')
        agent = self.agent(TWO)
        events = []
        on_event = agent.on_event

        def recording(uuid, reason):
            events.append((uuid, reason))
            on_event(uuid, reason)
        agent.on_event = recording
        # A short period: after the restart the agent reconnects at its next
        # pass (the "closed" event arrives while libvirtd is still down).
        thread = threading.Thread(target=agent.run, args=(1.0,),
                                  daemon=True)
        thread.start()
        self.addCleanup(thread.join, WAIT)
        self.addCleanup(agent.stop)

        wait_for(lambda: len(self.live_pins(a)[0]) == 1, 'a pinned')
        before = self.live_pins(a)[0]
        tid = self.hv.vcpu_threads(a)[0]
        qemu = self.libvirtd.guest_pids()
        old_pid = self.libvirtd.libvirtd_pid

        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.agent.outage'))
        killed = time.monotonic()
        self.libvirtd.kill_libvirtd()
        self.assertEqual(qemu, self.libvirtd.guest_pids())  # QEMU lives on
        wait_for(lambda: (None, 'closed') in events, 'the closed event')
        # One WARNING when a pass finds libvirtd gone ...
        wait_for(lambda: 'libvirtd is unreachable' in log.output,
                 'the outage logged')
        detected = time.monotonic() - killed
        started = time.monotonic()
        self.libvirtd.start_libvirtd()
        self.assertNotEqual(old_pid, self.libvirtd.libvirtd_pid)
        # ... and one INFO when a pass works again.
        wait_for(lambda: 'libvirtd recovered after' in log.output,
                 'the recovery logged')
        test_faults.record(
            'libvirtd killed and restarted', agent_period_s=1.0,
            detected_after_s=round(detected, 2),
            recovered_after_restart_s=round(time.monotonic() - started, 2))
        self.assertEqual(1, log.output.count('libvirtd is unreachable'))

        # The same QEMU process and vCPU thread, still pinned, seen through
        # the agent's new connection.
        wait_for(lambda: self.agent_reconnected(agent), 'the reconnect')
        self.assertEqual(qemu, self.libvirtd.guest_pids())
        self.assertEqual({0: tid}, self.hv.vcpu_threads(a))
        self.assertEqual(before, self.live_pins(a)[0])
        self.assertEqual(','.join(map(str, before)),
                         test_qemu.allowed_list(tid))

        # A guest started after the restart: its start event reaches the
        # agent (events re-subscribed on the new connection), which pins
        # it into the other domain.
        b = self.define(1, cpuset='0-1', workload='memory')
        wait_for(lambda: (b, 'started') in events, "b's start event")
        wait_for(lambda: len(self.live_pins(b)[0]) == 1, 'b pinned')
        self.assertEqual({(0,), (1,)}, {self.live_pins(a)[0],
                                        self.live_pins(b)[0]})
        agent.stop()
        thread.join(WAIT)
        self.assertFalse(thread.is_alive())

    def agent_reconnected(self, agent):
        """Whether the agent's connection is open to the new libvirtd."""
        conn = agent.hypervisor._conn
        try:
            return conn is not None and conn.isAlive() and bool(
                agent.hypervisor._callback_ids)
        except Exception:
            return False


class LiveMigrationTest(PrivateLibvirtdTestCase):
    """A guest with the agent's pins migrates to a host that lacks its CPU.

    Both daemons run on this 2-CPU machine; the destination's cpuset cgroup
    holds CPU 0 only, so the agent's pin of the vCPU to CPU 1 cannot be
    applied there: libvirt's sched_setaffinity fails with EINVAL and the
    migration with it, unless the destination runs the hook.
    """

    def migrate(self, uuid, dest):
        import libvirt
        flags = (libvirt.VIR_MIGRATE_LIVE | libvirt.VIR_MIGRATE_PEER2PEER
                 | libvirt.VIR_MIGRATE_PERSIST_DEST
                 | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE)
        # Two daemons on one host: the migration stream goes over an
        # explicit free port on the loopback.
        params = {libvirt.VIR_MIGRATE_PARAM_URI:
                  'tcp://127.0.0.1:%d' % free_port()}
        self.dom(uuid).migrateToURI3(dest.uri, params, flags)

    def installed_hook(self):
        """The hook file as ``nova-cacheaware install-hook`` writes it."""
        etc = self.useFixture(fixtures.TempDir()).path
        out = subprocess.run(
            [sys.executable, '-m', 'nova_cacheaware.cmd.cli', 'install-hook',
             '--hooks-dir', os.path.join(etc, 'hooks')],
            check=True, capture_output=True, text=True).stdout
        return json.loads(out)['path']

    def test_pins_rewritten_on_arrival_and_fail_without_the_hook(self):
        import libvirt
        a = self.define(1, cpuset='0-1', workload='memory')
        self.pin_as_agent(a, 0, (1,))
        self.assertEqual('1', test_qemu.allowed_list(
            self.hv.vcpu_threads(a)[0]))
        plain = self.start_libvirtd(cpus='0')
        hooked = self.start_libvirtd(cpus='0',
                                     hook=self.installed_hook())

        # Without the hook: the migration fails, the guest stays here,
        # running, pinned as before.
        e = self.assertRaises(libvirt.libvirtError, self.migrate, a, plain)
        self.assertIn('cannot set CPU affinity', str(e))
        self.assertTrue(self.dom(a).isActive())
        self.assertEqual({0: (1,)}, self.live_pins(a))
        self.assertEqual([], plain.guest_pids())

        # With the hook: it arrives without the agent's pin and metadata;
        # Nova's cpuset is what libvirt applies, inside the destination's
        # CPUs.
        self.migrate(a, hooked)
        self.assertEqual([], self.hv.connection().listAllDomains())
        conn = libvirt.open(hooked.uri)
        self.addCleanup(conn.close)
        dom = conn.lookupByUUIDString(a)
        self.assertTrue(dom.isActive())
        for flags in (libvirt.VIR_DOMAIN_AFFECT_LIVE,
                      libvirt.VIR_DOMAIN_AFFECT_CONFIG):
            xml = dom.XMLDesc(0 if flags == libvirt.VIR_DOMAIN_AFFECT_LIVE
                              else libvirt.VIR_DOMAIN_XML_INACTIVE)
            self.assertNotIn('<vcpupin', xml)
            self.assertNotIn(domain_xml.AGENT_NS, xml)
            self.assertIn("cpuset='0-1'", xml)
            self.assertEqual([(True, True)], dom.vcpuPinInfo(flags))
        there = hypervisor.LibvirtHypervisor(hooked.uri)
        self.addCleanup(there.stop)
        tid = there.vcpu_threads(a)[0]
        self.assertEqual('0', test_qemu.allowed_list(tid))
        self.assertEqual(1, len(hooked.guest_pids()))


class FixtureTest(base.base.FunctionalTestCase):
    """The fixture stops exactly what it started, also on a failed start."""

    def setUp(self):
        super().setUp()
        self.require(private_libvirtd.available(), 'private libvirtd')

    def test_stops_its_daemons_and_guests_and_removes_its_cgroups(self):
        import libvirt
        shared = self.shared_pids()
        fix = private_libvirtd.PrivateLibvirtd()
        fix.setUp()
        try:
            # A transient guest, left running: the fixture stops it.
            conn = libvirt.open(fix.uri)
            conn.createXML(nova_domains.domain_xml('nca-fixture', 1,
                                                   kind='qemu'))
            conn.close()
            started = ([fix.libvirtd_pid, fix.virtlogd_pid]
                       + fix.guest_pids())
            self.assertEqual(3, len(set(started)))
            cgroups = [os.path.dirname(t) for t in fix.tasks]
        finally:
            fix.cleanUp()
        self.assertEqual([], [p for p in started
                              if os.path.exists('/proc/%d/cmdline' % p)
                              and open('/proc/%d/cmdline' % p).read()])
        self.assertEqual([], [c for c in cgroups if os.path.exists(c)])
        self.assertEqual(shared, self.shared_pids())

    def test_a_failed_start_stops_what_was_started(self):
        seen = {}

        def fail(fix):
            seen['pids'] = [fix.libvirtd_pid, fix.virtlogd_pid]
            seen['cgroups'] = [os.path.dirname(t) for t in fix.tasks]
            raise RuntimeError('libvirtd did not answer')
        fix = private_libvirtd.PrivateLibvirtd()
        self.useFixture(fixtures.MonkeyPatch(
            'tests.fixtures.private_libvirtd.PrivateLibvirtd._wait_socket',
            fail))
        e = self.assertRaises(fixtures.MultipleExceptions, fix.setUp)
        self.assertIs(RuntimeError, e.args[0][0])
        self.assertEqual(2, len([p for p in seen['pids'] if p]))
        self.assertFalse(any(private_libvirtd._alive(p, n) for p, n in
                             zip(seen['pids'], ('libvirtd', 'virtlogd'))))
        self.assertEqual([], [c for c in seen['cgroups']
                              if os.path.exists(c)])

    @staticmethod
    def shared_pids():
        """PIDs of the shared daemon's pid files (left alone)."""
        pids = []
        for name in ('libvirtd', 'virtlogd'):
            path = '/run/%s.pid' % name
            if os.path.exists(path):
                pids.append(private_libvirtd._read_pid(path))
        return pids


class AgentDownRestartTest(PrivateLibvirtdTestCase):
    """A guest started again while the agent is down keeps its domain.

    The daemon runs the hook as ``nova-cacheaware install-hook
    --pin-record-dir`` installs it; the agent records its pins there.
    Nova's hard reboot and stop/start are a destroy and a start of the
    domain from Nova's XML, as here: the agent's live pins are gone.
    """

    def setUp(self):
        self.pins = tempfile.mkdtemp(prefix='nca-pins-')
        self.addCleanup(shutil.rmtree, self.pins, True)
        super().setUp()

    def start_libvirtd(self, **kw):
        etc = self.useFixture(fixtures.TempDir()).path
        out = subprocess.run(
            [sys.executable, '-m', 'nova_cacheaware.cmd.cli', 'install-hook',
             '--hooks-dir', os.path.join(etc, 'hooks'),
             '--pin-record-dir', self.pins],
            check=True, capture_output=True, text=True).stdout
        kw.setdefault('hook', json.loads(out)['path'])
        return super().start_libvirtd(**kw)

    def restart(self, uuid):
        """Nova's hard reboot: the domain destroyed, started again."""
        dom = self.dom(uuid)
        dom.destroy()
        dom.create()
        return test_qemu.allowed_list(self.hv.vcpu_threads(uuid)[0])

    def test_the_hook_puts_the_vcpus_back_on_the_recorded_cpus(self):
        a = self.define(1, cpuset='0-1', workload='memory')
        agent = self.agent(TWO)
        agent.repin.actuator.pin_records = pin_record.PinRecords(self.pins)
        agent.reconcile()
        pinned = self.live_pins(a)[0]
        self.assertEqual(1, len(pinned))
        cpu = str(pinned[0])
        with open(os.path.join(self.pins, a + '.json')) as f:
            self.assertEqual({'0': cpu}, json.load(f)['vcpus'])

        # The agent is down from here on: no pass runs.
        self.assertEqual(cpu, self.restart(a))
        # libvirt's own record is Nova's XML; the agent pins through
        # libvirt again when it is back, to the same CPU.
        self.assertEqual({0: (0, 1)}, self.live_pins(a))
        agent.reconcile()
        self.assertEqual({0: pinned}, self.live_pins(a))
        self.assertEqual(cpu, test_qemu.allowed_list(
            self.hv.vcpu_threads(a)[0]))

        # A stale record (CPUs Nova no longer allows) is not applied: the
        # guest starts on Nova's CPUs, as it would without the hook.
        with open(os.path.join(self.pins, a + '.json'), 'w') as f:
            json.dump(pin_record.to_document(a, {0: (2, 3)}), f)
        self.assertEqual('0-1', self.restart(a))
        # And without a record, Nova's CPUs too.
        os.unlink(os.path.join(self.pins, a + '.json'))
        self.assertEqual('0-1', self.restart(a))
