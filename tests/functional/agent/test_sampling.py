"""The classifier's sampling windows, end to end on test:///default.

This machine has no PMU, so a counter-source double stands in for
perf_event_open: it reads each VM's live pins from libvirt and counts
cycles at study 000's CPI for the mode the VM is in (a memory-bound VM:
0.5 All-share, 3.2 Partial-share; a CPU-bound one: 1.0 in both).
"""

import json
import os

from nova_cacheaware.agent import hypervisor
from nova_cacheaware.cachedomain import counters
from nova_cacheaware.cachedomain import memclass
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.cachedomain import sampling
from nova_cacheaware.cachedomain import trials
from tests.functional.agent import base

FOUR = base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))
INSTRUCTIONS = 10 ** 9


class ThreadsHypervisor(hypervisor.LibvirtHypervisor):
    """The test driver has no vCPU threads: make up stable ids."""

    def __init__(self, uri, domain_filter):
        super().__init__(uri, domain_filter=domain_filter)
        self.tids = {}

    def vcpu_threads(self, uuid):
        base_tid = self.tids.setdefault(uuid, 1000 * (len(self.tids) + 1))
        return {0: base_tid, 1: base_tid + 1}


class StudyCounters(counters.CounterSource):
    """Cumulative cycles/instructions at the CPI of the VM's share mode."""

    def __init__(self, hv, memory_bound):
        self.hv = hv
        self.memory_bound = memory_bound
        self.totals = {}
        self.samples = 0

    def sample(self, threads):
        live = {i.uuid: i.live for i in self.hv.list_instances()}
        domains = FOUR.domains
        out = {}
        for key in sorted(threads):
            uuid = key.split('/')[0]
            mode = trials.share_mode(live[uuid], domains)
            self.samples += 1
            # A little deterministic spread, like real samples.
            jitter = 1.0 + 0.01 * (self.samples % 5)
            if uuid in self.memory_bound:
                cpi = (0.5 if mode == trials.ALL else 3.2) * jitter
            else:
                cpi = 1.0 * jitter
            before = self.totals.get(key, {'cycles': 0, 'instructions': 0})
            self.totals[key] = {
                'cycles': before['cycles'] + int(cpi * INSTRUCTIONS),
                'instructions': before['instructions'] + INSTRUCTIONS}
            out[key] = dict(self.totals[key])
        return out


class SamplingTest(base.AgentTestCase):

    def make_hypervisor(self):
        h = ThreadsHypervisor(self.uri, domain_filter=self.mine.__contains__)
        self.addCleanup(h.stop)
        return h

    def test_auto_vms_sampled_classified_and_restored(self):
        mem = self.define(2, cpuset='0-7')
        cpu = self.define(2, cpuset='0-7')
        clock = [0.0]
        sampler = sampling.ShareSampler(
            FOUR, memclass.ClassifierConfig(dwell=1), window_passes=4,
            interval_s=3600.0, clock=lambda: clock[0])
        agent = self.agent(FOUR)
        agent.repin.counter_source = StudyCounters(self.hv, {mem})
        agent.repin.classifier = sampler
        passes = []
        for _ in range(12):
            one = agent.reconcile()
            passes.append({d.uuid: (d.reason, d.workload)
                           for d in one.decisions})
            clock[0] += 10.0
        # One trial at a time, All-share in the first Empty domain, each
        # VM once (the interval is an hour).
        self.assertEqual(
            [(mem, 'all', 'L2-0'), (cpu, 'all', 'L2-0')]
            if mem < cpu else
            [(cpu, 'all', 'L2-0'), (mem, 'all', 'L2-0')], sampler.history)
        # Pass 1 has no CPI yet (counters need two readings); the first
        # trial runs passes 2-5.
        first = min(mem, cpu)
        self.assertEqual(
            ["unknown: Nova's CPUs"]
            + ['sampling all-share for the classifier'] * 4,
            [p[first][0] for p in passes[:5]])
        self.assertNotEqual('sampling all-share for the classifier',
                            passes[5][first][0])
        # The memory-bound VM: CPI 0.5 vs 3.2, classified, pinned
        # All-share and reported for MEMBOUND reserved.
        self.assertEqual({mem}, sampler.memory_bound())
        self.assertEqual(memclass.MEMORY, sampler.states[mem].vm_class)
        self.assertEqual('cpi-test', sampler.last[mem].source)
        self.assertEqual(('memory-bound: All-share', 'memory'),
                         passes[-1][mem])
        self.assertEqual({0: (0, 1), 1: (0, 1)}, self.live_pins(mem))
        self.assertEqual({'L2-0': 1}, agent.placement_side.membound_reserved(
            one.decisions, agent.repin.classifier))
        # The CPU-bound VM: same CPI in both modes, stays 'auto', back on
        # Nova's CPUs after its window.
        self.assertEqual(memclass.OTHER, sampler.states[cpu].vm_class)
        self.assertEqual({0: tuple(range(8)), 1: tuple(range(8))},
                         self.live_pins(cpu))
        self.assertEqual(repinning.RESTORE,
                         {d.uuid: d for d in one.decisions}[cpu].action)

        # An hour later the memory-bound VM is checked again, Partial-share
        # on Nova's CPUs; its MEMBOUND slot stays reserved meanwhile.
        clock[0] += 3600.0
        for _ in range(12):
            one = agent.reconcile()
            got = {d.uuid: d for d in one.decisions}
            if got[mem].reason == 'sampling partial-share for the classifier':
                break
        self.assertEqual({0: tuple(range(8)), 1: tuple(range(8))},
                         self.live_pins(mem))
        self.assertEqual({'L2-0': 1}, agent.placement_side.membound_reserved(
            one.decisions, agent.repin.classifier))
        self.assertEqual((mem, 'partial', ''), sampler.history[-1])

    def test_no_counters_no_trial(self):
        self.define(2, cpuset='0-7')
        sampler = sampling.ShareSampler(FOUR)
        agent = self.agent(FOUR)
        agent.repin.classifier = sampler
        for _ in range(3):
            one = agent.reconcile()
        self.assertEqual([], sampler.history)
        self.assertEqual(0, one.result.repins)


