"""``nova-cacheaware-agent`` end to end on libvirt's test:///default."""

import contextlib
import io
import json
import subprocess
import sys

import fixtures

from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.cmd import agent as agent_cmd
from nova_cacheaware.cmd import cli
from tests.functional.agent import base

CONF = """[agent]
libvirt_uri = test:///default
max_repins_per_period = 100
spec_source = file
spec_file = %(spec_file)s
[topology]
source = libvirt
libvirt_uri = test:///default
"""


class AgentCliTest(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir())
        self.conf = self.dir.join('agent.conf')
        with open(self.conf, 'w') as f:
            f.write(CONF % {'spec_file': self.dir.join('specs.json')})

    def main(self, *args):
        with open(self.dir.join('specs.json'), 'w') as f:
            json.dump(self.specs, f)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent_cmd.main(['--config-file', self.conf] + list(args),
                                hv=self.hv)
        return rc, out.getvalue(), err.getvalue()

    def test_once_prints_the_decisions(self):
        m = self.define(2, cpuset='0-7', workload='memory')
        d = self.define(1, pins={0: '7'},
                        extra={'hw:cpu_policy': 'dedicated'})
        rc, out, err = self.main('--once')
        self.assertEqual(0, rc, err)
        lines = out.splitlines()
        self.assertEqual(['INSTANCE', 'NAME', 'WORKLOAD', 'ACTION',
                          'CURRENT', 'DESIRED', 'DOMAINS', 'REASON'],
                         lines[0].split())
        row = [line for line in lines if line.startswith(m[:8])][0]
        # test:///default: NUMA cells 0-7 and 8-15 (no cache data), of
        # which the driver pins to 0-7: one domain, already the VM's CPUs.
        self.assertEqual([m[:8], 'nca-' + m[:8], 'memory', 'keep',
                          '0-1:0-7', '0-1:0-7', 'pkg-0', 'memory-bound:',
                          'All-share'], row.split())
        row = [line for line in lines if line.startswith(d[:8])][0]
        self.assertIn(' audit ', row)
        self.assertEqual('repins: 0 ok, 0 failed, 0 deferred, 0 dry-run',
                         lines[-1])

    def test_dry_run_and_dump_state(self):
        m = self.define(2, cpuset='0-7', workload='memory')
        self.dom(m).pinVcpuFlags(0, tuple(i == 3 for i in range(8)), 0)
        state = self.dir.join('state.json')
        rc, out, err = self.main('--once', '--dry-run', '--dump-state',
                                 state)
        self.assertEqual(0, rc, err)
        self.assertIn('repins: 0 ok, 0 failed, 0 deferred, 1 dry-run', out)
        self.assertEqual((3,), self.live_pins(m)[0])
        with open(state) as f:
            doc = json.load(f)
        self.assertEqual([{'id': 'pkg-0', 'cpus': list(range(8))}],
                         doc['domains'])
        self.assertEqual(1.0, doc['max_vcpus_per_cpu'])
        self.assertEqual([{'id': m, 'vcpus': 2, 'workload': 'memory',
                           'current': {'0': [3], '1': list(range(8))},
                           'movable': True}], doc['vms'])
        self.assertEqual('nca-' + m[:8],
                         doc['agent']['instances'][m]['name'])
        # The decisions of that pass (a dry run: the repin is pending).
        self.assertEqual(
            {m: {'name': 'nca-' + m[:8], 'workload': 'memory',
                 'movable': True, 'action': 'repin', 'domains': ['pkg-0'],
                 'reason': 'memory-bound: All-share',
                 'current': {'0': '3', '1': '0-7'},
                 'desired': {'0': '0-7', '1': '0-7'}}},
            doc['agent']['decisions'])
        # The snapshot replays as is with the real CLI and planner.
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(0, cli.main(['plan', '--input', state]))
        replay = json.loads(out.getvalue())
        self.assertEqual(['pkg-0'], replay['vms'][m]['domains'])
        self.assertEqual({'0': list(range(8)), '1': list(range(8))},
                         replay['vms'][m]['pinning'])

    def test_dump_state_records_the_plan_objective(self):
        # [agent] plan_objective = throughput: the dump says so and the
        # plan command replays under it, not under the default contract.
        with open(self.conf, 'a') as f:
            f.write('[agent]\nplan_objective = throughput\n')
        self.define(2, cpuset='0-7', workload='memory')
        state = self.dir.join('state.json')
        rc, out, err = self.main('--dump-state', state)
        self.assertEqual(0, rc, err)
        with open(state) as f:
            doc = json.load(f)
        self.assertEqual('throughput', doc['objective'])
        self.assertEqual('throughput',
                         cachedomain_model.input_from_dict(doc).objective)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(0, cli.main(['plan', '--input', state]))
        self.assertEqual(cachedomain_model.plan_to_dict(cachedomain.plan(
            cachedomain_model.input_from_dict(doc))),
            json.loads(out.getvalue()))

    def test_dump_state_alone_needs_no_planner(self):
        self.define(1, cpuset='0-7')
        with open(self.dir.join('specs.json'), 'w') as f:
            json.dump(self.specs, f)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent_cmd.main(['--config-file', self.conf,
                                 '--dump-state', '-'], hv=self.hv)
        self.assertEqual(0, rc, err.getvalue())
        self.assertEqual(1, len(json.loads(out.getvalue())['vms']))

    def test_dump_state_alone_is_a_read_only_view(self):
        # --dump-state without --once: the real planner's decisions on
        # the observed state, and no pin changes (not even a dry-run one).
        m = self.define(2, cpuset='0-7', workload='memory')
        self.dom(m).pinVcpuFlags(0, tuple(i == 3 for i in range(8)), 0)
        with open(self.dir.join('specs.json'), 'w') as f:
            json.dump(self.specs, f)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent_cmd.main(['--config-file', self.conf,
                                 '--dump-state', '-'], hv=self.hv)
        self.assertEqual(0, rc, err.getvalue())
        decision = json.loads(out.getvalue())['agent']['decisions'][m]
        self.assertEqual(('memory', 'repin', ['pkg-0']),
                         (decision['workload'], decision['action'],
                          decision['domains']))
        self.assertEqual({'0': '3', '1': '0-7'}, decision['current'])
        self.assertEqual((3,), self.live_pins(m)[0])

    def test_dump_state_with_an_unusable_plan_has_no_decisions(self):
        # A dump without decisions is still a replayable state.
        self.define(1, cpuset='0-7')
        with open(self.dir.join('specs.json'), 'w') as f:
            json.dump(self.specs, f)

        def planner(plan_input):
            raise repinning.PlannerError(reason='gone')

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = agent_cmd.main(['--config-file', self.conf,
                                 '--dump-state', '-'], planner=planner,
                                hv=self.hv)
        self.assertEqual(0, rc, err.getvalue())
        doc = json.loads(out.getvalue())
        self.assertEqual(1, len(doc['vms']))
        self.assertNotIn('decisions', doc['agent'])
        self.assertIn('gone', doc['agent']['decisions_error'])

    def test_version_and_bad_config(self):
        p = subprocess.run([sys.executable, '-m', 'nova_cacheaware.cmd.agent',
                            '--version'], capture_output=True, text=True)
        self.assertEqual(0, p.returncode)
        self.assertRegex(p.stdout + p.stderr, r'^\d+\.\d+')
        bad = self.dir.join('bad.conf')
        with open(bad, 'w') as f:
            f.write('[agent]\nlibvirt_uri = test:///default\n'
                    'cpu_shared_set = 0-x\n[topology]\nsource = libvirt\n'
                    'libvirt_uri = test:///default\n')
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = agent_cmd.main(['--config-file', bad, '--dump-state', '-'],
                                hv=self.hv)
        self.assertEqual(2, rc)
        self.assertEqual(
            "nova-cacheaware-agent: error: invalid input: '0-x' is not a "
            "CPU list\n", err.getvalue())
