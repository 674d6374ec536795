"""Pure parts of the agent's reporting (sampling:
tests/unit/cachedomain/test_trials.py)."""

import dataclasses
import datetime

import testtools

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import reporting
from nova_cacheaware.balloon import model as balloon
from nova_cacheaware.contracts import host_state
from nova_cacheaware.pcpu_est import estimate as pcpu_est

NOW = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.timezone.utc)


class HostCacheStateTest(testtools.TestCase):

    def test_report_to_scheduler_state(self):
        report = reporting.HostReport(
            memory_vms={'L2-0': ('a',), 'L2-1': ()},
            vms={'a': reporting.VmReport('memory', ('L2-0',)),
                 'b': reporting.VmReport('unknown', ('L2-0', 'L2-1')),
                 'c': reporting.VmReport('weird', ())},
            usable_cpus={'L2-0': 2, 'L2-1': 2},
            providers={'L2-0': 'rp-0'},
            sections={'balloon': balloon.HeldMemory(512, 1)})
        state = notify.to_host_cache_state(report, 'cn1', NOW)
        self.assertEqual(host_state.HostCacheState(
            host='cn1', timestamp=NOW, agent_healthy=True,
            domains=(host_state.DomainState('L2-0', 'clean', ('a',), 2,
                                            'rp-0'),
                     host_state.DomainState('L2-1', 'empty', (), 2, None)),
            vms=(host_state.VmState('a', 'memory', 'L2-0'),
                 host_state.VmState('b', 'unknown', None),
                 host_state.VmState('c', 'unknown', None))), state)
        # What the scheduler's listener accepts, round trip.
        self.assertEqual(state, host_state.from_payload(
            host_state.to_payload(state)))

    def test_capacity_and_choice_load_payload_1_4(self):
        report = reporting.HostReport(
            memory_vms={'L2-0': ('a',), 'L2-1': (), 'L2-2': ()},
            vms={'a': reporting.VmReport('memory', ('L2-0',), 2),
                 'b': reporting.VmReport('unknown', ('L2-1',), 1)},
            usable_cpus={'L2-0': 2, 'L2-1': 2, 'L2-2': 2},
            domain_capacity={'L2-0': 2, 'L2-1': 2, 'L2-2': 2})
        table = [
            # (domain_load in the report, (vcpus_used, clean_holders) of
            #  L2-0, L2-1, L2-2)
            # Domain model (no choice): the VMs' vCPUs, holders unknown.
            (None, ((2, None), (1, None), (0, None))),
            # Host model: what the agent's choice counted; 'b' (auto,
            # wants Clean) holds L2-1 for the choice.
            ({'L2-0': (2, 1), 'L2-1': (1, 1)}, ((2, 1), (1, 1), (0, 0))),
        ]
        for load, expected in table:
            state = notify.to_host_cache_state(
                dataclasses.replace(report, domain_load=load), 'cn1', NOW)
            self.assertEqual(
                expected, tuple((d.vcpus_used, d.clean_holders)
                                for d in state.domains), load)
            self.assertEqual([2, 2, 2],
                             [d.vcpus_capacity for d in state.domains])
            self.assertEqual(state, host_state.from_payload(
                host_state.to_payload(state)))
        # Payload 1.5: the cache_clean=required instances per domain.
        state = notify.to_host_cache_state(
            dataclasses.replace(report, domain_load={'L2-0': (2, 1)},
                                domain_required={'L2-0': 1}), 'cn1', NOW)
        self.assertEqual([1, 0, 0],
                         [d.required_holders for d in state.domains])
        self.assertEqual(frozenset({'L2-0'}), state.required_domains)
        self.assertEqual(state, host_state.from_payload(
            host_state.to_payload(state)))
        self.assertEqual([None] * 3, [d.required_holders for d in
                                      notify.to_host_cache_state(
                                          report, 'cn1', NOW).domains])
        # An agent that knows no capacity (no Placement): null.
        state = notify.to_host_cache_state(
            dataclasses.replace(report, domain_capacity={}), 'cn1', NOW)
        self.assertEqual([None] * 3,
                         [d.vcpus_capacity for d in state.domains])

    def test_vcpu_sizing_affinity_reaches_the_weigher_field(self):
        affinity = {'pcpus': [0, 1],
                    'vms': {'a': {'vcpus': {'0': [0, 1], '1': [0, 1]},
                                  'caps': {'0': 1.0, '1': 0.5}}}}
        parsed = pcpu_est.EstimateRequest.from_dict(affinity)
        report = reporting.HostReport(sections={
            'vcpu_sizing': reporting.SizingSection(affinity=parsed)})
        state = notify.to_host_cache_state(report, 'cn1', NOW)
        self.assertEqual(pcpu_est.EstimateRequest.from_dict(affinity),
                         state.vcpu_affinity)
        back = host_state.from_payload(host_state.to_payload(state))
        self.assertEqual(state.vcpu_affinity, back.vcpu_affinity)
        self.assertIsNone(notify.to_host_cache_state(
            reporting.HostReport(), 'cn1', NOW).vcpu_affinity)

    def test_vcpu_sizing_fills_estimates_and_storms(self):
        affinity = pcpu_est.EstimateRequest.from_dict(
            {'pcpus': [0, 1, 2, 3], 'vms': {}})
        report = reporting.HostReport(
            vms={u: reporting.VmReport('unknown') for u in 'abc'},
            sections={'vcpu_sizing': reporting.SizingSection(
                affinity=affinity, vms={
                    'a': reporting.VmSizing(1.5, True),
                    'b': reporting.VmSizing(4.0)})})
        state = notify.to_host_cache_state(report, 'cn1', NOW)
        self.assertEqual(
            [('a', 1.5, True), ('b', 4.0, None), ('c', None, None)],
            [(v.instance_uuid, v.pcpu_estimate, v.spin_storm)
             for v in state.vms])
        self.assertEqual((4.0, 1), (state.available_pcpus,
                                    state.storming_vms))
        back = host_state.from_payload(host_state.to_payload(state))
        self.assertEqual(state.vms, back.vms)

    def test_unhealthy(self):
        state = notify.to_host_cache_state(
            reporting.HostReport(healthy=False), 'h', NOW)
        self.assertFalse(state.agent_healthy)
        self.assertEqual((), state.domains)


