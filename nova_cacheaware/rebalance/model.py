"""The rebalance decision's values, and the region it plays moves on.

:class:`Region` holds where every server of a
:class:`~nova_cacheaware.contracts.rebalance_snapshot.Snapshot` is, as the
agents will place it: on every host, the agent's own choice
(:func:`nova_cacheaware.cachedomain.assignment.assign_domains`) decides
the domain of each instance - a pinned one keeps its domain while it may
still join it (not two raced claims in room for one), one left on
Nova's CPUs (and one that arrives by live migration) is placed like a new
instance. :meth:`Region.trial` predicts a live migration with that same
choice, so the plan expects what the agents will really do. The agent's
choice counts a server against Clean when its flavor wants Clean and the
classifier has not found it CPU-bound (:attr:`~nova_cacheaware.contracts.
rebalance_snapshot.Server.agent_clean_wanted`); the scheduler's filter
reads the flavor only (:attr:`~nova_cacheaware.contracts.
rebalance_snapshot.Server.flavor_clean_wanted`); Clean itself is judged
by the class.

A live migration goes through Nova's scheduler: the destination must
pass the CacheDomainFilter's room check (:func:`filter_admits`, the
rule of :func:`nova_cacheaware.scheduler.domain_order.room_reason` on
the destination's live state), or it is refused.

Placement's per-server limits (:func:`largest_server`: the compute
node's ``VCPU`` ``max_unit``, a per-domain provider's own) bound where a
server may land and which room a refused request may take: a larger one
is refused by Placement before any filter or agent sees it. Pure.
"""

import collections
import dataclasses
import functools
import typing as ty

from nova_cacheaware.cachedomain import assignment as domain_assignment


@functools.total_ordering
@dataclasses.dataclass(frozen=True)
class Score:
    """What a region's placement achieves.

    ``clean``: memory-bound servers alone (Clean) in their domain;
    ``all_share``: servers of cache-aware flavors pinned into one domain;
    ``room``: refused ``required`` requests that would fit now (each in
    its own domain without a memory-bound server); ``relieved``: storming
    servers moved to a host whose pCPUs hold all its guests' vCPUs.

    Compared by :meth:`key`, as the snapshot's ``priority`` says
    (``required_first``): by default (``required``) first the refused
    ``required`` requests that fit, then Clean servers - a room is never
    given to a running server while a request waits for it -; with
    ``priority`` ``clean``, first Clean servers counting each such
    request as the Clean server it becomes when its owner boots it again,
    then those requests (at an equal count, a move that gives a request's
    room to a running server is no gain). Then All-share, then storms
    relieved.
    """

    clean: int = 0
    all_share: int = 0
    room: int = 0
    relieved: int = 0
    #: The snapshot's priority (not a count: not compared, not added).
    required_first: bool = dataclasses.field(default=True, compare=False)

    def key(self):
        """The tuple scores are compared by."""
        if self.required_first:
            return (self.room, self.clean, self.all_share, self.relieved)
        return (self.clean + self.room, self.room, self.all_share,
                self.relieved)

    def counts(self):
        """``{part: count}``: the four counts, for a document."""
        return {f.name: getattr(self, f.name)
                for f in dataclasses.fields(self) if f.compare}

    def __lt__(self, other):
        return self.key() < other.key()

    def first_gain(self, before):
        """The name of the first part higher than in ``before``, or None."""
        for field in dataclasses.fields(self):
            if not field.compare:
                continue
            if getattr(self, field.name) != getattr(before, field.name):
                return (field.name if getattr(self, field.name)
                        > getattr(before, field.name) else None)
        return None

    def __add__(self, other):
        return Score(self.clean + other.clean,
                     self.all_share + other.all_share,
                     self.room + other.room, self.relieved + other.relieved,
                     self.required_first)

    def __sub__(self, other):
        return Score(self.clean - other.clean,
                     self.all_share - other.all_share,
                     self.room - other.room, self.relieved - other.relieved,
                     self.required_first)


@dataclasses.dataclass(frozen=True)
class Move:
    """One live migration: ``server`` from ``source`` to ``destination``.

    ``domain`` (and its ``numa_node``) is where the destination's agent
    will pin it; ``score`` the region's score once this move is done;
    ``reason`` the first part of the score it raised (``clean``,
    ``all_share``, ``room`` or ``relieved``), or ``place``: the first
    move of a chain, which raises nothing and makes the place the next
    move uses.
    """

    server: str
    source: str
    destination: str
    domain: str
    numa_node: ty.Optional[int]
    vcpus: int
    score: Score
    reason: str


@dataclasses.dataclass(frozen=True)
class Plan:
    """The ordered moves of one audit and the score before and after."""

    moves: ty.Tuple[Move, ...]
    before: Score
    after: Score