TRACE = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures',
                     'counter_traces', 'study000_two_vms.json')


class RecordedTraceTest(base.AgentTestCase):
    """A recorded counter trace replayed through the agent's own path.

    :class:`~nova_cacheaware.cachedomain.counters.TraceCounterSource` answers
    the repin step's ``counter_source``; ``RepinStep.sample_counters``,
    ``derived`` and the sampler run as in production, with the
    host counting CPI only, LLC misses only, or both.
    """

    def make_hypervisor(self):
        h = ThreadsHypervisor(self.uri, domain_filter=self.mine.__contains__)
        self.addCleanup(h.stop)
        return h

    def replay(self, events, passes=20):
        mem = self.define(2, cpuset='0-7')
        cpu = self.define(2, cpuset='0-7')
        domains = FOUR.domains

        def mode_of(key):
            live = {i.uuid: i.live for i in self.hv.list_instances()}
            return trials.share_mode(live[key.split('/')[0]], domains)

        with open(TRACE) as f:
            trace = json.load(f)
        clock = [0.0]
        sampler = sampling.ShareSampler(
            FOUR, memclass.ClassifierConfig(dwell=1), window_passes=4,
            interval_s=3600.0, clock=lambda: clock[0])
        agent = self.agent(FOUR)
        agent.repin.counter_source = counters.TraceCounterSource(
            trace, names={'mem': mem, 'cpu': cpu}, mode_of=mode_of,
            events=events)
        agent.repin.classifier = sampler
        sources = {mem: [], cpu: []}
        for _ in range(passes):
            one = agent.reconcile()
            clock[0] += 10.0
            for uuid in sources:
                last = sampler.last.get(uuid)
                if last is not None and (not sources[uuid]
                                         or sources[uuid][-1] is not last):
                    sources[uuid].append(last)
        return mem, cpu, sampler, one, sources

    def test_cpi_only(self):
        mem, cpu, sampler, one, sources = self.replay(
            ('cycles', 'instructions'))
        self.assertEqual({mem}, sampler.memory_bound())
        self.assertEqual(memclass.OTHER, sampler.states[cpu].vm_class)
        # Every vote is the CPI test's; both VMs had a sampling trial.
        self.assertEqual({'cpi-test'}, {d.source for v in sources.values()
                                        for d in v})
        self.assertEqual(
            {(mem, 'all', 'L2-0'), (cpu, 'all', 'L2-0')},
            set(sampler.history))
        self.assertEqual(('memory-bound: All-share', 'memory'),
                         {d.uuid: (d.reason, d.workload)
                          for d in one.decisions}[mem])

    def test_mpki_only(self):
        mem, cpu, sampler, one, sources = self.replay(
            ('instructions', 'llc_misses'))
        self.assertEqual({mem}, sampler.memory_bound())
        self.assertEqual(memclass.OTHER, sampler.states[cpu].vm_class)
        self.assertEqual({'mpki'}, {d.source for v in sources.values()
                                    for d in v})
        # MPKI needs no Partial/All-share phase: no trial ever started,
        # and the VM classified memory-bound is then pinned All-share.
        self.assertEqual([], sampler.history)
        self.assertGreater(min(d.mpki for d in sources[mem]), 10.0)
        self.assertLess(max(d.mpki for d in sources[cpu]), 3.0)
        self.assertEqual({0: (0, 1), 1: (0, 1)}, self.live_pins(mem))

    def test_both(self):
        mem, cpu, sampler, one, sources = self.replay(
            ('cycles', 'instructions', 'llc_misses'))
        self.assertEqual({mem}, sampler.memory_bound())
        self.assertEqual(memclass.OTHER, sampler.states[cpu].vm_class)
        # MPKI votes while the CPI test lacks samples (every 8 vCPU
        # samples), the CPI test once both share modes of a VM were
        # sampled (which VM's depends on the trial order: uuids); every
        # vote agrees.
        for uuid, vote in ((mem, memclass.MEMORY), (cpu, memclass.OTHER)):
            self.assertEqual('mpki', sources[uuid][0].source)
            self.assertEqual({vote}, {d.vote for d in sources[uuid]})
        self.assertIn('cpi-test', {d.source for d in sources[mem]
                                   + sources[cpu]})
        self.assertEqual(2, len(sampler.history))
        dump = sampler.to_dict()
        self.assertEqual('memory', dump[mem]['class'])
        self.assertEqual('other', dump[cpu]['class'])
