"""The scheduler's side of the ``cacheaware.host.state`` payload.

The wire format (dataclasses, versions, ``to_payload``, ``from_payload``)
is :mod:`nova_cacheaware.contracts.host_state`; import its names from
there. This module adds what only nova-scheduler computes from a
received state: the pCPU headroom of its ``vcpu_affinity`` and the
weigher's memo, made once per arrival (:meth:`HostCacheState.prepare`,
called by :class:`~nova_cacheaware.scheduler.state_cache.HostStateCache`).
"""

import dataclasses

from nova_cacheaware.cachedomain import choice as domain_choice
from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import headroom as pcpu_headroom


class Derived:
    """What the scheduler derives from one received state, kept with it.

    The pCPU headroom (``headroom``; :data:`UNSET` until computed), the
    pCPU availability scores by request shape (``scores``), the domain
    rows by CPU ratio (``rows``) and the contention scores by ``(ratio,
    vCPUs)`` (``contention``). A mutable holder the frozen state owns from
    its construction: the state's fields never change, these fill as
    requests ask and die with the state.
    """

    __slots__ = ('headroom', 'scores', 'rows', 'contention')

    def __init__(self):
        self.headroom = UNSET
        self.scores = {}
        self.rows = {}
        self.contention = {}


#: :attr:`Derived.headroom` before it is computed (None is a value: no
#: headroom).
UNSET = object()


@dataclasses.dataclass(frozen=True)
class HostCacheState(wire.HostCacheState):
    """A host's live state with the values the scheduler derives from it.

    The listener parses payloads straight into this class
    (:func:`from_payload`); :attr:`derived` holds the memos.
    """

    derived: Derived = dataclasses.field(default_factory=Derived, init=False,
                                         repr=False, compare=False)

    @property
    def pcpu_headroom(self):
        """:class:`~.pcpu_headroom.Headroom` of ``vcpu_affinity``, or None.

        From the agent's ``pcpu_levels`` (payload 2.0) where they came,
        else solved here from ``vcpu_affinity`` (1.x). None without
        either, with no pCPU, or when the estimate refuses the affinities
        (the weigher is then neutral). Computed once per state.
        """
        derived = self.derived
        if derived.headroom is UNSET:
            derived.headroom = self._headroom()
        return derived.headroom

    def _headroom(self):
        if self.pcpu_levels is not None:
            return pcpu_headroom.Headroom.of_levels(
                self.pcpu_levels.pcpus, self.pcpu_levels.levels)
        if self.vcpu_affinity is None:
            return None
        try:
            return pcpu_headroom.Headroom.of(self.vcpu_affinity)
        except exception.InvalidInput:
            return None

    @property
    def pcpu_scores(self):
        """The pCPU availability scores by request shape (its memo)."""
        return self.derived.scores

    def domain_rows(self, cpu_ratio):
        """The domain rows at ``cpu_ratio``, made once per state and ratio.

        :meth:`~nova_cacheaware.contracts.host_state.HostCacheState.
        domain_rows`.
        """
        rows = self.derived.rows.get(cpu_ratio)
        if rows is None:
            rows = self.derived.rows[cpu_ratio] = super().domain_rows(
                cpu_ratio)
        return rows

    def prepare(self, previous=None):
        """Compute the derived values now (on arrival, not per request).

        ``previous`` is the state this one replaces: when the VMs'
        affinities did not change (most agent periods), its pCPU headroom
        and scores are still exact and are kept instead of recomputed.
        """
        if previous is not None and (
                (previous.pcpu_levels is not None
                 and previous.pcpu_levels == self.pcpu_levels)
                or (previous.vcpu_affinity is not None
                    and previous.vcpu_affinity == self.vcpu_affinity)):
            self.derived.headroom = previous.pcpu_headroom
            self.derived.scores = previous.pcpu_scores
        for name in ('empty_domains', 'memory_bound_vms', 'storming_vms',
                     'busy_providers', 'domain_providers', 'pcpu_headroom',
                     'instance_uuids', 'required_domains'):
            getattr(self, name)
        if previous is not None:
            # The rows and scores the requests asked of the previous state
            # (a host's ratio and the cloud's flavor sizes rarely change):
            # made now, so the first request after this state's arrival
            # finds them like every later one.
            for ratio in list(previous.derived.rows):
                self.domain_rows(ratio)
            for ratio, vcpus, best_fit in list(
                    previous.derived.contention)[-SCORE_SHAPES:]:
                contention(self, vcpus, ratio, best_fit)
            self._score_shapes(list(previous.pcpu_scores)[-SCORE_SHAPES:])
        return self

    def _score_shapes(self, shapes):
        # pCPU availability of each (vCPUs, cap) shape not yet scored.
        for vcpus, cap in shapes:
            try:
                self.pcpu_score(vcpus, cap)
            except exception.InvalidInput:
                pass

    def pcpu_score(self, vcpus, cap=None):
        """The pCPU availability raw weight of a ``vcpus``-vCPU instance.

        ``2 * available / vcpus - 1`` in ``[-1, 1]``, ``available`` from
        :attr:`pcpu_headroom`; None without one. Memoised in
        :attr:`pcpu_scores` (the oldest of :data:`SCORES_PER_STATE`
        shapes dropped).
        """
        scores = self.pcpu_scores
        key = (vcpus, cap)
        value = scores.get(key)
        if value is None:
            headroom = self.pcpu_headroom
            if headroom is None:
                return None
            available = headroom.available_pcpus(vcpus, cap)
            value = 2.0 * min(1.0, available / vcpus) - 1.0
            if len(scores) >= SCORES_PER_STATE:
                try:
                    # Oldest first (insertion order); another thread may
                    # have dropped it already.
                    del scores[next(iter(scores))]
                except (KeyError, StopIteration, RuntimeError):
                    pass
            scores[key] = value
        return value


