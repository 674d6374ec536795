"""Payload 2.0 and the heartbeat: exact forms, refusals, equivalence."""

import datetime
import json
import uuid

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.agent import notify
from nova_cacheaware.contracts import host_state as hs
from nova_cacheaware.contracts import state_wire as sw
from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.pcpu_est import headroom as pcpu_headroom
from nova_cacheaware.scheduler import domain_order
from nova_cacheaware.scheduler import host_state as sched_hs
from nova_cacheaware.scheduler import weights
from tests.unit.pcpu_est import test_headroom as headroom_tests

T0 = datetime.datetime(2026, 11, 22, 12, 0, 0, 123456,
                       tzinfo=datetime.timezone.utc)
A = '00000000-0000-4000-8000-00000000000a'
B = '00000000-0000-4000-8000-00000000000b'
C = '00000000-0000-4000-8000-00000000000c'


def sample(**extra):
    return hs.HostCacheState(
        host='cmp1', timestamp=T0, agent_healthy=True,
        domains=(hs.DomainState('L3-0', 'empty', (), 8, 'rp-0', 2),
                 hs.DomainState('L3-1', 'dirty', (C, A), 8, None, 4,
                                vcpus_capacity=6, clean_holders=2,
                                required_holders=1)),
        vms=(hs.VmState(A, 'memory', 'L3-1', spin_storm=True),
             hs.VmState(B, 'cpu', 'L3-0'), hs.VmState(C, 'memory')),
        available_pcpus=12.5, **extra)


class CompactPayloadTest(testtools.TestCase):

    def test_exact_payload(self):
        self.assertEqual({
            'version': '2.0', 'host': 'cmp1',
            'timestamp': '2026-11-22T12:00:00.123456Z',
            'generation': 7, 'agent_healthy': True,
            # A, B, C as 16 bytes each, in uuid order.
            'instances': 'AAAAAAAAQACAAAAAAAAACgAAAAAAAEAAgAAAAAAAAAsAAAAAAABA'
                         'AIAAAAAAAAAM',
            'domains': [
                {'id': 'L3-0', 'usable_cpus': 8, 'memory_bound': [],
                 'provider_uuid': 'rp-0', 'vcpus_used': 2},
                {'id': 'L3-1', 'usable_cpus': 8, 'memory_bound': [2, 0],
                 'vcpus_used': 4, 'vcpus_capacity': 6, 'clean_holders': 2,
                 'required_holders': 1}],
            'available_pcpus': 12.5, 'storming_vms': 1,
            'pcpu_levels': {'pcpus': 4, 'levels': [[1, 2, 3], [1, 1, 1]]},
        }, sw.to_compact(sample(generation=7, pcpu_levels=sw.PcpuLevels(
            4, ((1, 2, 3), (1, 1, 1))))))

    def test_round_trip_keeps_what_the_scheduler_reads(self):
        state = sample(generation=7,
                       pcpu_levels=sw.PcpuLevels(4, ((1, 2, 3),)))
        back = sw.parse_state(json.loads(json.dumps(sw.to_compact(state))))
        self.assertEqual(state.domains, back.domains)
        self.assertEqual({A, B, C}, back.instance_uuids)
        self.assertEqual((1, 7, '2.0', 'cmp1', T0, 12.5),
                         (back.storming_vms, back.generation, back.version,
                          back.host, back.timestamp, back.available_pcpus))
        self.assertEqual(state.pcpu_levels, back.pcpu_levels)
        self.assertEqual((), back.vms)

    def test_unknown_values_are_left_out_and_read_as_unknown(self):
        state = hs.HostCacheState(host='h', timestamp=T0,
                                  agent_healthy=False)
        doc = sw.to_compact(state)
        self.assertEqual({'version', 'host', 'timestamp', 'generation',
                          'agent_healthy', 'instances', 'domains'},
                         set(doc))
        back = sw.parse_state(doc)
        self.assertEqual((None, None, None, frozenset(), 0),
                         (back.available_pcpus, back.pcpu_levels,
                          back.host_provider, back.instance_uuids,
                          back.storming_vms))

    def test_refusals(self):
        good = sw.to_compact(sample(generation=1))
        table = [
            ({'instances': 'not base64!'}, 'instances must be base64'),
            ({'instances': 'AAAA'}, 'instances must be whole 16-byte uuids'),
            ({'generation': -1}, 'generation must be an int >= 0'),
            ({'generation': True}, 'generation must be an int >= 0'),
            ({'domains': [{'id': 'L3-0', 'memory_bound': [3]}]},
             'domain L3-0: memory_bound index out of range'),
            ({'domains': [{'id': 'x'}, {'id': 'x'}]},
             "duplicate domain ids ['x', 'x']"),
            ({'pcpu_levels': {'pcpus': 0}}, 'pcpus must be an int >= 1'),
            ({'pcpu_levels': {'pcpus': 2, 'levels': [[1, 0, 1]]}},
             'levels must be [numerator, denominator >= 1, vCPUs]'),
            ({'version': '3.0'},
             'payload version 3.0 not supported (major 1 expected)'),
        ]
        for change, message in table:
            payload = dict(good, **change)
            e = self.assertRaises(exception.InvalidInput, sw.parse_state,
                                  payload)
            self.assertIn(message, str(e), change)

    def test_non_uuid_instances_cannot_be_written(self):
        state = hs.HostCacheState(host='h', timestamp=T0, agent_healthy=True,
                                  vms=(hs.VmState('vm-a'),))
        self.assertRaises(ValueError, sw.to_compact, state)

    def test_size_of_a_16_domain_200_vm_host(self):
        # The budget: 8 KB for the full state, 512 bytes for a
        # heartbeat as the bus carries it (the messagingv2 envelope).
        state = region_host(16, 200)
        self.assertLessEqual(len(json.dumps(sw.to_compact(state))), 8192)
        beat = sw.heartbeat_payload(sw.Heartbeat(
            host='compute-04711.region-one.example.org',
            generation=1795000000000))
        message = {'message_id': str(uuid.uuid4()),
                   'publisher_id': 'nova-cacheaware-agent.compute-04711.'
                                   'region-one.example.org',
                   'event_type': sw.HEARTBEAT_EVENT, 'priority': 'INFO',
                   'payload': beat,
                   'timestamp': '2026-11-27 21:00:00.000000'}
        body = json.dumps({'oslo.version': '2.0',
                           'oslo.message': json.dumps(message)})
        self.assertLessEqual(len(body), 512)