@dataclasses.dataclass(frozen=True)
class HostView:
    """One host's share of the score, for a placement of its servers.

    ``status``: ``{uuid: (Clean, All-share, pCPUs fine, maybe Clean)}``,
    what must never turn from True to False for any server ("maybe
    Clean": a server not found CPU-bound, pinned into a domain where no
    other server is memory-bound or not classified yet - Clean if its
    class, or its neighbours', turns out memory-bound); ``rooms``: the
    largest request each domain without a memory-bound (Clean-wanting)
    server takes (its free vCPUs, at most :func:`largest_server`);
    ``domains``: ``{domain id: (free vCPUs, Clean-wanting servers,
    memory-bound servers, largest server)}`` (the last:
    :func:`largest_server`); ``vcpus``: of all its servers; ``waiting``:
    the vCPUs of each server of a cache-aware flavor on Nova's CPUs,
    ascending; ``storms_away``: storming servers away from the host they
    stormed on.
    """

    score: Score
    status: ty.Mapping[str, ty.Tuple[bool, bool, bool]]
    rooms: ty.Tuple[int, ...]
    domains: ty.Mapping[str, ty.Tuple[int, int, int, int]]
    vcpus: int
    waiting: ty.Tuple[int, ...] = ()
    storms_away: int = 0
    rows: ty.Tuple[ty.Tuple[str, int, int, int], ...] = ()
    required: ty.FrozenSet[str] = frozenset()


def room_refused(rows, vcpus, clean_required, closed):
    """True when no row may take the request: the filter's room rule.

    ``rows``: ``(domain, memory-bound, vCPUs used, capacity)``. A domain
    may when it has room for ``vcpus``, holds no memory-bound server if
    ``clean_required``, and is not in ``closed``: the rule of
    :func:`nova_cacheaware.scheduler.domain_order.room_reason` (whose
    module pulls in the scheduler; a unit test holds the two equal).
    """
    return not any(used + vcpus <= capacity
                   and not (clean_required and memory)
                   and domain not in closed
                   for domain, memory, used, capacity in rows)


def filter_admits(host_view, server):
    """True when Nova's filter lets ``server`` be migrated to the host.

    The CacheDomainFilter's room check on the host's live state before
    it arrives (``domain_order.closed_domains``: the domains of servers
    whose flavor asks a Clean guarantee are closed to a request whose
    flavor wants Clean; ``room_reason``), over the domains Placement
    lets one server of its size have (:func:`largest_server`).
    """
    closed = host_view.required if server.flavor_clean_wanted else ()
    return not room_refused(
        [row for row in host_view.rows
         if host_view.domains[row[0]][3] >= server.vcpus],
        server.vcpus, server.flavor_clean_required, closed)


def largest_server(host, domain):
    """The most vCPUs one server may have in ``domain`` of ``host``.

    Its capacity, and no more than the ``max_unit`` Placement applies to
    one allocation there: the compute node's ``VCPU`` one (the host's
    CPUs in Nova's libvirt driver, while the capacity counts them times
    the allocation ratio) and a per-domain provider's own (the domain's
    CPUs), where the snapshot knows them.
    """
    return min(n for n in (domain.capacity, domain.max_unit, host.max_unit)
               if n is not None)


def fits_pending(pending, rooms):
    """How many ``pending`` requests fit, each in its own room.

    ``pending`` ascending; ``rooms`` a ``{free vCPUs: domains}`` counter.
    Smallest request first into the smallest room that holds it: optimal
    when a room holds a request iff it is at least as large.
    """
    if not pending:
        return 0
    sizes = sorted(v for v, n in rooms.items() if n > 0 and v >= pending[0])
    left = [rooms[v] for v in sizes]
    fitted = j = 0
    for request in pending:
        while j < len(sizes) and (sizes[j] < request or not left[j]):
            j += 1
        if j == len(sizes):
            break
        left[j] -= 1
        fitted += 1
    return fitted


