"""pCPU-Est's class/atom network, built from the vCPUs' affinities.

Step 1 of :mod:`nova_cacheaware.pcpu_est.estimate`: vCPUs with the same
(affinity, cap) form a *class*, pCPUs used by the same classes an *atom*;
vCPUs pinned to one pCPU are folded per atom.
"""

import collections
from fractions import Fraction

from nova_cacheaware import exception


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


class _Class:
    """vCPUs with one affinity and one cap: ``n`` of them over ``atoms``."""

    __slots__ = ('n', 'cap', 'atoms', 'atom_array')

    def __init__(self, n, cap, atoms):
        self.n = n
        self.cap = cap
        self.atoms = atoms
        self.atom_array = None      # numpy copy of atoms (SciPy flows)


def build_network(affinities, caps, usable):
    """Classes, atoms and vCPU key -> class id (see module docstring).

    Cost is one hash of each vCPU's affinity plus the sizes of the
    *distinct* affinity sets, not of every vCPU's.
    """
    set_cpus, vcpu_set_cap, cap_cache = _distinct_sets(
        affinities, caps, usable)
    set_canon, canon_cpus = _canonical(set_cpus)
    # Count vCPUs per (set, cap); vCPUs that can get nothing are left out
    # (their share is 0).
    counts = collections.Counter()
    for sid, cap in vcpu_set_cap.values():
        counts[(set_canon[sid], cap)] += 1
    for cid, cap in list(counts):
        if cap_cache[cap] <= 0 or not canon_cpus[cid]:
            del counts[(cid, cap)]
    signature_atom, atom_sizes, atom_of_cpu = _atoms(
        counts, canon_cpus, cap_cache)
    classes, class_of = _classes(signature_atom, atom_sizes, counts,
                                 cap_cache)
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


def _distinct_sets(affinities, caps, usable):
    """Distinct usable affinity sets, each vCPU's (set, cap), exact caps."""
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
    return set_cpus, vcpu_set_cap, cap_cache


def _canonical(set_cpus):
    """Intersection may have made different inputs equal: canonicalise.

    Returns (set id -> canonical id, canonical id -> pCPUs).
    """
    canon = {}
    set_canon = [canon.setdefault(cpus, len(canon)) for cpus in set_cpus]
    canon_cpus = [None] * len(canon)
    for cpus, cid in canon.items():
        canon_cpus[cid] = cpus
    return set_canon, canon_cpus


def _atoms(counts, canon_cpus, cap_cache):
    """Atom = pCPUs with the same floating sets and the same pinned caps.

    Returns (signature -> atom id, atom sizes, pCPU -> atom id).
    """
    # Pinned (single-pCPU) vCPUs: per pCPU, the multiset of their caps.
    pinned = collections.defaultdict(collections.Counter)
    floating_sets = set()
    for (cid, cap), n in counts.items():
        cpus = canon_cpus[cid]
        if len(cpus) == 1:
            pinned[next(iter(cpus))][cap] += n
        else:
            floating_sets.add(cid)
    membership = collections.defaultdict(list)
    for cid in sorted(floating_sets):
        for p in canon_cpus[cid]:
            membership[p].append(cid)
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
    return signature_atom, atom_sizes, atom_of_cpu


def _classes(signature_atom, atom_sizes, counts, cap_cache):
    """The classes, and (kind, set or atom, cap) -> class id."""
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
    return classes, class_of
