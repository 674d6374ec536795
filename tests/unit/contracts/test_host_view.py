"""The host-view document: what is accepted, exactly, and what is refused."""

import copy
import datetime
import json

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import host_view as hv
from nova_cacheaware import exception
from tests.fixtures import host_views


def q6600():
    """fake-q6600 with a memory-bound server, a cpu-bound one, a floater."""
    return host_views.view(host_views.devcloud('fake-q6600'), [
        host_views.server('vm-a', 'L2-0', [0, 1], isolation='required',
                          pcpu_estimate=1.5, sizing={'threads': 2}),
        host_views.server('vm-b', 'L2-1', [2], cls='cpu-bound', storm=True),
        host_views.server('vm-c', cls='unknown', vcpus=4)])


class AcceptTest(testtools.TestCase):

    def test_exact_value(self):
        view = hv.from_document(q6600())
        self.assertEqual('1.0', view.version)
        self.assertEqual('cmp-1', view.host)
        self.assertEqual('per-domain', view.model)
        self.assertEqual(datetime.datetime(2026, 11, 28, 1, 2, 3,
                                           tzinfo=datetime.timezone.utc),
                         view.generated_at)
        self.assertEqual((True, 123), (view.agent_healthy,
                                       view.agent_generation))
        self.assertEqual((hv.NumaNode(0, (0, 1, 2, 3), ('L2-0', 'L2-1')),),
                         view.numa_nodes)
        self.assertEqual((
            hv.Domain('L2-0', 'L2', 0, (0, 1), 'Clean', False, ('vm-a',)),
            hv.Domain('L2-1', 'L2', 0, (2, 3), 'Empty', True, ('vm-b',))),
            view.domains)
        a, b, c = view.servers
        self.assertEqual(('vm-a', 'memory-bound', 'required', 'L2-0', (0, 1),
                          2, False, 1.5, {'threads': 2}, None),
                         (a.uuid, a.workload_class, a.isolation, a.domain,
                          a.pins, a.vcpus, a.spin_storm, a.pcpu_estimate,
                          dict(a.sizing), a.balloon))
        self.assertEqual(('cpu-bound', (2,), True),
                         (b.workload_class, b.pins, b.spin_storm))
        self.assertEqual(('unknown', None, None, 4),
                         (c.workload_class, c.pins, c.domain, c.vcpus))
        self.assertEqual((0, 1, 2, 3), view.cpus)

    def test_frozen_and_shares_nothing_with_the_document(self):
        doc = q6600()
        view = hv.from_document(doc)
        doc['servers'][0]['sizing']['threads'] = 99
        self.assertEqual(2, view.servers[0].sizing['threads'])
        with testtools.ExpectedException(TypeError):
            view.servers[0].sizing['threads'] = 3
        self.assertRaises(AttributeError, setattr, view, 'host', 'x')

    def test_unknown_keys_and_newer_minor_are_read(self):
        doc = q6600()
        doc['version'] = '1.7'
        doc['future'] = {'x': 1}
        doc['domains'][0]['future'] = [1]
        doc['servers'][0]['future'] = None
        self.assertEqual('1.7', hv.from_document(doc).version)

    def test_optional_server_fields_default(self):
        doc = q6600()
        doc['servers'][2] = {'uuid': 'vm-c', 'vcpus': 1}
        c = hv.from_document(doc).servers[2]
        self.assertEqual(('unknown', None, None, None, False, None, None),
                         (c.workload_class, c.isolation, c.domain, c.pins,
                          c.spin_storm, c.pcpu_estimate, c.sizing))

    def test_largest_sizes_are_accepted(self):
        topology = {'cache_domains': [
            {'id': 'L3-%d' % i, 'level': 3, 'numa_nodes': [0],
             'cpus': list(range(4 * i, 4 * i + 4))} for i in range(1024)],
            'numa_nodes': [{'id': 0, 'cpus': list(range(4096))}]}
        doc = host_views.view(topology, [
            host_views.server('vm-%d' % k, vcpus=1) for k in range(1000)])
        view = hv.from_document(doc)
        self.assertEqual((4096, 1024, 1000), (
            len(view.cpus), len(view.domains), len(view.servers)))