def settle(host, servers, previous, fresh=()):
    """``{uuid: domain or None}``: the agent's choice on ``host``.

    ``servers``: the servers on it; ``previous``: the domain each had
    (it keeps it while it may join it); those in ``fresh`` (arriving) are
    placed anew. Servers of flavors without ``cacheaware:`` keys hold no
    host room: they stay where they are and count against room and Clean.
    Each counts against Clean as the agent's choice counts it
    (``agent_clean_wanted``: its flavor wants Clean and it is not found
    CPU-bound; ``clean_required`` by its flavor).
    """
    held, base, out = [], {}, {}
    for server in servers:
        domain = None if server.uuid in fresh else previous.get(server.uuid)
        out[server.uuid] = domain
        if domain is not None and not (server.cache_aware and (
                server.agent_clean_wanted or server.flavor_clean_required)):
            # It keeps its domain: only its load matters to the choice
            # (Clean-wanting ones stay instances: the choice may displace
            # one; so do required ones, even found CPU-bound: their
            # domain stays closed to memory-bound ones).
            vcpus, memory = base.get(domain, (0, 0))
            base[domain] = (vcpus + server.vcpus, memory + int(
                not server.cache_aware and server.memory_bound))
            continue
        if not server.cache_aware:
            continue
        held.append(domain_assignment.HostHeld(
            uuid=server.uuid, vcpus=server.vcpus,
            # As the agent's pass gives them
            # (placement_side._choose_domains).
            memory_bound=server.agent_clean_wanted, previous=domain,
            clean_required=server.flavor_clean_required,
            holds_slot=server.flavor_clean_required))
    # Always the agent's choice, even when every instance had a domain:
    # it moves one out of a home it may no longer join (two raced claims
    # in a domain one of them fits, memory-bound beside required).
    capacity = {d.id: d.capacity for d in host.domains}
    out.update(domain_assignment.assign_domains(capacity, held, base))
    return out


#: Passes of the agent :func:`settle_still` plays at most.
SETTLE_PASSES = 4


def settle_still(host, servers):
    """The agent's choice on ``host`` once its passes change nothing.

    The agent runs its pass every period: one pass may leave a server on
    Nova's CPUs that the next seats, once the others kept their domains.
    From the snapshot's domains, pass after pass, at most
    :data:`SETTLE_PASSES`.
    """
    placed = {s.uuid: s.domain for s in servers}
    for _ in range(SETTLE_PASSES):
        after = settle(host, servers, placed)
        if after == placed:
            break
        placed = after
    return placed


def view(host, servers, placed, origin):
    """The :class:`HostView` of ``servers`` on ``host`` placed so."""
    used = {d.id: 0 for d in host.domains}
    holders = dict(used)
    memory = dict(used)
    maybe = dict(used)
    required = set()
    vcpus = 0
    for server in servers:
        vcpus += server.vcpus
        domain = placed[server.uuid]
        if domain is not None:
            used[domain] += server.vcpus
            # Holders as the agent's choice counts them.
            holders[domain] += server.agent_clean_wanted
            memory[domain] += server.memory_bound
            maybe[domain] += server.workload != 'cpu'
            if server.flavor_clean_required:
                required.add(domain)
    crowded = vcpus > host.pcpus
    status = {}
    clean = all_share = relieved = away = 0
    waiting = []
    for server in servers:
        domain = placed[server.uuid]
        is_clean = (domain is not None and server.memory_bound
                    and memory[domain] == 1)
        pinned = domain is not None and server.cache_aware
        fine = not crowded and (not server.storm
                                or origin[server.uuid] != host.name)
        # Classes the agent has not found yet hide Clean both ways: kept
        # apart from what the score counts, never spoiled either.
        maybe_clean = (domain is not None and server.workload != 'cpu'
                       and maybe[domain] == 1)
        clean += is_clean
        all_share += pinned
        relieved += server.storm and fine
        if server.cache_aware and domain is None:
            waiting.append(server.vcpus)
        away += server.storm and origin[server.uuid] != host.name
        status[server.uuid] = (is_clean, pinned, fine, maybe_clean)
    free = {d.id: d.capacity - used[d.id] for d in host.domains}
    largest = {d.id: largest_server(host, d) for d in host.domains}
    rooms = tuple(sorted(min(free[d], largest[d]) for d in free
                         if holders[d] == 0 and free[d] > 0))
    # The live state's memory-bound column: servers not found CPU-bound.
    rows = tuple((d.id, maybe[d.id], used[d.id], d.capacity)
                 for d in host.domains)
    return HostView(Score(clean, all_share, 0, relieved), status, rooms,
                    {d: (free[d], holders[d], memory[d], largest[d])
                     for d in free},
                    vcpus, tuple(sorted(waiting)), away, rows,
                    frozenset(required))


def worse(before, after):
    """True when any server's status turns from True to False."""
    return any(was and not now
               for uuid, old in before.items() if uuid in after
               for was, now in zip(old, after[uuid]))


@dataclasses.dataclass(frozen=True)
class Trial:
    """One live migration played on a :class:`Region`, not yet done.

    ``keeps_rules``: Nova's filter admits it there (:func:`filter_admits`),
    it gets a domain there that Placement lets
    it have (:func:`largest_server`) and no server's status turns from
    True to False; ``helps``: it keeps the rules and
    raises the score; ``domain``: where the destination's agent pins the server
    (None: nowhere, it would run on Nova's CPUs).
    """

    server: str
    source: str
    destination: str
    domain: ty.Optional[str]
    score: Score
    keeps_rules: bool
    helps: bool
    placed: ty.Tuple[ty.Mapping[str, ty.Optional[str]], ...]
    views: ty.Tuple[HostView, HostView]


