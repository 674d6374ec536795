"""A year of a cloud with the rebalance strategy's daily audits (simulated).

The cloud is :mod:`.cloud`'s: Nova's choice of host with this project's
filter and weigher rules (:func:`.cloud.pick_host`; the domains of
``required`` servers closed to Clean-wanting requests, as the filter
does), the agent's pass after every change of a host - a boot, a delete,
a live migration in or out - placing every server of the host as the
real agent does (:meth:`.cloud.Host.agent_choice`: a server keeps its
domain while it may still join it, one that may not is placed again or
waits on Nova's CPUs until a domain frees), and the classifier's real
votes on CPI samples with the noise measured by the contention probe
(:mod:`.classifier_trace`). Every server uses a
cache-aware flavor: ``required`` (declared memory-bound,
``cache_clean=required``) for a share of the memory-bound ones, ``auto``
for the others, so that a server found memory-bound after boot may share
its domain with another (Dirty) - the first situation of the Watcher
strategy's page.

Every day, at one moment, an audit builds the snapshot the Watcher
strategy builds (:mod:`nova_cacheaware.contracts.rebalance_snapshot`:
each server with the class the agent gives it by then, the domain it is
pinned into) and calls the strategy's decision,
:func:`nova_cacheaware.rebalance.policy.plan_moves`, with the day's
budget. Its moves are applied as Watcher's applier and Nova would: one
after the other, each checked at its destination by the scheduler's rules
(:meth:`.cloud.Host.admits`), the destination's agent choosing the
domain; a refused move fails, the server stays where it was, and the rest
of the plan is not started (Watcher's action plan stops at a failed
action).

Measured every day, against the **truth** (each server's real workload,
which the strategy does not see): memory-bound servers Clean (pinned into
a domain no other memory-bound server uses), ``required`` requests the
scheduler refused, migrations made and failed, and servers a move made
worse off (Clean before the move, not after it). The strategy is never
scored by its own model (:mod:`nova_cacheaware.rebalance.model`): the
cloud's rules, its classifier errors and its agents decide.

Yardsticks in the same run:

* **the day's optimum** (:meth:`Cloud.optimum`): the most Clean any
  placement of the day's servers has, an integer program over what one
  domain can hold (:mod:`.clean_bound`); it ignores the migration
  budget, so it bounds the offline optimum with any budget for the
  servers the run has that day. The older **bound** ``min(memory-bound
  servers, domains)`` is kept beside it;
* **the day's optimum in pairs** (:meth:`Cloud.optimum_in_pairs`): the
  same program over the domains holding at most two memory-bound
  servers - the most Clean of the placements that seat the servers they
  cannot keep Clean in pairs, as the agents do; the day's optimum
  beyond it is what packing three and four into a domain adds;
* **the day's speed optimum** (:meth:`Cloud.performance_optimum`): the
  same program valued by what the cache contention model says the
  memory-bound servers achieve (:meth:`Cloud.performance`), which counts
  a third server in a Dirty domain as a loss where the Clean count does
  not;
* **the clairvoyant audit** (small clouds): each day the best set of at
  most ``budget`` moves found exhaustively against the truth (every
  server to every other host, and pairs of those when the budget is 2),
  with the cloud's own rules deciding what each move does. It knows every
  server's real workload, which no audit does.

Simplifications, stated: a classifier trajectory is drawn for the first
2 hours after boot (the class it reaches then is kept; the classifier
decides within about half an hour here); a migrated server keeps its
class (the destination's agent classifies it again within the hour); the
audit runs once a day at the moment of the day's first arrival.
"""

import collections
import dataclasses
import heapq
import itertools
import math
import random

from nova_cacheaware.contracts import rebalance_snapshot as rs
from nova_cacheaware.rebalance import policy as rebalance
from nova_cacheaware_evaluation.sim import classifier_trace
from nova_cacheaware_evaluation.sim import clean_bound
from nova_cacheaware_evaluation.sim import cloud
from nova_cacheaware_evaluation.sim import contention

