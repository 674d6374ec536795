"""The scheduler's side of the live state: derived values on arrival."""

import datetime

import testtools

from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import state_cache

T0 = datetime.datetime(2026, 11, 24, 8, 0, tzinfo=datetime.timezone.utc)
AFFINITY = pcpu_est.EstimateRequest.from_dict(
    {'pcpus': [0, 1, 2, 3], 'vms': {'a': {'vcpus': {'0': [0, 1]}}}})


def wire_state(timestamp=T0, affinity=AFFINITY):
    return wire.HostCacheState(
        host='cmp1', timestamp=timestamp, agent_healthy=True,
        domains=(wire.DomainState('L3-0', 'clean', ('vm-a',), 4),),
        vcpu_affinity=affinity)


class ForSchedulerTest(testtools.TestCase):

    def test_same_fields_and_the_scheduler_values(self):
        state = hs.for_scheduler(wire_state())
        self.assertIsInstance(state, hs.HostCacheState)
        self.assertEqual(wire.to_payload(wire_state()),
                         wire.to_payload(state))
        self.assertIs(state, hs.for_scheduler(state))
        self.assertIsNotNone(state.pcpu_headroom)
        self.assertEqual({}, state.pcpu_scores)

    def test_from_payload_gives_the_scheduler_class(self):
        state = hs.from_payload(wire.to_payload(wire_state()))
        self.assertIsInstance(state, hs.HostCacheState)
        self.assertEqual(hs.for_scheduler(wire_state()), state)

    def test_without_affinity_no_headroom(self):
        self.assertIsNone(
            hs.for_scheduler(wire_state(affinity=None)).pcpu_headroom)


class DerivedTest(testtools.TestCase):
    """The scheduler's memos live in the state's own holder."""

    def test_rows_once_per_ratio_and_carried_to_the_next_state(self):
        first = hs.for_scheduler(wire_state())
        rows = first.domain_rows(2.0)
        self.assertIs(rows, first.domain_rows(2.0))
        self.assertEqual({2.0: rows}, first.derived.rows)
        later = T0 + datetime.timedelta(seconds=5)
        second = hs.for_scheduler(wire_state(timestamp=later))
        self.assertEqual({}, second.derived.rows)
        second.prepare(first)
        self.assertEqual([2.0], list(second.derived.rows))
        self.assertIsNot(first.derived, second.derived)

    def test_fields_unchanged_and_memos_not_compared(self):
        state = hs.for_scheduler(wire_state())
        twin = hs.for_scheduler(wire_state())
        state.domain_rows(1.0)
        hs.contention(state, 2, 1.0)
        self.assertEqual(state, twin)
        self.assertNotIn('derived', repr(state))


class CacheArrivalTest(testtools.TestCase):
    """The cache turns a wire state into a prepared scheduler state."""

    def test_update_prepares_and_reuses_unchanged_headroom(self):
        cache = state_cache.HostStateCache(ttl=60, clock=lambda: 0.0)
        self.assertTrue(cache.update(wire_state()))
        first = cache.get('cmp1')
        self.assertIsInstance(first, hs.HostCacheState)
        self.assertIsNot(hs.UNSET, first.derived.headroom)
        later = T0 + datetime.timedelta(seconds=5)
        self.assertTrue(cache.update(wire_state(timestamp=later)))
        second = cache.get('cmp1')
        self.assertIsNot(first, second)
        self.assertIs(first.pcpu_headroom, second.pcpu_headroom)
        self.assertIs(first.pcpu_scores, second.pcpu_scores)
        self.assertFalse(cache.update(wire_state()))
