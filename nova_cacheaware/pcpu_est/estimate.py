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
from fractions import Fraction
import math

from nova_cacheaware.contracts import vcpu_affinity
from nova_cacheaware.pcpu_est import flow
from nova_cacheaware.pcpu_est import network

#: ``recommended_vcpus = ceil(available - RECOMMEND_SLACK)`` so that an
#: estimate within rounding of an integer does not round up.
RECOMMEND_SLACK = Fraction(1, 10 ** 6)

# The documents in and out (contracts), by their usual names here too.
VMAffinity = vcpu_affinity.VMAffinity
EstimateRequest = vcpu_affinity.EstimateRequest
VMEstimate = vcpu_affinity.VMEstimate
EstimateResult = vcpu_affinity.EstimateResult


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
    classes, atoms, members = network.build_network(
        affinities, caps, usable)
    return members, _fill(classes, atoms)


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
        net = flow.network(active | capped, live_atoms, classes,
                           atom_sizes, t)
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