DAY_S = 86400.0
#: How long after boot a classifier trajectory is drawn.
CLASSIFIER_HORIZON_S = 2 * 3600.0
#: The agent runs its planner (and pins) like the cloud simulator's agent.
AGENT = cloud.Config('rebalance-year', agent=True)


@dataclasses.dataclass(frozen=True)
class YearSpec:
    """The cloud and its year.

    ``load``: mean vCPUs in use over the cloud's CPUs (arrivals are drawn
    so that the stationary load is this); ``declared``: the share of
    memory-bound servers booted with the ``required`` flavor (the others
    ``auto``); ``mix`` and ``sizes`` as in the cloud scenarios.
    """

    hosts: int = 300
    domains: tuple = tuple(tuple(range(i, i + 4)) for i in range(0, 16, 4))
    days: int = 365
    warmup_days: int = 60
    load: float = 0.85
    mean_lifetime_days: float = 60.0
    mix: tuple = (('cpu', 5), ('io', 2), ('memory', 3))
    sizes: tuple = ((1, 2), (2, 4), (4, 2))
    declared: float = 0.3

    @property
    def cpus(self):
        """CPUs of the cloud."""
        return self.hosts * sum(len(d) for d in self.domains)

    @property
    def arrivals_per_day(self):
        """The arrival rate that keeps ``load`` in the stationary state."""
        total = sum(w for _s, w in self.sizes)
        mean_vcpus = sum(s * w for s, w in self.sizes) / total
        return self.load * self.cpus / (mean_vcpus
                                        * self.mean_lifetime_days)


@dataclasses.dataclass(frozen=True)
class Arrival:
    """One server of the trace."""

    day: float
    vm: contention.SimVM
    life_days: float
    flavor: str


def make_trace(spec, rng):
    """The arrivals of ``spec``'s warmup and year (Poisson, exponential)."""
    trace, now, n = [], 0.0, 0
    end = spec.warmup_days + spec.days
    rate = spec.arrivals_per_day
    while True:
        now += rng.expovariate(rate)
        if now >= end:
            return trace
        workload = _weighted(rng, spec.mix)
        vcpus = _weighted(rng, spec.sizes)
        life = rng.expovariate(1.0 / spec.mean_lifetime_days)
        flavor = ('required' if workload == 'memory'
                  and rng.random() < spec.declared else 'auto')
        trace.append(Arrival(now, contention.SimVM('vm%06d' % n, vcpus,
                                                   workload), life, flavor))
        n += 1


def _weighted(rng, weights):
    total = sum(w for _k, w in weights)
    pick = rng.random() * total
    for key, w in weights:
        pick -= w
        if pick <= 0:
            return key
    return weights[-1][0]


def trajectories(trace, model, sigma, seed):
    """Each ``auto`` server's classifier changes (seconds since boot)."""
    rng = random.Random(seed)
    return {a.vm.id: tuple(classifier_trace.trajectory(
        a.vm.workload, a.vm.vcpus,
        min(CLASSIFIER_HORIZON_S, a.life_days * DAY_S), model, sigma, rng))
        for a in trace if a.flavor == 'auto'}


