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
   with the fewest memory-bound instances.
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
import hashlib
import typing as ty


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

    def fits(self, vcpus):
        """False only when the domain is known to lack room for ``vcpus``."""
        return (self.vcpus_total is None
                or self.vcpus_used + vcpus <= self.vcpus_total)


def tie_break(seed, provider):
    """A stable pseudo-random rank of ``provider`` for request ``seed``.

    Stable across processes (unlike ``hash()``), different per instance.
    """
    digest = hashlib.blake2b(('%s/%s' % (seed, provider)).encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, 'big')


def order_domains(loads, vcpus, memory_bound, seed):
    """Provider uuids of ``loads``, the domain to claim first.

    :param loads: the :class:`DomainLoad` of each candidate domain.
    :param vcpus: the instance's vCPUs.
    :param memory_bound: True for requests ordered by rule 1 (memory-bound
        or ``auto`` wanting Clean), False for best fit (rule 2).
    :param seed: the instance uuid (tie-break, rule 4).
    """
    key = _memory_key if memory_bound else _fit_key
    return [load.provider for load in
            sorted(loads, key=lambda load: key(load, vcpus, seed))]


def _recency(load):
    return float('-inf') if load.last_claim is None else load.last_claim


def _memory_key(load, vcpus, seed):
    return (not load.fits(vcpus), load.claimed_now, load.memory_bound,
            _recency(load), tie_break(seed, load.provider))


def _fit_key(load, vcpus, seed):
    fits = load.fits(vcpus)
    empty = load.memory_bound == 0
    if load.vcpus_total is None:
        # Unknown capacity: least used first (spread).
        fullness = load.vcpus_used
    else:
        # Best fit: least room left after placing the instance first.
        fullness = load.vcpus_total - load.vcpus_used - vcpus
    return (not fits, empty, fullness, _recency(load),
            tie_break(seed, load.provider))
