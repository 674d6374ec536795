"""pCPU-Est: how many pCPUs a VM really gets, computed exactly.

Study 004 estimates a VM's available pCPUs with a greedy grouping of the
vCPU/pCPU affinity graph. What it approximates is the *max-min fair division*
of pCPU time among vCPUs:

* every pCPU supplies 1.0 (one CPU's worth of time);
* vCPU ``v`` may only use pCPUs in its affinity (intersected with the host's
  usable ``pcpus`` when given) and at most ``cap[v]`` in total (a vCPU is one
  thread, so ``cap <= 1``; libvirt ``<cputune>`` quota/period lowers it);
* the vector of vCPU shares, sorted ascending, is lexicographically maximal.

That allocation exists and is unique (it is the lexicographically optimal
base of a polymatroid, Fujishige 1980; Megiddo 1974 for flows), so by
symmetry interchangeable vCPUs get equal shares.  This module computes it
**exactly**, with rational arithmetic, by progressive filling:

1. vCPUs with the same (affinity, cap) form a *class*; pCPUs used by the same
   set of classes form an *atom*.  vCPUs pinned to a single pCPU are folded
   further: pCPUs whose pinned vCPUs have the same caps and that the same
   floating classes cover are interchangeable, so their pinned vCPUs form one
   class over one atom (exact by the same symmetry argument).  Real hosts have
   few distinct affinity sets, so the network below stays small however many
   vCPUs there are.
2. The network source -> class (capacity = class demand) -> atom (unbounded)
   -> sink (capacity = atom size) is feasible for a demand vector iff the
   demand is achievable.  All unfrozen vCPUs rise together to a level ``t``;
   the largest feasible ``t`` is found with Newton (Dinkelbach) steps on the
   minimum cut: an infeasible ``t`` gives a violated set X whose constraint
   ``t <= (|N(X)| - frozen demand in X) / #unfrozen vCPUs in X`` is the next
   trial level.  The steps strictly decrease and stop at the exact level.
3. At that level, the classes that cannot reach the sink in the residual
   graph form the maximal tight set: they freeze at the level, and they and
   their atoms (used up by them alone) leave the network.  Classes whose cap
   equals the level freeze at their cap and stay as a fixed demand.

Every round freezes at least one class, so there are at most #classes
rounds, each a handful of max-flows on the small class/atom network.

Weights (libvirt ``<shares>``, cgroup ``cpu.shares``/``cpu.weight``) are not
an input: the estimate treats every runnable vCPU as an equal claimant.  That
is what the Linux scheduler does when every VM's weight is proportional to
its vCPU count (Nova's historical ``1024 * vCPUs`` default); with equal
per-VM weights a small VM next to a large one gets more than this estimate.
"""

import collections
import dataclasses
from fractions import Fraction
import math

from nova_cacheaware import exception
from nova_cacheaware.policy import limits

#: ``recommended_vcpus = ceil(available - RECOMMEND_SLACK)`` so that an
#: estimate within rounding of an integer does not round up.
RECOMMEND_SLACK = Fraction(1, 10 ** 6)

_REQUEST_KEYS = frozenset({'pcpus', 'vms'})
_VM_KEYS = frozenset({'vcpus', 'caps'})


# --------------------------------------------------------------------------
# Values in and out (round-trip to the CLI's JSON).
# --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class VMAffinity:
    """One VM: vCPU index -> sorted pCPU affinity, vCPU index -> cap."""

    vcpus: dict
    caps: dict = dataclasses.field(default_factory=dict)

    def cap(self, index):
        """The cap of vCPU ``index`` (1.0 when none is set)."""
        return self.caps.get(index, 1.0)

    def to_dict(self):
        """The CLI input form of this VM."""
        doc = {'vcpus': {str(i): list(a) for i, a in sorted(
            self.vcpus.items())}}
        if self.caps:
            doc['caps'] = {str(i): c for i, c in sorted(self.caps.items())}
        return doc


