"""The classifier's sampling windows (trials), pure: exact passes."""

import testtools

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.cachedomain import memclass
from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.cachedomain import trials

DOMAINS = (cachedomain_model.Domain('L2-0', (0, 1)),
           cachedomain_model.Domain('L2-1', (2, 3)))
ALL_CPUS = (0, 1, 2, 3)
CONFIG = memclass.ClassifierConfig(dwell=1)  # 8 samples a side


def instance(uuid, live=None):
    nova = domain_xml.NovaDomain(
        uuid=uuid, name=uuid, instance_name=uuid, flavor='m1', vcpus=2,
        allowed={0: ALL_CPUS, 1: ALL_CPUS}, nova_pinned=False,
        dedicated=False)
    return hv.Instance(nova=nova, live=live or dict(nova.allowed))


def counters(uuid, cpi, **extra):
    return {'%s/%d' % (uuid, v): dict(cpi=cpi, **extra) for v in (0, 1)}


def decide(insts, specs, sampler):
    """One pass of the pure policy: plan, decisions, then the window."""
    plan_input, why = repinning.build_plan_input(
        type('S', (), {'domains': DOMAINS})(), ALL_CPUS, insts, specs,
        classified=sampler.memory_bound())
    plan = cachedomain.plan(plan_input)
    decisions = repinning.decisions_from_plan(plan_input, plan, insts, why)
    return plan_input, plan, decisions


class ShareModeTest(testtools.TestCase):

    def test_share_mode(self):
        for live, mode in [({0: (0, 1), 1: (0,)}, 'all'),
                           ({0: (0, 1), 1: (2,)}, 'partial'),
                           ({0: (0, 1, 2, 3)}, 'partial'),
                           ({}, 'partial')]:
            self.assertEqual(mode, trials.share_mode(live, DOMAINS), live)

    def test_bad_arguments(self):
        self.assertRaises(ValueError, trials.Sampler, (), window_passes=0)
        self.assertRaises(ValueError, trials.Sampler, (), interval_s=-1)


class TrialTest(testtools.TestCase):

    def test_window_lifecycle_and_interval(self):
        sampler = trials.Sampler(DOMAINS, CONFIG, window_passes=2,
                                 interval_s=100.0)
        vm = instance('a')
        # Partial-share samples only: the next window is All-share in the
        # first domain the plan leaves Empty.
        self.assertEqual([], sampler.record([vm], {}, counters('a', 1.0)))
        plan_input, plan, decisions = decide([vm], {}, sampler)
        trial = sampler.step(decisions, plan_input, plan, {}, now=0.0)
        self.assertEqual(trials.Trial('a', 'all', 'L2-0', 2), trial)
        got = trials.with_trial(decisions, trial, plan_input.domains)
        self.assertEqual(
            (repinning.REPIN, {0: (0, 1), 1: (0, 1)}, ('L2-0',), 'all',
             'sampling all-share for the classifier'),
            (got[0].action, got[0].desired, got[0].domains, got[0].share,
             got[0].reason))
        # Two passes, then the plan's decision again; no new window for
        # 'a' within the interval.
        self.assertIs(trial, sampler.step(decisions, plan_input, plan, {},
                                          now=10.0))
        self.assertIsNone(sampler.step(decisions, plan_input, plan, {},
                                       now=20.0))
        self.assertEqual({'a': 20.0}, sampler.trial_ended)
        self.assertIsNone(sampler.step(decisions, plan_input, plan, {},
                                       now=119.0))
        self.assertEqual(trials.Trial('a', 'all', 'L2-0', 2),
                         sampler.step(decisions, plan_input, plan, {},
                                      now=120.0))
        self.assertEqual([('a', 'all', 'L2-0')] * 2, sampler.history)

    def test_declared_and_mpki_only_vms_get_no_window(self):
        sampler = trials.Sampler(DOMAINS, CONFIG)
        vms = [instance('a'), instance('b')]
        specs = {'a': {repinning.WORKLOAD_SPEC: 'cpu'}}
        sampler.record(vms, specs, dict(
            counters('a', 1.0),
            **{'b/0': {'llc_misses': 1, 'instructions': 10 ** 6}}))
        plan_input, plan, decisions = decide(vms, specs, sampler)
        self.assertIsNone(sampler.step(decisions, plan_input, plan, specs,
                                       now=0.0))
        self.assertEqual({'b'}, set(sampler.samples))
        self.assertIs(decisions,
                      trials.with_trial(decisions, None, DOMAINS))

    def test_verdict_goes_to_the_planner_as_a_set(self):
        sampler = trials.Sampler(DOMAINS, CONFIG)
        vm_all = instance('a', live={0: (0, 1), 1: (0, 1)})
        # Four All-share passes (two vCPUs each), then four Partial-share
        # passes fill both sides: one vote, memory-bound (dwell 1).
        for n in range(4):
            self.assertEqual([], sampler.record(
                [vm_all], {}, counters('a', 0.5 + 0.01 * n)))
        vm = instance('a')
        for n in range(3):
            self.assertEqual([], sampler.record(
                [vm], {}, counters('a', 3.2 + 0.01 * n)))
        changed = sampler.record([vm], {}, counters('a', 3.3))
        self.assertEqual([('a', memclass.MEMORY)],
                         [(u, d.state.vm_class) for u, d in changed])
        self.assertEqual({'a'}, sampler.memory_bound())
        self.assertEqual(set(), sampler.not_memory_bound())
        plan_input, _plan, decisions = decide([vm], {}, sampler)
        self.assertEqual('memory', plan_input.vms[0].workload)
        self.assertEqual(('memory-bound: All-share', ('L2-0',)),
                         (decisions[0].reason, decisions[0].domains))
        self.assertEqual('memory', sampler.to_dict()['a']['class'])
        # Partial-share no slower than All-share: not memory-bound.
        for n in range(4):
            sampler.record([vm_all], {}, counters('a', 0.5 + 0.01 * n))
        for n in range(4):
            changed = sampler.record([vm], {}, counters('a', 0.5 + 0.01 * n))
        self.assertEqual([('a', memclass.OTHER)],
                         [(u, d.state.vm_class) for u, d in changed])
        self.assertEqual((set(), {'a'}), (sampler.memory_bound(),
                                          sampler.not_memory_bound()))
        # Gone from the host: forgotten.
        sampler.record([], {}, {})
        self.assertEqual({}, sampler.to_dict())
        self.assertEqual(set(), sampler.not_memory_bound())
