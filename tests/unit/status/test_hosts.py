"""The host list from the API service's live-state cache."""

import datetime

import testtools

from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_wire
from nova_cacheaware.status import hosts

A = '00000000-0000-4000-8000-00000000000a'
B = '00000000-0000-4000-8000-00000000000b'
T0 = datetime.datetime(2026, 11, 28, 1, 0, 0, tzinfo=datetime.timezone.utc)


def wire_state(host, generation, bound, host_provider=None, seconds=0):
    """A state as the API receives it: payload 2.0, parsed."""
    state = host_state.HostCacheState(
        host=host, timestamp=T0 + datetime.timedelta(seconds=seconds),
        agent_healthy=True, host_provider=host_provider,
        generation=generation,
        domains=tuple(host_state.DomainState(
            id='L3-%d' % i, state=host_state.domain_state(len(vms)),
            memory_bound_vms=tuple(vms), usable_cpus=8)
            for i, vms in enumerate(bound)),
        vms=tuple(host_state.VmState(instance_uuid=u)
                  for vms in bound for u in vms))
    return state_wire.parse_state(state_wire.to_compact(state))


class StatusCacheTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        self.cache = hosts.StatusCache(ttl=60, clock=lambda: self.now)

    def test_rows(self):
        self.cache.update(wire_state('cmp-2', 5, [[A, B], [], []],
                                     host_provider='p-2'))
        self.cache.update(wire_state('cmp-1', 3, [[A], []]))
        self.now += 20
        self.cache.heartbeat(state_wire.Heartbeat('cmp-2', 5, False))
        self.now += 10
        self.assertEqual([
            {'host': 'cmp-1', 'model': None, 'domains': 2, 'empty': 1,
             'clean': 1, 'dirty': 0, 'servers': 1, 'agent_alive': True,
             'agent_healthy': True, 'state_age_s': 30.0, 'generation': 3},
            {'host': 'cmp-2', 'model': 'per-host', 'domains': 3,
             'empty': 2, 'clean': 0, 'dirty': 1, 'servers': 2,
             'agent_alive': True, 'agent_healthy': False,
             'state_age_s': 10.0, 'generation': 5}], self.cache.rows())

    def test_dead_agent_and_newer_generation(self):
        self.cache.update(wire_state('cmp-1', 3, [[A]]))
        self.now += 30
        self.cache.heartbeat(state_wire.Heartbeat('cmp-1', 4, True))
        self.now += 45
        row = self.cache.rows()[0]
        # The heartbeat names generation 4: the state held (3) is not
        # confirmed by it, so its age runs from its reception.
        self.assertEqual((True, 75.0, 4),
                         (row['agent_alive'], row['state_age_s'],
                          row['generation']))
        self.now += 20
        self.assertFalse(self.cache.rows()[0]['agent_alive'])

    def test_host_of(self):
        self.cache.update(wire_state('cmp-1', 3, [[A], []]))
        self.cache.update(wire_state('cmp-2', 3, [[], [B]]))
        self.assertEqual(('cmp-1', 'cmp-2', None),
                         (self.cache.host_of(A), self.cache.host_of(B),
                          self.cache.host_of(
                              '00000000-0000-4000-8000-0000000000ff')))
        self.assertEqual((True, False), (self.cache.knows('cmp-2'),
                                         self.cache.knows('cmp-3')))

    def test_model_per_domain_when_domains_name_providers(self):
        state = host_state.HostCacheState(
            host='cmp-1', timestamp=T0, agent_healthy=True,
            domains=(host_state.DomainState(id='L3-0', state='empty',
                                            provider_uuid='p-0'),))
        self.assertEqual('per-domain', hosts.model_of(state))
