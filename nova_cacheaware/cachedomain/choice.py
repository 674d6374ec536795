"""Which cache domain of a host an All-share instance should get.

Placement returns one allocation candidate per (host, cache domain) with
room; Nova claims the *first* candidate of the host it picks. This module
decides that order. Pure: the scheduler adapter
(:mod:`nova_cacheaware.scheduler.domain_order`) builds the
:class:`DomainLoad` values from the freshest knowledge it has (the agent's
live state plus this scheduler process's own claims since) and reorders the
candidates with :func:`order_domains`.

The policy, in order (documented in ``doc/source/admin/scheduler.rst``):

1. **Memory-bound and ``auto`` requests** (that want Clean, i.e.
   ``cache_clean`` is not ``off``): a domain not yet given to an earlier
   instance of the same request (a multi-create) first - those claims are
   certain, and Placement's answer predates them - then an Empty domain
   (no memory-bound instance) whenever the host has one, else the domain
   with the fewest memory-bound instances. A domain holding a
   ``cache_clean=required`` instance comes after every other domain with
   room: another memory-bound instance there would take that instance's
   guaranteed Clean domain from it (the scheduler's filter keeps such
   requests off a host whose only room is there). Where the one ordering
   is the only one deciding (``best_fit``: the agent choosing on its host,
   and the scheduler predicting that choice), the tightest of equally
   clean domains comes first - the one with the fewest vCPUs left after
   the instance - so that whole Empty domains stay for the larger
   ``cache_clean=required`` requests to come.
2. **``cpu``/``io`` requests** (and ``cache_clean=off``): best fit - the
   fullest domain that still fits the instance, taking domains that already
   hold a memory-bound instance before Empty ones, so Empty domains stay
   free for memory-bound instances. Where a domain's capacity is unknown
   (no live state), fullness cannot be judged and the least-used domain
   comes first instead (spreading is safe when capacity is unknown; packing
   blind would send the next claim into a full domain).
3. Domains known to be too small for the instance go last (never dropped:
   Placement's answer, not ours, says what has room).
4. Among otherwise equal domains, the one this scheduler claimed least
   recently (or never) comes first: a claim made a moment ago - by an
   earlier instance of the same multi-create - is certain, one made
   minutes ago may be gone (the server deleted) without the scheduler
   knowing.
5. **Remaining ties** are broken by a stable hash of (instance, provider),
   so that concurrent requests - in this process or in other scheduler
   workers, which share no memory - spread over equally good domains
   instead of all claiming the same one.
"""

import dataclasses
import functools
import hashlib
import typing as ty


_MASK = (1 << 64) - 1
# An odd 64-bit constant (2**64 / golden ratio) for multiplicative mixing.
_GOLDEN = 0x9E3779B97F4A7C15
_NEVER = float('-inf')
# Sorts a domain of unknown capacity after every known one.
_UNKNOWN_ROOM = float('inf')


@dataclasses.dataclass(frozen=True)
class DomainLoad:
    """What is known of one cache-domain provider of a host.

    ``vcpus_total`` is None when the domain's capacity is unknown;
    ``vcpus_used`` and ``memory_bound`` count what is known to be there
    (0 when nothing is known); ``last_claim`` is when this scheduler last
    claimed the domain (any monotonic clock; None: never).
    """

    provider: str
    memory_bound: int = 0
    vcpus_used: int = 0
    vcpus_total: ty.Optional[int] = None
    last_claim: ty.Optional[float] = None
    claimed_now: int = 0
    #: True when a ``cache_clean=required`` instance is known to be there.
    holds_required: bool = False

    def fits(self, vcpus):
        """False only when the domain is known to lack room for ``vcpus``."""
        return (self.vcpus_total is None
                or self.vcpus_used + vcpus <= self.vcpus_total)


@functools.lru_cache(maxsize=1 << 18)
def _hash64(text):
    return int.from_bytes(hashlib.blake2b(text.encode(),
                                          digest_size=8).digest(), 'big')


def tie_break(seed, provider):
    """A stable pseudo-random rank of ``provider`` for request ``seed``.

    Stable across processes (unlike ``hash()``), different per instance.
    The per-string hashes are memoised: a scheduler ranks the same
    providers for every request, so a request costs one hash of its seed
    and a multiplication per domain.
    """
    return ((_hash64(str(seed)) ^ _hash64(provider)) * _GOLDEN) & _MASK


