"""The host-state payload's declared schema: refusals, defaults, fuzzing.

As ``tests/unit/policy/test_declared_schemas``: the properties mutate a
valid payload at random (or build a valid state at random). A mutated
payload gives a state (the same one again from its own payload) or a
one-line refusal, never another exception: the listener logs the line
and drops the payload. The tables pin the exact messages and defaults.
"""

import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import host_state as hs
from nova_cacheaware.contracts import vcpu_affinity
from tests.unit.policy.test_declared_schemas import _edit
from tests.unit.policy.test_declared_schemas import mutate
from tests.unit.policy.test_declared_schemas import outcome

UTC = datetime.timezone.utc
AFFINITY = {'pcpus': [0, 1, 2, 3],
            'vms': {'vm-a': {'vcpus': {'0': [0, 1], '1': [2, 3]},
                             'caps': {'1': 0.5}},
                    'vm-d': {'vcpus': {'0': [0, 1, 2, 3]}}}}
PAYLOAD = {
    'version': '1.4', 'host': 'cmp1',
    'timestamp': '2026-11-22T12:00:00.123456Z', 'agent_healthy': True,
    'available_pcpus': 12.5,
    'domains': [
        {'id': 'L3-0', 'state': 'empty', 'memory_bound_vms': [],
         'usable_cpus': 8, 'provider_uuid': 'rp-0', 'vcpus_used': 2,
         'vcpus_capacity': None, 'clean_holders': None},
        {'id': 'L3-1', 'state': 'clean', 'memory_bound_vms': ['vm-a'],
         'usable_cpus': 8, 'provider_uuid': 'rp-1', 'vcpus_used': 4,
         'vcpus_capacity': 6, 'clean_holders': 2},
        {'id': 'L3-2', 'state': 'dirty',
         'memory_bound_vms': ['vm-b', 'vm-c'], 'usable_cpus': 8}],
    'vms': [
        {'instance_uuid': 'vm-a', 'workload_class': 'memory',
         'domain_id': 'L3-1', 'pcpu_estimate': 3.0, 'spin_storm': False},
        {'instance_uuid': 'vm-d', 'workload_class': 'cpu',
         'domain_id': 'L3-0', 'pcpu_estimate': 2, 'spin_storm': None}],
    'vcpu_affinity': AFFINITY,
    'host_provider': None,
}
# A 1.3 host-model payload: fewer fields, the host's provider.
PAYLOAD_1_3 = {
    'version': '1.3', 'host': 'cmp2', 'timestamp': '2026-11-22T13:00:00Z',
    'agent_healthy': False, 'host_provider': 'rp-host',
    'domains': [{'id': 'a', 'state': 'clean', 'memory_bound_vms': ['x']},
                {'id': 'b', 'state': 'empty'}],
    'vms': [{'instance_uuid': 'x'}]}

ODD = [None, True, False, 0, 1, 2, -1, 0.5, 2.0, 10 ** 30, float('nan'),
       float('inf'), '', 'a', 'x', 'vm-a', 'L3-1', 'empty', 'clean',
       'dirty', 'memory', 'io', 'gpu', '1', '1.9', '2.0', 'x.1',
       '2026-11-22T12:00:00Z', '2026-11-22T12:00:00', '2026-11-22T14:00+02:00',
       'yesterday', [], [''], ['vm-a'], ['vm-a', 'vm-b'], [1], [0, 1],
       {}, {'vcpus': {'0': [9]}}, {'vms': {}}, {'pcpus': [0, 0]}]
KEYS = ['x', 'id', 'state', 'memory_bound_vms', 'usable_cpus',
        'provider_uuid', 'vcpus_used', 'vcpus_capacity', 'clean_holders',
        'workload_class', 'pcpu_estimate', 'domain_id', 'spin_storm',
        'instance_uuid', 'version', 'host', 'timestamp', 'agent_healthy',
        'available_pcpus', 'domains', 'vms', 'vcpu_affinity',
        'host_provider', 'pcpus', 'vcpus', 'caps', '0', '01']