@dataclasses.dataclass(frozen=True)
class EstimateRequest:
    """All VMs on a host, and optionally the pCPUs guests may use."""

    vms: dict
    pcpus: tuple = None

    def flat_vcpus(self):
        """``({(vm, index): affinity}, {(vm, index): cap})`` of every vCPU."""
        affinities = {}
        caps = {}
        for name, vm in self.vms.items():
            for index, affinity in vm.vcpus.items():
                affinities[(name, index)] = affinity
                caps[(name, index)] = vm.cap(index)
        return affinities, caps

    def to_dict(self):
        """The CLI input document."""
        doc = {'vms': {name: vm.to_dict() for name, vm in self.vms.items()}}
        if self.pcpus is not None:
            doc['pcpus'] = list(self.pcpus)
        return doc

    @classmethod
    def from_dict(cls, doc):
        """Validate a CLI input document; raise :class:`InvalidInput`."""
        if not isinstance(doc, dict):
            _bad('the document must be a JSON object')
        _no_unknown_keys(doc, _REQUEST_KEYS, 'the document')
        pcpus = None
        if 'pcpus' in doc:
            pcpus = _pcpu_list(doc['pcpus'], '"pcpus"')
        if 'vms' not in doc:
            _bad('"vms" is required')
        vms_doc = doc['vms']
        if not isinstance(vms_doc, dict):
            _bad('"vms" must be an object of VM name -> VM')
        vms = {}
        seen = {}
        for name, vm_doc in vms_doc.items():
            vms[name] = _vm_from_dict(name, vm_doc, seen)
        return cls(vms=vms, pcpus=pcpus)


@dataclasses.dataclass(frozen=True)
class VMEstimate:
    """The estimate for one VM."""

    available_pcpus: float
    recommended_vcpus: int
    vcpus: dict

    def to_dict(self):
        """The CLI output form of this VM."""
        return {'available_pcpus': self.available_pcpus,
                'recommended_vcpus': self.recommended_vcpus,
                'vcpus': {str(i): s for i, s in sorted(self.vcpus.items())}}

    @classmethod
    def from_dict(cls, doc):
        """Inverse of :meth:`to_dict` (trusted input, e.g. a snapshot)."""
        return cls(available_pcpus=float(doc['available_pcpus']),
                   recommended_vcpus=int(doc['recommended_vcpus']),
                   vcpus={int(i): float(s) for i, s in doc['vcpus'].items()})


@dataclasses.dataclass(frozen=True)
class EstimateResult:
    """Estimates for all VMs of a request."""

    vms: dict

    def to_dict(self):
        """The CLI output document."""
        return {'vms': {n: e.to_dict() for n, e in self.vms.items()}}

    @classmethod
    def from_dict(cls, doc):
        """Inverse of :meth:`to_dict`."""
        return cls(vms={n: VMEstimate.from_dict(e)
                        for n, e in doc['vms'].items()})


def _bad(reason):
    raise exception.InvalidInput(reason=reason)


def _no_unknown_keys(doc, allowed, where):
    unknown = sorted(set(doc) - allowed)
    if unknown:
        _bad('%s: unknown key(s) %s (allowed: %s)' % (
            where, ', '.join(repr(k) for k in unknown),
            ', '.join(sorted(allowed))))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


_INT_ONLY = frozenset({int})


def _pcpu_list_fast(value, seen):
    """The sorted tuple of a valid pCPU list, or None to check it slowly.

    Hosts publish the same affinity for many vCPUs (the whole host, a NUMA
    node, a cache domain): each distinct list is checked and sorted once
    per document, with C-level builtins; only a list that fails here goes
    through :func:`_pcpu_list`'s element-by-element checks (and messages).
    """
    if type(value) is not list or not value:
        return None
    if not set(map(type, value)) <= _INT_ONLY:
        return None                    # bools, floats, strings: slow path
    key = tuple(value)
    hit = seen.get(key)
    if hit is not None:
        return hit
    if min(value) < 0 or len(set(value)) != len(value):
        return None
    seen[key] = result = tuple(sorted(value))
    return result


def _pcpu_list(value, where):
    if not isinstance(value, list):
        _bad('%s must be a list of pCPU numbers' % where)
    for p in value:
        if not limits.is_cpu_id(p):
            _bad('%s: %r is not a pCPU number (an integer 0..%d)'
                 % (where, p, limits.MAX_CPUS - 1))
    if len(set(value)) != len(value):
        dup = sorted(p for p, n in collections.Counter(value).items()
                     if n > 1)
        _bad('%s: duplicate pCPU(s) %s' % (where, dup))
    return tuple(sorted(value))


