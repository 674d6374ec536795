"""Which live migrations restore the most Clean and All-share per migration.

Placement-time decisions go stale: a server classified memory-bound after
boot shares a cache (Dirty) while other hosts have Empty domains, a race
leaves a server on Nova's CPUs (not All-share), boots and deletes
fragment the domains a ``cache_clean=required`` request needs, a storming
server stays on a crowded host. :func:`plan_moves` reads a region
snapshot (:mod:`nova_cacheaware.contracts.rebalance_snapshot`) and
proposes an ordered list of live migrations within a budget. Pure: no
I/O, no clock; the later Watcher strategy turns the plan into actions.

The objective is the region's :class:`~.rebalance_model.Score`, compared
by :meth:`~.rebalance_model.Score.key` as the snapshot's ``priority``
says. ``required`` (the default): (a) refused ``required`` requests that
would fit (a whole domain with room and no Clean-wanting server each,
where Placement's ``max_unit`` admits the request), then (b) Clean
memory-bound servers - a room is never given to a running server while
a request waits for it. ``clean``: (a) Clean servers plus those requests
(the Clean server each becomes when booted again), then (b) the
requests. Then, in both, (c) All-share servers, then (d) storming
servers relieved (moved to a host whose pCPUs hold all its guests'
vCPUs). The plan, in steps:

1. **Settle first.** Every host's agent places what it would place with
   no migration at all (:class:`~.rebalance_model.Region`): no
   migration is spent on what an agent does alone.
2. **Movable servers.** Only servers of ``cacheaware:`` flavors, not
   opted out by the operator, and not in an affinity (or soft-affinity)
   group: moving one member of such a group away from the others breaks
   it, and moving them all at once is not done in this version.
3. **Candidates.** Among them, the servers a move may help: memory-bound
   ones not Clean; ones not All-share; storming ones not relieved; every
   one on a host where a server waits on Nova's CPUs (its leaving frees
   room the agent gives that server); and while refused ``required``
   requests do not all fit, those whose leaving leaves their domain with
   no Clean-wanting server and room for the smallest such request.
4. **Destinations.** Every other host Nova's scheduler lets the server
   migrate to (:func:`~.rebalance_model.filter_admits`): a domain with
   room for it, where Placement lets one server of its size land (its
   ``max_unit``: the compute node's ``VCPU`` one, the domain provider's
   own, :func:`~.rebalance_model.largest_server`), that the
   CacheDomainFilter does not close to it (a domain holding a server
   whose flavor asks ``cache_clean=required`` is closed to every request
   whose flavor wants Clean, ``auto`` ones included, whatever their
   class); without another member of its anti-affinity (or
   soft-anti-affinity) group; ranked: for a server the agent counts
   against Clean, a Clean place (a domain with room and no server the
   agent counts so) first, then a host whose domains with room all hold
   two or more such servers (the agent seats it in one already Dirty:
   it spoils nobody, and the other of its own Dirty pair is Clean), then
   the rest; for a server it does not count so, a domain with room
   beside a Clean-wanting server (the agent puts it there, keeping
   Empty domains whole); then hosts whose pCPUs still hold all their
   guests' vCPUs after the move, then by name. The first
   :data:`DESTINATIONS_PER_SERVER` are predicted exactly.
5. **Exact prediction.** The destination's agent places the server like
   a new instance and the source's agent gives freed room to servers
   waiting on Nova's CPUs, both with the agent's own choice
   (:func:`~nova_cacheaware.cachedomain.assignment.assign_domains`),
   counting each server as the agent does (its flavor wants Clean and
   the classifier has not found it CPU-bound; ``required`` by its
   flavor): the plan's ``domain`` is what that agent will do.
6. **Rules.** A move is a candidate only if Nova's filter admits it at
   the destination (step 4), the server gets a domain
   there (the destination has the room, counting earlier moves of the
   plan) that Placement lets it have (a domain whose ``max_unit`` is
   smaller is refused before any agent sees it), no server's Clean,
   All-share or pCPU status turns from true to false (a Clean All-share
   server is never moved into a worse place; the servers staying on the
   source and those on the destination are never worse off), and the
   score strictly rises: every move must help, but the first of a
   chain (step 9).
7. **Best move.** The highest score after the move; among moves of an
   equal score, in this order (:func:`tie_break`):

   a. a server whose flavor does not say ``cache_clean=required``: a
      ``required`` server's guarantee rides on the live migration (the
      destination must still be Clean when it lands), so it moves only
      when no other server's move reaches the same score;
   b. fewer vCPUs (a cheaper live migration);
   c. fewer other servers re-placed by the agents (the waiting server
      moves rather than the one that makes room for it);
   d. the smaller server uuid, then the destination ranked first in
      step 4.

   Candidates are tried from the highest bound on what a move of theirs
   can reach down, stopping where none can beat the best found: the
   answer of trying them all, at a fraction of the cost.
8. **Repeat** until the budget is spent; when no move helps, step 9.
9. **Chains of two.** With two migrations of the budget left, a move
   that keeps the score and the rules may make a place the next move
   uses: a server leaving a domain that then has no Clean-wanting server
   and room for the smallest Dirty memory-bound server (a Clean place),
   or leaving it one server away from a room for the smallest refused
   request that no room holds (a defragmentation of two moves), when a
   domain elsewhere may take the server (and that other one) without a
   room lost or itself made worse - a server the agent counts against
   Clean only where a Clean place is free for it, and after every
   other server (it takes a place to make one). With ``priority``
   ``required``, while refused requests wait, chains make rooms only: a
   Clean place is a domain no Clean-wanting server holds, a room the
   next deletes may make. Such
   first moves, each to its best ranked destination that keeps the
   score, are tried in step 7's order (servers a and b, then uuid; the
   first :data:`CHAIN_CANDIDATES` servers, at most :data:`CHAINS_TRIED`
   moves); the first after which a move helps is kept with that move
   (its ``reason`` is ``place``).
   When none leads to one, the plan ends (an empty plan when nothing
   can improve).

Greedy, a move or a chain of two at a time: a chain that needs three
moves is not found; see the evaluation against the exhaustive optimum in
``doc/source/user/rebalance.rst``.
"""