def _states():
    """Valid :class:`~.HostCacheState` objects of every field's kind."""
    count = st.one_of(st.none(), st.integers(0, 64))
    domain = st.builds(
        lambda vms, usable, provider, used, capacity, holders: (
            vms, usable, provider, used, capacity, holders),
        st.lists(st.sampled_from(['vm-a', 'vm-b', 'vm-c']), max_size=3),
        st.integers(0, 64), st.one_of(st.none(), st.sampled_from(['', 'rp'])),
        count, count, count)
    vm = st.builds(
        hs.VmState, st.text(min_size=1, max_size=3),
        st.sampled_from(hs.VM_CLASSES),
        st.one_of(st.none(), st.text(max_size=3)),
        st.one_of(st.none(), st.floats(0, 512), st.integers(0, 512)),
        st.one_of(st.none(), st.booleans()))
    return st.builds(
        lambda domains, vms, moment, healthy, pcpus, affinity, provider:
        hs.HostCacheState(
            host='h', timestamp=moment, agent_healthy=healthy,
            domains=tuple(hs.DomainState('d%d' % n, hs.domain_state(len(v)),
                                         tuple(v), *rest)
                          for n, (v, *rest) in enumerate(domains)),
            vms=tuple(vms), available_pcpus=pcpus,
            vcpu_affinity=affinity, host_provider=provider),
        st.lists(domain, max_size=5), st.lists(vm, max_size=5),
        # (to_payload writes a year before 1000 without its leading 0.)
        st.datetimes(datetime.datetime(1000, 1, 1),
                     timezones=st.just(UTC)), st.booleans(),
        st.one_of(st.none(), st.floats(0, 512)),
        st.sampled_from([None, vcpu_affinity.EstimateRequest
                         .from_dict(AFFINITY)]),
        st.one_of(st.none(), st.sampled_from(['rp-host'])))


class RandomPayloadsTest(testtools.TestCase):

    @settings(max_examples=600, deadline=None)
    @given(st.data(), st.sampled_from([PAYLOAD, PAYLOAD_1_3]))
    def test_changes_give_a_state_or_one_line(self, data, base):
        doc = mutate(data, base, data.draw(st.integers(0, 5)), ODD, KEYS)
        got = outcome(hs.from_payload, doc)
        self.assertIn(got[0], ('ok', 'bad'), (doc, got))
        if got[0] == 'bad':
            self.assertNotIn('\n', got[1], doc)
        else:
            self.assertEqual(got[1],
                             hs.from_payload(hs.to_payload(got[1])), doc)

    @settings(max_examples=300, deadline=None)
    @given(_states())
    def test_valid_states(self, state):
        self.assertEqual(state, hs.from_payload(hs.to_payload(state)))

    def test_bases_are_valid_and_extra_keys_ignored(self):
        for doc in (PAYLOAD, PAYLOAD_1_3):
            self.assertEqual('ok', outcome(hs.from_payload, doc)[0])
        # A newer agent's fields, at every level, are not refused.
        doc = _edit(PAYLOAD, version='1.9', future={'a': 1})
        doc['domains'][0]['future'] = [1]
        doc['vms'][0]['future'] = None
        state = hs.from_payload(doc)
        self.assertEqual(
            ('1.9', 3, 2),
            (state.version, len(state.domains), len(state.vms)))
        self.assertEqual(hs.from_payload(_edit(PAYLOAD, version='1.9')),
                         state)
        self.assertEqual((3.0, float, 2.0, float),
                         (state.vms[0].pcpu_estimate,
                          type(state.vms[0].pcpu_estimate),
                          state.vms[1].pcpu_estimate,
                          type(state.vms[1].pcpu_estimate)))


class DefaultsTest(testtools.TestCase):

    def test_absent_fields_of_a_1_3_payload(self):
        self.assertEqual(
            hs.HostCacheState(
                host='cmp2',
                timestamp=datetime.datetime(2026, 11, 22, 13, 0, tzinfo=UTC),
                agent_healthy=False,
                domains=(hs.DomainState(
                    id='a', state='clean', memory_bound_vms=('x',),
                    usable_cpus=0, provider_uuid=None, vcpus_used=None,
                    vcpus_capacity=None, clean_holders=None,
                    required_holders=None),
                    hs.DomainState(
                    id='b', state='empty', memory_bound_vms=(),
                    usable_cpus=0, provider_uuid=None, vcpus_used=None,
                    vcpus_capacity=None, clean_holders=None,
                    required_holders=None)),
                vms=(hs.VmState(instance_uuid='x', workload_class='unknown',
                                domain_id=None, pcpu_estimate=None,
                                spin_storm=None),),
                available_pcpus=None, version='1.3', vcpu_affinity=None,
                host_provider='rp-host', generation=None, listed=None,
                storming=None, pcpu_levels=None),
            hs.from_payload(PAYLOAD_1_3))


