"""pCPU-Est's two exact max-flow back ends on the class/atom network.

SciPy's Dinic (in C) for large networks when SciPy is installed, a pure
Python Dinic otherwise; both on integer capacities (demands scaled by a
common denominator), so the estimate stays exact. Used by
:func:`nova_cacheaware.pcpu_est.estimate._next_level`.
"""

from fractions import Fraction
import math


_UNLOADED = object()
#: ``(numpy, sparse, csgraph)``, None without SciPy, or not yet imported.
_SCIPY = _UNLOADED


def _scipy():
    # SciPy's max-flow (Dinic, in C) when it is installed; the pure-Python
    # network below otherwise. Both are exact integer flows. Imported on
    # the first network large enough to use it, never at import: the
    # scheduler and the agent import this module and most hosts never
    # need it (numpy + SciPy alone add tens of MiB to a process).
    global _SCIPY
    if _SCIPY is _UNLOADED:
        try:
            import numpy
            from scipy import sparse
            from scipy.sparse import csgraph
            _SCIPY = numpy, sparse, csgraph
        except ImportError:
            _SCIPY = None
    return _SCIPY


#: SciPy's max-flow works on 32-bit capacities.
_INT32_MAX = 2 ** 31 - 1


#: Networks with fewer class + atom nodes run faster in pure Python (SciPy's
#: per-call overhead dominates them).
SCIPY_MIN_NODES = 256


def network(class_ids, atom_ids, classes, atom_sizes, t):
    """The max-flow network at level ``t``: SciPy's when it pays, else ours."""
    if (len(class_ids) + len(atom_ids) >= SCIPY_MIN_NODES
            and _scipy() is not None):
        net = _ScipyNetwork(class_ids, atom_ids, classes, atom_sizes, t)
        if net.solved:
            return net
    return _Network(class_ids, atom_ids, classes, atom_sizes, t)