class Host(cloud.Host):
    """:class:`.cloud.Host` whose Clean-wanting servers follow the agent.

    The agent counts a server against Clean while it is memory-bound or
    not classified yet; one classified CPU-bound no longer does
    (``wants_clean`` of the live state), so the scheduler's room check
    and the agent's choice see the classes of :attr:`now_s`.
    """

    def __init__(self, index, domains, clock):
        super().__init__(index, domains)
        self.clock = clock

    def clean_wanted(self, guest):
        """Whether the agent's choice counts ``guest`` against Clean.

        As the agent's pass does (``placement_side._choose_domains``):
        its flavor's ``clean_wanted``, unless the classifier has found it
        CPU-bound by now.
        """
        if seen_class(guest, self.clock()) == 'cpu':
            return False
        return guest.req.cacheaware.clean_wanted

    def closed(self, req):
        """The filter's closed domains for ``req``.

        Those holding a ``required`` guest, for a Clean-wanting request
        (``domain_order.closed_domains``).
        """
        if req.cacheaware.clean_wanted:
            return self.required_domains()
        return frozenset()

    def loads(self):
        """Per domain ``(vCPUs kept there, Clean-wanting servers)``."""
        now_s = self.clock()
        # The scheduler asks every host for each boot: the answer is kept
        # while the guests, their domains and their classes stay (a class
        # changes only at its trajectory's next step).
        key = tuple((g.vm.id, g.home) for g in self.guests.values())
        kept = getattr(self, '_loads', None)
        if (kept is not None and kept[0] == key
                and kept[1] <= now_s < kept[2]):
            return list(kept[3]), list(kept[4])
        vcpus = [0] * len(self.domains)
        memory = [0] * len(self.domains)
        until = math.inf
        for g in self.guests.values():
            if g.home is None:
                continue
            vcpus[g.home] += g.vm.vcpus
            memory[g.home] += seen_class(g, now_s) != 'cpu'
            for t, _class in g.changes:
                if t > now_s - g.arrival:
                    # A millisecond early: rounding never keeps a stale
                    # class.
                    until = min(until, g.arrival + t - 1e-3)
                    break
        self._loads = (key, now_s, until, tuple(vcpus), tuple(memory))
        return vcpus, memory