from nova_cacheaware.rebalance import model as rebalance_model

#: Destinations predicted exactly per candidate server and step (step 4):
#: bounds a step's cost on large regions; every host of a small one.
DESTINATIONS_PER_SERVER = 8
#: Servers a chain may start with whose move is predicted per step, and
#: first moves tried with the move they make possible (step 9).
CHAIN_CANDIDATES = 16
CHAINS_TRIED = 4

_AFFINITY = ('affinity', 'soft-affinity')
_ANTI_AFFINITY = ('anti-affinity', 'soft-anti-affinity')


def movable(server, snapshot):
    """True when ``server`` may be live-migrated at all (step 2)."""
    return (server.cache_aware and not server.opt_out
            and snapshot.group_policy(server.group) not in _AFFINITY)


def plan_moves(snapshot, budget):
    """The :class:`~.rebalance_model.Plan` of at most ``budget`` moves."""
    region = rebalance_model.Region(snapshot)
    before = region.score
    memo = _Memo(region)
    moves = []
    while len(moves) < budget:
        best = _best_trial(region, snapshot, memo)
        if best is not None:
            moves.append(_commit(region, best))
            continue
        if len(moves) + 2 > budget:
            break
        chain = _best_chain(region, snapshot, memo)
        if chain is None:
            break
        first, second = chain
        moves.append(_commit(region, first, 'place'))
        moves.append(_commit(region, second))
    return rebalance_model.Plan(tuple(moves), before, region.score)


def _commit(region, trial, reason=None):
    """Do ``trial`` on ``region``; its :class:`~.rebalance_model.Move`."""
    score_before = region.score
    region.commit(trial)
    domain = next(d for d in region.hosts[trial.destination].domains
                  if d.id == trial.domain)
    return rebalance_model.Move(
        server=trial.server, source=trial.source,
        destination=trial.destination, domain=trial.domain,
        numa_node=domain.numa_node,
        vcpus=region.servers[trial.server].vcpus, score=trial.score,
        reason=reason or trial.score.first_gain(score_before))


class _Memo:
    """Each side of a trial, kept while its host is unchanged."""

    def __init__(self, region):
        self.region = region
        self.left = {}
        self.arrived = {}

    def leave(self, uuid):
        source = self.region.host_of[uuid]
        key = (uuid, source, self.region.version[source])
        if key not in self.left:
            self.left[key] = self.region.leave(uuid)
        return self.left[key]

    def arrive(self, uuid, destination):
        key = (uuid, destination, self.region.version[destination])
        if key not in self.arrived:
            self.arrived[key] = self.region.arrive(uuid, destination)
        return self.arrived[key]