def _index(key, where):
    # Canonical decimal only ("0", "12"): "01", "+1", " 1" would make two
    # keys name one vCPU.
    if not (isinstance(key, str) and key.isascii() and key.isdigit()
            and str(int(key)) == key and int(key) < limits.MAX_VCPUS):
        _bad('%s: vCPU index %r is not an integer 0..%d'
             % (where, key, limits.MAX_VCPUS - 1))
    return int(key)


def _vm_from_dict(name, doc, seen):
    where = 'VM %r' % name
    if not isinstance(doc, dict):
        _bad('%s must be an object' % where)
    _no_unknown_keys(doc, _VM_KEYS, where)
    vcpus_doc = doc.get('vcpus')
    if not isinstance(vcpus_doc, dict) or not vcpus_doc:
        _bad('%s: "vcpus" must be a non-empty object of vCPU index -> '
             'list of pCPUs' % where)
    vcpus = {}
    for key, affinity in vcpus_doc.items():
        index = _index(key, where)
        cpus = _pcpu_list_fast(affinity, seen)
        if cpus is None:
            cpus = _pcpu_list(affinity, '%s vCPU %s' % (where, key))
        vcpus[index] = cpus
    caps_doc = doc.get('caps', {})
    if not isinstance(caps_doc, dict):
        _bad('%s: "caps" must be an object of vCPU index -> number' % where)
    caps = {}
    for key, cap in caps_doc.items():
        index = _index(key, where + ' caps')
        if index not in vcpus:
            _bad('%s: cap for vCPU %s, which the VM does not have' % (
                where, key))
        if not (_is_int(cap) or isinstance(cap, float)) or not (
                0 <= cap <= 1):
            _bad('%s: cap of vCPU %s must be a number in 0..1, not %r' % (
                where, key, cap))
        caps[index] = float(cap)
    return VMAffinity(vcpus=vcpus, caps=caps)


# --------------------------------------------------------------------------
# The estimate.
# --------------------------------------------------------------------------

def exact_cap(cap):
    """A cap as an exact fraction: the decimal the float prints as.

    ``0.3`` means 3/10 here, not the binary double nearest to it, so that
    quota/period caps give the shares an operator expects.
    """
    if isinstance(cap, Fraction):
        return cap
    try:
        return Fraction(repr(float(cap)))
    except (TypeError, ValueError, OverflowError):
        raise exception.InvalidInput(
            reason='cap %r is not a finite number' % (cap,)) from None


def recommended_vcpus(available, vcpu_count):
    """``min(vcpu_count, max(1, ceil(available - 1e-6)))``, exactly."""
    available = Fraction(available)
    return min(vcpu_count,
               max(1, math.ceil(available - RECOMMEND_SLACK)))


def estimate(request):
    """Max-min fair pCPU shares for every vCPU of every VM in ``request``.

    Returns an :class:`EstimateResult`; see the module docstring for the
    semantics and the algorithm.
    """
    affinities, caps = request.flat_vcpus()
    members, levels = _solve(affinities, caps, request.pcpus)
    floats = {k: float(v) for k, v in levels.items()}
    floats[None] = 0.0
    vms = {}
    for name, vm in request.vms.items():
        # Sum per class (count x level): few exact additions per VM.
        per_class = collections.Counter(members[(name, i)]
                                        for i in vm.vcpus)
        available = sum((n * levels[k] for k, n in per_class.items()
                         if k is not None), Fraction(0))
        vms[name] = VMEstimate(
            available_pcpus=float(available),
            recommended_vcpus=recommended_vcpus(available, len(vm.vcpus)),
            vcpus={i: floats[members[(name, i)]] for i in sorted(vm.vcpus)})
    return EstimateResult(vms=vms)


def fair_shares(affinities, caps=None, pcpus=None):
    """Exact max-min fair shares of pCPU time.

    :param affinities: vCPU key -> iterable of pCPU numbers it may run on.
        Keys are any hashable; equal affinities are best passed as equal
        tuples (grouping is by value).
    :param caps: vCPU key -> cap in 0..1 (float or Fraction; default 1).
    :param pcpus: iterable of the pCPUs guests may use, or None for all.
    :returns: vCPU key -> :class:`fractions.Fraction` share.
    """
    members, levels = _solve(affinities, caps or {}, pcpus)
    return {key: levels.get(cls_id, Fraction(0))
            for key, cls_id in members.items()}