class HeartbeatTest(testtools.TestCase):

    def test_round_trip_and_refusals(self):
        beat = sw.Heartbeat('cmp1', 12, False)
        doc = sw.heartbeat_payload(beat)
        self.assertEqual({'version': '2.0', 'host': 'cmp1', 'generation': 12,
                          'agent_healthy': False}, doc)
        self.assertEqual(beat, sw.parse_heartbeat(doc))
        for change, message in [
                ({'version': '1.5'},
                 'heartbeat version 1.5 not supported (major 2 expected)'),
                ({'generation': 'x'}, 'generation must be an int >= 0'),
                ({'host': ''}, 'host must be a non-empty string')]:
            e = self.assertRaises(exception.InvalidInput,
                                  sw.parse_heartbeat, dict(doc, **change))
            self.assertIn(message, str(e))


class MixedVersionTest(testtools.TestCase):
    """Old agents with new schedulers, new agents with old schedulers."""

    def test_a_new_scheduler_reads_every_1_x(self):
        for version in ('1.0', '1.3', '1.5'):
            payload = dict(hs.to_payload(sample()), version=version)
            self.assertEqual(sample().domains,
                             sw.parse_state(payload).domains)

    def test_a_pinned_agent_writes_what_a_1_x_reader_reads(self):
        payload = sw.render_state(sample(generation=3), '1.5')
        self.assertEqual('1.5', payload['version'])
        self.assertEqual(sample().domains, hs.from_payload(payload).domains)

    def test_a_1_x_reader_refuses_2_0_in_one_line(self):
        e = self.assertRaises(exception.InvalidInput, hs.from_payload,
                              sw.to_compact(sample(generation=3)))
        self.assertIn('payload version 2.0 not supported (major 1 expected)',
                      str(e))

    def test_unknown_version_cannot_be_written(self):
        self.assertRaises(ValueError, sw.render_state, sample(), '1.4')


