"""The vcpu_sizing capability's decisions, with doubles for libvirt/guests.

The real libvirt and a real guest agent are in
``tests/functional/agent/test_vcpu_sizing.py``; here are the paths a real
guest cannot be made to take on demand.
"""

import fixtures
import testtools

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import guest_agent as ga_mod
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.agent import reporting
from nova_cacheaware.agent import service
from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.vcpu_sizing import agent as vs
from nova_cacheaware.vcpu_sizing import view as view_mod


def instance(uuid, live):
    nova = domain_xml.NovaDomain(
        uuid=uuid, name=uuid, instance_name=uuid, flavor='f',
        vcpus=len(live), allowed=dict(live), nova_pinned=False,
        dedicated=False)
    return hv.Instance(nova=nova, live=dict(live))


class View:
    """Domains, metadata and KVM stats as a dict."""

    def __init__(self):
        self.others = {}
        self.meta = {}
        self.kvm = None

    def domains(self, instances):
        out = {i.uuid: pcpu_est.VMAffinity(vcpus=dict(i.live))
               for i in instances}
        out.update(self.others)
        return out

    def kvm_stats(self):
        return self.kvm

    def metadata(self, uuid):
        return self.meta.get(uuid)

    def set_metadata(self, uuid, xml):
        if xml is None:
            self.meta.pop(uuid, None)
        else:
            self.meta[uuid] = xml


class Guest:
    """A guest agent: vCPU online state, files, and an off switch."""

    def __init__(self, n):
        self.every = frozenset(range(n))
        self.online = set(self.every)
        self.files = {}
        self.up = True
        self.calls = []

    def _check(self, uuid):
        if not self.up:
            raise ga_mod.GuestAgentUnavailable(uuid=uuid, reason='timeout')

    def vcpus(self, uuid):
        self._check(uuid)
        return self.every, frozenset(self.online), self.every - {0}

    def set_vcpus(self, uuid, vcpus, online):
        self._check(uuid)
        self.calls.append((sorted(vcpus), online))
        if online:
            self.online |= set(vcpus)
        else:
            self.online -= set(vcpus)

    def write_file(self, uuid, path, data):
        self._check(uuid)
        self.files[path] = data


class Guests:
    def __init__(self, **by_uuid):
        self.by_uuid = by_uuid

    def __getattr__(self, name):
        def call(uuid, *args, **kwargs):
            return getattr(self.by_uuid[uuid], name)(uuid, *args, **kwargs)
        return call


def snapshot(instances, specs, delays=None):
    stats = {u: {v: {'time': 0, 'delay': d} for v, d in per.items()}
             for u, per in (delays or {}).items()}
    return service.Snapshot.parsing(
        instances=instances, specs=specs, spec_errors={}, stats=stats,
        counters={}, host_cpus=(0, 1, 2, 3))


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


APPLY = {'cacheaware:vcpu_sizing': 'apply'}


def one_guest_host(test):
    """Give ``test`` a view, a 4-vCPU guest, a clock and its instance."""
    test.view = View()
    test.guest = Guest(4)
    test.clock = Clock()
    test.vm = instance('vm', {v: (0, 1, 2, 3) for v in range(4)})


class VcpuSizingTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        one_guest_host(self)

    def cap(self, **kw):
        kw.setdefault('stable_passes', 1)
        kw.setdefault('apply_when', vs.ALWAYS)
        return vs.VcpuSizing(None, Guests(vm=self.guest), view=self.view,
                             clock=self.clock, **kw)

    def crowd(self, n):
        """Another (non-Nova) domain with ``n`` vCPUs on the 4 pCPUs."""
        self.view.others['other'] = pcpu_est.VMAffinity(
            vcpus={v: (0, 1, 2, 3) for v in range(n)})

    def test_apply_follows_the_estimate_and_restores_on_opt_out(self):
        cap = self.cap()
        self.crowd(4)                    # 8 vCPUs on 4 pCPUs: 2.0 each VM
        report = cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        entry = report['vms']['vm']
        self.assertEqual((2.0, 2, 2, '2-3'), (
            entry['available_pcpus'], entry['recommended_vcpus'],
            entry['online'], entry['offlined']))
        self.assertEqual({0, 1}, self.guest.online)
        self.assertEqual('2\navailable_pcpus 2.000\nmode apply\n',
                         self.guest.files['/run/cacheaware/pcpus'])
        self.assertEqual(['other'], report['others'])
        self.assertEqual(('apply', frozenset({2, 3})),
                         view_mod.parse_metadata(self.view.meta['vm']))
        # The other domain leaves: 4.0 -> all online again.
        del self.view.others['other']
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        self.assertEqual(('apply', frozenset()),
                         view_mod.parse_metadata(self.view.meta['vm']))
        # Crowded again, then the flavor opts out: restored, metadata gone.
        self.crowd(12)                   # 16 vCPUs: 1.0
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0}, self.guest.online)
        report = cap.reconcile(snapshot([self.vm], {}))
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        self.assertEqual('restored (opted out)', report['vms']['vm']['action'])
        self.assertNotIn('vm', self.view.meta)

    def test_apply_to_recommend_restores_and_keeps_recommending(self):
        cap = self.cap()
        self.crowd(12)
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0}, self.guest.online)
        report = cap.reconcile(snapshot(
            [self.vm], {'vm': {'cacheaware:vcpu_sizing': 'recommend'}}))
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        self.assertEqual('restored (opted out)', report['vms']['vm']['action'])
        self.assertEqual(('recommend', frozenset()),
                         view_mod.parse_metadata(self.view.meta['vm']))

    def test_kvm_stats_not_given_up_on_an_empty_host(self):
        cap = self.cap()
        self.view.kvm = {}                  # no domain yet
        cap.reconcile(snapshot([], {}))
        self.view.kvm = {'vm': {'vm.exits': 10}}
        cap.reconcile(snapshot([self.vm], {}))
        self.clock.now += 1
        self.view.kvm = {'vm': {'vm.exits': 30}}
        report = cap.reconcile(snapshot([self.vm], {}))
        self.assertEqual({'vm.exits': 20.0},
                         report['vms']['vm']['kvm_stats_per_s'])

    def test_recommend_never_touches_vcpus(self):
        cap = self.cap()
        self.crowd(12)
        report = cap.reconcile(snapshot(
            [self.vm], {'vm': {'cacheaware:vcpu_sizing': 'recommend'}}))
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        self.assertEqual([], self.guest.calls)
        self.assertEqual(1, report['vms']['vm']['recommended_vcpus'])
        self.assertEqual('1\navailable_pcpus 1.000\nmode recommend\n',
                         self.guest.files['/run/cacheaware/pcpus'])
        # Unchanged: not rewritten until the refresh interval passed.
        self.guest.files.clear()
        report = cap.reconcile(snapshot(
            [self.vm], {'vm': {'cacheaware:vcpu_sizing': 'recommend'}}))
        self.assertEqual('unchanged', report['vms']['vm']['guest_file'])
        self.clock.now += 301
        cap.reconcile(snapshot(
            [self.vm], {'vm': {'cacheaware:vcpu_sizing': 'recommend'}}))
        self.assertIn('/run/cacheaware/pcpus', self.guest.files)

    def test_numa_full_and_off_are_left_alone(self):
        cap = self.cap()
        self.crowd(12)
        report = cap.reconcile(snapshot([self.vm], {'vm': dict(
            APPLY, **{'cacheaware:numa': 'full'})}))
        self.assertEqual([], self.guest.calls)
        self.assertEqual({}, self.guest.files)
        self.assertEqual('off', report['vms']['vm']['mode'])
        self.assertIn('numa_balance', report['vms']['vm']['reason'])
        report = cap.reconcile(snapshot([self.vm], {}))
        self.assertEqual([], self.guest.calls)
        self.assertEqual(1.0, report['vms']['vm']['available_pcpus'])

    def test_guest_agent_down_keeps_then_restores_when_back(self):
        cap = self.cap()
        self.crowd(12)
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0}, self.guest.online)
        self.guest.up = False
        logs = self.useFixture(fixtures.FakeLogger())
        del self.view.others['other']          # would online all 4 ...
        for _ in range(3):
            report = cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
            self.assertEqual('not answering',
                             report['vms']['vm']['guest_agent'])
            self.assertEqual('1-3', report['vms']['vm']['offlined'])
        # ... logged once, not silently and not every pass.
        self.assertEqual(1, logs.output.count('stay offline until it'))
        self.guest.up = True
        self.crowd(12)
        report = cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        self.assertEqual('restored (guest agent is back)',
                         report['vms']['vm']['action'])
        # Sized again from the next pass on.
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0}, self.guest.online)

    def test_release_and_restart_restore_from_metadata(self):
        cap = self.cap()
        self.crowd(12)
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0}, self.guest.online)
        # A new agent (restart) reads what was offlined; the VM opted out.
        fresh = self.cap()
        fresh.reconcile(snapshot([self.vm], {}))
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        # Release onlines everything and clears the record.
        cap = self.cap()
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0}, self.guest.online)
        cap.release()
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        self.assertNotIn('vm', self.view.meta)

    def test_release_with_the_guest_agent_down_says_so(self):
        cap = self.cap()
        self.crowd(12)
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.guest.up = False
        logs = self.useFixture(fixtures.FakeLogger())
        cap.release()
        self.assertEqual({0}, self.guest.online)
        self.assertIn('stay offline', logs.output)
        self.assertEqual(frozenset({1, 2, 3}),
                         view_mod.parse_metadata(self.view.meta['vm'])[1])

    def test_hysteresis_and_stable_passes(self):
        cap = self.cap(stable_passes=2, hysteresis=0.25)
        self.crowd(6)                    # 10 vCPUs: 1.6 -> 2
        report = cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual('waiting (1/2 passes)',
                         report['vms']['vm']['action'])
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual({0, 1}, self.guest.online)
        self.crowd(5)                    # 9 vCPUs: 1.78, 2.0 ... within
        report = cap.reconcile(snapshot([self.vm], {'vm': APPLY}))
        self.assertEqual('within hysteresis band',
                         report['vms']['vm']['action'])

    def test_spin_rates_and_host_state(self):
        cap = self.cap()
        self.view.kvm = {'vm': {'vm.exits': 100}}
        cap.reconcile(snapshot([self.vm], {}, {'vm': {0: 0, 1: 10}}))
        self.clock.now += 10
        self.view.kvm = {'vm': {'vm.exits': 600}}
        report = cap.reconcile(snapshot([self.vm], {},
                                        {'vm': {0: 2.5e9, 1: 10}}))
        entry = report['vms']['vm']
        self.assertEqual({'0': 0.25, '1': 0.0}, entry['run_delay'])
        self.assertEqual({'vm.exits': 50.0}, entry['kvm_stats_per_s'])
        state = cap.host_state(report)
        self.assertEqual(pcpu_est.EstimateRequest.from_dict(
            report['affinity']), state.affinity)
        self.assertEqual((0, 1, 2, 3), state.affinity.pcpus)
        self.assertEqual(
            {'vm': reporting.VmSizing(4.0, entry['storm']['storm'])},
            state.vms)
        # The next pass's unchanged affinities: the same parsed object.
        again = cap.host_state(cap.reconcile(snapshot(
            [self.vm], {}, {'vm': {0: 2.5e9, 1: 10}})))
        self.assertIs(state.affinity, again.affinity)
        lines = cap.format_report(report)
        self.assertIn('4.00 pCPUs -> 4', lines[1])

    def test_no_kvm_stats_is_said_once(self):
        cap = self.cap()
        logs = self.useFixture(fixtures.FakeLogger())
        cap.reconcile(snapshot([self.vm], {}))
        cap.reconcile(snapshot([self.vm], {}))
        self.assertEqual(1, logs.output.count('no KVM exit counters'))