def _set(path, value):
    def change(doc):
        *parents, last = path
        target = doc
        for key in parents:
            target = target[key]
        target[last] = value
    return change


def _drop(path):
    def change(doc):
        *parents, last = path
        target = doc
        for key in parents:
            target = target[key]
        del target[last]
    return change


PREFIX = 'invalid input: host view: '
REFUSED = [
    ('not an object', lambda d: d.clear() or d.update(x=1),
     'missing "version"'),
    ('other major', _set(['version'], '2.0'),
     "version '2.0' not supported (major 1 expected)"),
    ('no host', _drop(['host']), 'missing "host"'),
    ('empty host', _set(['host'], ''),
     '"host" must be a string of 1..255 characters'),
    ('model', _set(['model'], 'mixed'),
     '"model" must be one of per-domain, per-host, not \'mixed\''),
    ('time', _set(['generated_at'], 'yesterday'),
     '"generated_at": timestamp \'yesterday\' is not ISO 8601'),
    ('agent health', _set(['agent', 'healthy'], 'yes'),
     'agent: "healthy" must be true or false'),
    ('generation', _set(['agent', 'generation'], -1),
     'agent: "generation" must be an integer 0..9007199254740992, not -1'),
    ('lower-case state', _set(['domains', 0, 'state'], 'clean'),
     'domains[0] \'L2-0\': "state" must be one of Empty, Clean, Dirty, '
     'not \'clean\''),
    ('cpus as a list', _set(['domains', 0, 'cpus'], [0, 1]),
     'domains[0] \'L2-0\': "cpus" must be a non-empty cpulist string'),
    ('empty cpus', _set(['domains', 0, 'cpus'], ''),
     'domains[0] \'L2-0\': "cpus" must be a non-empty cpulist string'),
    ('storm', _set(['domains', 1, 'spin_storm'], 1),
     'domains[1] \'L2-1\': "spin_storm" must be true or false'),
    ('class', _set(['servers', 0, 'class'], 'memory'),
     'servers[0] \'vm-a\': "class" must be one of memory-bound, '
     'cpu-bound, unknown, not \'memory\''),
    ('isolation', _set(['servers', 0, 'isolation'], 'strict'),
     'servers[0] \'vm-a\': "isolation" must be one of required, '
     'preferred, none or null, not \'strict\''),
    ('pins', _set(['servers', 0, 'pins'], '1-0'),
     'servers[0] \'vm-a\': "pins" must be null or a non-empty cpulist'),
    ('vcpus', _set(['servers', 0, 'vcpus'], 0),
     'servers[0] \'vm-a\': "vcpus" must be an integer 1..4096, not 0'),
    ('estimate', _set(['servers', 0, 'pcpu_estimate'], True),
     'servers[0] \'vm-a\': "pcpu_estimate" must be null or a number'),
    ('sizing', _set(['servers', 0, 'sizing'], {'x': 'y' * 3000}),
     'servers[0] \'vm-a\': "sizing" must be null or a JSON object of at '
     'most 2048 characters'),
    ('balloon', _set(['servers', 0, 'balloon'], [1]),
     'servers[0] \'vm-a\': "balloon" must be null or a JSON object'),
    ('node twice', lambda d: d['numa_nodes'].append(
        dict(d['numa_nodes'][0], cpus='4', domains=[])),
     'NUMA node 0 appears twice'),
    ('domain twice', _set(['domains', 1, 'id'], 'L2-0'),
     "domain 'L2-0' appears twice"),
    ('server twice', _set(['servers', 1, 'uuid'], 'vm-a'),
     "server 'vm-a' appears twice"),
    ('CPU in two domains', _set(['domains', 1, 'cpus'], '1-3'),
     "CPU 1 is in domains 'L2-0' and 'L2-1'"),
    ('domain outside its node', _set(['domains', 1, 'cpus'], '2-4'),
     "domain 'L2-1': CPUs [4] are not in NUMA node 0"),
    ('domain of no node', _set(['domains', 1, 'numa_node'], 1),
     "domain 'L2-1': NUMA node 1 does not list it"),
    ('node lists unknown domain', _set(['numa_nodes', 0, 'domains'],
                                       ['L2-0', 'L2-1', 'L2-9']),
     "NUMA node 0 lists unknown domain 'L2-9'"),
    ('unknown server in domain', _set(['domains', 0, 'servers'], ['vm-x']),
     "domain 'L2-0' lists unknown server 'vm-x'"),
    ('unknown domain of server', _set(['servers', 0, 'domain'], 'L3-0'),
     "server 'vm-a': unknown domain 'L3-0'"),
    ('pins off the host', _set(['servers', 0, 'pins'], '3-5'),
     "server 'vm-a': pins [4, 5] are not CPUs of the host"),
    ('too many servers', lambda d: d.update(servers=[{}] * 1001),
     '"servers" must be a list of at most 1000 objects'),
    ('too many CPUs', lambda d: d['numa_nodes'].append(
        {'id': 1, 'cpus': '4-4096', 'domains': []}),
     '4097 CPUs is more than a host has (at most 4096)'),
]


