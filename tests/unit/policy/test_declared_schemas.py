"""The declared schemas: exact refusals, defaults, and random documents.

Each property mutates a valid document at random (a value replaced by an
odd one, a key deleted, a key or an element added, several times) and
checks that the declared schema gives a typed value (the same one again
from its own JSON where the contract writes one) or a one-line refusal,
never another exception. The tables pin the exact messages and the
defaults of this contract.
"""

import copy

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.balloon import default_balancer as balloon_default
from nova_cacheaware.cachedomain import assignment as domain_assignment
from nova_cacheaware.cachedomain import choice_doc as domain_choice_doc
from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import replan as allshare_replan
from nova_cacheaware.contracts import cpu_sets
from nova_cacheaware.contracts import vcpu_affinity
from nova_cacheaware import exception
from nova_cacheaware.vcpu_sizing import model as vcpu_model

ODD = [None, True, False, 0, 1, 2, 3, -1, 0.5, 1.5, 2.0, 8191, 8192, 4096,
       4097, 1 << 20, (1 << 20) + 1, 10 ** 30, '', 'a', 'b', '0', '1', '01',
       'x', 'memory', 'cpu', 'unknown', 'throughput', 'A', 'x' * 256, [],
       [0], [0, 0], [3, 2], [-1], [True], [8192], [1, 0], {}, {'0': [0]},
       {'01': [0]}, {'1': [3]}, {'9': [0]}, [True, 0], [0, -1]]
KEYS = ['x', 'id', 'cpus', 'vcpus', 'current', 'movable', 'workload',
        'agent', 'objective', 'previous', 'uuid', 'memory_bound', 'base',
        'capacity', 'instances', 'params', 'fresh', 'probe', 'hold_mib',
        'used_mib', 'free_mib', 'cache_mib', 'threshold', 'pad_mib', '0',
        '1', '01', '']

PLAN_INPUT = {
    'domains': [{'id': 'a', 'cpus': [1, 0]}, {'id': 'b', 'cpus': [2, 3]}],
    'vms': [{'id': 'v', 'vcpus': 2, 'workload': 'memory', 'movable': True,
             'current': {'0': [0, 1], '1': [2]}},
            {'id': 'w', 'vcpus': 1, 'workload': 'cpu'}],
    'max_vcpus_per_cpu': 1.5, 'objective': 'throughput', 'agent': {}}
CHOICE = {
    'capacity': {'a': 4, 'b': 4}, 'base': {'a': [1, 0], 'b': [0, 0]},
    'instances': [{'uuid': 'u1', 'vcpus': 2, 'memory_bound': True,
                   'current': 'a', 'previous': None},
                  {'uuid': 'u2', 'vcpus': 1}]}
BALLOON = {
    'params': {'threshold': 0.99, 'pad_mib': 16, 'margin': 0.03},
    'free_mib': 10,
    'vms': [{'id': 'a', 'memory_mib': 1024, 'hit_ratio': 0.5,
             'min_mib': 512, 'max_mib': 2048, 'used_mib': 100,
             'cache_mib': 200, 'free_mib': 50, 'fresh': False, 'probe': 1,
             'favoured': True},
            {'id': 'b', 'memory_mib': 600, 'hit_ratio': 1,
             'min_mib': 512, 'max_mib': 700, 'used_mib': 100.5,
             'cache_mib': 0, 'free_mib': 0}]}


PREVIOUS = {'previous': {'input': PLAN_INPUT, 'unplaced': ['v', 'w']}}


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for n, value in enumerate(doc):
            yield from _paths(value, prefix + (n,))


def _at(doc, path):
    for step in path:
        doc = doc[step]
    return doc


def mutate(data, doc, times, odd=ODD, keys=KEYS):
    """``doc`` (a copy) mutated ``times`` times as ``data`` draws.

    ``odd``: the values put in; ``keys``: the keys added.
    """
    doc = copy.deepcopy(doc)
    for _ in range(times):
        path = data.draw(st.sampled_from(list(_paths(doc))))
        target = _at(doc, path)
        op = data.draw(st.sampled_from(['replace', 'delete', 'add']))
        if op == 'add' and isinstance(target, dict):
            target[data.draw(st.sampled_from(keys))] = copy.deepcopy(
                data.draw(st.sampled_from(odd)))
        elif op == 'add' and isinstance(target, list):
            target.append(copy.deepcopy(data.draw(st.sampled_from(
                target + odd[:8]))))
        elif op == 'delete' and path:
            del _at(doc, path[:-1])[path[-1]]
        elif path:
            _at(doc, path[:-1])[path[-1]] = copy.deepcopy(
                data.draw(st.sampled_from(odd)))
    return doc