RECOMMEND = {'cacheaware:vcpu_sizing': 'recommend'}


class SpinStormTest(testtools.TestCase):
    """Study 001's reaction: size down while a storm lasts, back after."""

    def setUp(self):
        super().setUp()
        one_guest_host(self)
        self.view.others['other'] = pcpu_est.VMAffinity(
            vcpus={v: (0, 1, 2, 3) for v in range(4)})   # 2.0 pCPUs
        self.delay = {v: 0 for v in range(4)}
        self.cap = vs.VcpuSizing(None, Guests(vm=self.guest), view=self.view,
                                 clock=self.clock)

    def period(self, waited, specs=APPLY):
        """One 10 s pass where each online vCPU waited ``waited`` of it."""
        self.clock.now += 10.0
        for v in self.guest.online:
            self.delay[v] += int(waited * 10 * 1e9)
        report = self.cap.reconcile(snapshot([self.vm], {'vm': specs},
                                             {'vm': dict(self.delay)}))
        return report['vms']['vm']

    def test_apply_sizes_down_in_a_storm_and_back_after(self):
        log = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.assertEqual(vs.STORM, self.cap.apply_when)
        entry = self.period(0.0)               # baseline: nothing known
        self.assertEqual((4, 'abstain'), (entry['online'],
                                          entry['storm']['vote']))
        steps = [self.period(0.6) for _ in range(3)]
        # Detected at the second storm period: 2 vCPUs (pCPU-Est) online.
        self.assertEqual([False, True, True],
                         [e['storm']['storm'] for e in steps])
        self.assertEqual([4, 2, 2], [e['online'] for e in steps])
        self.assertEqual({0, 1}, self.guest.online)
        self.assertEqual('spin storm: 2 vCPUs (pCPU-Est)',
                         steps[1]['action'])
        self.assertEqual(('apply', frozenset({2, 3})),
                         view_mod.parse_metadata(self.view.meta['vm']))
        # The signal ends: three quiet periods, then every vCPU is back.
        quiet = [self.period(0.0) for _ in range(3)]
        self.assertEqual([True, True, False],
                         [e['storm']['storm'] for e in quiet])
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        self.assertEqual('no spin storm: every vCPU online',
                         quiet[-1]['action'])
        self.assertEqual(1, log.output.count('spin storm started'))
        self.assertEqual(1, log.output.count('spin storm ended'))
        self.assertEqual(
            {'storm': False, 'vote': 'quiet', 'run_delay': 0.0,
             'pause_exits_per_s': None, 'storms': 1, 'hold_periods': 3},
            quiet[-1]['storm'])
        report = self.cap.reconcile(snapshot([self.vm], {'vm': APPLY},
                                             {'vm': dict(self.delay)}))
        published = self.cap.host_state(report)
        self.assertEqual(report['vms']['vm']['storm']['storm'],
                         published.vms['vm'].spin_storm)
        self.assertIsNotNone(published.vms['vm'].spin_storm)

    def test_offlined_vcpus_are_left_out_of_the_signal(self):
        for _ in range(3):
            self.period(0.6)
        self.assertEqual({0, 1}, self.guest.online)
        # Only the online vCPUs' delay counts: 0.6 on average, a storm
        # vote, although vCPUs 2 and 3 wait 0 (they do not run).
        entry = self.period(0.6)
        self.assertEqual((0.6, 'storm'), (entry['storm']['run_delay'],
                                          entry['storm']['vote']))
        self.assertTrue(entry['storm']['storm'])

    def test_recommend_tells_the_guest_and_changes_nothing(self):
        self.period(0.0, RECOMMEND)
        for _ in range(2):
            entry = self.period(0.7, RECOMMEND)
        self.assertTrue(entry['storm']['storm'])
        self.assertEqual({0, 1, 2, 3}, self.guest.online)
        self.assertEqual('2\navailable_pcpus 2.000\nmode recommend\n'
                         'spin_storm yes\n',
                         self.guest.files['/run/cacheaware/pcpus'])
        for _ in range(3):
            self.period(0.0, RECOMMEND)
        self.assertEqual('2\navailable_pcpus 2.000\nmode recommend\n',
                         self.guest.files['/run/cacheaware/pcpus'])

    def test_off_still_reports_the_storm(self):
        for _ in range(3):
            entry = self.period(0.9, {})
        self.assertEqual(('off', True), (entry['mode'],
                                         entry['storm']['storm']))
        self.assertEqual([], self.guest.calls)

    def test_bad_apply_when(self):
        self.assertRaises(exception.InvalidInput, vs.VcpuSizing, None, None,
                          view=self.view, apply_when='sometimes')