class RefuseTest(testtools.TestCase):

    def test_each_refusal_is_one_line_naming_the_problem(self):
        for name, change, message in REFUSED:
            doc = q6600()
            change(doc)
            e = self.assertRaises(exception.InvalidInput, hv.from_document,
                                  doc)
            self.assertTrue(str(e).startswith(PREFIX + message),
                            '%s: %s' % (name, e))
            self.assertEqual(1, len(str(e).splitlines()), name)

    def test_not_an_object(self):
        for doc in (None, [], 'x', 1):
            e = self.assertRaises(exception.InvalidInput, hv.from_document,
                                  doc)
            self.assertEqual(PREFIX + 'must be a JSON object', str(e))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats()
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)
KEYS = ['version', 'host', 'model', 'generated_at', 'agent', 'healthy',
        'generation', 'numa_nodes', 'domains', 'servers', 'id', 'cpus',
        'level', 'numa_node', 'state', 'spin_storm', 'uuid', 'class',
        'isolation', 'domain', 'pins', 'vcpus', 'pcpu_estimate', 'sizing',
        'balloon']


def _paths(doc, prefix=()):
    """Every path to a value inside ``doc``."""
    yield prefix
    items = (doc.items() if isinstance(doc, dict)
             else enumerate(doc) if isinstance(doc, list) else ())
    for key, value in items:
        yield from _paths(value, prefix + (key,))


@st.composite
def valid_documents(draw):
    """A named topology holding a drawn number of servers."""
    name = draw(st.sampled_from(sorted(host_views.TOPOLOGIES)))
    count = draw(st.integers(0, 40))
    every = draw(st.integers(0, 5))
    return host_views.populated(host_views.TOPOLOGIES[name](), count,
                                floating_every=every)


class PropertyTest(testtools.TestCase):

    @settings(max_examples=60, deadline=None)
    @given(valid_documents())
    def test_valid_documents_are_read(self, doc):
        view = hv.from_document(doc)
        self.assertEqual(len(doc['servers']), len(view.servers))
        self.assertEqual([d['state'] for d in doc['domains']],
                         [d.state for d in view.domains])

    @settings(max_examples=300, deadline=None)
    @given(valid_documents(), st.data())
    def test_damaged_documents_raise_invalid_input_only(self, doc, data):
        doc = copy.deepcopy(doc)
        paths = [p for p in _paths(doc) if p]
        path = data.draw(st.sampled_from(paths))
        value = data.draw(JSON | st.sampled_from(KEYS))
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        try:
            hv.from_document(doc)
        except exception.InvalidInput as e:
            self.assertEqual(1, len(str(e).splitlines()))

    @settings(max_examples=200, deadline=None)
    @given(JSON)
    def test_garbage_raises_invalid_input_only(self, doc):
        self.assertRaises(exception.InvalidInput, hv.from_document, doc)

    def test_document_survives_json(self):
        doc = q6600()
        self.assertEqual(hv.from_document(doc),
                         hv.from_document(json.loads(json.dumps(doc))))
