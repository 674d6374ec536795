"""A cloud of hosts as the real scheduler and agents treat it (simulated).

Every request carries the extra specs an operator can write: they are
produced by :func:`nova_cacheaware.api.flavor_specs.compute_specs` (what
``nova-cacheaware flavor set`` writes) from flavor options, and read back
with :func:`nova_cacheaware.contracts.extra_specs.parse_extra_specs`. What
each step does with them (``doc/source/admin/scheduler.rst``, host
provider model, fresh live state, CPU allocation ratio 1.0):

* **Placement**: the host's ``VCPU`` room; a flavor with the cache group
  (``cache_share=all``) also needs, as Placement's ``max_unit`` and the
  filter's live-state check say, one domain with room for every vCPU, and
  with ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` (``required``) a free slot of the
  host (domains minus slots used or reserved by VMs the classifier found);
* **CacheDomainFilter**: its host-model room check,
  :func:`nova_cacheaware.scheduler.domain_order.room_reason` (a domain
  with room; for ``required`` one without a memory-bound VM);
* **weighers**: Nova's spreading (``CPUWeigher`` and ``RAMWeigher``, both
  by free vCPUs here, normalised over the hosts as Nova does) plus
  ``CacheAwareWeigher``'s contention part (its formula,
  :func:`nova_cacheaware.cachedomain.choice.contention_score`, on fresh
  state, normalised from ``[-1, 1]``, times the default multiplier
  :data:`CONTENTION_MULTIPLIER`) for requests whose ``clean_wanted`` is
  true (best fit for ``required`` ones, as the weigher);
* **the domain**: the agent's choice,
  :func:`nova_cacheaware.cachedomain.assignment.assign_domains`;
* **the agent** (every event and sample): the planner,
  :func:`nova_cacheaware.cachedomain.planner.plan`, with held VMs
  unmovable in their domain and the others ``memory`` when the classifier
  (:mod:`.classifier_trace`) says so by then.

Peers without the agent: ``float`` (Nova's default ``hw:cpu_policy=
shared``: every vCPU floats), ``dedicated`` (Nova's pinning, lowest free
CPU first, cache-oblivious) and ``spread`` ("spread by free cache": every
VM pinned into the domain with the most free CPUs that fits it, knowing
the topology but not the workload).
"""

import dataclasses
import functools
import typing as ty

from nova_cacheaware.api import flavor_specs
from nova_cacheaware.cachedomain import assignment as domain_assignment
from nova_cacheaware.cachedomain import choice as domain_choice
from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import planner as cachedomain
from nova_cacheaware.contracts import extra_specs as api_specs
from nova_cacheaware.scheduler import domain_order
from nova_cacheaware_evaluation.sim import classifier_trace
from nova_cacheaware_evaluation.sim import contention

GROUP_VCPU = 'resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU'
GROUP_MEMBOUND = 'resources_CACHE:CUSTOM_CACHE_DOMAIN_MEMBOUND'

#: Flavor options an operator writes (None: a plain flavor, no keys).
FLAVORS = {
    'plain': None,
    'required': {'cache_share': 'all', 'workload': 'memory',
                 'cache_clean': 'required'},
    'preferred': {'cache_share': 'all', 'workload': 'memory',
                  'cache_clean': 'preferred'},
    'off': {'cache_share': 'all', 'workload': 'memory',
            'cache_clean': 'off'},
    'auto': {'cache_share': 'all', 'workload': 'auto'},
}


@dataclasses.dataclass(frozen=True)
class Config:
    """One way to run a cloud: flavors, agent, and placement on the host.

    ``memory_flavor`` is what tenants of memory-bound VMs use when they
    declare (``declared`` of the scenario), ``other_flavor`` what every
    other VM uses; ``agent``: nova-cacheaware agents run (planner and
    classifier); ``pinning``: ``float``, ``dedicated`` or ``spread`` for
    VMs the agent does not pin.
    """

    name: str
    memory_flavor: str = 'plain'
    other_flavor: str = 'plain'
    agent: bool = False
    pinning: str = 'float'