def _best_trial(region, snapshot, memo, touching=None):
    """The helping trial of step 7, or None.

    Candidates are tried from the highest :func:`bound` down, and stop
    where no later one can beat (or tie with a smaller uuid) the best
    found: the answer is the one trying them all in uuid order gives.
    ``touching``: only moves from or to these hosts (after a chain's
    first move where no move helped, those its two hosts made possible).
    """
    best = best_key = None
    candidates = _candidates(region, snapshot)
    ranked = sorted(((bound(region, uuid), uuid) for uuid in candidates),
                    key=lambda item: (_descending(item[0]), item[1]))
    for top, uuid in ranked:
        if best_key is not None and (top < best_key or (
                top == best_key and uuid > best.server)):
            if top < best_key:
                break
            continue
        among = (None if touching is None or region.host_of[uuid] in touching
                 else touching)
        destinations = None
        if among is not None:
            # At most two hosts: cheaper than predicting its leaving.
            destinations = _destinations(region, snapshot, uuid, among)
            if not destinations:
                continue
        left = memo.leave(uuid)
        top = _bound_after_leaving(region, uuid, left[1])
        if best_key is not None and (top < best_key or (
                top == best_key and uuid > best.server)):
            continue
        server_key = tie_break(region.servers[uuid])
        if destinations is None:
            destinations = _destinations(region, snapshot, uuid)
        for destination in destinations:
            trial = region.trial(uuid, destination, left,
                                 memo.arrive(uuid, destination))
            if not trial.helps:
                continue
            disturbed = _disturbed(region, trial)
            key = (trial.score,) + server_key + (-disturbed,)
            # Destinations come in rank order: a later one replaces the
            # best only when strictly better, or as good with a smaller
            # uuid.
            if best_key is None or key > best_key or (
                    key == best_key and uuid < best.server):
                best, best_key = trial, key
            if key == top:
                break
    return best


def _best_chain(region, snapshot, memo):
    """Two moves where no single one helps (step 9), or None.

    The first makes a place (:func:`_preparing`) and keeps the score and
    the rules, to the server's best ranked destination that does; the
    second is the best helping move once the first is done
    (:func:`_best_trial`), among the moves from or to the two hosts the
    first changed (no other became possible). The
    first :data:`CHAIN_CANDIDATES` servers are predicted, at most
    :data:`CHAINS_TRIED` first moves tried; the region is left as it was
    when none leads to a helping move.
    """
    tried = 0
    for uuid in _preparing(region, snapshot)[:CHAIN_CANDIDATES]:
        first = _keeping(region, snapshot, memo, uuid)
        if first is None:
            continue
        kept = region.commit(first)
        second = _best_trial(
            region, snapshot, memo,
            touching=frozenset((first.source, first.destination)))
        region.undo(kept)
        if second is not None:
            return first, second
        tried += 1
        if tried == CHAINS_TRIED:
            break
    return None


