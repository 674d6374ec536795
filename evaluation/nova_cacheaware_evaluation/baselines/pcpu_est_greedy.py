"""Study 004's greedy grouping heuristic, kept as the named baseline.

This is **not** the estimate nova-cacheaware uses (that is
:func:`nova_cacheaware.pcpu_est.estimate.estimate`, exact); it
reproduces the
heuristic of the study (Takayama and Kourai, "pCPU-Est") so that benchmarks
can compare speed and accuracy with it. The slides leave some choices open;
the ones made here are marked "(choice)".

1. Group creation: take the remaining pCPU with the fewest remaining vCPUs
   (ties: lowest number); the group is that pCPU and its vCPUs.
2. Group extension: add the neighbouring pCPU (a pCPU of one of the group's
   vCPUs) that brings the fewest new vCPUs (choice: this is the candidate
   that gives the highest new ratio; ties: lowest number), together with
   its vCPUs, while the group's pCPU/vCPU ratio does not drop.
3. The edges from the group's vCPUs to pCPUs outside it are removed (and
   remembered); the group leaves the graph; repeat from 1.
4. Merge: for a removed edge from a vCPU in group 1 to a pCPU in group 2,
   merge the two groups when group 2's ratio is at least group 1's; repeat
   until no merge applies.
5. Each vCPU gets its group's ratio (choice: capped at 1 and at the vCPU's
   cap, which the study, having no per-vCPU caps in its grouping, lacks).
"""

import heapq
import math

from nova_cacheaware.pcpu_est import estimate as pcpu_est


def greedy_shares(affinities, caps=None, pcpus=None):
    """vCPU key -> float share by study 004's grouping heuristic."""
    caps = caps or {}
    usable = None if pcpus is None else frozenset(pcpus)
    keys = list(affinities)
    vcpu_cpus = []
    cpu_vcpus = {}
    for i, key in enumerate(keys):
        cpus = set(affinities[key])
        if usable is not None:
            cpus &= usable
        vcpu_cpus.append(cpus)
        for p in cpus:
            cpu_vcpus.setdefault(p, set()).add(i)
    grouping = _Grouping(vcpu_cpus, cpu_vcpus)
    grouping.create_groups()
    find = grouping.merge()
    shares = {}
    for i, key in enumerate(keys):
        cap = float(caps.get(key, 1.0))
        g = grouping.group_of_vcpu[i]
        if g is None:
            shares[key] = 0.0
            continue
        p, v = grouping.groups[find(g)]
        shares[key] = min(1.0, cap, p / v)
    return shares


class _Grouping:
    """Steps 1 to 4 of the heuristic on one affinity graph."""

    def __init__(self, vcpu_cpus, cpu_vcpus):
        self.vcpu_cpus = vcpu_cpus
        self.cpu_vcpus = cpu_vcpus
        self.group_of_vcpu = [None] * len(vcpu_cpus)
        self.group_of_cpu = {}
        self.groups = []           # [pcpu count, vcpu count]
        self.removed = []          # (vcpu, pcpu) edges cut when one closed
        self.remaining = {p: len(vs) for p, vs in cpu_vcpus.items()}

    def create_groups(self):
        """Steps 1 to 3: grow one group at a time from the emptiest pCPU."""
        start_heap = [(n, p) for p, n in self.remaining.items()]
        heapq.heapify(start_heap)
        while start_heap:
            n, p0 = heapq.heappop(start_heap)
            if p0 in self.group_of_cpu or self.remaining[p0] != n:
                continue               # stale heap entry
            if n == 0:
                continue               # unused pCPU
            touched = self._grow(p0)
            for p in touched:
                heapq.heappush(start_heap, (self.remaining[p], p))

    def _take_vcpus(self, p, gid, members_v, changed):
        for v in self.cpu_vcpus[p]:
            if self.group_of_vcpu[v] is None:
                self.group_of_vcpu[v] = gid
                members_v.add(v)
                for q in self.vcpu_cpus[v]:
                    self.remaining[q] -= 1
                    changed.add(q)

    def _grow(self, p0):
        """One group from ``p0``; returns the outside pCPUs it touched."""
        gid = len(self.groups)
        members_v, members_p = set(), {p0}
        self.group_of_cpu[p0] = gid
        changed, touched = set(), set()
        # Candidate pCPUs keyed by how many vCPUs they would add; a pCPU's
        # count only goes down, so it is pushed again whenever it changes
        # and stale entries are skipped.
        cand_heap = []
        p = p0
        while True:
            self._take_vcpus(p, gid, members_v, changed)
            for q in changed:
                if q not in self.group_of_cpu:
                    heapq.heappush(cand_heap, (self.remaining[q], q))
            touched.update(changed)
            changed.clear()
            p = self._next_candidate(cand_heap, members_p, members_v)
            if p is None:
                break
            members_p.add(p)
            self.group_of_cpu[p] = gid
        for v in members_v:
            self.removed.extend((v, q) for q in self.vcpu_cpus[v]
                                if q not in members_p)
        self.groups.append([len(members_p), len(members_v)])
        return touched - members_p

    def _next_candidate(self, cand_heap, members_p, members_v):
        """The pCPU that keeps the group's ratio, or None to close it."""
        while cand_heap:
            cost, p = heapq.heappop(cand_heap)
            if p in self.group_of_cpu or self.remaining[p] != cost:
                continue
            np_, nv = len(members_p), len(members_v)
            # (np_ + 1) / (nv + cost) >= np_ / nv, in integers.
            if (np_ + 1) * nv < np_ * (nv + cost):
                return None
            return p
        return None

    def merge(self):
        """Step 4 over the removed edges; returns the union-find's find."""
        groups = self.groups
        parent = list(range(len(groups)))

        def find(g):
            while parent[g] != g:
                parent[g] = parent[parent[g]]
                g = parent[g]
            return g

        pairs = {(self.group_of_vcpu[v], self.group_of_cpu[p])
                 for v, p in self.removed}
        merged = True
        while merged:
            merged = False
            for g1, g2 in pairs:
                r1, r2 = find(g1), find(g2)
                if r1 == r2:
                    continue
                p1, v1 = groups[r1]
                p2, v2 = groups[r2]
                if p2 * v1 >= p1 * v2:     # ratio(g2) >= ratio(g1)
                    parent[r1] = r2
                    groups[r2] = [p1 + p2, v1 + v2]
                    merged = True
        return find


def greedy_estimate(request):
    """Study 004's estimate for every VM of an :class:`EstimateRequest`.

    Returns an :class:`pcpu_est.EstimateResult` like the exact estimate,
    with the study's rounding (up) applied the same way.
    """
    affinities, caps = request.flat_vcpus()
    shares = greedy_shares(affinities, caps, request.pcpus)
    vms = {}
    for name, vm in request.vms.items():
        vm_shares = {i: shares[(name, i)] for i in sorted(vm.vcpus)}
        available = math.fsum(vm_shares.values())
        vms[name] = pcpu_est.VMEstimate(
            available_pcpus=available,
            recommended_vcpus=pcpu_est.recommended_vcpus(
                available, len(vm.vcpus)),
            vcpus=vm_shares)
    return pcpu_est.EstimateResult(vms=vms)