class MessageTableTest(testtools.TestCase):
    """Exact one-line messages (the listener logs them when it drops)."""

    def test_messages(self):
        p = PAYLOAD
        domain = 'domain state %r not one of ' + str(hs.DOMAIN_STATES)
        cases = [
            ([], 'payload must be an object'),
            (_edit(p, version=1), 'version must be a non-empty string'),
            (_edit(p, version='2.0'),
             'payload version 2.0 not supported (major 1 expected)'),
            # The version comes before the shape of the rest.
            (_edit(p, version='2.0', domains=1),
             'payload version 2.0 not supported (major 1 expected)'),
            (_edit(p, domains={}), 'domains must be a list'),
            (_edit(p, domains=None), 'domains must be a list'),
            (_edit(p, domains=[1]), 'domain must be an object'),
            (_edit(p, 'domains', 0, memory_bound_vms='vm-a'),
             'memory_bound_vms must be a list'),
            (_edit(p, 'domains', 2, memory_bound_vms=['vm-b', '']),
             'memory_bound_vms must be a non-empty string'),
            (_edit(p, 'domains', 0, state=None),
             'state must be a non-empty string'),
            (_edit(p, 'domains', 0, state='busy'), domain % 'busy'),
            (_edit(p, 'domains', 0, usable_cpus=None),
             'usable_cpus must be an int >= 0'),
            (_edit(p, 'domains', 0, usable_cpus=True),
             'usable_cpus must be an int >= 0'),
            (_edit(p, 'domains', 0, provider_uuid=1),
             'provider_uuid must be a string'),
            (_edit(p, 'domains', 0, vcpus_used=1.5),
             'vcpus_used must be an int >= 0 or null'),
            (_edit(p, 'domains', 0, clean_holders=-1),
             'clean_holders must be an int >= 0 or null'),
            (_edit(p, 'domains', 0, id=''), 'id must be a non-empty string'),
            (_edit(p, 'domains', 1, state='dirty'),
             'domain L3-1 is dirty but lists 1 memory-bound VMs'),
            (_edit(p, 'domains', 1, id='L3-0'),
             "duplicate domain ids ['L3-0', 'L3-0', 'L3-2']"),
            (_edit(p, available_pcpus=float('nan')),
             'available_pcpus must be a finite number >= 0'),
            (_edit(p, available_pcpus=-0.5),
             'available_pcpus must be a finite number >= 0'),
            (_edit(p, agent_healthy=1), 'agent_healthy must be a bool'),
            (_edit(p, host_provider=''),
             'host_provider must be a non-empty string'),
            (_edit(p, host=None), 'host must be a non-empty string'),
            (_edit(p, timestamp=7), 'timestamp must be a non-empty string'),
            (_edit(p, timestamp='noon'), "timestamp 'noon' is not ISO 8601"),
            (_edit(p, timestamp='2026-11-22T12:00:00'),
             "timestamp '2026-11-22T12:00:00' has no time zone"),
            (_edit(p, vms={}), 'vms must be a list'),
            (_edit(p, vms=['vm-a']), 'vm must be an object'),
            (_edit(p, 'vms', 0, workload_class=None),
             "workload_class None not one of %s" % (hs.VM_CLASSES,)),
            (_edit(p, 'vms', 0, pcpu_estimate='3'),
             'pcpu_estimate must be a finite number >= 0'),
            (_edit(p, 'vms', 0, domain_id=0), 'domain_id must be a string'),
            (_edit(p, 'vms', 0, spin_storm=0), 'spin_storm must be a bool'),
            (_edit(p, 'vms', 0, instance_uuid=''),
             'instance_uuid must be a non-empty string'),
            (_edit(p, vcpu_affinity=[]),
             'vcpu_affinity: the document must be a JSON object'),
            (_edit(p, vcpu_affinity={'vms': {'a': {'vcpus': {'0': [-1]}}}}),
             "vcpu_affinity: VM 'a' vCPU 0: -1 is not a pCPU number (an "
             'integer 0..8191)'),
        ]
        for doc, message in cases:
            new = outcome(hs.from_payload, doc)
            self.assertEqual(('bad', 'invalid input: ' + message), new, doc)

    def test_out_of_range_values_are_refusals(self):
        # An int beyond a float's range, a moment before the first UTC
        # one: refused, not an OverflowError out of the listener.
        huge = 10 ** 400
        for doc, message in (
                (_edit(PAYLOAD, available_pcpus=huge),
                 'available_pcpus must be a finite number >= 0'),
                (_edit(PAYLOAD, 'vms', 1, pcpu_estimate=huge),
                 'pcpu_estimate must be a finite number >= 0'),
                (_edit(PAYLOAD, timestamp='0001-01-01T00:00:00+01:00'),
                 "timestamp '0001-01-01T00:00:00+01:00' is out of range")):
            self.assertEqual(('bad', 'invalid input: ' + message),
                             outcome(hs.from_payload, doc))
        # The largest int a float holds is still a number.
        big = int(1.7e308)
        self.assertEqual(float(big), hs.from_payload(
            _edit(PAYLOAD, available_pcpus=big)).available_pcpus)
