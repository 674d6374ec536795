"""Capabilities plug into the agent's pass (test:/// driver)."""

import dataclasses
import threading

from nova_cacheaware.agent import capability
from nova_cacheaware.agent import reporting
from nova_cacheaware import exception
from tests.functional.agent import base

FOUR = base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))


@dataclasses.dataclass(frozen=True)
class Count:
    """Recording's host-state section."""

    count: int


class Recording(capability.Capability):
    """Counts the instances it saw; says what it would publish."""

    name = 'recording'

    def __init__(self):
        self.seen = []
        self.released = threading.Event()

    def reconcile(self, snapshot):
        self.seen.append(sorted(i.uuid for i in snapshot.instances))
        return {'instances': len(snapshot.instances)}

    def host_state(self, report):
        return Count(report['instances'])

    def format_report(self, report):
        return ['recording: %d instance(s)' % report['instances']]

    def release(self):
        self.released.set()


class Failing(capability.Capability):
    name = 'failing'

    def reconcile(self, snapshot):
        raise RuntimeError('guest agent exploded')

    def host_state(self, report):  # never called for a failed pass
        raise AssertionError('host_state of a failed report')

    def release(self):
        raise RuntimeError('cannot release either')


class Bus(reporting.StatePublisher):
    def __init__(self):
        self.sent = []

    def publish(self, state):
        self.sent.append(state)


class CapabilityTest(base.AgentTestCase):

    def test_reports_kept_published_and_failures_isolated(self):
        uuid = self.define(2, cpuset='0-7', workload='memory')
        rec = Recording()
        agent = self.agent(FOUR)
        agent.capabilities = (Failing(), rec)
        agent.publisher = bus = Bus()
        one = agent.reconcile()
        self.assertEqual(2, one.result.repins)      # pinning went on
        self.assertEqual({'failing': capability.Failed('guest agent exploded'),
                          'recording': {'instances': 1}}, one.capabilities)
        self.assertEqual([[uuid]], rec.seen)
        self.assertEqual({'recording': Count(1)}, bus.sent[-1].sections)
        dump = agent.dump_state(one.snapshot, one.capabilities)
        self.assertEqual({'failing': {'error': 'guest agent exploded'},
                          'recording': {'instances': 1}},
                         dump['agent']['capabilities'])

    def test_release_runs_when_the_agent_stops(self):
        rec = Recording()
        agent = self.agent(FOUR)
        agent.capabilities = (Failing(), rec)
        t = threading.Thread(target=agent.run, args=(30.0,))
        t.start()
        agent.stop()
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertTrue(rec.released.is_set())


class LoadTest(base.AgentTestCase):

    def test_unknown_capability_is_a_clear_error(self):
        e = self.assertRaises(exception.InvalidInput, capability.load,
                              ['no-such-thing'], None, self.hv)
        self.assertIn("unknown capability 'no-such-thing'", str(e))