def region_host(domains, vms, seed=0):
    """A host of the region benchmark's shape: ``vms`` floating VMs."""
    rnd = __import__('random').Random(seed)
    uuids = [str(uuid.UUID(int=rnd.getrandbits(128), version=4))
             for _ in range(vms)]
    per = {d: [] for d in range(domains)}
    for i, u in enumerate(uuids):
        if i % 3 == 0:
            per[i % domains].append(u)
    return hs.HostCacheState(
        host='compute-04711.region-one.example.org', timestamp=T0,
        agent_healthy=True, generation=1795000000000,
        host_provider=str(uuid.UUID(int=rnd.getrandbits(128), version=4)),
        domains=tuple(hs.DomainState(
            'L3-%d' % d, hs.domain_state(len(per[d])), tuple(per[d]), 8,
            None, 20, vcpus_capacity=32, clean_holders=len(per[d]),
            required_holders=0) for d in range(domains)),
        vms=tuple(hs.VmState(u, 'memory' if i % 3 == 0 else 'cpu')
                  for i, u in enumerate(uuids)),
        available_pcpus=128.0,
        pcpu_levels=sw.PcpuLevels(128, ((16, 25, 600),)))


@st.composite
def states(draw):
    """Random host states with everything the scheduler reads."""
    ids = draw(st.lists(st.uuids(version=4).map(str), unique=True,
                        max_size=12))
    count = draw(st.integers(0, 6))
    domains = []
    free = list(ids)
    for d in range(count):
        take = draw(st.integers(0, min(3, len(free))))
        bound, free = tuple(free[:take]), free[take:]
        opt = st.none() | st.integers(0, 24)
        domains.append(hs.DomainState(
            'L3-%d' % d, hs.domain_state(len(bound)), bound,
            draw(st.integers(0, 8)),
            draw(st.none() | st.just('rp-%d' % d)), draw(opt),
            vcpus_capacity=draw(opt), clean_holders=draw(opt),
            required_holders=draw(st.none() | st.integers(0, 2))))
    affinity = draw(st.none() | headroom_tests.hosts(max_pcpus=8,
                                                     max_vms=4))
    return notify_like(draw, ids, domains, affinity)


def notify_like(draw, ids, domains, affinity):
    """The state as the agent builds it (levels from the affinity)."""
    return hs.HostCacheState(
        host='h', timestamp=T0, agent_healthy=draw(st.booleans()),
        domains=tuple(domains),
        vms=tuple(hs.VmState(u, spin_storm=draw(st.none() | st.booleans()))
                  for u in ids),
        available_pcpus=draw(st.none() | st.floats(0, 64)),
        host_provider=draw(st.none() | st.just('hp')),
        vcpu_affinity=affinity, pcpu_levels=notify.pcpu_levels(affinity),
        generation=draw(st.integers(0, 2 ** 53)))


class SameDecisionsTest(testtools.TestCase):
    """The scheduler decides the same on a 1.5 and a 2.0 payload."""

    @settings(max_examples=150, deadline=None)
    @given(states())
    def test_every_value_the_plugins_read_is_equal(self, state):
        old = sched_hs.from_payload(json.loads(json.dumps(
            sw.render_state(state, '1.5'))))
        new = sched_hs.from_payload(json.loads(json.dumps(
            sw.to_compact(state))))
        self.assertEqual(decisions(old), decisions(new))


