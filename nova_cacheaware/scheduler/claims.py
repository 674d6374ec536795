"""This scheduler process's own cache-domain claims since the live state.

The agents' live state arrives once per agent period; a burst (a
multi-create, a Heat stack) places several instances inside one period.
Without memory of its own claims the scheduler would hand every instance of
the burst the same "best" domain, and the second claim would fail in
Placement (HTTP 409) - for a multi-create on one host, NoValidHost for all.

Nova gives plugins no hook after a claim, but it does two observable
things: it claims the *first* allocation candidate of the chosen host, and
it then consumes the request on that host's ``HostState``
(``num_instances`` grows by one) - before the filters run for the next
instance of a multi-create, and before the next request in this process.
So :class:`ClaimLedger` remembers, per host, the domain it put first (a
*hand-out*) and the host's ``num_instances`` at that moment; when the host
is seen again with more instances, the hand-out was claimed.

A recorded claim counts until the agent's live state shows it (the
instance is listed on the host), until a state received ``settle`` seconds
after the claim still does not list it (the claim did not stick), or at
most ``memory`` seconds (hosts without an agent). The ledger only reorders
candidates, never removes one: a wrong guess costs a less good domain, not
a placement.

Claims made by other scheduler workers reach this ledger through the bus
(:mod:`nova_cacheaware.scheduler.claim_share`: each recorded claim is
handed to ``on_claim``, and the others' arrive through :meth:`ClaimLedger.
add`); without it they are unknown here until the live state shows them
(the hash tie-break spreads those). A host state refreshed from the
database between two visits may attribute another worker's instance to this
process's last hand-out (a conservative error; documented in
``doc/source/admin/scheduler.rst``).
"""

import dataclasses
import logging
import os
import threading
import time
import typing as ty

from nova_cacheaware.scheduler import metrics

LOG = logging.getLogger(__name__)

#: Claims remembered per host at most (oldest dropped first).
MAX_CLAIMS_PER_HOST = 256
#: Seconds a reservation (a pending claim) counts without being consumed:
#: Nova's claim of one candidate, retries and back-off included, takes
#: well under this; a reservation still pending then belongs to a request
#: that failed (NoValidHost) and must stop steering the others.
DEFAULT_PENDING_SECONDS = 10.0


@dataclasses.dataclass(frozen=True)
class Claim:
    """One domain claim (or hand-out) of this process.

    ``provider`` names the domain: its provider uuid in the domain model,
    its domain id in the host model (one cache provider per host; the
    agent chooses the domain). ``request`` identifies the scheduling
    request (all instances of a multi-create share it).
    ``clean_required``: the instance's flavor asks
    ``cache_clean=required`` (its domain is closed to other memory-bound
    instances). ``pending``: a reservation made when Nova read the
    candidate to claim (:mod:`.claim_time`), not yet seen consumed; it
    counts like a claim for ``pending`` seconds of the ledger at most.
    """

    provider: str
    instance: ty.Optional[str]
    vcpus: int
    memory_bound: bool
    at: float
    request: ty.Optional[int] = None
    clean_required: bool = False
    pending: bool = False


@dataclasses.dataclass(frozen=True)
class _HandOut:
    num_instances: int
    claim: Claim
    #: Computes ``claim.provider`` when it is needed (None: it is set).
    resolve: ty.Optional[ty.Callable[[], str]] = None

    def resolved(self):
        if self.resolve is None:
            return self.claim
        return dataclasses.replace(self.claim, provider=self.resolve())


