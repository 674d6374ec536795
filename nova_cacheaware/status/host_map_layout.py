"""Where each part of a host map goes: pure geometry, in whole pixels.

:func:`layout` turns a :class:`~nova_cacheaware.contracts.host_view.HostView`
into boxes: NUMA nodes holding domain panels (flowed left to right and
wrapped), each panel a grid of CPU cells with one lane per server pinned
there, and the band of floating servers. :mod:`.host_map` draws them.
Integers only, so the SVG text is the same on every machine.
"""

import dataclasses
import typing as ty

#: A CPU cell's side; a domain's grid wraps after :data:`MAX_COLUMNS`.
CELL = 24
MAX_COLUMNS = 16
#: A server lane's height per grid row, and the label column beside lanes.
LANE = 14
LABEL_WIDTH = 70
PAD = 8
#: A domain panel's header (id and level; state and storm badges).
PANEL_HEADER = 40
PANEL_MIN_GRID = 132
NODE_HEADER = 26
GAP = 10
#: The page: margin, widest content, the title and legend above.
MARGIN = 16
MAX_WIDTH = 1200
MIN_WIDTH = 800
TITLE = 64
LEGEND = 40
#: A floating server's chip and the band's heading.
CHIP_WIDTH = 176
CHIP_HEIGHT = 30
BAND_HEADER = 28


@dataclasses.dataclass(frozen=True)
class Lane:
    """A server's lane in a panel: ``(x, y, width)`` runs of its pins."""

    server: ty.Any
    y: int
    runs: ty.Tuple[ty.Tuple[int, int, int], ...]


@dataclasses.dataclass(frozen=True)
class Panel:
    """A domain's box; ``cells``: ``(cpu, x, y)`` in page coordinates."""

    domain: ty.Any
    x: int
    y: int
    width: int
    height: int
    cells: ty.Tuple[ty.Tuple[int, int, int], ...]
    lanes: ty.Tuple[Lane, ...]


@dataclasses.dataclass(frozen=True)
class NodeBox:
    """A NUMA node's box around its domain panels."""

    node: ty.Any
    x: int
    y: int
    width: int
    height: int
    panels: ty.Tuple[Panel, ...]


@dataclasses.dataclass(frozen=True)
class Chip:
    """A floating server's chip in the band."""

    server: ty.Any
    x: int
    y: int


@dataclasses.dataclass(frozen=True)
class Layout:
    """The whole page: its size, the NUMA boxes and the floating band."""

    width: int
    height: int
    nodes: ty.Tuple[NodeBox, ...]
    band_y: int
    chips: ty.Tuple[Chip, ...]


def placement(view):
    """``({domain id: servers pinned inside it}, floating servers)``.

    A server is drawn in a domain when every pin is one of the domain's
    CPUs; unpinned servers, and servers pinned across domains or to CPUs
    of no domain, float. Lanes run in order of first pin, then uuid.
    """
    owner = {cpu: d.id for d in view.domains for cpu in d.cpus}
    pinned = {d.id: [] for d in view.domains}
    floating = []
    for server in view.servers:
        homes = {owner.get(cpu) for cpu in server.pins or ()}
        if len(homes) == 1 and None not in homes:
            pinned[homes.pop()].append(server)
        else:
            floating.append(server)
    for servers in pinned.values():
        servers.sort(key=lambda s: (s.pins[0], s.uuid))
    floating.sort(key=lambda s: s.uuid)
    return pinned, floating


def _runs(positions, cpus, x0):
    """Merge pinned cells that touch in one grid row into ``(x, row, w)``."""
    runs = []
    for cpu in cpus:
        column, row = positions[cpu]
        x = x0 + column * CELL
        if runs and runs[-1][1] == row and runs[-1][0] + runs[-1][2] == x:
            runs[-1][2] += CELL
        else:
            runs.append([x, row, CELL])
    return runs


def _panel(domain, servers, x, y):
    """A domain's panel at ``(x, y)``: grid, then a lane per server."""
    columns = min(len(domain.cpus), MAX_COLUMNS)
    rows = -(-len(domain.cpus) // columns)
    grid_x, grid_y = x + PAD, y + PANEL_HEADER
    positions = {cpu: (i % columns, i // columns)
                 for i, cpu in enumerate(domain.cpus)}
    cells = tuple((cpu, grid_x + col * CELL, grid_y + row * CELL)
                  for cpu, (col, row) in positions.items())
    lanes_y = grid_y + rows * CELL + PAD // 2
    lane_height = rows * LANE
    lanes = []
    for i, server in enumerate(servers):
        top = lanes_y + i * lane_height
        runs = tuple((rx, top + row * LANE, width) for rx, row, width
                     in _runs(positions, server.pins, grid_x))
        lanes.append(Lane(server, top, runs))
    width = PAD + max(columns * CELL, PANEL_MIN_GRID) + LABEL_WIDTH + PAD
    height = (lanes_y - y) + len(servers) * lane_height + PAD
    return Panel(domain, x, y, width, height, cells, tuple(lanes))


def _flow(items, x0, y0, inner_width, place):
    """Place ``items`` left to right from ``(x0, y0)``, wrapping rows.

    ``place(item, x, y)`` returns a box with ``width`` and ``height``.
    Returns the boxes and the bottom of the last row.
    """
    boxes, x, y, row_height = [], x0, y0, 0
    for item in items:
        box = place(item, x, y)
        if x > x0 and x + box.width > x0 + inner_width:
            x, y, row_height = x0, y + row_height + GAP, 0
            box = place(item, x, y)
        boxes.append(box)
        x += box.width + GAP
        row_height = max(row_height, box.height)
    return boxes, y + row_height


def _node(node, domains, pinned, y):
    """A NUMA node's box at ``y``, its panels flowed inside."""
    inner = MAX_WIDTH - 2 * MARGIN - 2 * GAP
    panels, bottom = _flow(
        [domains[d] for d in node.domains], MARGIN + GAP, y + NODE_HEADER,
        inner, lambda d, px, py: _panel(d, pinned[d.id], px, py))
    right = max([p.x + p.width for p in panels], default=MARGIN + 240)
    width = max(right + GAP - MARGIN, 240)
    return NodeBox(node, MARGIN, y, width, bottom + GAP - y, tuple(panels))


def _band(floating, y):
    """The floating servers' chips, below ``y``, and the band's bottom."""
    per_row = (MAX_WIDTH - 2 * MARGIN) // (CHIP_WIDTH + GAP)
    chips = tuple(
        Chip(s, MARGIN + (i % per_row) * (CHIP_WIDTH + GAP),
             y + BAND_HEADER + (i // per_row) * (CHIP_HEIGHT + GAP))
        for i, s in enumerate(floating))
    rows = -(-len(floating) // per_row)
    return chips, y + BAND_HEADER + rows * (CHIP_HEIGHT + GAP)


def layout(view):
    """The :class:`Layout` of a host view."""
    domains = {d.id: d for d in view.domains}
    pinned, floating = placement(view)
    y = MARGIN + TITLE + LEGEND
    nodes = []
    for node in view.numa_nodes:
        box = _node(node, domains, pinned, y)
        nodes.append(box)
        y += box.height + GAP
    chips, bottom = _band(floating, y)
    right = max([n.x + n.width for n in nodes]
                + [c.x + CHIP_WIDTH for c in chips], default=0)
    width = min(max(right + MARGIN, MIN_WIDTH), MAX_WIDTH)
    return Layout(width, bottom + MARGIN, tuple(nodes), y, chips)