class Cloud:
    """The hosts, where each server is, and the departures to come."""

    def __init__(self, spec):
        self.spec = spec
        self.now_s = 0.0
        self.hosts = [Host(i, spec.domains, self.clock)
                      for i in range(spec.hosts)]
        self.where = {}          # vm id -> host index
        self.truth = {}          # vm id -> real workload
        self._ends = []          # (day, vm id)

    def clock(self):
        """The simulated time, seconds."""
        return self.now_s

    def guests(self):
        """Every ``(host, guest)``."""
        for host in self.hosts:
            for guest in host.guests.values():
                yield host, guest

    def boot(self, arrival, changes):
        """Schedule ``arrival``; False when the scheduler refuses it."""
        guest = cloud.Guest(arrival.vm, cloud.request(arrival.flavor,
                                                      arrival.vm.vcpus),
                            arrival.day * DAY_S, changes)
        host = cloud.pick_host(self.hosts, guest.req)
        if host is None:
            return False
        self._place(host, guest)
        self.truth[arrival.vm.id] = arrival.vm.workload
        heapq.heappush(self._ends, (arrival.day + arrival.life_days,
                                    arrival.vm.id))
        return True

    def _place(self, host, guest):
        # The destination's agent places the newcomer and may re-place
        # the others (one evicted by a required newcomer, say).
        guest.home = None
        guest.allowed = None
        host.guests[guest.vm.id] = guest
        self.where[guest.vm.id] = host.index
        host.agent_choice(fresh=(guest.vm.id,))

    def depart_until(self, day):
        """Delete every server whose life ended by ``day``."""
        while self._ends and self._ends[0][0] <= day:
            _end, vm_id = heapq.heappop(self._ends)
            host = self.hosts[self.where.pop(vm_id)]
            del host.guests[vm_id]
            del self.truth[vm_id]
            # Its agent's next pass: room freed may seat one waiting on
            # Nova's CPUs, or move one away from a required neighbour.
            host.agent_choice()

    def migrate(self, vm_id, destination):
        """Nova's live migration: checked by the scheduler's rules there.

        True when the server moved; False when the destination refused it
        (it stays where it was, untouched).
        """
        source = self.hosts[self.where[vm_id]]
        target = self.hosts[destination]
        guest = source.guests[vm_id]
        if target is source or not target.admits(guest.req):
            return False
        del source.guests[vm_id]
        source.agent_choice()
        self._place(target, guest)
        return True

    def memory_bound(self):
        """Servers whose real workload is memory-bound."""
        return sum(1 for w in self.truth.values() if w == 'memory')

    def clean(self):
        """The set of memory-bound servers (the truth) that are Clean."""
        out = set()
        for host in self.hosts:
            homes = {}
            for guest in host.guests.values():
                if self.truth[guest.vm.id] == 'memory':
                    homes.setdefault(guest.home, []).append(guest.vm.id)
            for home, members in homes.items():
                if home is not None and len(members) == 1:
                    out.add(members[0])
        return out

    def performance(self, model):
        """The memory-bound servers' summed speed, each Clean = 1.

        What the cache contention ``model`` says each server (the truth)
        achieves where the agents placed it: ``1 / (1 + dirty_all * n)``
        beside ``n`` other memory-bound servers, ``1 / split_mem`` held
        in no domain (the most a floating server gets).
        """
        total = 0.0
        for host in self.hosts:
            homes = collections.Counter(
                guest.home for guest in host.guests.values()
                if self.truth[guest.vm.id] == 'memory')
            for home, members in homes.items():
                total += members * (
                    1.0 / model.split_mem if home is None
                    else clean_bound.speed(members, model.dirty_all))
        return total

    def domains(self):
        """Cache domains of the cloud."""
        return len(self.hosts) * len(self.spec.domains)

    def unseated(self):
        """Servers held in no domain (the agent found none for them)."""
        return sum(1 for _h, g in self.guests() if g.home is None)

    def optimum(self):
        """The most Clean any placement of today's servers has.

        :func:`.clean_bound.bound`, seating every server as the cloud's
        rules do; with servers left unseated today, allowing them.
        """
        return clean_bound.bound(*self._program())

    def optimum_in_pairs(self):
        """The most Clean any placement seating no third one has.

        :func:`.clean_bound.bound_in_pairs` with :meth:`optimum`'s rules:
        what the agents' way of seating the servers that cannot be Clean
        (in pairs) can reach; None when no such placement exists.
        """
        return clean_bound.bound_in_pairs(*self._program())

    def performance_optimum(self, model):
        """The most :meth:`performance` any placement of them has.

        :func:`.clean_bound.performance_bound`, with :meth:`optimum`'s
        rules.
        """
        counts, domains, capacity, cpus, unseated = self._program()
        return clean_bound.performance_bound(
            counts, domains, capacity, cpus, model.dirty_all,
            1.0 / model.split_mem, unseated)

    def _program(self):
        """``(counts, domains, capacity, cpus, unseated)`` of today."""
        counts = collections.Counter(
            (self.truth[g.vm.id] == 'memory', g.vm.vcpus)
            for _h, g in self.guests())
        capacity = {len(d) for d in self.spec.domains}
        if len(capacity) != 1:
            raise ValueError('the bound needs domains of one size')
        return (counts, self.domains(), capacity.pop(), self.spec.cpus,
                self.unseated() > 0)


def seen_class(guest, now_s):
    """The class the agent gives ``guest`` at ``now_s`` (the audit's)."""
    if guest.req.cacheaware.workload == 'memory':
        return 'memory'
    got = classifier_trace.class_at(guest.changes, now_s - guest.arrival)
    if got == classifier_trace.MEMORY:
        return 'memory'
    return 'cpu' if got == 'other' else 'unknown'