def outcome(parse, doc):
    """``('ok', value)``, ``('bad', message)`` or ``('crash', type)``."""
    try:
        return 'ok', parse(copy.deepcopy(doc))
    except exception.InvalidInput as e:
        return 'bad', str(e)
    except Exception as e:  # a crash, which no property accepts
        return 'crash', type(e).__name__


class RandomDocumentsTest(testtools.TestCase):
    """A typed value or a one-line refusal, never another exception."""

    def _parsed(self, parse, data, base):
        doc = mutate(data, base, data.draw(st.integers(0, 4)))
        got = outcome(parse, doc)
        self.assertIn(got[0], ('ok', 'bad'), (doc, got))
        if got[0] == 'bad':
            self.assertNotIn('\n', got[1], doc)
        return got

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_plan_input(self, data):
        got = self._parsed(cachedomain_model.input_from_dict, data,
                           PLAN_INPUT)
        if got[0] == 'ok':
            self.assertEqual(got[1], cachedomain_model.input_from_dict(
                cachedomain_model.input_to_dict(got[1])))

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_domain_choice(self, data):
        got = self._parsed(domain_choice_doc.choice_from_dict, data, CHOICE)
        if got[0] == 'ok':
            # The replay document lists the instances by uuid.
            capacity, held, base = got[1]
            self.assertEqual(
                (capacity, sorted(held, key=lambda i: i.uuid), base),
                domain_choice_doc.choice_from_dict(
                    domain_choice_doc.choice_to_dict(*got[1])))

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_balloon_default(self, data):
        self._parsed(balloon_default.request_from_dict, data, BALLOON)

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def test_previous_section(self, data):
        self._parsed(allshare_replan.previous_from_dict, data, PREVIOUS)

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from([(vcpu_model.StormState, 'storm state'),
                            (vcpu_model.StormThresholds, 'storm thresholds')]),
           st.one_of(st.sampled_from(ODD), st.dictionaries(
               st.sampled_from(KEYS + ['storm', 'streak', 'hold',
                                       'since_end', 'storms', 'enter_delay',
                                       'leave_delay', 'enter_periods']),
               st.sampled_from(ODD), max_size=4)))
    def test_spin_storm_objects(self, cls_what, doc):
        def parse(doc):
            try:
                return vcpu_model._from_dict(cls_what[0], doc, cls_what[1])
            except (TypeError, ValueError) as e:
                # The spin-storm command's own conversion.
                raise exception.InvalidInput(reason=str(e))
        got = outcome(parse, doc)
        self.assertIn(got[0], ('ok', 'bad'), (doc, got))
        if got[0] == 'ok':
            self.assertEqual(got[1], parse(vcpu_model.to_dict(got[1])))

    def test_bases_are_valid(self):
        for parse, doc in ((cachedomain_model.input_from_dict, PLAN_INPUT),
                           (domain_choice_doc.choice_from_dict, CHOICE),
                           (balloon_default.request_from_dict, BALLOON),
                           (allshare_replan.previous_from_dict, PREVIOUS)):
            self.assertEqual('ok', outcome(parse, doc)[0])


class DefaultsTest(testtools.TestCase):
    """The typed values of valid documents, absent fields defaulted."""

    def test_domain_choice(self):
        held = domain_assignment.HostHeld
        self.assertEqual(
            ({'a': 4, 'b': 4},
             [held(uuid='u1', vcpus=2, memory_bound=True, current='a',
                   previous=None, order=None, clean_required=False,
                   holds_slot=False),
              held(uuid='u2', vcpus=1, memory_bound=False, current=None,
                   previous=None, order=None, clean_required=False,
                   holds_slot=False)],
             {'a': (1, 0), 'b': (0, 0)}),
            domain_choice_doc.choice_from_dict(CHOICE))

    def test_balloon_default(self):
        view = balloon_default.VmView
        self.assertEqual(
            (balloon_default.DefaultParams(
                threshold=0.99, margin=0.03, pad_mib=16, probe_step=0.1,
                probe_max=0.5, hold_rounds=24, hysteresis=0.25,
                hopeless_ratio=0.5),
             [view(id='a', memory_mib=1024, hit_ratio=0.5, cache_mib=200,
                   free_mib=50, used_mib=100, min_mib=512, max_mib=2048,
                   fresh=False, probe=1, hold_mib=0, hold_left=0,
                   favoured=True),
              view(id='b', memory_mib=600, hit_ratio=1, cache_mib=0,
                   free_mib=0, used_mib=100.5, min_mib=512, max_mib=700,
                   fresh=True, probe=0, hold_mib=0, hold_left=0,
                   favoured=False)],
             10),
            balloon_default.request_from_dict(BALLOON))


