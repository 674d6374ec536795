"""The host map's SVG: what it holds, exactly, over named topologies."""

import importlib.util
import json
import os
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import cpu_sets
from nova_cacheaware.contracts import host_view
from nova_cacheaware import exception
from nova_cacheaware.status import host_map
from nova_cacheaware.status import host_map_layout as geo
from tests.fixtures import host_views

NS = '{http://www.w3.org/2000/svg}'

#: (topology, servers, CPUs, NUMA nodes, domains, floating servers,
#: Empty / Clean / Dirty domains).
TABLE = [
    ('epyc-16x-l3', 200, 128, 2, 16, 20, (8, 4, 4)),
    ('fake-epyc', 40, 128, 1, 8, 4, (4, 2, 2)),
    ('fake-zen', 12, 16, 2, 4, 1, (2, 1, 1)),
    ('fake-q6600', 6, 4, 1, 2, 0, (0, 1, 1)),
    ('fake-ecluster', 8, 8, 1, 2, 0, (0, 1, 1)),
    ('fake-i9', 30, 24, 1, 10, 3, (4, 3, 3)),
]


def groups(root, css):
    """The ``<g>`` elements whose class is ``css``."""
    return [g for g in root.iter(NS + 'g') if g.get('class') == css]


def texts(element):
    """The text of every ``<text>`` under ``element``, in order."""
    return [t.text for t in element.iter(NS + 'text')]


def render(name, count):
    doc = host_views.populated(host_views.TOPOLOGIES[name](), count)
    return doc, host_map.render_svg(doc)


class TableTest(testtools.TestCase):

    def test_counts_per_topology(self):
        for (name, count, cpus, nodes, domains, floating,
             states) in TABLE:
            doc, svg = render(name, count)
            root = ET.fromstring(svg)
            cells = [r for r in root.iter(NS + 'rect')
                     if r.get('class') == 'cpu']
            self.assertEqual(cpus, len(cells), name)
            self.assertEqual(nodes, len(groups(root, 'numa-node')), name)
            self.assertEqual(domains, len(groups(root, 'domain')), name)
            self.assertEqual(count - floating, len(groups(root, 'server')),
                             name)
            self.assertEqual(floating,
                             len(groups(root, 'server floating')), name)
            labels = [texts(g)[1] for g in groups(root, 'domain')]
            self.assertEqual(states, tuple(labels.count(s) for s in
                                           host_view.STATES), name)
            self.assertEqual(
                [d['state'] for d in doc['domains']], labels, name)

    def test_cpu_cells_are_labelled_in_domain_order(self):
        _doc, svg = render('fake-zen', 0)
        root = ET.fromstring(svg)
        self.assertEqual(
            [['L3-0 \u00b7 L3', 'Empty', '0 servers', '0', '1', '8', '9'],
             ['L3-1 \u00b7 L3', 'Empty', '0 servers', '2', '3', '10', '11'],
             ['L3-2 \u00b7 L3', 'Empty', '0 servers', '4', '5', '12', '13'],
             ['L3-3 \u00b7 L3', 'Empty', '0 servers', '6', '7', '14', '15']],
            [texts(g) for g in groups(root, 'domain')])
        self.assertEqual(['NUMA node 0 \u00b7 CPUs 0-3,8-11',
                          'NUMA node 1 \u00b7 CPUs 4-7,12-15'],
                         [texts(g)[0] for g in groups(root, 'numa-node')])

    def test_storms_are_marked(self):
        _doc, svg = render('fake-zen', 12)
        root = ET.fromstring(svg)
        storming = [g for g in groups(root, 'domain')
                    if 'SPIN STORM' in texts(g)]
        self.assertEqual(['L3-0 \u00b7 L3'], [texts(g)[0] for g in storming])
        marks = [p for p in root.iter(NS + 'path')
                 if p.get('class') == 'storm']
        # The storming server's and the legend's.
        self.assertEqual(2, len(marks))


def _q6600():
    return host_views.view(host_views.devcloud('fake-q6600'), [
        host_views.server('vm-a', 'L2-0', [0, 1], isolation='required'),
        host_views.server('vm-split', 'L2-0', [0, 2]),
        host_views.server('vm-c', cls='unknown', vcpus=4)])


class BlockTest(testtools.TestCase):

    def test_blocks_cover_the_pinned_cells(self):
        root = ET.fromstring(host_map.render_svg(_q6600()))
        (a,) = groups(root, 'server')
        rects = [(int(r.get('x')), int(r.get('width')))
                 for r in a.iter(NS + 'rect')]
        cpu_rects = [r for r in root.iter(NS + 'rect')
                     if r.get('class') == 'cpu']
        first = int(cpu_rects[0].get('x'))
        # One block over CPUs 0 and 1, the two first cells of L2-0.
        self.assertEqual([(first, 2 * geo.CELL - 2)], rects)
        self.assertEqual('vm-a', texts(a)[0])
        tip = a.find(NS + 'title').text
        self.assertEqual('vm-a\nclass: memory-bound\nisolation: required\n'
                         'vCPUs: 2\npins: 0-1\ndomain: L2-0', tip)

    def test_servers_across_domains_and_unpinned_float(self):
        root = ET.fromstring(host_map.render_svg(_q6600()))
        band = groups(root, 'floating-band')[0]
        self.assertEqual(
            ['Floating servers (unpinned or across domains): 2',
             'vm-c', '4 vCPU \u00b7 unpinned', 'vm-split',
             '2 vCPU \u00b7 0,2'], texts(band))

    def test_colour_is_stable_per_uuid(self):
        self.assertEqual('#3860d0', host_map.server_colour('vm-a'))
        svg = host_map.render_svg(_q6600())
        self.assertIn('fill="#3860d0"', svg)