def _solve(affinities, caps, pcpus):
    """vCPU key -> class id (None: share 0), and class id -> share."""
    usable = None if pcpus is None else frozenset(pcpus)
    classes, atoms, members = _build_network(affinities, caps, usable)
    return members, _fill(classes, atoms)


class _Class:
    """vCPUs with one affinity and one cap: ``n`` of them over ``atoms``."""

    __slots__ = ('n', 'cap', 'atoms', 'atom_array')

    def __init__(self, n, cap, atoms):
        self.n = n
        self.cap = cap
        self.atoms = atoms
        self.atom_array = None      # numpy copy of atoms (SciPy flows)


def _build_network(affinities, caps, usable):
    """Classes, atoms and vCPU key -> class id (see module docstring).

    Cost is one hash of each vCPU's affinity plus the sizes of the
    *distinct* affinity sets, not of every vCPU's.
    """
    set_ids = {}           # affinity value -> distinct-set id
    set_cpus = []          # distinct-set id -> frozenset of usable pCPUs
    vcpu_set_cap = {}      # vCPU key -> (set id, cap as given)
    cap_cache = {}
    for key, affinity in affinities.items():
        if not isinstance(affinity, (tuple, frozenset)):
            affinity = tuple(affinity)
        sid = set_ids.get(affinity)
        if sid is None:
            cpus = frozenset(affinity)
            if usable is not None:
                cpus &= usable
            sid = set_ids[affinity] = len(set_cpus)
            set_cpus.append(cpus)
        cap = caps.get(key, 1.0)
        if cap not in cap_cache:
            exact = exact_cap(cap)
            if not 0 <= exact <= 1:
                # A vCPU is one thread: it can never use more than 1.0.
                raise exception.InvalidInput(
                    reason='cap %r of vCPU %r is outside 0..1' % (cap, key))
            cap_cache[cap] = exact
        # Raw caps (floats) are the keys from here on: hashing a Fraction
        # per vCPU costs more than the whole flow computation.
        vcpu_set_cap[key] = (sid, cap)

    # Intersection may have made different inputs equal: canonicalise.
    canon = {}
    set_canon = [canon.setdefault(cpus, len(canon)) for cpus in set_cpus]
    canon_cpus = [None] * len(canon)
    for cpus, cid in canon.items():
        canon_cpus[cid] = cpus

    # Count vCPUs per (set, cap); vCPUs that can get nothing are left out
    # (their share is 0).
    counts = collections.Counter()
    for sid, cap in vcpu_set_cap.values():
        counts[(set_canon[sid], cap)] += 1
    for cid, cap in list(counts):
        if cap_cache[cap] <= 0 or not canon_cpus[cid]:
            del counts[(cid, cap)]

    # Pinned (single-pCPU) vCPUs: per pCPU, the multiset of their caps.
    pinned = collections.defaultdict(collections.Counter)
    floating_sets = set()
    for (cid, cap), n in counts.items():
        cpus = canon_cpus[cid]
        if len(cpus) == 1:
            pinned[next(iter(cpus))][cap] += n
        else:
            floating_sets.add(cid)
    floating_sets = sorted(floating_sets)
    membership = collections.defaultdict(list)
    for cid in floating_sets:
        for p in canon_cpus[cid]:
            membership[p].append(cid)

    # Atom = pCPUs with the same floating sets and the same pinned caps.
    signature_atom = {}
    atom_sizes = []
    atom_of_cpu = {}
    for p in set(membership) | set(pinned):
        sig = (tuple(membership.get(p, ())),
               tuple(sorted(pinned[p].items(), key=lambda kv: cap_cache[
                   kv[0]])) if p in pinned else ())
        aid = signature_atom.get(sig)
        if aid is None:
            aid = signature_atom[sig] = len(atom_sizes)
            atom_sizes.append(0)
        atom_sizes[aid] += 1
        atom_of_cpu[p] = aid

    classes = []
    class_of = {}          # (canon set id, cap) or (atom, cap) -> class id
    set_atoms = collections.defaultdict(set)
    for sig, aid in signature_atom.items():
        for cid in sig[0]:
            set_atoms[cid].add(aid)
        for cap, n in sig[1]:
            class_of[('atom', aid, cap)] = len(classes)
            classes.append(_Class(n * atom_sizes[aid], cap_cache[cap],
                                  (aid,)))
    for (cid, cap), n in counts.items():
        if cid in set_atoms:
            class_of[('set', cid, cap)] = len(classes)
            classes.append(_Class(n, cap_cache[cap],
                                  tuple(sorted(set_atoms[cid]))))

    members = {}
    for key, (sid, cap) in vcpu_set_cap.items():
        cid = set_canon[sid]
        cpus = canon_cpus[cid]
        if (cid, cap) not in counts:
            members[key] = None
        elif len(cpus) == 1:
            members[key] = class_of[('atom', atom_of_cpu[next(iter(cpus))],
                                     cap)]
        else:
            members[key] = class_of[('set', cid, cap)]
    return classes, atom_sizes, members


