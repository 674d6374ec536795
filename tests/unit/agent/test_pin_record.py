"""The agent's pin records and the hook that applies them at a start.

The hook's ``/proc`` reads run over a directory laid out as ``/proc`` is
(a QEMU process's ``cmdline`` and its threads' ``comm``); the real path is
exercised against QEMU in tests/functional/agent/test_private_libvirtd.py.
"""

import json
import os

import fixtures
import testtools

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import hook_install
from nova_cacheaware.agent import libvirt_hook
from nova_cacheaware.agent import pin_record
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.conf import agent as agent_conf
from tests.unit.agent import test_actuator as ta

UUID = '5c0f0f4e-6a0b-4a3e-9b7f-2f1d2b3c4d5e'


def domain(vcpus=2, cpuset='0-7', pins=None, uuid=UUID):
    tune = ''
    if pins:
        tune = '<cputune>%s</cputune>' % ''.join(
            '<vcpupin vcpu="%d" cpuset="%s"/>' % p for p in pins.items())
    return ('<domain type="qemu"><name>instance-00000001</name>'
            '<uuid>%s</uuid><vcpu placement="static"%s>%d</vcpu>%s'
            '</domain>' % (uuid, ' cpuset="%s"' % cpuset if cpuset else '',
                           vcpus, tune))


class PinRecordsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                'pins')
        self.records = pin_record.PinRecords(self.dir)

    def read(self, uuid=UUID):
        with open(self.records.path(uuid)) as f:
            return json.load(f)

    def test_write_in_the_hooks_format(self):
        self.records.write(UUID, {1: (4, 5, 6, 7), 0: (4, 5, 6, 7)})
        self.assertEqual({'version': 1, 'uuid': UUID,
                          'vcpus': {'0': '4-7', '1': '4-7'}}, self.read())
        self.assertEqual(['%s.json' % UUID], os.listdir(self.dir))

    def test_empty_pins_remove_the_record(self):
        self.records.write(UUID, {0: (1,)})
        self.records.write(UUID, {})
        self.assertEqual([], os.listdir(self.dir))

    def test_an_unchanged_record_is_not_rewritten(self):
        self.records.write(UUID, {0: (1,)})
        os.unlink(self.records.path(UUID))
        self.records.write(UUID, {0: (1,)})
        self.assertEqual([], os.listdir(self.dir))
        self.records.write(UUID, {0: (2,)})
        self.assertEqual({'0': '2'}, self.read()['vcpus'])

    def test_an_unpinned_instance_is_not_removed_at_every_pass(self):
        self.records.write(UUID, {})
        # A file appearing now (by hand) is not this writer's to remove
        # until the pins it knows of change.
        os.makedirs(self.dir, exist_ok=True)
        open(self.records.path(UUID), 'w').close()
        self.records.write(UUID, {})
        self.assertEqual(['%s.json' % UUID], os.listdir(self.dir))
        self.records.prune({UUID})
        self.assertEqual(['%s.json' % UUID], os.listdir(self.dir))
        self.records.prune(set())
        self.assertEqual([], os.listdir(self.dir))

    def test_prune_keeps_only_present_instances(self):
        for uuid in ('a', 'b', 'c'):
            self.records.write(uuid, {0: (1,)})
        self.records.prune({'b'})
        self.assertEqual(['b.json'], os.listdir(self.dir))

    def test_an_unwritable_directory_is_a_warning_not_an_error(self):
        log = self.useFixture(fixtures.FakeLogger())
        blocker = os.path.join(self.useFixture(fixtures.TempDir()).path, 'f')
        open(blocker, 'w').close()
        records = pin_record.PinRecords(os.path.join(blocker, 'pins'))
        records.write(UUID, {0: (1,)})
        self.assertIn('cannot record the pins of %s' % UUID, log.output)
        records.prune(set())


class ActuatorRecordsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.FakeLogger())

    def records(self):
        out = {}
        for name in os.listdir(self.dir):
            with open(os.path.join(self.dir, name)) as f:
                doc = json.load(f)
            out[doc['uuid']] = doc['vcpus']
        return out

    def test_applied_and_live_pins_are_recorded_nova_cpus_are_not(self):
        act = actuator.Actuator(ta.RecordingHypervisor(),
                                pin_records=pin_record.PinRecords(self.dir))
        act.apply([
            # Repinned now.
            ta.decision('a', {0: ta.ALL, 1: ta.ALL},
                        {0: (0, 1), 1: (0, 1)}),
            # Pinned by an earlier pass (or run): nothing to change.
            ta.decision('b', {0: (2, 3)}, {0: (2, 3)}),
            # On Nova's CPUs: no record.
            ta.decision('c', {0: ta.ALL}, {0: ta.ALL})])
        self.assertEqual({'a': {'0': '0-1', '1': '0-1'}, 'b': {'0': '2-3'}},
                         self.records())
        # Restored to Nova's CPUs: the record goes.
        act.apply([ta.decision('a', {0: (0, 1), 1: (0, 1)},
                               {0: ta.ALL, 1: ta.ALL},
                               action=repinning.RESTORE)])
        self.assertEqual({'b': {'0': '2-3'}}, self.records())
        act.forget_others({'a'})
        self.assertEqual({}, self.records())

    def test_dry_run_records_nothing(self):
        act = actuator.Actuator(ta.RecordingHypervisor(), dry_run=True,
                                pin_records=pin_record.PinRecords(self.dir))
        act.apply([ta.decision('a', {0: ta.ALL}, {0: (0, 1)}),
                   ta.decision('b', {0: (2, 3)}, {0: (2, 3)})])
        self.assertEqual({}, self.records())


