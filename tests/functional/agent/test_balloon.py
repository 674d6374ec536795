"""The ``balloon`` capability on libvirt's test:/// driver.

The test driver applies ``setMemoryFlags(LIVE)`` (``info()`` shows it) and
has canned balloon statistics (``available - usable`` = 1 GiB), but no guest
agent: the guests here are scripts that stand in for the helper's output,
honest or lying, behind the same ``start``/``collect`` interface the real
guest-exec adapter has.  The real guest is in test_balloon_qemu.py.
"""

import contextlib
import io
import json
import uuid as uuid_mod

import fixtures

from nova_cacheaware.agent import capability
from nova_cacheaware.agent import guest_agent
from nova_cacheaware.balloon import agent as balloon
from nova_cacheaware.balloon import model as balloon_model
from nova_cacheaware.balloon import view as balloon_view
from nova_cacheaware.cmd import agent as agent_cmd
from nova_cacheaware import exception
from tests.fixtures import nova_domains
from tests.functional.agent import base

FOUR = base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))
HIT = {'cacheaware:memory_policy': 'hit_ratio'}
USED_MIB = 1024   # the test driver's canned available - usable


def report(uptime, memory_mib, read_kib, fetched_kib, free_mib=16,
           cache_mib=None, pgpgin=0, **over):
    """A helper line as an honest guest of ``memory_mib`` would print."""
    total = memory_mib * 1024 - 40 * 1024
    cache = (cache_mib * 1024 if cache_mib is not None
             else total - USED_MIB * 1024 - free_mib * 1024)
    doc = {'v': 1, 'uptime_s': uptime, 'interval_s': 5,
           'read_kib': read_kib, 'fetched_kib': fetched_kib,
           'pgpgin_kib': pgpgin, 'mem_total_kib': total,
           'mem_free_kib': free_mib * 1024, 'cached_kib': max(0, cache),
           'buffers_kib': 0, 'committed_as_kib': USED_MIB * 1024}
    doc.update(over)
    return json.dumps(doc) + '\n'


class GuestStatsMemory(balloon_view.LibvirtMemory):
    """libvirt's memory, with the balloon statistics a guest would send.

    The test driver has none for the domains a test defines; the guest's
    use is ``USED_MIB`` unless a test says otherwise.
    """

    def __init__(self, hv):
        super().__init__(hv)
        self.used = {}
        #: ``{uuid: MiB}``: the balloon size a lying guest's driver claims.
        self.claims = {}
        self.sets = []

    def read(self, uuid):
        mem = super().read(uuid)
        return balloon_view.DomainMemory(
            flavor_mib=mem.flavor_mib,
            current_mib=self.claims.get(uuid, mem.current_mib),
            used_mib=self.used.get(uuid, USED_MIB))

    def set(self, uuid, mib):
        self.sets.append((uuid, mib))
        super().set(uuid, mib)


class ScriptedHelper:
    """``{uuid: fn(n, memory_mib) -> stdout}``; fn may raise (no agent)."""

    def __init__(self, hv):
        self.hv = hv
        self.scripts = {}
        self.runs = {}

    def _memory(self, uuid):
        return self.hv.connection().lookupByUUIDString(uuid).info()[2] // 1024

    def start(self, uuid):
        n = self.runs.get(uuid, 0)
        self.runs[uuid] = n + 1
        fn = self.scripts[uuid]
        return fn(n, self._memory(uuid))   # "runs" at once

    def collect(self, uuid, token):
        if isinstance(token, Exception):
            raise token
        return token


def honest(ratio):
    """A guest reading 100 MiB per sample at ``ratio``, counters moving."""
    def fn(n, memory):
        return report(100 + 10 * n, memory, 102400,
                      int(102400 * (1 - ratio)), pgpgin=1000 * n)
    return fn


