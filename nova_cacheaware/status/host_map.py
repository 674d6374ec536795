"""A picture of one host: its CPUs, cache domains and servers, as SVG.

:func:`render_svg` draws a host-view document
(:mod:`nova_cacheaware.contracts.host_view`): CPU cells grouped by cache
domain, domains by NUMA node; each domain's state (Empty, Clean, Dirty)
as the colour and label of its header; spin storms as a red dashed frame;
each server pinned inside one domain as a coloured block in its own lane
under the CPUs it is pinned to, the others (unpinned, or pinned across
domains) as chips in a band of floating servers; a legend. Pure and
deterministic: the same document gives the same bytes. Every text comes
from the document, partly from guests, and is escaped.
"""

import colorsys
import hashlib
from xml.sax import saxutils

from nova_cacheaware.contracts import host_view
from nova_cacheaware.status import host_map_layout as geo
from nova_cacheaware.topology import cpulist

#: Each domain state's colour: the header band and the legend swatch.
STATE_COLOURS = {'Empty': '#cfd8dc', 'Clean': '#66bb6a', 'Dirty': '#ef5350'}
STORM = '#d50000'
NODE_FILL = '#eef3f7'
PANEL_FILL = '#ffffff'
INK = '#263238'
FAINT = '#78909c'
#: Characters shown of a uuid on a block; the whole one is in its tooltip.
SHORT_UUID = 8
LONGEST_TEXT = 80

_ATTR = {'"': '&quot;'}


def _clean(text):
    """``text`` with what XML 1.0 cannot hold replaced (U+FFFD)."""
    return ''.join(
        c if (c in '\t\n\r' or '\x20' <= c <= '\ud7ff'
              or '\ue000' <= c <= '\ufffd' or c >= '\U00010000')
        else '\ufffd' for c in text)


def esc(text, limit=None):
    """``text`` escaped for an SVG text node or attribute; cut at ``limit``."""
    text = _clean(str(text))
    if limit is not None and len(text) > limit:
        text = text[:limit - 1] + '\u2026'
    return saxutils.escape(text, _ATTR)


def server_colour(uuid):
    """A stable colour for a server: the hue from a hash of its uuid."""
    digest = hashlib.sha256(uuid.encode('utf-8', 'replace')).digest()
    hue = int.from_bytes(digest[:2], 'big') / 65536.0
    lightness = 0.42 + digest[2] / 255.0 * 0.16
    r, g, b = colorsys.hls_to_rgb(hue, lightness, 0.62)
    return '#%02x%02x%02x' % (round(r * 255), round(g * 255), round(b * 255))


def _text(x, y, text, size=11, weight=None, fill=INK, anchor=None):
    extra = (' font-weight="%s"' % weight if weight else '') + (
        ' text-anchor="%s"' % anchor if anchor else '')
    return ('<text x="%d" y="%d" font-size="%d" fill="%s"%s>%s</text>'
            % (x, y, size, fill, extra, text))


def _rect(x, y, w, h, fill, stroke=None, css=None, extra=''):
    return ('<rect%s x="%d" y="%d" width="%d" height="%d" fill="%s"%s%s/>'
            % (' class="%s"' % css if css else '', x, y, w, h, fill,
               ' stroke="%s"' % stroke if stroke else '', extra))


def _tooltip(server):
    """The hover text of a server: uuid, class, isolation, pins, sizing."""
    parts = [server.uuid, 'class: %s' % server.workload_class,
             'isolation: %s' % (server.isolation or 'unknown'),
             'vCPUs: %d' % server.vcpus,
             'pins: %s' % (cpulist.format_cpulist(server.pins) if server.pins
                           else 'floating'),
             'domain: %s' % (server.domain or '-')]
    if server.pcpu_estimate is not None:
        parts.append('pCPU estimate: %.2f' % server.pcpu_estimate)
    if server.spin_storm:
        parts.append('SPIN STORM')
    for name in ('sizing', 'balloon'):
        detail = getattr(server, name)
        if detail is not None:
            parts.append('%s: %s' % (name, ', '.join(
                '%s=%s' % (k, detail[k]) for k in sorted(detail))))
    return '<title>%s</title>' % esc('\n'.join(parts))


def _storm_mark(x, y):
    """A small red warning triangle with its top at ``(x, y)``."""
    return ('<path class="storm" d="M%d %dl6 11h-12z" fill="%s"/>'
            % (x, y, STORM))


def _lane(lane, label_x):
    server = lane.server
    colour = server_colour(server.uuid)
    out = ['<g class="server">', _tooltip(server)]
    for x, y, width in lane.runs:
        out.append(_rect(x + 1, y + 1, width - 2, geo.LANE - 3, colour,
                         STORM if server.spin_storm else None))
    out.append(_text(label_x, lane.y + geo.LANE - 4,
                     esc(server.uuid[:SHORT_UUID]), size=10))
    if server.spin_storm:
        out.append(_storm_mark(label_x + 56, lane.y + 1))
    out.append('</g>')
    return out