class ClaimLedger:
    """Per-host domain claims of this process; thread-safe."""

    def __init__(self, memory, settle, clock=time.monotonic, on_claim=None,
                 pending=DEFAULT_PENDING_SECONDS):
        self._memory = float(memory)
        self._settle = float(settle)
        # A reservation never outlives a claim (memory 0: no memory).
        self._pending = min(float(pending), self._memory)
        self._clock = clock
        self._lock = threading.Lock()
        self._claims = {}
        self._handouts = {}
        #: Called as ``on_claim(host, claim)`` for each claim this process
        #: records (sharing it with the other workers); None: nobody.
        self.on_claim = on_claim
        #: True once Nova reported a consumed host (:meth:`record`, from
        #: :mod:`.consume_hook`): claims are then exact and the hand-out
        #: heuristic of :meth:`observe` is off.
        self.exact = False

    def now(self):
        """The ledger's clock (monotonic seconds)."""
        return self._clock()

    def observe(self, host, num_instances):
        """Record the last hand-out of ``host`` as claimed if it was.

        ``num_instances`` is the host's ``HostState.num_instances`` now.
        Does nothing once claims are exact (:attr:`exact`).
        """
        if self.exact or host not in self._handouts:
            # Most hosts of a request were handed nothing: no lock for
            # them (a dict lookup is atomic; the check is repeated below).
            return
        with self._lock:
            handout = self._handouts.get(host)
            if handout is None or num_instances <= handout.num_instances:
                return
            del self._handouts[host]
            claim = handout.resolved()
            self._append(host, claim)
        self._recorded(host, claim)

    def record(self, host, claim):
        """Record ``claim``: Nova consumed ``host`` for ``claim.instance``.

        The exact path (:mod:`.consume_hook`): from the first call on,
        :meth:`observe` no longer guesses claims from hand-outs.
        """
        with self._lock:
            self.exact = True
            handout = self._handouts.get(host)
            if handout is not None and handout.claim.instance == \
                    claim.instance:
                del self._handouts[host]
            self._drop_instance(claim.instance)
            self._append(host, claim)
        self._recorded(host, claim)

    def reserve(self, host, claim):
        """Count ``claim`` (``pending``) on ``host`` from now on.

        Made when Nova reads the candidate it is about to claim
        (:mod:`.claim_time`), so that a concurrent request of this process
        choosing its domain a moment later sees it. Replaces whatever the
        ledger held for the same instance: a reservation on another host
        means Nova's claim there failed and it moved on. Shared like a
        claim (``on_claim``); :meth:`record` replaces it when Nova
        consumes the host, and it stops counting after the ledger's
        ``pending`` seconds otherwise.
        """
        with self._lock:
            self._drop_instance(claim.instance)
            self._append(host, claim)
        self._recorded(host, claim)

    def _drop_instance(self, instance):
        # Under the lock. One instance is claimed on one host at a time.
        if instance is not None:
            self._drop_instances((instance,))

    def _drop_instances(self, instances):
        # Under the lock: the claims of ``instances``, on every host;
        # returns how many were dropped.
        dropped = 0
        for host, held in list(self._claims.items()):
            kept = [c for c in held if c.instance not in instances]
            if len(kept) == len(held):
                continue
            dropped += len(held) - len(kept)
            if kept:
                self._claims[host] = kept
            else:
                del self._claims[host]
        return dropped

    def _append(self, host, claim):
        claims = self._claims.setdefault(host, [])
        claims.append(claim)
        del claims[:-MAX_CLAIMS_PER_HOST]

    def _recorded(self, host, claim):
        # Outside the lock. In the host model the domain is the prediction
        # of the agent's choice: compare with the agent's log.
        LOG.debug('%s on host %s: instance %s, domain %s, '
                  '%d vCPUs%s', 'domain reserved' if claim.pending
                  else 'claim recorded', host, claim.instance,
                  claim.provider, claim.vcpus,
                  ', memory-bound' if claim.memory_bound else '')
        metrics.claimed(claim.pending)
        if self.on_claim is not None:
            self.on_claim(host, claim)

    def add(self, host, claim):
        """Count ``claim`` on ``host``, made by another scheduler worker.

        It counts like this process's own claims (``claim.at`` on this
        ledger's clock); a claim of the same instance, on this host or
        another, is replaced: a claim heard twice counts once, and a
        reservation followed by one on another host (the first claim
        failed) counts only there.
        """
        with self._lock:
            self._drop_instance(claim.instance)
            self._append(host, claim)

    def has_claims(self, host, num_instances):
        """:meth:`observe` ``host``, then True when it has claims here.

        A fast path for per-host callers: no lock unless a hand-out is
        seen claimed; False means :meth:`claims` would return none now.
        """
        handout = self._handouts.get(host)
        if handout is not None and num_instances > handout.num_instances:
            self.observe(host, num_instances)
        return host in self._claims

    def hand_out(self, host, num_instances, claim, resolve=None):
        """Remember that ``claim``'s domain is first for ``host`` now.

        ``resolve``: a pure function returning the claim's domain, called
        only if the hand-out is seen claimed (or asked for): Nova claims
        one of the hosts a request is handed out on, so most hand-outs are
        never resolved. ``claim.provider`` is then a placeholder.
        """
        with self._lock:
            self._handouts[host] = _HandOut(num_instances, claim, resolve)

    def handed_out(self, host):
        """The claim last handed out for ``host`` and not yet seen claimed.

        None when there is none (tests, debugging).
        """
        with self._lock:
            handout = self._handouts.get(host)
        return None if handout is None else handout.resolved()

    def claims(self, host, received=None, listed=frozenset(),
               elsewhere=None):
        """This process's claims on ``host`` that the live state lacks.

        :param received: when the host's fresh live state was received
            (this ledger's clock), or None without one.
        :param listed: instance uuids that state lists on the host.
        :param elsewhere: ``elsewhere(instance uuid)`` is True when another
            host's live state lists the instance: the claim here was a
            hand-out wrongly seen claimed (another instance made the host
            grow), and is dropped.
        """
        if host not in self._claims:
            return []
        now = self._clock()
        with self._lock:
            held = self._claims.get(host)
            if not held:
                return []
            kept = [c for c in held
                    if now - c.at <= (self._pending if c.pending
                                      else self._memory)
                    and c.instance not in listed
                    and (received is None or received - c.at < self._settle)
                    and not (elsewhere is not None and c.instance
                             and elsewhere(c.instance))]
            if kept:
                self._claims[host] = kept
            else:
                del self._claims[host]
            return list(kept)

    def settle(self, instances):
        """Drop the claims of ``instances``: a live state lists them.

        Whichever host's state lists an instance, its claim has done its
        work: on that host the state counts it, on another the claim was
        wrong. Without this a claim was dropped only when a request asked
        about its host while the state listed the instance; an instance
        listed and deleted between two requests left its claim counting
        for up to ``settle`` seconds after it was gone.
        """
        if not self._claims or not instances:
            return
        with self._lock:
            dropped = self._drop_instances(instances)
        metrics.settled(dropped)

    def forget(self):
        """Drop everything (tests, reload)."""
        with self._lock:
            self._claims.clear()
            self._handouts.clear()


