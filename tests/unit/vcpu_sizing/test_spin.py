"""vcpu_sizing's kvm:kvm_exit counter, on a fake tracefs."""

import os

import fixtures
import testtools

from nova_cacheaware.agent import counters
from nova_cacheaware.vcpu_sizing import spin as vcpu_spin


class KvmExitCounterTest(testtools.TestCase):

    def tracefs(self, cpu_flag='vmx'):
        root = self.useFixture(fixtures.TempDir()).path
        os.makedirs(os.path.join(root, 'events', 'kvm', 'kvm_exit'))
        with open(os.path.join(root, 'events', 'kvm', 'kvm_exit',
                               'id'), 'w') as f:
            f.write('1234\n')
        cpuinfo = os.path.join(root, 'cpuinfo')
        with open(cpuinfo, 'w') as f:
            f.write('processor : 0\nflags : fpu %s sse\n' % cpu_flag)
        return root, cpuinfo

    def test_no_tracefs_switches_off_once(self):
        logs = self.useFixture(fixtures.FakeLogger())
        c = vcpu_spin.KvmExitCounter(roots=('/nonexistent/tracing',))
        self.assertFalse(c.available())
        self.assertEqual({}, c.sample({'a/0': 1}))
        self.assertIn('no kvm:kvm_exit tracepoint', c.unsupported)
        self.assertEqual(1, logs.output.count('KVM exits are not counted'))

    def test_counts_all_and_pause_exits_with_a_filter(self):
        root, cpuinfo = self.tracefs('vmx')
        opened, filters = [], []

        def opener(attr, tid):
            opened.append((attr.type, attr.config, tid))
            return os.open(os.devnull, os.O_RDONLY)

        c = vcpu_spin.KvmExitCounter(
            roots=(root,), opener=opener, reader=lambda fd: 7,
            set_filter=lambda fd, text: filters.append(text),
            cpuinfo=cpuinfo)
        self.assertEqual({'a/0': {'exits': 7, 'pause_exits': 7}},
                         c.sample({'a/0': 42}))
        self.assertEqual([(vcpu_spin.PERF_TYPE_TRACEPOINT, 1234, 42)] * 2,
                         opened)
        self.assertEqual(['exit_reason == 40'], filters)
        c.sample({'a/0': 42})
        self.assertEqual(2, len(opened))           # fds kept open
        c.sample({})
        self.assertEqual({}, c._fds)               # closed when gone

    def test_refused_filter_counts_all_exits_only(self):
        root, cpuinfo = self.tracefs('svm')

        def refuse(fd, text):
            self.assertEqual('exit_reason == 119', text)
            raise OSError(22, 'Invalid argument')

        c = vcpu_spin.KvmExitCounter(
            roots=(root,),
            opener=lambda attr, tid: os.open(os.devnull, os.O_RDONLY),
            reader=lambda fd: 3, set_filter=refuse, cpuinfo=cpuinfo)
        self.assertEqual({'a/0': {'exits': 3}}, c.sample({'a/0': 1}))
        self.assertEqual({'a/0': {'exits': 3}}, c.sample({'a/0': 1}))
        c.close()

    def test_no_permission_switches_off(self):
        root, cpuinfo = self.tracefs('none')

        def opener(attr, tid):
            raise counters.PerfUnsupported(2, 'No such file or directory')

        c = vcpu_spin.KvmExitCounter(roots=(root,), opener=opener,
                                     cpuinfo=cpuinfo)
        self.assertEqual({}, c.sample({'a/0': 1}))
        self.assertFalse(c.available())
