"""The host-view document of an agent pass, and the describe endpoint."""

import datetime

import testtools

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import describe
from nova_cacheaware.agent import rpc
from nova_cacheaware.agent import service
from nova_cacheaware.cachedomain import model
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.contracts import host_view
from nova_cacheaware.topology import domains

MEM = '00000000-0000-4000-8000-00000000000a'
CPU = '00000000-0000-4000-8000-00000000000b'
WIDE = '00000000-0000-4000-8000-00000000000c'
NOW = datetime.datetime(2026, 11, 28, 1, 2, 3,
                        tzinfo=datetime.timezone.utc)
DOMAINS = domains.DomainSet(level=3, fallback=False, domains=(
    domains.CacheDomain('L3-0', 3, (0, 1, 2, 3), 32768, (0,)),
    domains.CacheDomain('L3-1', 3, (4, 5, 6, 7), 32768, (0,)),
    domains.CacheDomain('L3-2', 3, (8, 9, 10, 11), 32768, (1,))))


def decision(uuid, workload, pins, domains_):
    return repinning.Decision(
        uuid=uuid, name=uuid[-1], workload=workload, movable=True,
        reason='', action=repinning.KEEP, current=pins, desired=pins,
        allowed=pins, domains=domains_)


def one_pass():
    decisions = [
        decision(MEM, 'memory', {0: (0, 1), 1: (0, 1)}, ('L3-0',)),
        decision(CPU, 'cpu', {0: (2, 3)}, ('L3-0',)),
        decision(WIDE, 'unknown', {0: (4, 5, 6, 7, 8, 9)},
                 ('L3-1', 'L3-2'))]
    plan = model.Plan(vms={}, domains={
        'L3-0': model.DomainPlan(state='clean', memory_vms=(MEM,)),
        'L3-1': model.DomainPlan(state='empty', memory_vms=()),
        'L3-2': model.DomainPlan(state='empty', memory_vms=())},
        unplaced=())
    snapshot = service.Snapshot.parsing(
        instances=[], specs={MEM: {'cacheaware:workload': 'memory',
                                   'cacheaware:cache_clean': 'required'},
                             CPU: {'cacheaware:cache_clean': 'off'}},
        spec_errors={WIDE: 'nova did not answer'}, stats={}, counters={})
    return service.Pass(snapshot=snapshot, plan_input=None, plan_output=plan,
                        decisions=decisions,
                        result=actuator.ApplyResult(), problems=[])


REPORTS = {
    'vcpu_sizing': {'vms': {CPU: {
        'mode': 'recommend', 'vcpus': 1, 'available_pcpus': 0.5,
        'recommended_vcpus': 1, 'shares': {'0': 0.5},
        'storm': {'storm': True, 'vote': 3}}}},
    'balloon': {'held_mib': 512, 'vms': {MEM: {
        'status': 'ok', 'memory_mib': 1536, 'was_mib': 2048,
        'target_mib': 1536, 'low_mib': 1024, 'flavor_mib': 2048,
        'hit_ratio': 0.9, 'next_report_in_s': 10.0}}}}


class BuildHostViewTest(testtools.TestCase):

    def test_document(self):
        view = describe.build_host_view('cmp-1', describe.PER_HOST, DOMAINS,
                                        one_pass(), REPORTS, healthy=True,
                                        generation=123, now=NOW)
        self.assertEqual({
            'version': '1.0', 'host': 'cmp-1', 'model': 'per-host',
            'generated_at': '2026-11-28T01:02:03Z',
            'agent': {'healthy': True, 'generation': 123},
            'numa_nodes': [
                {'id': 0, 'cpus': '0-7', 'domains': ['L3-0', 'L3-1']},
                {'id': 1, 'cpus': '8-11', 'domains': ['L3-2']}],
            'domains': [
                {'id': 'L3-0', 'level': 'L3', 'numa_node': 0, 'cpus': '0-3',
                 'state': 'Clean', 'spin_storm': True,
                 'servers': [MEM, CPU]},
                {'id': 'L3-1', 'level': 'L3', 'numa_node': 0, 'cpus': '4-7',
                 'state': 'Empty', 'spin_storm': False, 'servers': [WIDE]},
                {'id': 'L3-2', 'level': 'L3', 'numa_node': 1,
                 'cpus': '8-11', 'state': 'Empty', 'spin_storm': False,
                 'servers': [WIDE]}],
            'servers': [
                {'uuid': MEM, 'class': 'memory-bound',
                 'isolation': 'required', 'domain': 'L3-0', 'pins': '0-1',
                 'vcpus': 2, 'spin_storm': False, 'pcpu_estimate': None,
                 'sizing': None,
                 'balloon': {'status': 'ok', 'memory_mib': 1536,
                             'was_mib': 2048, 'target_mib': 1536,
                             'low_mib': 1024, 'flavor_mib': 2048,
                             'hit_ratio': 0.9}},
                {'uuid': CPU, 'class': 'cpu-bound', 'isolation': 'none',
                 'domain': 'L3-0', 'pins': '2-3', 'vcpus': 1,
                 'spin_storm': True, 'pcpu_estimate': 0.5,
                 'sizing': {'mode': 'recommend', 'vcpus': 1,
                            'recommended_vcpus': 1},
                 'balloon': None},
                {'uuid': WIDE, 'class': 'unknown', 'isolation': None,
                 'domain': None, 'pins': '4-9', 'vcpus': 1,
                 'spin_storm': False, 'pcpu_estimate': None,
                 'sizing': None, 'balloon': None}]}, view)

    def test_the_contract_takes_it(self):
        view = describe.build_host_view('cmp-1', describe.PER_HOST, DOMAINS,
                                        one_pass(), REPORTS, now=NOW)
        checked = host_view.from_document(view)
        self.assertEqual((0, ('L3-1', 'L3-2'), (0, 1)),
                         (checked.agent_generation,
                          tuple(d.id for d in checked.domains
                                if d.servers == (WIDE,)),
                          checked.servers[0].pins))

    def test_server_view(self):
        view = describe.build_host_view('cmp-1', describe.PER_DOMAIN,
                                        DOMAINS, one_pass(), {}, now=NOW)
        self.assertEqual('cmp-1', describe.server_view(view, CPU)['host'])
        self.assertIsNone(describe.server_view(
            view, '00000000-0000-4000-8000-0000000000ff'))


class FakeAgent:
    domain_set = DOMAINS
    last_pass = None
    last_pass_at = 100.0
    last_reports = {}

    class publisher:
        class last:
            generation = 7


class DescribeEndpointTest(testtools.TestCase):

    def endpoint(self, now):
        return rpc.DescribeEndpoint(FakeAgent(), 'cmp-1', describe.PER_HOST,
                                    stale_s=90.0, clock=lambda: now)

    def test_no_pass_yet(self):
        self.assertIsNone(self.endpoint(100.0).describe_host({}))
        self.assertIsNone(self.endpoint(100.0).describe_server({}, CPU))

    def test_health_is_the_age_of_the_last_pass(self):
        FakeAgent.last_pass = one_pass()
        self.addCleanup(setattr, FakeAgent, 'last_pass', None)
        fresh = self.endpoint(190.0).describe_host({})
        stale = self.endpoint(190.5).describe_host({})
        self.assertEqual({'healthy': True, 'generation': 7}, fresh['agent'])
        self.assertEqual({'healthy': False, 'generation': 7}, stale['agent'])
        self.assertEqual(
            ('cmp-1', 'cpu-bound'),
            (self.endpoint(100.0).describe_server({}, CPU)['host'],
             self.endpoint(100.0).describe_server({}, CPU)['class']))