def _edit(original, part=None, n=None, /, **over):
    """A copy of ``original`` with ``over`` set in it or in a part of it.

    At the top, in ``original[part]`` or in ``original[part][n]``.
    """
    doc = copy.deepcopy(original)
    target = doc if part is None else doc[part]
    (target if n is None else target[n]).update(over)
    return doc


class MessageTableTest(testtools.TestCase):
    """Exact one-line messages (what the CLI prints after its prefix)."""

    def _table(self, parse, cases):
        for doc, message in cases:
            e = self.assertRaises(exception.InvalidInput, parse, doc)
            self.assertEqual('invalid input: ' + message, str(e))

    def test_plan_input(self):
        p = PLAN_INPUT
        self._table(cachedomain_model.input_from_dict, [
            ([], 'the input must be a JSON object'),
            (_edit(p, x=1), "input: unknown key 'x'"),
            (_edit(p, objective='best'),
             '"objective" must be one of contract, throughput'),
            (_edit(p, agent=[]), '"agent" must be an object'),
            (_edit(p, domains=None), '"domains" must be a list'),
            (_edit(p, vms={}), '"vms" must be a list'),
            (_edit(p, max_vcpus_per_cpu=True),
             '"max_vcpus_per_cpu" must be a number > 0'),
            (_edit(p, max_vcpus_per_cpu=0),
             '"max_vcpus_per_cpu" must be a number > 0'),
            (_edit(p, domains=[]), '"domains" must not be empty'),
            (_edit(p, domains=['a']), 'domains[0] must be an object'),
            (_edit(p, 'domains', 0, x=1), "domains[0]: unknown key 'x'"),
            (_edit(p, 'domains', 0, id=''),
             'domains[0]: "id" must be a non-empty string'),
            (_edit(p, 'domains', 1, id='a'), "duplicate domain id 'a'"),
            (_edit(p, 'domains', 0, cpus=[]),
             'domains[0] "cpus" must be a non-empty list of CPU ids'),
            (_edit(p, 'domains', 0, cpus=[8192]),
             'domains[0] "cpus" must hold CPU ids (integers 0..8191)'),
            (_edit(p, 'domains', 0, cpus=[0, 0]),
             'domains[0] "cpus" lists a CPU twice'),
            (_edit(p, 'domains', 0, cpus='0-1,1'),
             'domains[0] "cpus" must be a CPU list such as "0-15,32-47" '
             'of distinct CPU ids 0..8191'),
            (_edit(p, 'domains', 0, cpus='0-8192'),
             'domains[0] "cpus" must be a CPU list such as "0-15,32-47" '
             'of distinct CPU ids 0..8191'),
            (_edit(p, 'domains', 1, cpus=[1, 2]),
             "CPU 1 is in domains 'a' and 'b'"),
            (_edit(p, vms=[3]), 'vms[0] must be an object'),
            (_edit(p, 'vms', 0, y=1), "vms[0]: unknown key 'y'"),
            (_edit(p, 'vms', 0, id=7),
             'vms[0]: "id" must be a non-empty string'),
            (_edit(p, 'vms', 0, vcpus=0),
             'VM \'v\': "vcpus" must be an integer 1..4096'),
            (_edit(p, 'vms', 0, vcpus=4097),
             'VM \'v\': "vcpus" must be an integer 1..4096'),
            (_edit(p, 'vms', 0, workload='auto'),
             'VM \'v\': "workload" must be one of memory, cpu, io, '
             'unknown'),
            (_edit(p, 'vms', 0, movable='yes'),
             'VM \'v\': "movable" must be true or false'),
            (_edit(p, 'vms', 0, current=[]),
             'VM \'v\': "current" must be an object'),
            (_edit(p, 'vms', 0, current={'01': [0]}),
             'VM \'v\': "current" key \'01\' is not a vCPU index'),
            (_edit(p, 'vms', 0, current={'2': [0]}),
             "VM 'v': vCPU 2 out of range (vcpus 2)"),
            (_edit(p, 'vms', 0, current={'0': []}),
             "VM 'v' vCPU 0 must be a non-empty list of CPU ids"),
            (_edit(p, 'vms', 0, current={'0': [9]}),
             "VM 'v' vCPU 0: CPU 9 is in no domain"),
            (_edit(p, 'vms', 1, id='v'), "duplicate VM id 'v'"),
        ])

    def test_domain_choice(self):
        c, count = CHOICE, 'must be an integer in %d..1048576, not %s'
        self._table(domain_choice_doc.choice_from_dict, [
            ([], 'the input must be a JSON object'),
            (_edit(c, capacity=[]),
             '"capacity" must be an object and "instances" a list'),
            (_edit(c, instances={}),
             '"capacity" must be an object and "instances" a list'),
            (_edit(c, capacity={'': 1}),
             "a domain id must be a non-empty string, not ''"),
            (_edit(c, capacity={'a': -1}), 'capacity of a ' + count % (0,
                                                                       -1)),
            (_edit(c, capacity={'a': True}),
             'capacity of a ' + count % (0, True)),
            (_edit(c, instances=[1]), 'each instance must be an object'),
            (_edit(c, 'instances', 0, uuid=''),
             "uuid must be a non-empty string, not ''"),
            (_edit(c, 'instances', 1, uuid='u1'),
             'instance u1 is listed twice'),
            (_edit(c, 'instances', 0, memory_bound=1),
             'memory_bound of u1 must be true or false'),
            (_edit(c, 'instances', 0, vcpus=0),
             'vcpus of u1 ' + count % (1, 0)),
            (_edit(c, 'instances', 0, vcpus=(1 << 20) + 1),
             'vcpus of u1 ' + count % (1, 1048577)),
            (_edit(c, 'instances', 0, current=''),
             "current must be a non-empty string, not ''"),
            (_edit(c, 'instances', 0, previous=3),
             'previous must be a non-empty string, not 3'),
            (_edit(c, base=[]),
             '"base" must be an object of [vCPUs, memory-bound VMs]'),
            (_edit(c, base={'a': [1]}),
             'base of a must be [vCPUs, memory-bound VMs]'),
            (_edit(c, base={'a': [1, -1]}),
             'base memory-bound VMs of a ' + count % (0, -1)),
            # The counts are checked before the domain id.
            (_edit(c, base={'': [True, 0]}),
             'base vCPUs of  ' + count % (0, True)),
            (_edit(c, base={'': [0, 0]}),
             "a domain id must be a non-empty string, not ''"),
        ])

    def test_previous_section(self):
        p, only = PREVIOUS['previous'], ('"previous" must be an object with '
                                         '"input" and "unplaced" only')
        inner = '"previous.input" must be a plan input without "previous"'
        self._table(allshare_replan.previous_from_dict, [
            ({'previous': []}, only),
            ({'previous': dict(p, x=1)}, only),
            # unplaced is checked before input.
            ({'previous': {'unplaced': 'v'}},
             '"previous.unplaced" must be a list of VM ids'),
            ({'previous': {'unplaced': [1], 'input': 1}},
             '"previous.unplaced" must be a list of VM ids'),
            ({'previous': {}}, inner),
            ({'previous': {'input': dict(PLAN_INPUT, previous=None)}},
             inner),
            ({'previous': {'input': dict(PLAN_INPUT, domains=[])}},
             '"domains" must not be empty'),
        ])
        for doc in ([], {}, {'previous': None}):
            self.assertIsNone(allshare_replan.previous_from_dict(doc))
        plan_input, unplaced = allshare_replan.previous_from_dict(PREVIOUS)
        self.assertEqual((frozenset({'v', 'w'}), 2),
                         (unplaced, len(plan_input.vms)))
        self.assertEqual(frozenset(), allshare_replan.previous_from_dict(
            {'previous': {'input': PLAN_INPUT}})[1])

    def test_spin_storm_objects(self):
        for doc, message in (
                ([], 'storm state must be an object'),
                ({'storm': True, 'z': 1, 'a': 2},
                 'unknown storm state fields: a, z')):
            e = self.assertRaises(ValueError, vcpu_model.state_from_dict,
                                  doc)
            self.assertEqual(message, str(e))
        e = self.assertRaises(ValueError, vcpu_model.thresholds_from_dict,
                              {'x': 1})
        self.assertEqual('unknown storm thresholds fields: x', str(e))

    def test_balloon_default(self):
        b = BALLOON
        self._table(balloon_default.request_from_dict, [
            (_edit(b, params=[]), 'params: must be a JSON object'),
            (_edit(b, 'params', threshold=1.5),
             'params: "threshold" must be between 0 and 1 (1.5)'),
            # Parameters are checked in the document's order.
            (_edit(b, params={'pad_mib': 1.5, 'margin': -1}),
             'params: "pad_mib" must be an integer (1.5)'),
            (_edit(b, params={'margin': -1, 'pad_mib': 1.5}),
             'params: "margin" must not be negative (-1)'),
            (_edit(b, free_mib=-1),
             'input: "free_mib" must not be negative (-1)'),
            (_edit(b, vms={}), 'input: "vms" must be a list'),
            (_edit(b, vms=[[]]), 'vms[0]: must be a JSON object'),
            (_edit(b, 'vms', 0, id=''),
             'vms[0]: "id" must be a non-empty string'),
            (_edit(b, 'vms', 0, memory_mib=4096),
             "VM 'a': memory_mib 4096 outside [min_mib 512, max_mib 2048]"),
            (_edit(b, 'vms', 0, fresh=1),
             'VM \'a\': "fresh" must be true or false'),
            (_edit(b, 'vms', 0, probe=-1),
             'VM \'a\': "probe" must not be negative (-1)'),
            (_edit(b, 'vms', 0, favoured=None),
             'VM \'a\': "favoured" must be true or false'),
            (_edit(b, 'vms', 0, hold_left=0.5),
             'VM \'a\': "hold_left" must be an integer (0.5)'),
            (_edit(b, 'vms', 1, used_mib=None),
             'VM \'b\': "used_mib" must be a finite number, not None'),
            (_edit(b, 'vms', 0, used_mib=1000),
             "VM 'a': used + cache + free exceed memory_mib"),
            (_edit(b, 'vms', 1, id='a'), 'input: duplicate VM id(s): a'),
        ])