def snapshot(state, now_s, pending=(), priority=rs.DEFAULT_PRIORITY):
    """The region snapshot the Watcher strategy builds from the agents.

    ``pending``: the vCPUs of refused ``required`` requests (the
    strategy reads them from Nova's ERROR servers); ``priority``: the
    strategy's parameter.
    """
    hosts = []
    for host in state.hosts:
        domains = tuple(rs.Domain('d%03d' % d, len(cpus))
                        for d, cpus in enumerate(host.domains))
        servers = tuple(rs.Server(
            uuid=g.vm.id, vcpus=g.vm.vcpus, workload=seen_class(g, now_s),
            cache_clean=('required' if g.req.cacheaware.clean_required
                         else 'preferred'),
            # The flavor's workload, as watcher.snapshot fills it.
            declared=g.req.cacheaware.workload,
            domain=None if g.home is None else 'd%03d' % g.home)
            for g in sorted(host.guests.values(), key=lambda g: g.vm.id))
        hosts.append(rs.Host(name='h%04d' % host.index, pcpus=host.cpus,
                             domains=domains, servers=servers))
    return rs.Snapshot(hosts=tuple(hosts), pending=tuple(pending),
                       priority=priority)


def budget_of(servers, per_100):
    """An audit's migrations: ``per_100`` per 100 servers, rounded up."""
    return int(math.ceil(servers * per_100 / 100.0 - 1e-9))


@dataclasses.dataclass
class AuditResult:
    """What one audit did."""

    planned: int = 0
    moved: int = 0
    failed: int = 0
    worse: int = 0


def apply_plan(state, moves):
    """Apply ``[(vm id, destination index)]`` in order, as Watcher would.

    Stops at the first refused migration. ``worse``: servers Clean before
    a move and not after it (the moved one and every other).
    """
    result = AuditResult(planned=len(moves))
    for vm_id, destination in moves:
        before = state.clean()
        if not state.migrate(vm_id, destination):
            result.failed += 1
            break
        result.moved += 1
        result.worse += len(before - state.clean())
    return result


def strategy_moves(state, now_s, budget, pending=(),
                   priority=rs.DEFAULT_PRIORITY):
    """The strategy's plan for the audit, as ``[(vm id, host index)]``."""
    if budget <= 0:
        return []
    plan = rebalance.plan_moves(snapshot(state, now_s, pending, priority),
                                budget)
    return [(m.server, int(m.destination[1:])) for m in plan.moves]


def clairvoyant_moves(state, budget):
    """The best set of at most ``budget`` moves (1 or 2) for the truth.

    Exhaustive: every server to every other host, and for a budget of 2
    every pair of such moves in order, each applied by the cloud's rules
    on a copy; the most Clean memory-bound servers wins, then the fewest
    moves.
    """
    if budget <= 0:
        return []
    best = (len(state.clean()), 0, [])
    singles = [(vm_id, h.index) for _src, g in state.guests()
               for vm_id in (g.vm.id,) for h in state.hosts
               if h.index != state.where[vm_id]]
    sequences = [[m] for m in singles]
    if budget >= 2:
        sequences += [list(p) for p in itertools.permutations(singles, 2)
                      if p[0][0] != p[1][0]]
    for moves in sequences:
        trial = _copy(state)
        if apply_plan(trial, moves).moved < len(moves):
            continue
        key = (len(trial.clean()), -len(moves))
        if key > (best[0], -best[1]):
            best = (key[0], len(moves), moves)
    return best[2]


def _copy(state):
    new = Cloud.__new__(Cloud)
    new.spec = state.spec
    new.now_s = state.now_s
    new.truth = state.truth
    new.where = dict(state.where)
    new._ends = state._ends
    new.hosts = []
    for host in state.hosts:
        twin = Host(host.index, host.domains, new.clock)
        twin.guests = {k: dataclasses.replace(g)
                       for k, g in host.guests.items()}
        new.hosts.append(twin)
    return new


@dataclasses.dataclass(frozen=True)
class World:
    """One seed's trace and classifier trajectories, shared by the runs."""

    spec: YearSpec
    trace: tuple
    changes: dict
    #: The cache contention model the classifier's samples and the
    #: servers' speed (:meth:`Cloud.performance`) come from.
    model: contention.Model = contention.Model()


def world(spec, model, sigma, seed):
    """The :class:`World` of ``seed``: every run on it sees the same."""
    trace = make_trace(spec, random.Random(seed))
    return World(spec, tuple(trace), trajectories(trace, model, sigma,
                                                  seed + 1), model)