class RecordedPinsTest(testtools.TestCase):
    """What the hook applies: only what the domain XML allows."""

    def test_table(self):
        record = {'uuid': UUID, 'vcpus': {'0': '4-7', '1': '4-7'}}
        table = [
            ('inside the domain cpuset', domain(), record,
             {0: {4, 5, 6, 7}, 1: {4, 5, 6, 7}}),
            ('no cpuset: anything', domain(cpuset=None), record,
             {0: {4, 5, 6, 7}, 1: {4, 5, 6, 7}}),
            # Stale: Nova now allows 0-5 only (another cpu_shared_set).
            ('outside the cpuset', domain(cpuset='0-5'), record, {}),
            # Nova's own vCPU pin wins over the domain cpuset.
            ('inside Nova vcpupin', domain(pins={0: '4-7', 1: '0-3'}),
             record, {0: {4, 5, 6, 7}}),
            ('fewer vCPUs now (resize)', domain(vcpus=1), record,
             {0: {4, 5, 6, 7}}),
            ('another instance', domain(uuid='other'), record, {}),
            ('no record', domain(), None, {}),
            ('empty set', domain(), {'uuid': UUID, 'vcpus': {'0': ''}}, {}),
        ]
        for name, xml, rec, expected in table:
            self.assertEqual(expected,
                             libvirt_hook.recorded_pins(xml, rec)[1], name)

    def test_cpulists(self):
        self.assertEqual({0, 1, 3, 8, 9},
                         libvirt_hook.parse_cpulist('0-3,8-9,^2'))
        self.assertEqual(set(), libvirt_hook.parse_cpulist(''))


class RestorePinsTest(testtools.TestCase):
    """The hook at ``started``, over a /proc-shaped directory."""

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.proc = os.path.join(root, 'proc')
        self.records = os.path.join(root, 'pins')
        self.calls = []
        # Another process, then QEMU with its main thread and two vCPUs.
        self.process(17, [b'/bin/sh', b'-c', b'true'], {17: 'sh'})
        self.process(4242, [b'/usr/bin/qemu-system-x86_64', b'-name',
                            b'guest=instance-00000001', b'-uuid',
                            UUID.encode()],
                     {4242: 'qemu-system-x86', 4250: 'CPU 0/TCG',
                      4251: 'CPU 1/TCG', 4252: 'worker'})

    def process(self, pid, cmdline, threads):
        base = os.path.join(self.proc, str(pid))
        os.makedirs(os.path.join(base, 'task'))
        with open(os.path.join(base, 'cmdline'), 'wb') as f:
            f.write(b'\0'.join(cmdline) + b'\0')
        for tid, comm in threads.items():
            os.makedirs(os.path.join(base, 'task', str(tid)))
            with open(os.path.join(base, 'task', str(tid), 'comm'),
                      'w') as f:
                f.write(comm + '\n')

    def restore(self, xml):
        return libvirt_hook.restore_pins(
            xml, self.records, self.proc,
            lambda tid, cpus: self.calls.append((tid, set(cpus))))

    def test_recorded_pins_go_to_the_vcpu_threads(self):
        pin_record.PinRecords(self.records).write(
            UUID, {0: (4, 5), 1: (6, 7)})
        self.assertEqual({0: {4, 5}, 1: {6, 7}}, self.restore(domain()))
        self.assertEqual([(4250, {4, 5}), (4251, {6, 7})], self.calls)

    def test_without_a_record_nothing_is_touched(self):
        self.assertEqual({}, self.restore(domain()))
        self.assertEqual([], self.calls)

    def test_a_stale_record_outside_novas_set_is_not_applied(self):
        pin_record.PinRecords(self.records).write(UUID, {0: (6, 7)})
        self.assertEqual({}, self.restore(domain(cpuset='0-5')))
        self.assertEqual([], self.calls)

    def test_main_never_fails_a_start_and_prints_nothing(self):
        out, err = _Buffer(), _Buffer()
        self.assertEqual(0, libvirt_hook.main(
            ['qemu', 'instance-00000001', 'started', 'begin', '-'],
            _Buffer('<not xml'), out, err))
        self.assertEqual('', out.text)
        self.assertIn('no pins restored for instance-00000001', err.text)


class _Buffer(object):
    def __init__(self, text=''):
        self.text = text

    def read(self):
        return self.text

    def write(self, text):
        self.text += text


class InstalledHookTest(testtools.TestCase):

    def test_the_installed_hook_reads_the_configured_directory(self):
        source = hook_install.hook_source('/srv/pins').decode()
        self.assertIn("PIN_RECORD_DIR = '/srv/pins'", source)
        self.assertTrue(hook_install.is_ours(source.encode()))
        self.assertRaises(hook_install.HookInstallError,
                          hook_install.hook_source, 'relative/pins')

    def test_the_agent_and_the_hook_default_to_one_directory(self):
        opt = [o for o in agent_conf.agent_opts
               if o.name == 'pin_record_dir'][0]
        self.assertEqual(hook_install.DEFAULT_PIN_RECORD_DIR, opt.default)
        self.assertEqual(hook_install.DEFAULT_PIN_RECORD_DIR,
                         libvirt_hook.PIN_RECORD_DIR)