def _preparing(region, snapshot):
    """The uuids of the servers a chain may start with, best first.

    Servers whose leaving brings a domain one move from a place: for a
    Dirty memory-bound server (movable) on another host, leaving it a
    Clean place for the smallest such server (not while refused requests
    wait, with ``priority`` ``required``); for refused ``required``
    requests that do not all fit, leaving it one server away from a room
    for the smallest that no room holds. Only servers (the second one
    too) some domain elsewhere may take without a room lost or themselves
    made worse: one with room beside a Clean-wanting server for a server
    the agent does not count against Clean, or a room while no request
    waits for it. Servers the agent does not count against Clean first,
    then by :func:`tie_break`, then uuid.
    """
    # The place a chain makes is a domain no Clean-wanting server holds:
    # a room to be. While refused requests wait, rooms first.
    asking = ({} if region.pending and region.required_first
              else _dirty_vcpus(region, snapshot))
    dirty = min(asking.values()) if asking else None
    request = _smallest_unmet(region)
    unmet = request is not None
    if dirty is None and request is None:
        return []
    beside = max((min(free, largest)
                  for host_view in region.views.values()
                  for free, holders, _memory, largest
                  in host_view.domains.values() if holders), default=0)
    spare = 0 if unmet else max(
        (v for v, n in region.rooms.items() if n > 0), default=0)

    def may_leave(server):
        # A server the agent counts against Clean keeps it only in a Clean
        # place (a room, free while no request waits); another goes beside
        # a Clean-wanting server too.
        return movable(server, snapshot) and server.vcpus <= (
            spare if server.agent_clean_wanted else max(beside, spare))

    # The two hosts of the smallest Dirty servers give, for any host, the
    # smallest Dirty server of another host (none migrates to its own).
    two = sorted((v, h) for h, v in asking.items())[:2] + [(None, None)]
    found = []
    for name, members in region.members.items():
        host_view = region.views[name]
        elsewhere = two[1][0] if two[0][1] == name else two[0][0]
        occupants = {}
        for uuid, server in members.items():
            domain = region.placed[uuid]
            if domain is not None:
                occupants.setdefault(domain, []).append(server)
        for domain, servers in occupants.items():
            for server in servers:
                if may_leave(server) and (
                        _prepares(host_view, domain, server, (), elsewhere)
                        or any(_prepares(host_view, domain, server,
                                         (other,), request)
                               for other in servers
                               if other is not server
                               and may_leave(other))):
                    # One the agent counts against Clean takes a room to
                    # make one: only a smaller room for a larger one.
                    found.append(((server.agent_clean_wanted,)
                                  + tuple(-n for n in tie_break(server)),
                                  server.uuid))
    found.sort()
    return [uuid for _key, uuid in found]


def _dirty_vcpus(region, snapshot):
    """``{host: vCPUs of its smallest movable Dirty memory-bound server}``."""
    asking = {}
    for name, members in region.members.items():
        for uuid, server in members.items():
            if (server.memory_bound and movable(server, snapshot)
                    and not region.views[name].status[uuid][0]
                    and region.placed[uuid] is not None):
                asking[name] = min(server.vcpus,
                                   asking.get(name, server.vcpus))
    return asking


def _prepares(host_view, domain, server, then, smallest):
    """True when ``server`` leaving, then ``then``, makes a needed place.

    The domain is no place for ``smallest`` vCPUs now (None: nothing
    asks) and becomes one once ``server`` and the servers of ``then``
    have left.
    """
    return (smallest is not None
            and not _room_once_left(host_view, domain, (), smallest)
            and _room_once_left(host_view, domain, (server,) + tuple(then),
                                smallest))


def _keeping(region, snapshot, memo, uuid):
    """``uuid``'s move to its best ranked destination keeping the score."""
    left = memo.leave(uuid)
    for destination in _destinations(region, snapshot, uuid):
        trial = region.trial(uuid, destination, left,
                             memo.arrive(uuid, destination))
        if trial.keeps_rules and not trial.score < region.score:
            return trial
    return None


def tie_break(server):
    """Step 7's order of ``server``'s moves among equal scores, higher first.

    ``(not required, -vCPUs)``: a server whose flavor does not say
    ``cache_clean=required`` before one that does, then the smaller one.
    """
    return (server.cache_clean != 'required', -server.vcpus)


def _descending(key):
    score, *rest = key
    return (tuple(-n for n in score.key()),) + tuple(-n for n in rest)


def _bound_after_leaving(region, uuid, source_view):
    """:func:`bound` once the source's side is known exactly.

    The region without the server, plus the most it may be at any
    destination (Clean, All-share, relieved); rooms only shrink there.
    """
    server = region.servers[uuid]
    old = region.views[region.host_of[uuid]]
    rooms = region.rooms.copy()
    rooms.subtract(old.rooms)
    rooms.update(source_view.rooms)
    score = (region.total - old.score + source_view.score
             + rebalance_model.Score(int(server.memory_bound),
                                     int(server.cache_aware), 0,
                                     int(server.storm)))
    return (region.with_room(score, rooms),) + tie_break(server) + (0,)


