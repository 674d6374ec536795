"""``[agent] counter_trace_dir``: per-instance counter traces, replayed.

For clouds without a hardware PMU: the counts come from a file per
instance, everything after them is the agent's own (the repin step's
path: ``test_agent.py``).
"""

import collections
import json
import os

import fixtures
import testtools

from nova_cacheaware.cachedomain import counters

Instance = collections.namedtuple('Instance', 'uuid live')
Domain = collections.namedtuple('Domain', 'id cpus')
#: Two one-CPU domains: a vCPU on both CPUs is Partial-share.
DOMAINS = (Domain('L2-0', (0,)), Domain('L2-1', (1,)))
MEM = '11111111-1111-1111-1111-111111111111'
CPU = '22222222-2222-2222-2222-222222222222'

#: A memory-bound VM: 15 LLC misses per 1000 instructions, every pass.
MEMORY_TRACE = {'passes': [
    {'mem/0': {'instructions': 1000000, 'llc_misses': 15000}},
    {'mem/0': {'instructions': 2000000, 'llc_misses': 30000}},
]}
#: A trace recorded in both share modes (CPI 0.5 All-share, 3.0 Partial).
MODES_TRACE = {'passes': [
    {'vm/0': {'all': {'cycles': 500, 'instructions': 1000},
              'partial': {'cycles': 3000, 'instructions': 1000}},
     'vm/1': {'all': {'cycles': 600, 'instructions': 1000},
              'partial': {'cycles': 3100, 'instructions': 1000}}},
]}


class TraceDirCounterSourceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.cachedomain.counters'))
        self.source = counters.TraceDirCounterSource(self.dir, DOMAINS)

    def write(self, uuid, trace, mtime_ns=None):
        path = os.path.join(self.dir, '%s.json' % uuid)
        with open(path, 'w') as f:
            f.write(trace if isinstance(trace, str) else json.dumps(trace))
        if mtime_ns is not None:
            os.utime(path, ns=(mtime_ns, mtime_ns))

    def test_not_per_thread(self):
        self.assertFalse(self.source.per_thread)
        self.assertTrue(self.source.available())
        self.assertEqual({}, self.source.sample({'%s/0' % MEM: 1}))

    def test_replays_cumulative_counts_in_a_loop(self):
        self.write(MEM, MEMORY_TRACE)
        mem = Instance(MEM, {0: (0,)})
        other = Instance(CPU, {0: (0,)})
        got = [self.source.sample_instances([mem, other]) for _ in range(3)]
        key = '%s/0' % MEM
        self.assertEqual([
            {key: {'instructions': 1000000, 'llc_misses': 15000}},
            {key: {'instructions': 3000000, 'llc_misses': 45000}},
            # After the last pass, the first again: the counts grow on.
            {key: {'instructions': 4000000, 'llc_misses': 60000}},
        ], got)
        self.assertIn('replaying counter trace %s for instance %s (2 passes)'
                      % (os.path.join(self.dir, MEM + '.json'), MEM),
                      self.log.output)

    def test_share_mode_of_the_live_pins_picks_the_deltas(self):
        self.write(MEM, MODES_TRACE)
        both = {0: (0, 1), 1: (0, 1)}
        one = {0: (1,), 1: (1,)}
        first = self.source.sample_instances([Instance(MEM, both)])
        second = self.source.sample_instances([Instance(MEM, one)])
        self.assertEqual({'%s/0' % MEM: {'cycles': 3000,
                                         'instructions': 1000},
                          '%s/1' % MEM: {'cycles': 3100,
                                         'instructions': 1000}}, first)
        self.assertEqual({'%s/0' % MEM: {'cycles': 3500,
                                         'instructions': 2000},
                          '%s/1' % MEM: {'cycles': 3700,
                                         'instructions': 2000}}, second)

    def test_vcpus_the_trace_lacks_get_nothing(self):
        self.write(MEM, MEMORY_TRACE)
        got = self.source.sample_instances([Instance(MEM, {0: (0,),
                                                           1: (1,)})])
        self.assertEqual(['%s/0' % MEM], sorted(got))

    def test_a_changed_file_starts_again(self):
        self.write(MEM, MEMORY_TRACE, mtime_ns=10 ** 18)
        mem = Instance(MEM, {0: (0,)})
        self.source.sample_instances([mem])
        self.write(MEM, {'passes': [{'x/0': {'instructions': 7}}]},
                   mtime_ns=2 * 10 ** 18)
        self.assertEqual({'%s/0' % MEM: {'instructions': 7}},
                         self.source.sample_instances([mem]))

    def test_gone_instances_and_files_are_forgotten(self):
        self.write(MEM, MEMORY_TRACE)
        mem = Instance(MEM, {0: (0,)})
        self.source.sample_instances([mem])
        self.source.sample_instances([])
        self.assertEqual({}, self.source._replays)
        os.unlink(os.path.join(self.dir, MEM + '.json'))
        self.assertEqual({}, self.source.sample_instances([mem]))

    def test_bad_files_are_ignored_once(self):
        for uuid, text, why in (
                (MEM, '{"passes": [', 'Expecting value'),
                (CPU, json.dumps({'passes': [{'a/0': {'cycles': 1},
                                              'b/0': {'cycles': 1}}]}),
                 'it holds the vCPUs of 2 VMs (a, b), not of one')):
            self.write(uuid, text)
            inst = Instance(uuid, {0: (0,)})
            self.assertEqual({}, self.source.sample_instances([inst]))
            self.assertEqual({}, self.source.sample_instances([inst]))
            path = os.path.join(self.dir, uuid + '.json')
            self.assertEqual(1, self.log.output.count(
                'counter trace %s is ignored' % path))
            self.assertIn(why, self.log.output)

    def test_loop_of_an_empty_trace_gives_nothing(self):
        source = counters.TraceCounterSource({'passes': []}, loop=True)
        self.assertEqual({}, source.sample({'a/0': 1}))
