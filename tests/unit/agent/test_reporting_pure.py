"""Pure parts of the agent's reporting and sampling."""

import datetime

import testtools

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import sampling
from nova_cacheaware.scheduler import host_state

DOMAINS = [{'id': 'L2-0', 'cpus': (0, 1)}, {'id': 'L2-1', 'cpus': (2, 3)}]
NOW = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.timezone.utc)


class HostCacheStateTest(testtools.TestCase):

    def test_report_to_scheduler_state(self):
        report = {
            'version': '1.0', 'health': 'ok',
            'domains': {'L2-0': {'state': 'clean', 'memory_vms': ['a']},
                        'L2-1': {'state': 'empty', 'memory_vms': []}},
            'vms': {'a': {'workload': 'memory', 'movable': True,
                          'domains': ['L2-0']},
                    'b': {'workload': 'unknown', 'movable': True,
                          'domains': ['L2-0', 'L2-1']},
                    'c': {'workload': 'weird', 'movable': False,
                          'domains': []}},
            'usable_cpus': {'L2-0': 2, 'L2-1': 2},
            'providers': {'L2-0': 'rp-0'},
            'balloon': {'ignored': True}}
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

    def test_unhealthy(self):
        state = notify.to_host_cache_state({'health': 'degraded'}, 'h', NOW)
        self.assertFalse(state.agent_healthy)
        self.assertEqual((), state.domains)


class ShareModeTest(testtools.TestCase):

    def test_share_mode(self):
        for live, mode in [({0: (0, 1), 1: (0,)}, 'all'),
                           ({0: (0, 1), 1: (2,)}, 'partial'),
                           ({0: (0, 1, 2, 3)}, 'partial'),
                           ({}, 'partial')]:
            self.assertEqual(mode, sampling.share_mode(live, DOMAINS), live)

    def test_bad_arguments(self):
        self.assertRaises(ValueError, sampling.ShareSampler,
                          _Set(), window_passes=0)
        self.assertRaises(ValueError, sampling.ShareSampler,
                          _Set(), interval_s=-1)


class _Set(object):
    domains = ()