def _components(class_ids, atom_ids, classes):
    """Connected components of the given classes and atoms.

    Union-find over the atoms; yields (class ids, atom ids) per component.
    """
    atom_ids = set(atom_ids)
    parent = {a: a for a in atom_ids}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    roots = {}
    for k in class_ids:
        first = None
        for a in classes[k].atoms:
            if a not in atom_ids:
                continue
            ra = find(a)
            if first is None:
                first = ra
            elif ra != first:
                parent[ra] = first
        roots[k] = first
    comp_classes = collections.defaultdict(list)
    comp_atoms = collections.defaultdict(list)
    for k, root in roots.items():
        comp_classes[find(root)].append(k)
    for a in atom_ids:
        comp_atoms[find(a)].append(a)
    for root, ks in comp_classes.items():
        yield ks, comp_atoms[root]


def _fill(classes, atom_sizes):
    """Progressive filling, one connected component at a time.

    Returns class id -> exact share. Components split as tight sets leave,
    and each part goes on from the common level on its own.
    """
    share = {}
    work = [(set(ks), set(), set(atoms)) for ks, atoms in _components(
        range(len(classes)), range(len(atom_sizes)), classes)]
    while work:
        active, capped, live_atoms = work.pop()
        if not active:
            continue                       # only frozen classes left
        if len(active) == 1 and not capped:
            # One kind of vCPU alone on its pCPUs: no flow needed.
            (k,) = active
            c = classes[k]
            share[k] = min(c.cap, Fraction(
                sum(atom_sizes[a] for a in c.atoms if a in live_atoms),
                c.n))
            continue
        t, tight = _next_level(active, capped, live_atoms, classes,
                               atom_sizes)
        before = len(active)
        for k in tight:
            if k in active:
                share[k] = t
        for k in list(active):
            if k not in tight and classes[k].cap == t:
                share[k] = t
                capped.add(k)
        active -= tight
        active -= capped
        capped -= tight
        if len(active) == before:
            # Cannot happen (the level is the largest feasible one, so a
            # tight set or a cap binds); never loop forever on a bug.
            raise ArithmeticError('pCPU-Est made no progress at level %s'
                                  % t)
        live_atoms -= {a for k in tight for a in classes[k].atoms}
        for ks, atoms in _components(active | capped, live_atoms, classes):
            ks = set(ks)
            work.append((ks & active, ks & capped, set(atoms)))
    return share


def _next_level(active, capped, live_atoms, classes, atom_sizes):
    """The largest feasible common level and the maximal tight set there."""
    t = min(classes[k].cap for k in active)
    # The whole component is one constraint: start Newton below it.
    room = sum(atom_sizes[a] for a in live_atoms)
    room -= sum(classes[k].n * classes[k].cap for k in capped)
    t = min(t, Fraction(room, 1) / sum(classes[k].n for k in active))
    while True:
        net = _network(active | capped, live_atoms, classes, atom_sizes, t)
        if net.saturates_demand():
            return t, net.classes_cut_from_sink()
        # Newton step: the violated set X gives the next, lower level.
        x = net.source_side_classes()
        room = sum(atom_sizes[a] for a in
                   {a for k in x for a in classes[k].atoms}
                   if a in live_atoms)
        room -= sum(classes[k].n * classes[k].cap for k in x
                    if k in capped)
        t = Fraction(room, 1) / sum(classes[k].n for k in x if k in active)


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


def _network(class_ids, atom_ids, classes, atom_sizes, t):
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