def _panel(panel):
    d = panel.domain
    colour = STATE_COLOURS[d.state]
    right = panel.x + panel.width
    out = ['<g class="domain">',
           '<title>%s</title>' % esc('%s (%s): %s, CPUs %s' % (
               d.id, d.level, d.state, cpulist.format_cpulist(d.cpus))),
           _rect(panel.x, panel.y, panel.width, panel.height, PANEL_FILL,
                 STORM if d.spin_storm else FAINT,
                 extra=' stroke-width="3" stroke-dasharray="6 3"'
                 if d.spin_storm else ''),
           _rect(panel.x, panel.y, panel.width, geo.PANEL_HEADER - 6,
                 colour, css='state'),
           _text(panel.x + geo.PAD, panel.y + 14, '%s \u00b7 %s' % (
               esc(d.id, 24), esc(d.level, 8)), size=12, weight='bold'),
           _text(panel.x + geo.PAD, panel.y + 29, esc(d.state),
                 weight='bold'),
           _text(right - geo.PAD, panel.y + 29, '%d server%s' % (
               len(d.servers), '' if len(d.servers) == 1 else 's'),
               size=10, anchor='end')]
    if d.spin_storm:
        out.append(_text(panel.x + 52, panel.y + 29, 'SPIN STORM', size=10,
                         weight='bold', fill=STORM))
    for cpu, x, y in panel.cells:
        out.append(_rect(x + 1, y + 1, geo.CELL - 2, geo.CELL - 2,
                         '#fafafa', '#b0bec5', css='cpu'))
        out.append(_text(x + geo.CELL // 2, y + 16, str(cpu), size=9,
                         fill=FAINT, anchor='middle'))
    label_x = right - geo.LABEL_WIDTH - geo.PAD + 6
    for lane in panel.lanes:
        out.extend(_lane(lane, label_x))
    out.append('</g>')
    return out


def _node(box):
    node = box.node
    out = ['<g class="numa-node">',
           _rect(box.x, box.y, box.width, box.height, NODE_FILL, FAINT,
                 extra=' rx="6"'),
           _text(box.x + geo.GAP, box.y + 18,
                 'NUMA node %d \u00b7 CPUs %s' % (node.id, esc(
                     cpulist.format_cpulist(node.cpus), LONGEST_TEXT)),
                 size=12, weight='bold')]
    for panel in box.panels:
        out.extend(_panel(panel))
    out.append('</g>')
    return out


def _chip(chip):
    s = chip.server
    out = ['<g class="server floating">', _tooltip(s),
           _rect(chip.x, chip.y, geo.CHIP_WIDTH, geo.CHIP_HEIGHT,
                 server_colour(s.uuid), STORM if s.spin_storm else None,
                 extra=' rx="4"'),
           _text(chip.x + 6, chip.y + 13, esc(s.uuid[:SHORT_UUID]),
                 size=10, weight='bold', fill='#ffffff'),
           _text(chip.x + 6, chip.y + 25, '%d vCPU \u00b7 %s' % (
               s.vcpus, esc(cpulist.format_cpulist(s.pins), 18) if s.pins
               else 'unpinned'), size=9, fill='#ffffff')]
    if s.spin_storm:
        out.append(_storm_mark(chip.x + geo.CHIP_WIDTH - 16, chip.y + 4))
    out.append('</g>')
    return out


def _band(page):
    out = ['<g class="floating-band">',
           _text(geo.MARGIN, page.band_y + 18,
                 'Floating servers (unpinned or across domains): %d'
                 % len(page.chips), size=12, weight='bold')]
    for chip in page.chips:
        out.extend(_chip(chip))
    out.append('</g>')
    return out


def _title(view):
    states = {s: 0 for s in host_view.STATES}
    for d in view.domains:
        states[d.state] += 1
    health = ('agent healthy' if view.agent_healthy
              else 'AGENT UNHEALTHY')
    line = '%s model \u00b7 %s \u00b7 %s, generation %d' % (
        esc(view.model), view.generated_at.replace(tzinfo=None).isoformat(
            timespec='seconds') + 'Z',
        health, view.agent_generation)
    counts = '%d CPUs \u00b7 %d domains (%s) \u00b7 %d servers' % (
        len(view.cpus), len(view.domains), ', '.join(
            '%s %d' % (s, n) for s, n in states.items()), len(view.servers))
    name = esc(view.host, LONGEST_TEXT)
    return [_text(geo.MARGIN, geo.MARGIN + 20, 'Host %s' % name, size=18,
                  weight='bold'),
            _text(geo.MARGIN, geo.MARGIN + 38, line,
                  fill=INK if view.agent_healthy else STORM),
            _text(geo.MARGIN, geo.MARGIN + 54, counts, fill=FAINT)]


def _legend():
    x, y = geo.MARGIN, geo.MARGIN + geo.TITLE
    out = ['<g class="legend">']
    for state, colour in STATE_COLOURS.items():
        out.append(_rect(x, y, 18, 14, colour, FAINT))
        out.append(_text(x + 24, y + 11, state))
        x += 84
    out.append(_rect(x, y, 18, 14, PANEL_FILL, STORM,
                     extra=' stroke-width="2" stroke-dasharray="4 2"'))
    out.append(_storm_mark(x + 30, y + 1))
    out.append(_text(x + 44, y + 11, 'spin storm'))
    x += 130
    for i, uuid in enumerate(('legend-a', 'legend-b', 'legend-c')):
        out.append(_rect(x + 14 * i, y + 2, 12, 10, server_colour(uuid)))
    out.append(_text(x + 50, y + 11, 'a server on its pinned CPUs '
                     '(hover: class, isolation)'))
    out.append('</g>')
    return out


def render_svg(view):
    """The SVG (a string) of a host-view document (a dict).

    Raises :class:`~nova_cacheaware.exception.InvalidInput` for a
    document that :func:`~nova_cacheaware.contracts.host_view.from_document`
    refuses.
    """
    host = host_view.from_document(view)
    page = geo.layout(host)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="DejaVu Sans, Verdana, '
           'sans-serif">' % (page.width, page.height, page.width,
                             page.height),
           '<title>%s</title>' % esc('Host %s' % host.host),
           _rect(0, 0, page.width, page.height, '#ffffff')]
    out.extend(_title(host))
    out.extend(_legend())
    for box in page.nodes:
        out.extend(_node(box))
    out.extend(_band(page))
    out.append('</svg>')
    return '\n'.join(out) + '\n'