CONFIGS = {c.name: c for c in (
    Config('nova-shared'),
    Config('nova-dedicated', pinning='dedicated'),
    Config('spread-cache', pinning='spread'),
    Config('agent-auto', agent=True),
    Config('required', 'required', agent=True),
    Config('preferred', 'preferred', agent=True),
    Config('off', 'off', agent=True),
    Config('all-auto', 'auto', 'auto', agent=True),
)}


@dataclasses.dataclass(frozen=True)
class Request:
    """A flavor's request as the scheduler reads it."""

    flavor: str
    vcpus: int
    cacheaware: api_specs.CacheAwareRequest
    group: bool        # the cache resource group (cache_share=all)
    membound: bool     # CUSTOM_CACHE_DOMAIN_MEMBOUND in the group


@functools.lru_cache(maxsize=None)
def request(flavor, vcpus):
    """The :class:`Request` of flavor kind ``flavor`` with ``vcpus``."""
    options = FLAVORS[flavor]
    specs = ({} if options is None
             else flavor_specs.compute_specs(options, vcpus).set)
    return Request(flavor=flavor, vcpus=vcpus,
                   cacheaware=api_specs.parse_extra_specs(specs),
                   group=GROUP_VCPU in specs,
                   membound=GROUP_MEMBOUND in specs)


@dataclasses.dataclass
class Guest:
    """A VM on a host: what it is, what it asked, where it runs."""

    vm: contention.SimVM
    req: Request
    arrival: float
    changes: ty.Tuple = ()           # classifier trajectory (seconds)
    home: ty.Optional[int] = None    # domain held in Placement
    allowed: ty.Optional[list] = None

    @property
    def auto(self):
        """Sampled by the agent's classifier (no declared class)."""
        return self.home is None and self.req.cacheaware.workload == 'auto'

    def memory_now(self, now_s):
        """Declared or (by ``now_s``) classified memory-bound."""
        if self.req.cacheaware.workload == 'memory':
            return True
        return (self.auto and classifier_trace.class_at(
            self.changes, now_s - self.arrival) == classifier_trace.MEMORY)


def contention_score(empty_domains, memory_vms, domains):
    """The contention part's raw weight when every Empty domain has room.

    :func:`nova_cacheaware.cachedomain.choice.contention_score` with
    ``empty_domains`` Clean places (kept for the tests that compare).
    """
    # The other domains hold the memory-bound VMs (all counted on the
    # first) or have no room: none of them is a Clean place.
    rows = [('e%d' % i, 0, 0, 0, None) for i in range(empty_domains)]
    rows += [('m%d' % i, memory_vms if i == 0 else 0, 0, 1, 0)
             for i in range(domains - empty_domains)]
    return domain_choice.contention_score(rows, 1)


#: ``[cacheaware_scheduler] cache_contention_weight_multiplier``'s default.
CONTENTION_MULTIPLIER = 10.0