def decisions(state):
    """What the filters and weighers read of a state, and their answers."""
    out = [state.agent_healthy, state.empty_domains, state.memory_bound_vms,
           state.busy_providers, state.domain_providers,
           state.required_domains, state.instance_uuids, state.host_provider,
           state.domain_by_provider(), state.storming_vms]
    for ratio in (1.0, 4.0):
        rows = state.domain_rows(ratio)
        out.append(rows)
        for vcpus in (1, 2, 8):
            out.append(sched_hs.contention(state, vcpus, ratio))
            for required in (False, True):
                out.append(domain_order.room_reason(
                    rows, vcpus, required,
                    closed=state.required_domains))
    for vcpus in (1, 3):
        for cap in (None, 0.5):
            try:
                out.append(weights.availability_score(state, vcpus, cap))
            except exception.InvalidInput as e:
                out.append(str(e))
    return out


class LevelsTest(testtools.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(headroom_tests.hosts(), st.integers(1, 9),
           st.sampled_from(headroom_tests.CAPS))
    def test_headroom_of_levels_is_the_headroom_of_affinities(
            self, req, vcpus, cap):
        full = pcpu_headroom.Headroom.of(req)
        levels = pcpu_headroom.share_levels(req)
        if full is None:
            self.assertIsNone(levels)
            return
        self.assertEqual(full.share(vcpus, cap),
                         pcpu_headroom.Headroom.of_levels(*levels).share(
                             vcpus, cap))

    def test_levels_of_a_host(self):
        req = pcpu_est.EstimateRequest(vms={
            'a': pcpu_est.VMAffinity(vcpus={0: (0,), 1: (0,)}),
            'b': pcpu_est.VMAffinity(vcpus={0: (1, 2)})}, pcpus=(0, 1, 2))
        self.assertEqual((3, ((1, 2, 2), (1, 1, 1))),
                         pcpu_headroom.share_levels(req))


def named_host(name):
    """Named topologies of the region, in both provider models."""
    shapes = {
        # (domains, CPUs per domain, VMs, per-domain providers)
        'epyc-16xL3-200vms-host-model': (16, 8, 200, False),
        'epyc-16xL3-16vms-domain-model': (16, 8, 16, True),
        'epyc-32xL3-200vms-domain-model': (32, 8, 200, True),
        'e-core-clusters-4x4-200vms-host-model': (4, 4, 200, False),
        'shared-l2-pairs-16vms-domain-model': (8, 2, 16, True),
    }
    domains, width, vms, per_domain = shapes[name]
    state = region_host(domains, vms, seed=len(name))
    affinity = pcpu_est.EstimateRequest(
        vms={u: pcpu_est.VMAffinity(vcpus={0: tuple(range(domains * width)),
                                           1: tuple(range(width))})
             for u in sorted(state.instance_uuids)[:24]},
        pcpus=tuple(range(domains * width)))
    return hs.HostCacheState(
        host=state.host, timestamp=T0, agent_healthy=True,
        generation=state.generation,
        host_provider=None if per_domain else state.host_provider,
        domains=tuple(hs.DomainState(
            d.id, d.state, d.memory_bound_vms, width,
            'rp-%s' % d.id if per_domain else None, d.vcpus_used,
            vcpus_capacity=d.vcpus_capacity, clean_holders=d.clean_holders,
            required_holders=int(i % 3 == 0))
            for i, d in enumerate(state.domains)),
        vms=state.vms, vcpu_affinity=affinity,
        pcpu_levels=notify.pcpu_levels(affinity))


class NamedTopologiesTest(testtools.TestCase):
    """Same decisions on 1.5 and 2.0, table over named hosts."""

    NAMES = ('epyc-16xL3-200vms-host-model', 'epyc-16xL3-16vms-domain-model',
             'epyc-32xL3-200vms-domain-model',
             'e-core-clusters-4x4-200vms-host-model',
             'shared-l2-pairs-16vms-domain-model')

    def test_every_named_host(self):
        for name in self.NAMES:
            state = named_host(name)
            old = sched_hs.from_payload(json.loads(json.dumps(
                sw.render_state(state, '1.5'))))
            new = sched_hs.from_payload(json.loads(json.dumps(
                sw.to_compact(state))))
            self.assertEqual(decisions(old), decisions(new), name)
            # The weigher has something to weigh on every host.
            self.assertIsNotNone(new.pcpu_headroom, name)
