"""The typed host report puts the recorded bytes on the wire.

``tests/fixtures/host_state_payloads.json`` holds three agent reports in
the dict form the agent handed its publisher before the report was typed
(``reports``: what ``reporting.host_state`` and the Placement side built,
the capabilities' dict sections included) and the payloads that path
wrote for them (``payloads``: 1.5, ``state_wire.render_state``, and the
2.0 compact state, ``state_wire.to_compact``, of
``to_host_cache_state(report, 'cn1', NOW)``). Each test builds the same
report as the agent builds it now - :func:`reporting.host_report` of a
plan and decisions, the ``vcpu_sizing`` section from the capability's
own report - and compares the JSON text, key order included.
"""

import datetime
import json
import os

import testtools

from nova_cacheaware.agent import notify
from nova_cacheaware.agent import reporting
from nova_cacheaware.balloon import model as balloon
from nova_cacheaware.cachedomain import model
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.contracts import state_wire
from nova_cacheaware.numa_balance import model as numa_balance
from nova_cacheaware.vcpu_sizing import agent as vcpu_sizing

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.timezone.utc)
FIXTURE = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                       'fixtures', 'host_state_payloads.json')
UA, UB, UC, UD = ('00000000-0000-4000-8000-00000000000%s' % c
                  for c in 'abcd')
UX, UY, UP, UQ = ('00000000-0000-4000-8000-00000000000%d' % n
                  for n in range(4))


def recorded():
    """The fixture: ``reports`` and ``payloads`` by case."""
    with open(FIXTURE) as f:
        return json.load(f)


def decision(uuid, workload, domains, vcpus):
    """A repin decision putting ``vcpus`` vCPUs in ``domains``."""
    pins = {v: (v,) for v in range(vcpus)}
    return repinning.Decision(
        uuid=uuid, name=uuid[-1], workload=workload, movable=True,
        reason='', action=repinning.REPIN, current=pins, desired=pins,
        allowed=pins, domains=tuple(domains))


def plan(memory_vms):
    """A plan whose domains hold ``memory_vms`` (``{domain: uuids}``)."""
    return model.Plan(vms={}, unplaced=(), domains={
        d: model.DomainPlan(state='clean' if vms else 'empty',
                            memory_vms=tuple(vms))
        for d, vms in memory_vms.items()})


def sizing_report(section):
    """The ``vcpu_sizing`` capability's report behind a dict section."""
    return {'affinity': section['vcpu_affinity'], 'vms': section['vms']}


class RecordedPayloadTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.recorded = recorded()

    def assertSameWire(self, case, report):
        state = notify.to_host_cache_state(report, 'cn1', NOW)
        payloads = self.recorded['payloads'][case]
        self.assertEqual(json.dumps(payloads['1.5']), json.dumps(
            state_wire.render_state(state, '1.5')))
        self.assertEqual(json.dumps(payloads['2.0']), json.dumps(
            state_wire.to_compact(state)))

    def test_domain_model_with_sizing_and_balloon(self):
        cap = vcpu_sizing.VcpuSizing(None, None)
        doc = sizing_report(
            self.recorded['reports']['domain_model']['vcpu_sizing'])
        section = cap.host_state(doc)
        # Unchanged affinities: the same parsed object, pass after pass.
        self.assertIs(section.affinity,
                      cap.host_state(json.loads(json.dumps(doc))).affinity)
        report = reporting.host_report(
            plan({'L3-0': [UA], 'L3-1': [], 'L3-2': [UB, UD]}),
            [decision(UA, 'memory', ['L3-0'], 2),
             decision(UB, 'memory', ['L3-2'], 2),
             decision(UC, 'cpu', ['L3-0', 'L3-1'], 1),
             decision(UD, 'memory', ['L3-2'], 4)],
            usable_cpus={'L3-0': 2, 'L3-1': 2, 'L3-2': 4},
            providers={'L3-0': 'rp-0', 'L3-1': 'rp-1', 'L3-2': 'rp-2'},
            domain_capacity={'L3-0': 4, 'L3-1': 4, 'L3-2': 8},
            domain_required={'L3-2': 1},
            sections={'vcpu_sizing': section,
                      'balloon': balloon.HeldMemory(512, 1)})
        self.assertEqual(
            (reporting.VmSizing(2.0, False), reporting.VmSizing(1.0, True),
             reporting.VmSizing(0.333333, None)),
            (section.vms[UA], section.vms[UB], section.vms[UC]))
        self.assertSameWire('domain_model', report)

    def test_host_model_with_choice_load(self):
        report = reporting.host_report(
            plan({'L2-0': [UX], 'L2-1': []}),
            [decision(UX, 'memory', ['L2-0'], 2),
             decision(UY, 'auto', ['L2-1'], 1)],
            usable_cpus={'L2-0': 2, 'L2-1': 2}, host_provider='rp-host',
            domain_load={'L2-0': (2, 1)}, domain_required={},
            sections={'numa_balance': numa_balance.Division(vms={})})
        self.assertSameWire('host_model', report)

    def test_unhealthy_and_vcpus_not_counted(self):
        report = reporting.HostReport(
            memory_vms={'L3-0': ()},
            vms={UP: reporting.VmReport('weird', ('L3-0',)),
                 UQ: reporting.VmReport('unknown')},
            healthy=False, usable_cpus={'L3-0': 8})
        self.assertSameWire('unhealthy', report)


class HostReportTest(testtools.TestCase):

    def test_plan_and_decisions(self):
        report = reporting.host_report(
            plan({'L2-0': [UA], 'L2-1': []}),
            [decision(UA, 'memory', ['L2-0'], 2),
             decision(UB, 'unknown', [], 3)],
            providers={'L2-0': 'rp-0'})
        self.assertEqual(reporting.HostReport(
            memory_vms={'L2-0': (UA,), 'L2-1': ()},
            vms={UA: reporting.VmReport('memory', ('L2-0',), 2),
                 UB: reporting.VmReport('unknown', (), 3)},
            providers={'L2-0': 'rp-0'}), report)
        self.assertIsNone(report.sizing())

    def test_sizing_found_by_its_type(self):
        section = reporting.SizingSection()
        report = reporting.HostReport(sections={
            'balloon': balloon.HeldMemory(0, 0), 'sizing': section})
        self.assertIs(section, report.sizing())