def order_domains(loads, vcpus, memory_bound, seed, best_fit=False):
    """Provider uuids of ``loads``, the domain to claim first.

    :param loads: the :class:`DomainLoad` of each candidate domain.
    :param vcpus: the instance's vCPUs.
    :param memory_bound: True for requests ordered by rule 1 (memory-bound
        or ``auto`` wanting Clean), False for best fit (rule 2).
    :param seed: the instance uuid (tie-break, rule 5).
    :param best_fit: rule 1 takes the tightest of equally clean domains
        first. Only for a chooser no other process races with (the agent
        on its host): schedulers that order the same domains concurrently
        would all take the tightest one, and rules 4-5 exist to spread
        them.
    """
    # Runs for every host of every All-share request: one pass building
    # plain tuples (no per-domain function calls beyond the memoised hash).
    seed_hash = _hash64(str(seed))
    keyed = []
    for load in loads:
        total = load.vcpus_total
        used = load.vcpus_used
        too_small = total is not None and used + vcpus > total
        recency = _NEVER if load.last_claim is None else load.last_claim
        tie = ((seed_hash ^ _hash64(load.provider)) * _GOLDEN) & _MASK
        if memory_bound:
            spare = (0 if not best_fit else
                     _UNKNOWN_ROOM if total is None else total - used - vcpus)
            key = (too_small, load.claimed_now, load.holds_required,
                   load.memory_bound, spare, recency, tie)
        else:
            # Best fit: least room left after placing the instance first;
            # unknown capacity: least used first (spread).
            fullness = used if total is None else total - used - vcpus
            key = (too_small, load.memory_bound == 0, fullness, recency,
                   tie)
        keyed.append((key, load.provider))
    keyed.sort()
    return [provider for _, provider in keyed]


def contention_score(rows, vcpus, best_fit=False):
    """The raw contention weight of a host in ``[-1, 1]`` (the weigher's).

    :param rows: the host's domains as ``(domain, memory-bound instances,
        Clean holders, vCPUs used, capacity or None)``, the live state
        plus the claims the scheduler knows the state lacks.
    :param vcpus: the new instance's vCPUs.
    :param best_fit: score the tightest Clean place instead (below), for
        ``cache_clean=required`` requests.

    A Clean place is a domain holding no memory-bound instance *with room
    for the instance* (unknown capacity counts as room): a domain that
    cpu-bound instances filled is no place for a memory-bound one. With
    ``fine = clean_places / domains - min(1, memory_bound / domains)``
    (in ``[-1, 1]``) the weight is ``0.75 + fine / 4`` on a host with a
    Clean place (``[0.5, 1]``) and ``-0.75 + fine / 4`` on a host without
    one (``[-1, -0.5]``): any host with a Clean place outweighs every host
    without one by at least half the weigher's span, whatever the counts,
    so that a memory-bound ``preferred`` instance, which holds no Placement
    slot, goes where it can be alone unless Nova's other weighers outvote
    the multiplier. 0 (neutral, between the two bands) for a host without
    domains.

    With ``best_fit`` the weight is that of the host's tightest Clean
    place: ``2 * vcpus / room - 1`` where ``room`` is the place's vCPUs
    left before the instance (1 where the instance fills it exactly, near
    -1 in a large Empty domain; 0 for a place of unknown capacity), -1 on
    a host without a Clean place. A ``required`` request needs a Clean
    place (the filter removes every host without one), so the whole span
    ranks how tightly it fits: a 1-vCPU request goes to a domain
    ``cpu``-bound instances have three quarters filled rather than into a
    whole Empty domain that a 4-vCPU ``required`` request would need.
    """
    if not rows:
        return 0.0
    if best_fit:
        return _tightest_place(rows, vcpus)
    # Runs once per host state and flavor size on every host: one pass,
    # no calls.
    places = memory = 0
    for row in rows:
        bound = row[1]
        if bound:
            memory += bound
        elif row[4] is None or row[3] + vcpus <= row[4]:
            places += 1
    count = len(rows)
    fine = places / count - min(1.0, memory / count)
    return (0.75 if places else -0.75) + fine / 4


def _tightest_place(rows, vcpus):
    best = -1.0
    for row in rows:
        if row[1]:
            continue
        capacity = row[4]
        if capacity is None:
            best = max(best, 0.0)
            continue
        room = capacity - row[3]
        if vcpus <= room:
            best = max(best, 2.0 * vcpus / room - 1.0)
    return best