_ledger = {'ledger': None, 'on_claim': None}
_ledger_lock = threading.Lock()


def get_ledger(memory, settle, pending=DEFAULT_PENDING_SECONDS):
    """This process's ledger (a forked worker gets its own)."""
    ledger = _ledger['ledger']
    if ledger is None:
        with _ledger_lock:
            if _ledger['ledger'] is None:
                _ledger['ledger'] = ClaimLedger(
                    memory, settle, on_claim=_ledger['on_claim'],
                    pending=pending)
            ledger = _ledger['ledger']
    return ledger


def state_stored(state):
    """Settle this process's claims with a stored live ``state``."""
    ledger = _ledger['ledger']
    if ledger is not None:
        ledger.settle(state.instance_uuids)


def share_with(on_claim):
    """Hand every claim this process records to ``on_claim`` (or None)."""
    with _ledger_lock:
        _ledger['on_claim'] = on_claim
        if _ledger['ledger'] is not None:
            _ledger['ledger'].on_claim = on_claim


def reset():
    """Forget this process's ledger (tests)."""
    with _ledger_lock:
        _ledger['ledger'] = None


def _forget_in_child():
    # A forked scheduler worker starts with no claims of its own (and a
    # fresh lock: the parent's may have been held at fork time).
    global _ledger_lock
    _ledger_lock = threading.Lock()
    _ledger.update(ledger=None, on_claim=None)


# No getpid() per host: the filter asks for the ledger on every host.
os.register_at_fork(after_in_child=_forget_in_child)