class EscapeTest(testtools.TestCase):

    def test_guest_text_is_escaped(self):
        doc = _q6600()
        doc['host'] = '<script>alert("h")</script>'
        evil = '<script>alert(1)</script>&\x01'
        doc['servers'][0]['uuid'] = evil
        doc['domains'][0]['servers'] = [evil]
        doc['servers'][0]['sizing'] = {'<b>': '"x"'}
        svg = host_map.render_svg(doc)
        self.assertNotIn('<script', svg)
        self.assertNotIn('<b>', svg)
        self.assertIn('Host &lt;script&gt;alert(&quot;h&quot;)'
                      '&lt;/script&gt;', svg)
        root = ET.fromstring(svg)
        (a,) = groups(root, 'server')
        self.assertEqual('<script>', texts(a)[0])
        self.assertIn(evil.replace('\x01', '\ufffd'),
                      a.find(NS + 'title').text)
        self.assertIn('sizing: <b>="x"', a.find(NS + 'title').text)


class DeterminismTest(testtools.TestCase):

    def test_same_document_same_bytes(self):
        doc, svg = render('epyc-16x-l3', 200)
        again = host_map.render_svg(json.loads(json.dumps(doc)))
        self.assertEqual(svg, again)

    def test_server_order_in_the_document_does_not_matter(self):
        doc, svg = render('fake-i9', 30)
        doc['servers'].reverse()
        self.assertEqual(svg, host_map.render_svg(doc))

    def test_bad_document_raises_invalid_input(self):
        self.assertRaises(exception.InvalidInput, host_map.render_svg,
                          {'version': '1.0'})


def _inside(inner, outer):
    ix, iy, iw, ih = inner
    ox, oy, ow, oh = outer
    return ox <= ix and oy <= iy and ix + iw <= ox + ow and iy + ih <= oy + oh


def _apart(a, b):
    return (a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0]
            or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1])


class ReadableAtScaleTest(testtools.TestCase):
    """128 CPUs, 16 domains, 200 servers: wrapped, nothing overlaps."""

    def test_layout_fits_and_nothing_overlaps(self):
        doc, _svg = render('epyc-16x-l3', 200)
        page = geo.layout(host_view.from_document(doc))
        self.assertLessEqual(page.width, geo.MAX_WIDTH)
        boxes = []
        for node in page.nodes:
            node_box = (node.x, node.y, node.width, node.height)
            self.assertTrue(_inside(node_box, (0, 0, page.width,
                                               page.height)))
            rows = {p.y for p in node.panels}
            self.assertEqual(2, len(rows))  # 8 domains wrap to two rows
            for p in node.panels:
                box = (p.x, p.y, p.width, p.height)
                self.assertTrue(_inside(box, node_box), p.domain.id)
                for other in boxes:
                    self.assertTrue(_apart(box, other), p.domain.id)
                boxes.append(box)
                for _cpu, x, y in p.cells:
                    self.assertTrue(_inside((x, y, geo.CELL, geo.CELL), box))
                for lane in p.lanes:
                    for x, y, w in lane.runs:
                        self.assertTrue(_inside((x, y, w, geo.LANE), box))
        for chip in page.chips:
            self.assertTrue(_inside(
                (chip.x, chip.y, geo.CHIP_WIDTH, geo.CHIP_HEIGHT),
                (0, page.band_y, page.width, page.height - page.band_y)))

    def test_large_domains_wrap_their_cells(self):
        topology = {'cache_domains': [
            {'id': 'L3-0', 'level': 3, 'numa_nodes': [0],
             'cpus': list(range(40))}],
            'numa_nodes': [{'id': 0, 'cpus': list(range(40))}]}
        doc = host_views.view(topology, [
            host_views.server('vm-a', 'L3-0', [14, 15, 16, 17])])
        (panel,) = geo.layout(host_view.from_document(doc)).nodes[0].panels
        self.assertEqual(3, len({y for _c, _x, y in panel.cells}))
        (lane,) = panel.lanes
        # CPUs 14-15 end the first row, 16-17 start the second.
        self.assertEqual([2 * geo.CELL] * 2, [w for _x, _y, w in lane.runs])
        self.assertEqual(geo.LANE, lane.runs[1][1] - lane.runs[0][1])


@st.composite
def documents(draw):
    name = draw(st.sampled_from(sorted(host_views.TOPOLOGIES)))
    return host_views.populated(host_views.TOPOLOGIES[name](),
                                draw(st.integers(0, 60)),
                                floating_every=draw(st.integers(0, 6)))


class PropertyTest(testtools.TestCase):

    @settings(max_examples=40, deadline=None)
    @given(documents(), st.text(max_size=12))
    def test_valid_documents_render_to_well_formed_svg(self, doc, name):
        doc['host'] = name or 'h'
        root = ET.fromstring(host_map.render_svg(doc))
        cells = [r for r in root.iter(NS + 'rect') if r.get('class') == 'cpu']
        self.assertEqual(sum(len(cpu_sets.cpu_ranges(d['cpus']))
                             for d in doc['domains']), len(cells))


class DocPictureTest(testtools.TestCase):
    """The admin guide's picture is what the renderer draws today."""

    def test_checked_in_svg_is_current(self):
        path = os.path.join(host_views.ROOT, 'tools', 'host_map_example.py')
        spec = importlib.util.spec_from_file_location('host_map_example',
                                                      path)
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
        with open(example.OUTPUT) as f:
            self.assertEqual(host_map.render_svg(example.document()),
                             f.read(), 'run tools/host_map_example.py')