class BalloonTestDriverTest(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.now = [0.0]
        self.helper = ScriptedHelper(self.hv)
        self.mem = GuestStatsMemory(self.hv)

    def define_mem(self, flavor_mib, current_mib=None, extra=HIT):
        uuid = str(uuid_mod.uuid4())
        name = 'nca-%s' % uuid[:8]
        xml = nova_domains.domain_xml(name, 1, cpuset='0-7', uuid=uuid)
        xml = xml.replace("<memory unit='MiB'>64</memory>",
                          "<memory unit='MiB'>%d</memory><currentMemory "
                          "unit='MiB'>%d</currentMemory>"
                          % (flavor_mib, current_mib or flavor_mib))
        xml = xml.replace('<nova:memory>64</nova:memory>',
                          '<nova:memory>%d</nova:memory>' % flavor_mib)
        dom = self.hv.connection().defineXML(xml)
        self.addCleanup(self._remove, uuid)
        self.specs[uuid] = dict(extra)
        self.mine.add(uuid)
        dom.create()
        return uuid

    def memory(self, uuid):
        return self.dom(uuid).info()[2] // 1024

    def capability(self, policy='default', pool_mib=1024, step=512,
                   budget=100000, floor=256, margin=64, gamma=0.0):
        params = balloon_model.RoundParams(
            policy=policy, pool_mib=pool_mib, margin_mib=margin,
            max_step_mib=step, report_interval_s=gamma, min_report_s=5.0,
            max_report_s=60.0)
        return balloon.BalloonCapability(
            params, self.mem, self.helper,
            floor_mib=floor, interval_s=5.0,
            max_change_mib_per_period=budget, rate_period_s=60.0,
            clock=lambda: self.now[0])

    def rounds(self, agent, n):
        reports = []
        for _ in range(n):
            reports.append(agent.reconcile().capabilities['balloon'])
            self.now[0] += 5.0
        return reports

    def test_low_ratio_grows_full_ratio_shrinks_release_restores(self):
        low = self.define_mem(4096, current_mib=3072)
        full = self.define_mem(4096)
        other = self.define_mem(4096, extra={})       # not opted in
        self.helper.scripts[low] = lambda n, m: report(
            100 + 10 * n, m, 102400, 51200, free_mib=0, cache_mib=1500)
        self.helper.scripts[full] = lambda n, m: report(
            100 + 10 * n, m, 102400, 0, free_mib=2048, cache_mib=400)
        cap = self.capability(pool_mib=1024)
        agent = self.agent(FOUR)
        agent.capabilities = (cap,)
        first, second = self.rounds(agent, 2)
        # Round 0 only starts the helpers: nothing moves without a report.
        self.assertEqual({'pending'}, {v['status']
                                       for v in first['vms'].values()})
        self.assertEqual(3072, first['vms'][low]['memory_mib'])
        self.assertEqual(set([low, full]), set(second['vms']))
        self.assertEqual(3584, self.memory(low))   # one 512-MiB step
        self.assertEqual(3584, self.memory(full))
        self.assertEqual(0.5, second['vms'][low]['hit_ratio'])
        self.assertEqual(4096, self.memory(other))
        # A pass sooner than interval_s does nothing.
        self.now[0] -= 2.5
        early = agent.reconcile().capabilities['balloon']
        self.assertEqual(2.5, early['next_round_in_s'])
        self.now[0] += 2.5
        [third] = self.rounds(agent, 1)
        self.assertEqual(4096, self.memory(low))
        self.assertEqual(3072, self.memory(full))
        self.assertIn('balloon: %s ok 3584 -> 4096 MiB (target 4096, low '
                      '1088, flavor 4096, hit ratio 0.500)' % low,
                      cap.format_report(third))
        self.assertEqual(balloon_model.HeldMemory(held_mib=1024, instances=2),
                         cap.host_state(third))
        agent.release_capabilities()
        self.assertEqual((4096, 4096), (self.memory(low), self.memory(full)))

    def test_adaptive_reporting_interval(self):
        # Study 002's gamma = 10 s, rounds (delta) every 5 s: a VM under
        # the threshold reports every 10 s, one over it every 15 s, then
        # every 5 s from its third report over it in a row.
        low = self.define_mem(4096, current_mib=3072)
        full = self.define_mem(4096)
        self.helper.scripts[low] = honest(0.5)
        self.helper.scripts[full] = honest(1.0)
        agent = self.agent(FOUR)
        agent.capabilities = (self.capability(gamma=10.0),)
        reports = self.rounds(agent, 12)

        def used(uuid):
            return ''.join('R' if r['vms'][uuid]['status'] == 'ok' else '.'
                           for r in reports)

        self.assertEqual('.R.R.R.R.R.R', used(low))
        self.assertEqual('.R..R..RRRRR', used(full))
        self.assertEqual([None, 10.0, 5.0, 10.0],
                         [r['vms'][low]['next_report_in_s']
                          for r in reports[:4]])
        self.assertEqual([None, 15.0, 10.0, 5.0],
                         [r['vms'][full]['next_report_in_s']
                          for r in reports[:4]])

    def test_opting_out_restores_and_silence_restores(self):
        quiet = self.define_mem(4096, current_mib=2048)
        leaving = self.define_mem(4096, current_mib=3000)
        self.helper.scripts[quiet] = lambda n, m: guest_agent.\
            GuestAgentUnavailable(uuid=quiet, reason='no agent')
        self.helper.scripts[leaving] = honest(1.0)
        agent = self.agent(FOUR)
        agent.capabilities = (self.capability(step=512),)
        first, second = self.rounds(agent, 2)
        # Silent (its helper could not run): back towards flavor RAM, one
        # step a round.
        self.assertEqual('silent', second['vms'][quiet]['status'])
        self.assertEqual(2560, self.memory(quiet))
        self.specs[leaving] = {}                       # resized away
        self.rounds(agent, 1)
        self.assertEqual(4096, self.memory(leaving))
        self.assertEqual(3072, self.memory(quiet))

    def test_lying_guests_never_win_more_than_flavor_nor_starve_others(self):
        floor = 1536
        victim = self.define_mem(4096, current_mib=2048,
                                 extra=dict(HIT, **{
                                     'cacheaware:memory_min_mb':
                                     str(floor)}))
        liars = {
            'zero': self.define_mem(2048, current_mib=1536),
            'nan': self.define_mem(2048, current_mib=1536),
            'backwards': self.define_mem(2048, current_mib=1536),
            'jump': self.define_mem(2048, current_mib=1536),
            'huge': self.define_mem(2048, current_mib=1536),
        }
        self.helper.scripts[victim] = honest(1.0)
        # 0 % forever, with a cache big enough to look like it needs more.
        self.helper.scripts[liars['zero']] = lambda n, m: report(
            100 + 10 * n, m, 102400, 102400, free_mib=0, cache_mib=800)
        self.helper.scripts[liars['nan']] = lambda n, m: report(
            100 + 10 * n, m, 10, 10,
            hit_ratio=float('nan') if n % 2 else -0.5)
        self.helper.scripts[liars['backwards']] = lambda n, m: report(
            1000 - 10 * n, m, 102400, 0, pgpgin=10 ** 9 - 10 ** 6 * n)
        self.helper.scripts[liars['jump']] = lambda n, m: report(
            100 + n, m, 102400, 0, pgpgin=(10 ** 15) * n)
        self.helper.scripts[liars['huge']] = lambda n, m: report(
            100 + 10 * n, m, 2 ** 62, 2 ** 61, mem_total_kib=2 ** 40)
        cap = self.capability(policy='study_b', pool_mib=4096, step=4096)
        agent = self.agent(FOUR)
        agent.capabilities = (cap,)
        statuses = {name: set() for name in liars}
        for rep in self.rounds(agent, 8):
            for name, uuid in liars.items():
                self.assertLessEqual(self.memory(uuid), 2048, name)
                statuses[name].add(rep['vms'][uuid]['status'])
            self.assertGreaterEqual(self.memory(victim), floor)
            # Held back at the start: 2048 + 5 * 512 = 4608 > the pool.
            self.assertLessEqual(rep['held_mib'], 4608)
        # Every lie was caught (the jump/backwards liars pass once, with
        # nothing to compare against, then fail on every later report).
        self.assertEqual({'pending', 'invalid'}, statuses['nan'])
        self.assertEqual({'pending', 'invalid'}, statuses['huge'])
        self.assertIn('invalid', statuses['backwards'])
        self.assertIn('invalid', statuses['jump'])
        self.assertEqual({'pending', 'ok'}, statuses['zero'])

    def test_lying_balloon_sizes_and_use_are_bounded(self):
        # The balloon's "actual" and the guest's use come from the guest's
        # driver: claims of 0 MiB and of 10x the flavor, with a use of 0
        # and of 10x, against honest guests with idle memory.
        honest_a = self.define_mem(2048)
        honest_b = self.define_mem(2048)
        zero = self.define_mem(2048)
        huge = self.define_mem(2048)
        for uuid in (honest_a, honest_b):
            self.helper.scripts[uuid] = lambda n, m: report(
                100 + 10 * n, m, 102400, 0, free_mib=1024, cache_mib=400)
        for uuid in (zero, huge):
            self.helper.scripts[uuid] = lambda n, m: report(
                100 + 10 * n, m, 102400, 102400, free_mib=0, cache_mib=800)
        self.mem.claims = {zero: 0, huge: 20480}
        self.mem.used = {zero: 0.0, huge: 20480.0}
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.balloon.agent'))
        cap = self.capability(pool_mib=1024, step=256)
        agent = self.agent(FOUR)
        agent.capabilities = (cap,)
        reports = self.rounds(agent, 6)
        # Never above a flavor, never a refused libvirt call.
        self.assertEqual([], [s for s in self.mem.sets if s[1] > 2048])
        self.assertNotIn('cannot set', log.output)
        for rep in reports:
            for uuid in (zero, huge):
                self.assertLessEqual(rep['vms'][uuid]['was_mib'], 2048)
        # Each lie is logged once, not every round.
        self.assertEqual(1, log.output.count(
            'balloon: %s claims a balloon of 0 MiB (flavor 2048 MiB); '
            'assuming 2048 MiB' % zero))
        self.assertEqual(1, log.output.count(
            'claims a balloon of 20480 MiB'))
        # The pool bounds what all of them give up together: the liars
        # (starving by their reports) grow back from the honest guests no
        # more than the pool allows, never past their flavor.
        last = reports[-1]
        self.assertLessEqual(last['held_mib'], 1024)
        self.assertGreaterEqual(self.memory(honest_a) + self.memory(honest_b),
                                2 * 2048 - 1024)

    def test_entry_point_and_options(self):
        conf = agent_cmd.make_conf([])
        self.assertIn('balloon', capability.available())
        conf.set_override('pool_mib', 512, group='balloon')
        [cap] = capability.load(['balloon'], conf, self.hv)
        self.assertEqual(512, cap.params.pool_mib)
        self.assertEqual('default', cap.params.policy)
        conf.set_override('sample_s', 10, group='balloon')
        self.assertRaises(exception.InvalidInput, capability.load,
                          ['balloon'], conf, self.hv)
        self.assertRaises(ValueError, conf.set_override, 'policy', 'greedy',
                          group='balloon')

    def test_agent_once_with_the_capability_enabled(self):
        # The test driver has no guest agent: the guest is silent, so the
        # balancer restores it towards its flavor RAM, one step.
        uuid = self.define_mem(4096, current_mib=2048)
        tmp = self.useFixture(fixtures.TempDir())
        with open(tmp.join('specs.json'), 'w') as f:
            json.dump(self.specs, f)
        with open(tmp.join('agent.conf'), 'w') as f:
            f.write('[agent]\nlibvirt_uri = test:///default\n'
                    'spec_source = file\nspec_file = %s\n'
                    'capabilities = balloon\n'
                    '[balloon]\npool_mib = 1024\nmax_step_mib = 512\n'
                    '[topology]\nsource = libvirt\n'
                    'libvirt_uri = test:///default\n' % tmp.join(
                        'specs.json'))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent_cmd.main(['--config-file', tmp.join('agent.conf'),
                                 '--once'],
                                hv=self.hv)
        self.assertEqual(0, rc, err.getvalue())
        self.assertIn('balloon: %s silent 2048 -> 2560 MiB (target 4096, '
                      'low 2048, flavor 4096, hit ratio -)' % uuid,
                      out.getvalue().splitlines())
        self.assertEqual(2560, self.memory(uuid))