def bound(region, uuid):
    """The best key (step 7) any move of ``uuid`` can reach, or better.

    Each part of the score bounded on its own: what the server itself
    may gain, what its leaving may give the servers staying (the other
    of a Dirty pair, those waiting on Nova's CPUs that fit together in
    the room it frees - the only room that grows -, storms relieved once
    the host is no longer crowded) and one more room; an arrival never
    makes a server already on the destination better off.
    """
    server = region.servers[uuid]
    name = region.host_of[uuid]
    host_view = region.views[name]
    clean, pinned, fine, _maybe = host_view.status[uuid]
    domain = region.placed[uuid]
    gain_clean = server.memory_bound and not clean
    room = waiting = 0
    if domain is not None:
        free, _holders, memory, _largest = host_view.domains[domain]
        gain_clean += server.memory_bound and memory == 2
        free += server.vcpus
        for vcpus in host_view.waiting:
            free -= vcpus
            if free < 0:
                break
            waiting += 1
        gain_clean += waiting
        room = (region.score.room < len(region.pending)
                and _room_once_left(host_view, domain, (server,),
                                    region.pending[0]))
    uncrowded = (host_view.vcpus > region.hosts[name].pcpus
                 >= host_view.vcpus - server.vcpus)
    gain = rebalance_model.Score(
        gain_clean, waiting + (server.cache_aware and not pinned),
        int(room), (server.storm and not fine)
        + (host_view.storms_away if uncrowded else 0))
    return (region.score + gain,) + tie_break(server) + (0,)


def _disturbed(region, trial):
    """How many other servers an agent re-places after ``trial``'s move."""
    return sum(region.placed[uuid] != domain
               for placed in trial.placed
               for uuid, domain in placed.items() if uuid != trial.server)


def _candidates(region, snapshot):
    """The uuids of step 3."""
    unmet = region.score.room < len(region.pending)
    smallest = region.pending[0] if region.pending else 0
    out = []
    for name, members in region.members.items():
        host_view = region.views[name]
        waiting = bool(host_view.waiting)
        for uuid, server in members.items():
            if not movable(server, snapshot):
                continue
            clean, pinned, fine, _maybe = host_view.status[uuid]
            domain = region.placed[uuid]
            if (waiting or not pinned or (server.memory_bound and not clean)
                    or (server.storm and not fine)
                    or (unmet and _room_once_left(host_view, domain,
                                                  (server,), smallest))):
                out.append(uuid)
    return out


def _smallest_unmet(region):
    """The vCPUs of the smallest refused request no room holds, or None.

    Rooms go to the requests smallest first
    (:func:`~.rebalance_model.fits_pending`), so those left are the
    largest: a room this large holds one more. (A smaller one may too,
    freeing a larger room a smaller request holds: a move's room counts
    any room for the smallest request.)
    """
    if region.score.room < len(region.pending):
        return region.pending[region.score.room]
    return None


def _room_once_left(host_view, domain, leaving, smallest):
    """True when ``domain`` is a room for ``smallest`` once ``leaving`` left.

    A room: no Clean-wanting server stays, and ``smallest`` vCPUs fit.
    """
    free, holders, _memory, largest = host_view.domains[domain]
    return (holders == sum(s.agent_clean_wanted for s in leaving)
            and min(free + sum(s.vcpus for s in leaving), largest)
            >= smallest)


def _destinations(region, snapshot, uuid, among=None):
    """The destination host names of step 4, best ranked first.

    ``among``: only these hosts (all of them that qualify).
    """
    server = region.servers[uuid]
    source = region.host_of[uuid]
    anti = snapshot.group_policy(server.group) in _ANTI_AFFINITY
    ranked = []
    views = (region.views.items() if among is None
             else ((name, region.views[name]) for name in sorted(among)))
    for name, host_view in views:
        if name == source or (anti and any(
                s.group == server.group
                for s in region.members[name].values())):
            continue
        # Nova's filter refuses the migration anywhere else.
        if not rebalance_model.filter_admits(host_view, server):
            continue
        # Only domains Placement lets it have (max_unit).
        fits = [holders for domain, (free, holders, _memory, largest)
                in host_view.domains.items()
                if min(free, largest) >= server.vcpus
                and not (server.agent_clean_wanted
                         and domain in host_view.required)]
        crowded = host_view.vcpus + server.vcpus > region.hosts[name].pcpus
        # Never empty: the filter admitted it to one of these domains.
        if server.agent_clean_wanted:
            # The agent seats it beside the fewest Clean-wanting servers:
            # alone (a Clean place), else in a domain already Dirty (it
            # spoils nobody) before beside one that is Clean.
            place = 0 if min(fits) == 0 else (1 if min(fits) > 1 else 2)
        else:
            place = 1 if max(fits) == 0 else 0  # only Empty domains to spoil
        ranked.append((place, crowded, name))
    ranked.sort()
    return [name for *_, name in ranked[:DESTINATIONS_PER_SERVER]]
