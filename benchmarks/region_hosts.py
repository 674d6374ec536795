"""Simulated compute hosts for the region benchmark (``region_state.py``).

Each host has a topology drawn from a region mix and ``vms`` VMs; the
benchmark asks it for the agent's report, the input of
:func:`nova_cacheaware.agent.notify.to_host_cache_state` (what
``agent/placement_side.py`` hands the publisher: a
``reporting.HostReport`` with usable CPUs, providers, domain capacity and
the ``vcpu_sizing`` capability's section, made by the capability's own
``host_section`` with the parsed ``vcpu_affinity`` document), so the real
code builds the state, the 2.0 ``pcpu_levels`` and the 1.5 payload.

Topologies (cache domain id -> CPUs):

* ``epyc16`` / ``epyc32``: 16 or 32 L3 domains of 8 CPUs (EPYC CCXs);
* ``hybrid``: 8 SMT P-cores, each its own L2 (2 CPUs), and 4 E-core
  clusters of 4 cores sharing an L2;
* ``shared_l2``: an old 4-socket part, 6 cores per socket in pairs that
  share an L2 (12 domains of 2 CPUs).

VMs: 1, 2, 4 or 8 vCPUs (at most the domain's CPUs when memory-bound);
15 % are memory-bound and pinned into one domain (their affinity is that
domain's CPUs); the others float, and as the real agent reports, every
vCPU of a floating VM lists every host CPU. A fifth is capped at 0.5 by
a CFS quota. Everything derives from a seed.
"""

import random
import uuid as uuid_mod

from nova_cacheaware.agent import reporting
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.vcpu_sizing import agent as vcpu_sizing

#: kind: ((domain id, number of CPUs), ...) in CPU order.
TOPOLOGIES = {
    'epyc16': tuple(('L3-%d' % d, 8) for d in range(16)),
    'epyc32': tuple(('L3-%d' % d, 8) for d in range(32)),
    'hybrid': (tuple(('L2-p%d' % d, 2) for d in range(8))
               + tuple(('L2-e%d' % d, 4) for d in range(4))),
    'shared_l2': tuple(('L2-%d' % d, 2) for d in range(12)),
}
#: The region's share of each topology.
MIX = (('epyc16', 0.40), ('epyc32', 0.30), ('hybrid', 0.15),
       ('shared_l2', 0.15))
MEMORY_BOUND = 0.15
CAPPED = 0.20
#: CPU allocation ratio the agent sizes its domains with.
CPU_RATIO = 4


class Topology:
    """A host kind's domains and CPU lists, shared by its hosts.

    The CPU lists are shared objects: 10 000 hosts x 200 VMs of separate
    lists would not fit in memory, and the real agent's lists are equal
    in value, which is all JSON and the parsers see.
    """

    def __init__(self, kind):
        self.kind = kind
        self.domains = {}
        first = 0
        for domain, count in TOPOLOGIES[kind]:
            self.domains[domain] = list(range(first, first + count))
            first += count
        self.cpus = list(range(first))
        self.ids = sorted(self.domains)


_TOPOLOGY = {kind: Topology(kind) for kind in TOPOLOGIES}


def _uuid(rng):
    return str(uuid_mod.UUID(int=rng.getrandbits(128), version=4))


class Vm:
    """One VM: vCPUs, workload class, domain (None: floating), cap."""

    __slots__ = ('vcpus', 'workload', 'domain', 'cap')

    def __init__(self, vcpus, workload, domain, cap):
        self.vcpus = vcpus
        self.workload = workload
        self.domain = domain
        self.cap = cap