class CpuListStringsTest(testtools.TestCase):
    """Replay inputs take CPU sets as cpulist strings too (Nova's form)."""

    def test_plan_input_same_with_ranges(self):
        compact = copy.deepcopy(PLAN_INPUT)
        compact['domains'][0]['cpus'] = '0-1'
        compact['domains'][1]['cpus'] = '2,3'
        compact['vms'][0]['current'] = {'0': '0-1', '1': '2'}
        self.assertEqual(cachedomain_model.input_from_dict(PLAN_INPUT),
                         cachedomain_model.input_from_dict(compact))

    def test_pcpu_est_input_same_with_ranges(self):
        lists = {'pcpus': [0, 1, 2, 3, 8],
                 'vms': {'a': {'vcpus': {'0': [0, 1, 2, 3], '1': [8]}}}}
        ranges = {'pcpus': '0-3,8',
                  'vms': {'a': {'vcpus': {'0': '0-3', '1': '8'}}}}
        self.assertEqual(vcpu_affinity.EstimateRequest.from_dict(lists),
                         vcpu_affinity.EstimateRequest.from_dict(ranges))
        for bad in ('0-3,3', '3-1', 'x', '0-8192', '1,,2'):
            ranges['vms']['a']['vcpus']['0'] = bad
            e = self.assertRaises(exception.InvalidInput,
                                  vcpu_affinity.EstimateRequest.from_dict,
                                  ranges)
            self.assertIn('is not a CPU list such as "0-15,32-47"', str(e))

    def test_cpu_ranges(self):
        table = [('', ()), ('0', (0,)), ('0-2,5', (0, 1, 2, 5)),
                 ('5,0-2', (0, 1, 2, 5)), ('8191', (8191,)),
                 ('0-2,2', None), ('2-1', None), ('-1', None), ('a', None),
                 ('0 -2', None), ('8192', None), ('1,', None), ('١', None)]
        for text, cpus in table:
            self.assertEqual(cpus, cpu_sets.cpu_ranges(text), text)