#: pCPU scores (request shapes) memoised per state, at most: a few
#: flavors make most requests.
SCORES_PER_STATE = 32
#: Contention scores carried over to a host's next state, at most.
SCORE_SHAPES = 8


def contention(state, vcpus, cpu_ratio, best_fit=False):
    """The cache contention raw score of ``state``, memoised on it.

    :func:`~nova_cacheaware.cachedomain.choice.contention_score` of the
    state's domain rows at ``cpu_ratio`` for a ``vcpus``-vCPU instance
    (``best_fit``: a ``cache_clean=required`` one), computed once per
    scheduler state, ratio, vCPUs and kind.
    """
    if not isinstance(state, HostCacheState):
        # A contract state (the simulators, the tests): nowhere to keep it.
        return domain_choice.contention_score(state.domain_rows(cpu_ratio),
                                              vcpus, best_fit)
    # No try/except KeyError: the first request after every refresh
    # misses, and a raised exception costs more than the lookups.
    memo = state.derived.contention
    key = (cpu_ratio, vcpus, best_fit)
    value = memo.get(key)
    if value is None:
        value = memo[key] = domain_choice.contention_score(
            state.domain_rows(cpu_ratio), vcpus, best_fit)
    return value


def for_scheduler(state):
    """``state`` as a scheduler :class:`HostCacheState` (same fields).

    States parsed by :func:`from_payload` already are; a contract state
    built elsewhere (the tests, the benchmarks) is copied once.
    """
    if isinstance(state, HostCacheState):
        return state
    return HostCacheState(**{f.name: getattr(state, f.name)
                             for f in dataclasses.fields(state)})


def from_payload(payload):
    """A state payload of any major this scheduler reads, for us.

    :func:`~nova_cacheaware.contracts.state_wire.parse_state`, built as
    this module's :class:`HostCacheState` (no copy).
    """
    return state_wire.parse_state(payload, HostCacheState)