def run(the_world, per_100, mover='strategy', know_refused=False,
        priority=rs.DEFAULT_PRIORITY):
    """One year on ``the_world``; the daily series and totals (JSON-ready).

    ``mover``: ``strategy`` (the Watcher strategy's decision) or
    ``clairvoyant`` (:func:`clairvoyant_moves`); ``per_100`` 0: no audit
    moves anything (the cloud without the strategy). A ``required``
    request the scheduler refuses is asked again once, after the day's
    audit (its tenant retries), and counts as refused only if it fails
    again; ``know_refused``: the audit's snapshot lists those requests
    (the strategy's ``refused_within_hours``); ``priority``: the
    strategy's parameter (rooms for them first, or Clean). Each day's figures
    are taken twice: before the audit (``clean_before``: the day's
    arrivals and departures done) and after its moves (``clean``).
    """
    spec = the_world.spec
    state = Cloud(spec)
    days, totals = [], AuditResult()
    refused = refused_required = 0
    arrivals = iter(the_world.trace)
    upcoming = next(arrivals, None)
    for day in range(spec.warmup_days + spec.days):
        day_refused = day_required = 0
        pending = []     # the day's refused required requests
        while upcoming is not None and upcoming.day < day + 1:
            state.depart_until(upcoming.day)
            state.now_s = upcoming.day * DAY_S
            if not state.boot(upcoming,
                              the_world.changes.get(upcoming.vm.id, ())):
                if upcoming.flavor == 'required':
                    pending.append(upcoming)
                else:
                    day_refused += 1
            upcoming = next(arrivals, None)
        state.depart_until(day + 1)
        now_s = state.now_s = (day + 1) * DAY_S
        clean_before = len(state.clean())
        servers = len(state.truth)
        budget = budget_of(servers, per_100)
        moves = (clairvoyant_moves(state, budget) if mover == 'clairvoyant'
                 else strategy_moves(state, now_s, budget, [
                     a.vm.vcpus for a in pending] if know_refused else (),
                     priority))
        audit = apply_plan(state, moves)
        # The tenants of refused required requests boot again once, after
        # the audit: refused only if that fails too.
        for again in pending:
            if not state.boot(dataclasses.replace(
                    again, day=day + 1,
                    life_days=again.life_days - (day + 1 - again.day)),
                    the_world.changes.get(again.vm.id, ())):
                day_refused += 1
                day_required += 1
        if day < spec.warmup_days:
            continue
        memory = state.memory_bound()
        refused += day_refused
        refused_required += day_required
        for name in ('planned', 'moved', 'failed', 'worse'):
            setattr(totals, name,
                    getattr(totals, name) + getattr(audit, name))
        days.append({'day': day - spec.warmup_days, 'servers': servers,
                     'memory_bound': memory,
                     'clean_before': clean_before,
                     'clean': len(state.clean()),
                     'bound': min(memory, state.domains()),
                     'optimum': state.optimum(),
                     'optimum_in_pairs': state.optimum_in_pairs(),
                     'performance': round(
                         state.performance(the_world.model), 3),
                     'performance_optimum': round(
                         state.performance_optimum(the_world.model), 3),
                     'unseated': state.unseated(),
                     'refused': day_refused,
                     'refused_required': day_required,
                     'budget': budget, 'moved': audit.moved,
                     'failed': audit.failed, 'worse': audit.worse})
    return {'per_100': per_100, 'mover': mover,
            'know_refused': know_refused,
            # Only an audit that knows refused requests has a priority.
            'priority': (priority if mover == 'strategy' and per_100
                         and know_refused else None),
            'days': days,
            'refused': refused, 'refused_required': refused_required,
            'planned': totals.planned, 'moved': totals.moved,
            'failed': totals.failed, 'worse': totals.worse,
            'arrivals': len(the_world.trace)}