class Host:
    """One compute node: its domains and guests."""

    def __init__(self, index, domains):
        self.index = index
        self.domains = [tuple(d) for d in domains]
        self.cpus = sum(len(d) for d in domains)
        self.guests = {}
        self.pinned_memory = {}   # vm id -> domain (planner, no host room)

    def used(self):
        """vCPUs of every guest (Nova's VCPU usage)."""
        return sum(g.vm.vcpus for g in self.guests.values())

    def loads(self):
        """Per domain ``(vCPUs kept there, memory-bound VMs)``."""
        vcpus = [0] * len(self.domains)
        memory = [0] * len(self.domains)
        for g in self.guests.values():
            d = g.home if g.home is not None else \
                self.pinned_memory.get(g.vm.id)
            if d is None:
                continue
            vcpus[d] += g.vm.vcpus
            memory[d] += (g.req.cacheaware.clean_wanted
                          if g.home is not None else 1)
        return vcpus, memory

    def membound_free(self):
        """Free ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` slots (used + reserved)."""
        used = sum(1 for g in self.guests.values() if g.req.membound)
        reserved = len(set(self.pinned_memory.values()))
        return len(self.domains) - used - reserved

    def admits(self, req):
        """Placement and CacheDomainFilter: may ``req`` land here?"""
        if self.used() + req.vcpus > self.cpus:
            return False
        if not req.group:
            return True
        if req.membound and self.membound_free() < 1:
            return False
        return domain_order.room_reason(
            self.rows(), req.vcpus, req.cacheaware.clean_required,
            closed=self.closed(req)) is None

    def closed(self, req):
        """Domains the filter closes to ``req``: none here.

        :mod:`.cloud_run`'s clouds keep the figures they were published
        with; the rebalance year's hosts close those holding a
        ``required`` guest, as the filter does.
        """
        return frozenset()

    def rows(self):
        """The filter's and weigher's rows of the host's domains.

        ``(domain, memory-bound, Clean holders, vCPUs used, capacity at
        ratio 1.0)``.
        """
        vcpus, memory = self.loads()
        return [('d%03d' % d, memory[d], memory[d], vcpus[d], len(cpus))
                for d, cpus in enumerate(self.domains)]

    def contention(self, vcpus=1, best_fit=False):
        """Raw contention weight from the agent's live state."""
        return domain_choice.contention_score(self.rows(), vcpus, best_fit)

    def choose_domain(self, guest):
        """The agent's domain for a new held guest (assign_domains)."""
        vcpus, memory = self.loads()
        capacity = {'d%03d' % d: len(c) for d, c in enumerate(self.domains)}
        base = {'d%03d' % d: (vcpus[d], memory[d])
                for d in range(len(self.domains))}
        held = [domain_assignment.HostHeld(
            uuid=guest.vm.id, vcpus=guest.vm.vcpus,
            memory_bound=guest.req.cacheaware.clean_wanted)]
        chosen = domain_assignment.assign_domains(capacity, held, base)
        name = chosen[guest.vm.id]
        return None if name is None else int(name[1:])

    def clean_wanted(self, guest):
        """Whether the agent's choice counts ``guest`` as memory-bound.

        Its flavor's ``clean_wanted``: a host without a clock knows no
        classes (the year's hosts add the classifier's, as the agent's
        pass does).
        """
        return guest.req.cacheaware.clean_wanted

    def agent_choice(self, fresh=()):
        """The agent's pass: a domain for every guest holding host room.

        What the agent does after any change on its host (a server
        booted, deleted, migrated in or out): every instance of a flavor
        with the cache group goes to
        :func:`nova_cacheaware.cachedomain.assignment.assign_domains`,
        with its flavor's rules (:meth:`clean_wanted`, ``required``, a
        ``MEMBOUND`` slot when its request holds one) and the domain it
        had, which it keeps while it may still join it; those in
        ``fresh`` (just booted or migrated in) and those on Nova's CPUs
        are placed anew. Guests without host room count where the
        planner pinned them. Sets every held guest's ``home``.
        """
        capacity = {'d%03d' % d: len(c) for d, c in enumerate(self.domains)}
        base, held = {}, []
        for g in sorted(self.guests.values(), key=lambda g: g.vm.id):
            if not g.req.group:
                d = self.pinned_memory.get(g.vm.id)
                if d is not None:
                    vcpus, memory = base.get('d%03d' % d, (0, 0))
                    base['d%03d' % d] = (vcpus + g.vm.vcpus, memory + 1)
                continue
            had = (None if g.vm.id in fresh or g.home is None
                   else 'd%03d' % g.home)
            held.append(domain_assignment.HostHeld(
                uuid=g.vm.id, vcpus=g.vm.vcpus,
                memory_bound=self.clean_wanted(g), current=had,
                previous=had,
                clean_required=g.req.cacheaware.clean_required,
                holds_slot=g.req.membound))
        chosen = domain_assignment.assign_domains(capacity, held, base)
        for uuid, name in chosen.items():
            self.guests[uuid].home = None if name is None else int(name[1:])

    def required_domains(self):
        """Domains holding a ``cache_clean=required`` guest (payload 1.5)."""
        return frozenset('d%03d' % g.home for g in self.guests.values()
                         if g.home is not None
                         and g.req.cacheaware.clean_required)


