"""The cacheaware.host.state payload (the wire format)."""

import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import host_state as hs
from nova_cacheaware import exception

T0 = datetime.datetime(2026, 11, 22, 12, 0, 0, 123456,
                       tzinfo=datetime.timezone.utc)


def sample():
    return hs.HostCacheState(
        host='cmp1', timestamp=T0, agent_healthy=True,
        domains=(hs.DomainState('L3-0', 'empty', (), 8, 'rp-0', 2),
                 hs.DomainState('L3-1', 'clean', ('vm-a',), 8, 'rp-1', 4,
                                vcpus_capacity=6, clean_holders=2,
                                required_holders=1),
                 hs.DomainState('L3-2', 'dirty', ('vm-b', 'vm-c'), 8)),
        vms=(hs.VmState('vm-a', 'memory', 'L3-1', 3.0),
             hs.VmState('vm-d', 'cpu', 'L3-0', None)),
        available_pcpus=12.5)


class PayloadTest(testtools.TestCase):

    def test_exact_payload(self):
        self.assertEqual({
            'version': '1.5', 'host': 'cmp1',
            'timestamp': '2026-11-22T12:00:00.123456Z',
            'agent_healthy': True, 'available_pcpus': 12.5,
            'domains': [
                {'id': 'L3-0', 'state': 'empty', 'memory_bound_vms': [],
                 'usable_cpus': 8, 'provider_uuid': 'rp-0',
                 'vcpus_used': 2, 'vcpus_capacity': None,
                 'clean_holders': None, 'required_holders': None},
                {'id': 'L3-1', 'state': 'clean',
                 'memory_bound_vms': ['vm-a'], 'usable_cpus': 8,
                 'provider_uuid': 'rp-1', 'vcpus_used': 4,
                 'vcpus_capacity': 6, 'clean_holders': 2,
                 'required_holders': 1},
                {'id': 'L3-2', 'state': 'dirty',
                 'memory_bound_vms': ['vm-b', 'vm-c'], 'usable_cpus': 8,
                 'provider_uuid': None, 'vcpus_used': None,
                 'vcpus_capacity': None, 'clean_holders': None,
                 'required_holders': None}],
            'vms': [
                {'instance_uuid': 'vm-a', 'workload_class': 'memory',
                 'domain_id': 'L3-1', 'pcpu_estimate': 3.0,
                 'spin_storm': None},
                {'instance_uuid': 'vm-d', 'workload_class': 'cpu',
                 'domain_id': 'L3-0', 'pcpu_estimate': None,
                 'spin_storm': None}],
            'vcpu_affinity': None,
            'host_provider': None,
        }, hs.to_payload(sample()))

    def test_required_domains_and_a_1_4_payload_without_them(self):
        state = sample()
        self.assertEqual(frozenset({'L3-1'}), state.required_domains)
        payload = hs.to_payload(state)
        self.assertEqual(state, hs.from_payload(payload))
        payload['version'] = '1.4'
        for domain in payload['domains']:
            del domain['required_holders']
        older = hs.from_payload(payload)
        self.assertEqual(frozenset(), older.required_domains)
        self.assertEqual([None] * 3,
                         [d.required_holders for d in older.domains])

    def test_timestamps_of_any_year_round_trip(self):
        for year in (1, 999, 2026, 9999):
            state = hs.HostCacheState(
                host='h', timestamp=T0.replace(year=year),
                agent_healthy=True)
            payload = hs.to_payload(state)
            self.assertEqual('%04d-11-22T12:00:00.123456Z' % year,
                             payload['timestamp'])
            self.assertEqual(state, hs.from_payload(payload))

    def test_vcpu_affinity_round_trip_and_1_0_without_it(self):
        doc = {'pcpus': [0, 1, 2, 3],
               'vms': {'vm-a': {'vcpus': {'0': [0, 1], '1': [0, 1]},
                                'caps': {'1': 0.5}}}}
        payload = dict(hs.to_payload(sample()), vcpu_affinity=doc)
        state = hs.from_payload(payload)
        self.assertEqual((0, 1, 2, 3), state.vcpu_affinity.pcpus)
        self.assertEqual({0: (0, 1), 1: (0, 1)},
                         state.vcpu_affinity.vms['vm-a'].vcpus)
        self.assertEqual({1: 0.5}, state.vcpu_affinity.vms['vm-a'].caps)
        self.assertEqual(doc, hs.to_payload(state)['vcpu_affinity'])
        # A 1.0 agent sends no vcpu_affinity: unknown, not an error.
        old = dict(hs.to_payload(sample()), version='1.0')
        del old['vcpu_affinity']
        self.assertIsNone(hs.from_payload(old).vcpu_affinity)

    def test_round_trip_and_counts(self):
        state = hs.from_payload(hs.to_payload(sample()))
        self.assertEqual(sample(), state)
        self.assertEqual(1, state.empty_domains)
        self.assertEqual(3, state.memory_bound_vms)
        self.assertEqual(['rp-0', 'rp-1'],
                         sorted(state.domain_by_provider()))

    def test_1_1_payload_without_vcpus_used_is_unknown(self):
        old = dict(hs.to_payload(sample()), version='1.1')
        for domain in old['domains']:
            del domain['vcpus_used']
        self.assertEqual([None, None, None],
                         [d.vcpus_used for d in hs.from_payload(old).domains])

    def test_host_provider_round_trip_and_1_2_without_it(self):
        state = hs.HostCacheState(
            host='cmp1', timestamp=T0, agent_healthy=True,
            domains=(hs.DomainState('L3-0', 'empty', (), 8, None, 2),
                     hs.DomainState('L3-1', 'clean', ('vm-a',), 8, None, 4)),
            host_provider='rp-host')
        payload = hs.to_payload(state)
        self.assertEqual('rp-host', payload['host_provider'])
        again = hs.from_payload(payload)
        self.assertEqual(state, again)
        self.assertEqual('rp-host', again.host_provider)
        self.assertEqual(frozenset(), again.domain_providers)
        # A 1.2 agent (domain model) sends no host_provider.
        old = dict(hs.to_payload(sample()), version='1.2')
        del old['host_provider']
        old_state = hs.from_payload(old)
        self.assertIsNone(old_state.host_provider)
        self.assertEqual(frozenset({'rp-0', 'rp-1'}),
                         old_state.domain_providers)
        # null is the same as absent.
        self.assertIsNone(hs.from_payload(
            dict(old, host_provider=None)).host_provider)

    def test_bad_spin_storm_refused(self):
        doc = hs.to_payload(sample())
        doc['vms'][0]['spin_storm'] = 'yes'
        e = self.assertRaises(exception.InvalidInput, hs.from_payload, doc)
        self.assertIn('spin_storm must be a bool', str(e))

    def test_bad_host_provider_refused(self):
        for bad in ('', 7, True, ['rp'], {'uuid': 'rp'}):
            doc = dict(hs.to_payload(sample()), host_provider=bad)
            ex = self.assertRaises(exception.InvalidInput, hs.from_payload,
                                   doc)
            self.assertIn('host_provider must be a non-empty string',
                          str(ex))

    def test_bad_vcpus_used_refused(self):
        for bad in (-1, 1.5, True, '2'):
            doc = hs.to_payload(sample())
            doc['domains'][0]['vcpus_used'] = bad
            self.assertRaises(exception.InvalidInput, hs.from_payload, doc)

    def test_bad_capacity_and_clean_holders_refused(self):
        for key in ('vcpus_capacity', 'clean_holders'):
            for bad in (-1, 1.5, True, '2', [1]):
                doc = hs.to_payload(sample())
                doc['domains'][0][key] = bad
                ex = self.assertRaises(exception.InvalidInput,
                                       hs.from_payload, doc)
                self.assertIn('%s must be an int >= 0 or null' % key,
                              str(ex))

    def test_capacity_and_rows_with_and_without_1_4_fields(self):
        # A 1.3 agent sends neither field: Nova's ratio sizes the domain
        # and the memory-bound VMs count against Clean.
        old = dict(hs.to_payload(sample()), version='1.3')
        for domain in old['domains']:
            del domain['vcpus_capacity'], domain['clean_holders']
        table = [
            # (payload, Nova ratio, rows)
            (hs.to_payload(sample()), 4.0,
             (('L3-0', 0, 0, 2, 32), ('L3-1', 1, 2, 4, 6),
              ('L3-2', 2, 2, 0, None))),
            (hs.to_payload(sample()), 1.0,
             (('L3-0', 0, 0, 2, 8), ('L3-1', 1, 2, 4, 6),
              ('L3-2', 2, 2, 0, None))),
            (old, 4.0,
             (('L3-0', 0, 0, 2, 32), ('L3-1', 1, 1, 4, 32),
              ('L3-2', 2, 2, 0, None))),
            (old, 1.5,
             (('L3-0', 0, 0, 2, 12), ('L3-1', 1, 1, 4, 12),
              ('L3-2', 2, 2, 0, None))),
        ]
        for payload, ratio, rows in table:
            state = hs.from_payload(payload)
            self.assertEqual(rows, state.domain_rows(ratio),
                             (payload['version'], ratio))
        # Capacity 0 published: known, no room (not "unknown").
        zero = hs.DomainState('d0', 'empty', (), 4, None, 0,
                              vcpus_capacity=0)
        self.assertEqual(0, zero.capacity(4.0))

    def test_minor_version_with_new_fields_accepted(self):
        doc = dict(hs.to_payload(sample()), version='1.7', extra='x')
        self.assertEqual('1.7', hs.from_payload(doc).version)

    def test_domain_state_rule(self):
        self.assertEqual(['empty', 'clean', 'dirty', 'dirty'],
                         [hs.domain_state(n) for n in range(4)])

    def test_refusals(self):
        good = hs.to_payload(sample())

        def bad(**changes):
            return dict(good, **changes)

        def bad_domain(**changes):
            return bad(domains=[dict(good['domains'][0], **changes)])

        cases = [
            ([], 'payload must be an object'),
            (bad(version='2.0'), 'version 2.0 not supported'),
            (bad(host=''), 'host must be a non-empty string'),
            (bad(agent_healthy='yes'), 'agent_healthy must be a bool'),
            (bad(timestamp='yesterday'), 'is not ISO 8601'),
            (bad(timestamp='2026-11-22T12:00:00'), 'has no time zone'),
            (bad(available_pcpus=float('nan')), 'finite number'),
            (bad(domains={}), 'domains must be a list'),
            (bad_domain(state='busy'), "domain state 'busy'"),
            (bad_domain(state='clean'), 'is clean but lists 0'),
            (bad_domain(usable_cpus=-1), 'usable_cpus'),
            (bad(domains=[good['domains'][0]] * 2), 'duplicate domain ids'),
            (bad(vms=[{'instance_uuid': 'x', 'workload_class': 'gpu'}]),
             "workload_class 'gpu'"),
            (bad(vms=[{'instance_uuid': 'x', 'pcpu_estimate': -1}]),
             'pcpu_estimate must be'),
            (bad(vcpu_affinity={'vms': {'a': {'vcpus': {'0': [-1]}}}}),
             'vcpu_affinity: VM \'a\' vCPU 0: -1 is not a pCPU'),
            (bad(vcpu_affinity=[]), 'vcpu_affinity: the document must'),
        ]
        for payload, message in cases:
            ex = self.assertRaises(exception.InvalidInput, hs.from_payload,
                                   payload)
            self.assertIn(message, str(ex))

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.lists(st.uuids().map(str), max_size=3), max_size=6),
           st.booleans(),
           st.one_of(st.none(), st.floats(0, 512, allow_nan=False)),
           st.one_of(st.none(), st.uuids().map(str)))
    def test_round_trip_property(self, vms_per_domain, healthy, pcpus,
                                 host_provider):
        state = hs.HostCacheState(
            host='h', timestamp=T0, agent_healthy=healthy,
            domains=tuple(hs.DomainState('d%d' % i, hs.domain_state(len(v)),
                                         tuple(v), 4)
                          for i, v in enumerate(vms_per_domain)),
            available_pcpus=pcpus, host_provider=host_provider)
        self.assertEqual(state, hs.from_payload(hs.to_payload(state)))