class SimHost:
    """A compute host: its VMs and the agent's report of them."""

    def __init__(self, name, kind, vms, seed):
        self.name = name
        self.topology = _TOPOLOGY[kind]
        self.rng = random.Random(seed)
        self.vms = {}
        self.changes = 0
        self._report = None
        for _ in range(vms):
            self.vms[_uuid(self.rng)] = self._new_vm()

    @property
    def kind(self):
        """The topology name."""
        return self.topology.kind

    def _new_vm(self):
        rng = self.rng
        cap = 0.5 if rng.random() < CAPPED else None
        if rng.random() < MEMORY_BOUND:
            domain = rng.choice(self.topology.ids)
            size = len(self.topology.domains[domain])
            vcpus = min(rng.choice((1, 2, 4, 8)), size)
            return Vm(vcpus, 'memory', domain, cap)
        return Vm(rng.choice((1, 2, 4, 8)),
                  rng.choice(('cpu', 'io', 'unknown')), None, cap)

    def change(self):
        """One VM added, removed or moved (to another domain); the kind."""
        rng = self.rng
        what = rng.choice(('add', 'remove', 'move'))
        bound = [u for u, vm in self.vms.items() if vm.domain is not None]
        if what == 'move' and not bound:
            what = 'add'
        if what == 'remove' and len(self.vms) <= 1:
            what = 'add'
        if what == 'add':
            self.vms[_uuid(rng)] = self._new_vm()
        elif what == 'remove':
            del self.vms[rng.choice(sorted(self.vms))]
        else:
            vm = self.vms[rng.choice(sorted(bound))]
            others = [d for d in self.topology.ids if d != vm.domain]
            vm.domain = rng.choice(others)
            vm.vcpus = min(vm.vcpus, len(self.topology.domains[vm.domain]))
        self.changes += 1
        self._report = None
        return what

    def report(self):
        """The agent's ``HostReport`` (the same object until a change)."""
        if self._report is None:
            self._report = self._build_report()
        return self._report

    def drop_report(self):
        """Forget the cached report (memory: rebuilt on the next ask)."""
        self._report = None

    def _build_report(self):
        topo = self.topology
        memory = {d: [] for d in topo.ids}
        vms = {}
        affinity = {}
        sizing = {}
        used = {d: 0 for d in topo.ids}
        for uuid, vm in sorted(self.vms.items()):
            if vm.domain is not None:
                memory[vm.domain].append(uuid)
                used[vm.domain] += vm.vcpus
                cpus = topo.domains[vm.domain]
            else:
                cpus = topo.cpus
            vms[uuid] = reporting.VmReport(
                vm.workload, () if vm.domain is None else (vm.domain,),
                vm.vcpus)
            doc = {'vcpus': {str(i): cpus for i in range(vm.vcpus)}}
            if vm.cap is not None:
                doc['caps'] = {str(i): vm.cap for i in range(vm.vcpus)}
            affinity[uuid] = doc
            sizing[uuid] = _sizing_entry(vm, cpus, len(topo.cpus))
        section = vcpu_sizing.host_section(
            {'vms': sizing}, pcpu_est.EstimateRequest.from_dict(
                {'pcpus': topo.cpus, 'vms': affinity}))
        return reporting.HostReport(
            memory_vms={d: tuple(m) for d, m in memory.items()},
            vms=vms,
            usable_cpus={d: len(c) for d, c in topo.domains.items()},
            providers={d: _provider(self.name, d) for d in topo.ids},
            domain_capacity={d: len(c) * CPU_RATIO
                             for d, c in topo.domains.items()},
            domain_required={d: 0 for d in topo.ids},
            sections={'vcpu_sizing': section})


def _provider(host, domain):
    """A stable provider uuid per (host, domain), as Placement gives."""
    return str(uuid_mod.uuid5(uuid_mod.NAMESPACE_DNS,
                              '%s/%s' % (host, domain)))


def _sizing_entry(vm, cpus, host_cpus):
    """The ``vcpu_sizing`` report entry of one VM (what 1.5 carries).

    The estimate is a plausible figure, not pCPU-Est's (the wire size and
    the parse cost do not depend on the value; the 2.0 levels are the
    real solve of the affinities).
    """
    share = min(1.0, len(cpus) / max(host_cpus, 1)) * (vm.cap or 1.0)
    available = round(vm.vcpus * max(share, 0.1), 6)
    return {'mode': 'off', 'vcpus': vm.vcpus, 'available_pcpus': available,
            'recommended_vcpus': max(1, min(vm.vcpus, int(available + 0.5))),
            'storm': {'storm': False, 'vote': None, 'run_delay': None,
                      'pause_exits_per_s': None, 'storms': 0,
                      'hold_periods': None}}


def kinds(count, seed):
    """The topology of each of ``count`` hosts, drawn from :data:`MIX`."""
    rng = random.Random(seed)
    names = [k for k, _ in MIX]
    weights = [w for _, w in MIX]
    return rng.choices(names, weights, k=count)


def build(count, vms, seed):
    """``count`` :class:`SimHost` objects (names ``cmp00000``...)."""
    out = []
    for index, kind in enumerate(kinds(count, seed)):
        out.append(SimHost('cmp%05d' % index, kind, vms,
                           seed * 1000003 + index))
    return out