def _scaled_demands(class_ids, classes, t):
    """Integer demands at level ``t`` times a common denominator ``scale``.

    Returns ``([demand * scale per class], scale)``. Plain integer
    arithmetic: a Fraction per class costs more than the flow itself.
    """
    t = Fraction(t)
    scale = t.denominator
    capped = []
    for k in class_ids:
        cap = classes[k].cap
        if cap < t:
            capped.append(k)
            scale = math.lcm(scale, cap.denominator)
    per_t = t.numerator * (scale // t.denominator)
    want = {k: classes[k].n * per_t for k in class_ids}
    for k in capped:
        cap = classes[k].cap
        want[k] = classes[k].n * cap.numerator * (scale // cap.denominator)
    return [want[k] for k in class_ids], scale


class _ScipyNetwork:
    """The network of :class:`_Network`, solved by SciPy's Dinic in C.

    ``solved`` is False when a capacity does not fit 32 bits (then the
    caller uses :class:`_Network`). The residual graph ``capacity - flow``
    answers the same cut questions.
    """

    def __init__(self, class_ids, atom_ids, classes, atom_sizes, t):
        numpy, sparse, csgraph = _scipy()
        self.class_ids = class_ids = sorted(class_ids)
        atom_ids = sorted(atom_ids)
        want, scale = _scaled_demands(class_ids, classes, t)
        n_cls = len(class_ids)
        self.sink = sink = 1 + n_cls + len(atom_ids)
        self.total = total = sum(want)
        inf = total + 1
        self.solved = (inf <= _INT32_MAX and all(
            atom_sizes[a] * scale <= _INT32_MAX for a in atom_ids))
        if not self.solved:
            return
        # Class -> atom edges, vectorised: every class's atoms mapped to
        # their node (-1: not in this network) and filtered.
        n_atoms = len(atom_ids)
        atom_node = numpy.full(len(atom_sizes), -1, dtype=numpy.int64)
        atom_index = numpy.array(atom_ids, dtype=numpy.int64)
        atom_node[atom_index] = numpy.arange(1 + n_cls, 1 + n_cls + n_atoms)
        lists = []
        for k in class_ids:
            c = classes[k]
            if c.atom_array is None:
                c.atom_array = numpy.array(c.atoms, dtype=numpy.int64)
            lists.append(c.atom_array)
        lengths = numpy.fromiter((len(a) for a in lists), numpy.int64,
                                 n_cls)
        heads = atom_node[numpy.concatenate(lists)] if lists else \
            numpy.zeros(0, dtype=numpy.int64)
        tails = numpy.repeat(numpy.arange(1, 1 + n_cls), lengths)
        keep = heads >= 0
        sizes = numpy.array(atom_sizes, dtype=numpy.int64)[atom_index]
        rows = numpy.concatenate((
            numpy.zeros(n_cls, dtype=numpy.int64),
            numpy.arange(1 + n_cls, 1 + n_cls + n_atoms), tails[keep]))
        cols = numpy.concatenate((
            numpy.arange(1, 1 + n_cls), numpy.full(n_atoms, sink),
            heads[keep]))
        caps = numpy.concatenate((
            numpy.array(want, dtype=numpy.int64), sizes * scale,
            numpy.full(int(keep.sum()), inf, dtype=numpy.int64)))
        size = sink + 1
        graph = sparse.csr_matrix(
            (caps.astype(numpy.int32), (rows, cols)), shape=(size, size))
        result = csgraph.maximum_flow(graph, 0, sink, method='dinic')
        self.flow = int(result.flow_value)
        residual = (graph - result.flow).tocsr()
        residual.data[residual.data < 0] = 0
        residual.eliminate_zeros()
        self._from_source = set(csgraph.breadth_first_order(
            residual, 0, directed=True, return_predecessors=False).tolist())
        self._to_sink = set(csgraph.breadth_first_order(
            residual.T.tocsr(), sink, directed=True,
            return_predecessors=False).tolist())

    def saturates_demand(self):
        """True when every class gets its whole demand."""
        return self.flow == self.total

    def source_side_classes(self):
        """Classes reachable from the source in the residual graph."""
        return {k for i, k in enumerate(self.class_ids)
                if 1 + i in self._from_source}

    def classes_cut_from_sink(self):
        """Classes that cannot reach the sink in the residual graph."""
        return {k for i, k in enumerate(self.class_ids)
                if 1 + i not in self._to_sink}


class _Network:
    """Max-flow on source -> classes -> atoms -> sink, in exact integers.

    Demands at level ``t`` are rationals; every capacity is multiplied by
    the common denominator so that Dinic's algorithm runs on ints.
    """

    def __init__(self, class_ids, atom_ids, classes, atom_sizes, t):
        class_ids = sorted(class_ids)
        atom_ids = sorted(atom_ids)
        want, scale = _scaled_demands(class_ids, classes, t)
        self.class_ids = class_ids
        n_cls = len(class_ids)
        node_of_atom = {a: 1 + n_cls + i for i, a in enumerate(atom_ids)}
        self.sink = 1 + n_cls + len(atom_ids)
        size = self.sink + 1
        self.head = [[] for _ in range(size)]
        self.to = []
        self.cap = []
        # Sink edges first, so that an atom's first edge is its exit.
        sink_edge = {}
        room = {}
        for a, node in node_of_atom.items():
            room[node] = atom_sizes[a] * scale
            sink_edge[node] = self._edge(node, self.sink, room[node])
        total = sum(want)
        inf = total + 1
        source_edge = [self._edge(0, 1 + i, want[i])
                       for i in range(n_cls)]
        # Greedy start: route each class's demand to its atoms' free room
        # right away; Dinic only has to repair what this leaves. It keeps
        # the flow valid, so exactness is untouched.
        cap = self.cap
        for i, k in enumerate(class_ids):
            left = want[i]
            for a in classes[k].atoms:
                node = node_of_atom.get(a)
                if node is None:
                    continue
                e = self._edge(1 + i, node, inf)
                push = min(left, room[node])
                if push > 0:
                    left -= push
                    room[node] -= push
                    cap[e] -= push
                    cap[e ^ 1] += push
                    se = sink_edge[node]
                    cap[se] -= push
                    cap[se ^ 1] += push
            pushed = want[i] - left
            se = source_edge[i]
            cap[se] -= pushed
            cap[se ^ 1] += pushed
        self.greedy = total - sum(cap[e] for e in source_edge)
        self.total = total
        self.flow = self.greedy + self._max_flow()

    def _edge(self, u, v, c):
        e = len(self.to)
        self.to += (v, u)
        self.cap += (c, 0)
        self.head[u].append(e)
        self.head[v].append(e + 1)
        return e

    def _max_flow(self):
        # Dinic: BFS levels, then a blocking flow by depth-first search
        # with current-arc pointers; after each augmentation the search
        # retreats only to the first edge it saturated.
        to, cap, head, sink = self.to, self.cap, self.head, self.sink
        flow = 0
        n = len(head)
        while True:
            level = [-1] * n
            level[0] = 0
            queue = [0]
            for u in queue:
                lu = level[u] + 1
                for e in head[u]:
                    v = to[e]
                    if cap[e] > 0 and level[v] < 0:
                        level[v] = lu
                        queue.append(v)
            if level[sink] < 0:
                return flow
            it = [0] * n
            path = []
            u = 0
            while True:
                if u == sink:
                    pushed = min(cap[e] for e in path)
                    flow += pushed
                    cut = None
                    for i, e in enumerate(path):
                        cap[e] -= pushed
                        cap[e ^ 1] += pushed
                        if cut is None and not cap[e]:
                            cut = i
                    del path[cut:]
                    u = to[path[-1]] if path else 0
                    continue
                edges = head[u]
                i = it[u]
                want = level[u] + 1
                while i < len(edges):
                    e = edges[i]
                    if cap[e] > 0 and level[to[e]] == want:
                        break
                    i += 1
                it[u] = i
                if i == len(edges):
                    if not path:
                        break              # blocking flow found
                    level[u] = -1          # dead end: never enter again
                    e = path.pop()
                    u = to[e ^ 1]
                    it[u] += 1
                    continue
                path.append(edges[i])
                u = to[edges[i]]

    def saturates_demand(self):
        """True when every class gets its whole demand."""
        return self.flow == self.total

    def source_side_classes(self):
        """Classes reachable from the source in the residual graph."""
        seen = {0}
        stack = [0]
        while stack:
            u = stack.pop()
            for e in self.head[u]:
                v = self.to[e]
                if self.cap[e] > 0 and v not in seen:
                    seen.add(v)
                    stack.append(v)
        return {k for i, k in enumerate(self.class_ids) if 1 + i in seen}

    def classes_cut_from_sink(self):
        """Classes that cannot reach the sink in the residual graph.

        They form the maximal tight set: none of them can grow without
        another vCPU at or below the level shrinking.
        """
        seen = {self.sink}
        stack = [self.sink]
        while stack:
            v = stack.pop()
            for e in self.head[v]:
                u = self.to[e]
                # e is v -> u; its pair e ^ 1 is u -> v.
                if self.cap[e ^ 1] > 0 and u not in seen:
                    seen.add(u)
                    stack.append(u)
        return {k for i, k in enumerate(self.class_ids) if 1 + i not in seen}
