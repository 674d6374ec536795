"""The repin step's own parts: derived counters, the trace path, the table."""

import json
import os
from unittest import mock

import fixtures
import testtools

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.cachedomain import agent as repin_agent
from nova_cacheaware.cachedomain import counters
from nova_cacheaware.cachedomain import memclass
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.cachedomain import sampling
from tests.unit.cachedomain import test_trace_dir_counters as traces

MEM, CPU = traces.MEM, traces.CPU
Instance = traces.Instance


class DerivedTest(testtools.TestCase):

    def test_derived(self):
        self.assertEqual(
            {'cpi': 2.0, 'llc_mpki': 5.0, 'instructions': 1000,
             'llc_misses': 5},
            repin_agent.derived({'cycles': 0, 'instructions': 0,
                                 'llc_misses': 0},
                                {'cycles': 2000, 'instructions': 1000,
                                 'llc_misses': 5}))
        self.assertEqual({}, repin_agent.derived({}, {'cycles': 1}))


class TraceReplayTest(testtools.TestCase):
    """The agent's own path classifies an ``auto`` instance from a trace."""

    def test_memory_bound_after_dwell_votes_of_min_samples(self):
        directory = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(directory, MEM + '.json'), 'w') as f:
            json.dump(traces.MEMORY_TRACE, f)
        hypervisor = mock.Mock()
        # No thread ids: the replay never asks QEMU's monitor.
        hypervisor.vcpu_threads.side_effect = AssertionError('monitor')
        domain_set = mock.Mock(domains=traces.DOMAINS)
        step = repin_agent.RepinStep(
            None, None, counters.TraceDirCounterSource(directory,
                                                       traces.DOMAINS))
        sampler = sampling.ShareSampler(domain_set)
        instances = [Instance(MEM, {0: (0,)}), Instance(CPU, {0: (1,)})]
        config = memclass.ClassifierConfig()
        # The first pass only starts the counts; then one MPKI sample a
        # pass: a vote every min_samples, memory-bound after dwell votes.
        passes = 1 + config.min_samples * config.dwell
        self.assertEqual(25, passes)
        classified = []
        for n in range(1, passes + 1):
            # The thread-id reader the agent gives the step.
            derived = step.sample_counters(
                instances, lambda: hv.vcpu_thread_ids(hypervisor, instances))
            if n > 1:
                self.assertEqual({'%s/0' % MEM: {
                    'instructions': 1000000 * (1 + (n + 1) % 2),
                    'llc_misses': 15000 * (1 + (n + 1) % 2),
                    'llc_mpki': 15.0}}, derived)
            sampler.record(instances, {}, derived)
            classified.append(sampler.memory_bound())
        self.assertEqual([set()] * (passes - 1) + [{MEM}], classified)
        self.assertEqual(('mpki', 15.0),
                         (sampler.last[MEM].source, sampler.last[MEM].mpki))
        self.assertNotIn(CPU, sampler.states)
        hypervisor.vcpu_threads.assert_not_called()


class FormatDecisionsTest(testtools.TestCase):

    def test_json(self):
        audited = repinning.Decision(
            uuid='a', name='db', workload='unknown', movable=False,
            reason='dedicated', action=repinning.AUDIT, current={0: (7,)},
            desired={0: (7,)}, allowed={0: (7,)})
        unchanged = repinning.Decision(
            uuid='b', name='web', workload='cpu', movable=True,
            reason="cpu: Nova's CPUs", action=repinning.RESTORE,
            current={0: (0, 1)}, desired={0: (0, 1)}, allowed={0: (0, 1)})
        self.assertEqual({
            'a': {'name': 'db', 'workload': 'unknown', 'movable': False,
                  'action': 'audit', 'domains': [], 'reason': 'dedicated',
                  'current': {'0': '7'}, 'desired': {'0': '7'}},
            'b': {'name': 'web', 'workload': 'cpu', 'movable': True,
                  'action': 'keep', 'domains': [],
                  'reason': "cpu: Nova's CPUs",
                  'current': {'0': '0-1'}, 'desired': {'0': '0-1'}}},
            repin_agent.decisions_document([audited, unchanged]))

    def test_table(self):
        d = repinning.Decision(
            uuid='0123456789abcdef', name='web-1', workload='memory',
            movable=True, reason='memory-bound: All-share',
            action=repinning.REPIN, current={0: (0, 1, 2, 3), 1: (0, 1, 2, 3)},
            desired={0: (2, 3), 1: (2, 3)},
            allowed={0: (0, 1, 2, 3), 1: (0, 1, 2, 3)}, domains=('L2-1',),
            share='all')
        result = actuator.ApplyResult(succeeded=[('x', 0, (2, 3))] * 2)
        self.assertEqual(
            'INSTANCE  NAME   WORKLOAD  ACTION  CURRENT  DESIRED  '
            'DOMAINS  REASON\n'
            '01234567  web-1  memory    repin   0-1:0-3  0-1:2-3  '
            'L2-1     memory-bound: All-share\n'
            'repins: 2 ok, 0 failed, 0 deferred, 0 dry-run',
            repin_agent.format_decisions([d], result))