def pick_host(hosts, req):
    """Nova's choice among the hosts that admit ``req`` (None: none)."""
    fits = [h for h in hosts if h.admits(req)]
    if not fits:
        return None
    free = [h.cpus - h.used() for h in fits]
    low, high = min(free), max(free)
    span = float(high - low) or 1.0
    weighed = req.cacheaware.present and req.cacheaware.clean_wanted
    required = req.cacheaware.clean_required

    def weight(i):
        w = 2.0 * (free[i] - low) / span     # CPUWeigher + RAMWeigher
        if weighed:
            w += CONTENTION_MULTIPLIER * (
                fits[i].contention(req.vcpus, required) + 1.0) / 2.0
        return (w, -fits[i].index)
    return fits[max(range(len(fits)), key=weight)]


def replan(host, config, now_s):
    """Where every guest of ``host`` may run now (sets ``allowed``)."""
    everything = tuple(sorted(c for d in host.domains for c in d))
    guests = sorted(host.guests.values(), key=lambda g: g.vm.id)
    if not config.agent:
        _replan_peer(host, guests, config.pinning, everything)
        return
    doc = {'domains': [{'id': 'd%03d' % n, 'cpus': list(c)}
                       for n, c in enumerate(host.domains)],
           'vms': [], 'max_vcpus_per_cpu': 1.0}
    for g in guests:
        workload = 'memory' if g.memory_now(now_s) else (
            g.req.cacheaware.workload
            if g.req.cacheaware.workload in ('cpu', 'io') else 'unknown')
        v = {'id': g.vm.id, 'vcpus': g.vm.vcpus, 'workload': workload}
        if g.home is not None:
            cpus = list(host.domains[g.home])
            v['current'] = {str(i): cpus for i in range(g.vm.vcpus)}
            v['movable'] = False
        elif g.allowed is not None:
            v['current'] = {str(i): list(c)
                            for i, c in enumerate(g.allowed)}
        doc['vms'].append(v)
    result = cachedomain.plan(cachedomain_model.input_from_dict(doc))
    where = {c: d for d, cpus in enumerate(host.domains) for c in cpus}
    host.pinned_memory = {}
    for g in guests:
        g.allowed = [tuple(result.vms[g.vm.id].pinning[i])
                     for i in range(g.vm.vcpus)]
        doms = {where[c] for pins in g.allowed for c in pins}
        if (g.home is None and workload_is_memory(g, now_s)
                and len(doms) == 1 and len(g.allowed[0]) < len(everything)):
            host.pinned_memory[g.vm.id] = doms.pop()


def workload_is_memory(guest, now_s):
    """The planner's view: declared or classified memory-bound."""
    return guest.memory_now(now_s)


def _replan_peer(host, guests, pinning, everything):
    if pinning == 'float':
        for g in guests:
            g.allowed = [everything] * g.vm.vcpus
        return
    if pinning == 'dedicated':
        taken = {c for g in guests if g.allowed
                 for p in g.allowed if len(p) == 1 for c in p}
        free = [c for c in everything if c not in taken]
        for g in guests:
            if g.allowed is None:
                if len(free) >= g.vm.vcpus:
                    g.allowed = [(c,) for c in free[:g.vm.vcpus]]
                    free = free[g.vm.vcpus:]
                else:
                    g.allowed = [everything] * g.vm.vcpus
        return
    # spread: the domain with the most free CPUs that fits, else float.
    used = [0] * len(host.domains)
    for g in guests:
        if g.allowed is not None and g.allowed[0] != everything:
            used[host.domains.index(g.allowed[0])] += g.vm.vcpus
    for g in guests:
        if g.allowed is not None:
            continue
        room = [(len(c) - used[d], -d) for d, c in enumerate(host.domains)]
        best = max(range(len(room)), key=lambda d: room[d])
        if room[best][0] >= g.vm.vcpus:
            g.allowed = [host.domains[best]] * g.vm.vcpus
            used[best] += g.vm.vcpus
        else:
            g.allowed = [everything] * g.vm.vcpus