class FakeClient(object):
    """Answers GET /allocations/{uuid} from a dict; ``down`` refuses."""

    def __init__(self, allocations):
        self.allocations = allocations
        self.down = False
        self.asked = []

    def get(self, url):
        from nova_cacheaware.placement import errors
        self.asked.append(url)
        if self.down:
            raise errors.PlacementUnavailable(method='GET', url=url,
                                              reason='refused')
        consumer = url.rsplit('/', 1)[1]
        return {'allocations': {rp: {'resources': {}} for rp in
                                self.allocations.get(consumer, ())}}


class HeldDomainsTest(testtools.TestCase):

    def reporter(self, allocations):
        from nova_cacheaware.agent import placement_report
        client = FakeClient(allocations)
        reporter = placement_report.PlacementSyncReporter(client, 'cn')
        reporter._providers = {'L2-0': 'rp0', 'L2-1': 'rp1'}
        return reporter, client

    def test_cached_refreshed_and_kept_while_down(self):
        reporter, client = self.reporter({'a': ['root', 'rp1'],
                                          'b': ['root'],
                                          'c': ['rp0', 'rp1']})
        self.assertEqual({'a': 'L2-1'},
                         reporter.held_domains(['a', 'b', 'c']))
        self.assertEqual(3, len(client.asked))
        # Cached: no request.
        self.assertEqual({'a': 'L2-1'}, reporter.held_domains(['a', 'b']))
        self.assertEqual(3, len(client.asked))
        # A lifecycle event; Placement down: the last answer is kept.
        reporter.forget_instance('a')
        client.down = True
        self.assertEqual({'a': 'L2-1'}, reporter.held_domains(['a']))
        # Back: read again, now in L2-0.
        client.down = False
        client.allocations['a'] = ['rp0']
        self.assertEqual({'a': 'L2-0'}, reporter.held_domains(['a']))
        self.assertEqual(['/allocations/a', '/allocations/b',
                          '/allocations/c', '/allocations/a',
                          '/allocations/a'], client.asked)

    def test_nothing_before_the_first_sync(self):
        from nova_cacheaware.agent import placement_report
        client = FakeClient({'a': ['rp1']})
        reporter = placement_report.PlacementSyncReporter(client, 'cn')
        self.assertEqual({}, reporter.held_domains(['a']))
        self.assertEqual([], client.asked)


class NotificationTransportTest(testtools.TestCase):
    """The agent sends on the exchange nova-scheduler's listener binds."""

    def setUp(self):
        super().setUp()
        import oslo_messaging
        # The default is process-wide: put oslo.messaging's back.
        self.addCleanup(oslo_messaging.set_transport_defaults,
                        control_exchange='openstack')

    def _transport(self, override=None):
        from oslo_config import cfg
        conf = cfg.ConfigOpts()
        conf([])
        transport = notify.notification_transport(conf, url='fake:')
        self.addCleanup(transport.cleanup)
        if override is not None:
            conf.set_override('control_exchange', override)
        return transport, conf

    def test_nova_exchange_by_default(self):
        _, conf = self._transport()
        self.assertEqual('nova', conf.control_exchange)

    def test_configured_exchange_wins(self):
        _, conf = self._transport(override='region-2')
        self.assertEqual('region-2', conf.control_exchange)