class Region:
    """Where every server of a snapshot is while a plan is played.

    Built from a snapshot, each host first settled by its agent's own
    choice (what it does with no migration at all), so that no move is
    credited with what the agent does anyway. Only :meth:`commit`
    changes it.
    """

    def __init__(self, snapshot):
        self.hosts = {h.name: h for h in snapshot.hosts}
        self.servers = {s.uuid: s for h in snapshot.hosts for s in h.servers}
        self.origin = {s.uuid: h.name
                       for h in snapshot.hosts for s in h.servers}
        self.host_of = dict(self.origin)
        self.members = {h.name: {s.uuid: s for s in h.servers}
                        for h in snapshot.hosts}
        self.pending = tuple(sorted(snapshot.pending))
        self.required_first = snapshot.priority == 'required'
        self.placed = {}
        self.views = {}
        self.rooms = collections.Counter()
        self.total = Score()
        #: Bumped on every change of a host: keys of callers' memos.
        self.version = {name: 0 for name in self.hosts}
        for host in snapshot.hosts:
            placed = settle_still(host, host.servers)
            self._set(host.name, placed,
                      view(host, host.servers, placed, self.origin))
        self.score = self.with_room(self.total, self.rooms)

    def with_room(self, total, rooms):
        """``total`` counting the pending requests ``rooms`` fit.

        Compared as the snapshot's priority says.
        """
        return dataclasses.replace(total,
                                   room=fits_pending(self.pending, rooms),
                                   required_first=self.required_first)

    def _set(self, name, placed, host_view):
        old = self.views.get(name)
        if old is not None:
            self.total -= old.score
            self.rooms.subtract(old.rooms)
        self.placed.update(placed)
        self.views[name] = host_view
        self.total += host_view.score
        self.rooms.update(host_view.rooms)
        self.version[name] += 1

    def leave(self, uuid):
        """``(placed, view)`` of its host once ``uuid`` has left it."""
        name = self.host_of[uuid]
        staying = [s for u, s in self.members[name].items() if u != uuid]
        placed = settle(self.hosts[name], staying, self.placed)
        return placed, view(self.hosts[name], staying, placed, self.origin)

    def arrive(self, uuid, destination):
        """``(placed, view)`` of ``destination`` once ``uuid`` arrived."""
        host = self.hosts[destination]
        servers = list(self.members[destination].values())
        servers.append(self.servers[uuid])
        placed = settle(host, servers, self.placed, fresh=(uuid,))
        return placed, view(host, servers, placed, self.origin)

    def trial(self, uuid, destination, left=None, arrived=None):
        """The :class:`Trial` of moving ``uuid`` to ``destination``.

        ``left`` and ``arrived``: :meth:`leave`'s and :meth:`arrive`'s
        answers when the caller holds them (each side depends only on its
        own host).
        """
        source = self.host_of[uuid]
        src_placed, src_view = left or self.leave(uuid)
        dst_placed, dst_view = arrived or self.arrive(uuid, destination)
        old_src, old_dst = self.views[source], self.views[destination]
        rooms = self.rooms.copy()
        rooms.subtract(old_src.rooms + old_dst.rooms)
        rooms.update(src_view.rooms + dst_view.rooms)
        score = self.with_room(self.total - old_src.score - old_dst.score
                               + src_view.score + dst_view.score, rooms)
        before = {**old_src.status, **old_dst.status}
        after = {**src_view.status, **dst_view.status}
        domain = dst_placed[uuid]
        keeps = (domain is not None
                 and filter_admits(old_dst, self.servers[uuid])
                 and self.servers[uuid].vcpus <= dst_view.domains[domain][3]
                 and not worse(before, after))
        return Trial(uuid, source, destination, domain, score, keeps,
                     keeps and score > self.score,
                     (src_placed, dst_placed), (src_view, dst_view))

    def commit(self, trial):
        """Do ``trial``'s move; returns what :meth:`undo` needs."""
        kept = (trial, self.score,
                {uuid: self.placed.get(uuid)
                 for placed in trial.placed for uuid in placed},
                self.views[trial.source], self.views[trial.destination])
        server = self.members[trial.source].pop(trial.server)
        self.members[trial.destination][trial.server] = server
        self.host_of[trial.server] = trial.destination
        self._set(trial.source, trial.placed[0], trial.views[0])
        self._set(trial.destination, trial.placed[1], trial.views[1])
        self.score = trial.score
        return kept

    def undo(self, kept):
        """Take back the last :meth:`commit` (``kept``: its answer)."""
        trial, score, placed, source_view, destination_view = kept
        server = self.members[trial.destination].pop(trial.server)
        self.members[trial.source][trial.server] = server
        self.host_of[trial.server] = trial.source
        self._set(trial.source, {}, source_view)
        self._set(trial.destination, {}, destination_view)
        self.placed.update(placed)
        self.score = score
