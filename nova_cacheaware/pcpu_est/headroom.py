"""A new floating instance's exact pCPU-Est share, in O(log levels).

:func:`~nova_cacheaware.vcpu_sizing.policy.new_instance_estimate` solves the
whole max-min fair division again with the new instance added. The
scheduler asks that question for every host on every request, with the
same host VMs each time; this module splits it into a once-per-host-state
part (:meth:`Headroom.of`) and a per-request part (:meth:`Headroom.share`).

Why it is exact. Let ``P`` be the pCPUs the new instance floats over (the
host's usable pCPUs, or every pCPU some VM uses when none are given), ``x``
the max-min fair shares of the current vCPUs alone, and ``k`` vCPUs capped
at ``c`` the new instance. A demand vector is feasible iff every set ``Z``
of vCPUs asks at most ``|N(Z)|`` (Hall). The new vCPUs may use every pCPU
of ``P``, so a set containing one of them has ``N(Z) = P``: adding the
instance adds exactly one constraint, *total demand <= |P|*, and leaves
every constraint among the current vCPUs as it was. Progressive filling
with everyone rising to level ``s`` therefore gives the current vCPUs
``min(x_v, s)`` (their own filling, stopped at ``s``) until the total
constraint binds, i.e. until ``U(s) + k s = |P|`` with
``U(s) = sum_v min(x_v, s)``; the new vCPUs freeze there, or at ``c`` if
that comes first. So the new instance's share per vCPU is::

    min(c, 1, s*)    where  U(s*) + k s* = |P|

``U`` is piecewise linear and increasing with breakpoints at the distinct
levels of ``x``: with those levels sorted and prefix sums kept, ``s*`` is
one binary search and one division. Everything is exact (integers scaled
by the common denominator of the levels), so the result equals the full
computation bit for bit; ``tests/unit/pcpu_est/test_headroom.py``
checks that property on random hosts.
"""

import bisect
from fractions import Fraction
import functools
import math

from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.pcpu_est import network


class Headroom:
    """A host's current VMs reduced to what a new instance's share needs.

    Immutable after construction; :meth:`of` builds it from the host's
    :class:`~nova_cacheaware.pcpu_est.estimate.EstimateRequest`.
    """

    __slots__ = ('pcpus', '_scale', '_room', '_levels', '_at_level',
                 '_below', '_above')

    def __init__(self, pcpus, shares=(), counts=None):
        """The headroom of ``pcpus`` (``|P|``) and the current vCPUs.

        Their exact shares as a list (``shares``) or as ``{share: vCPUs}``
        (``counts``).
        """
        self.pcpus = pcpus
        if counts is None:
            counts = {}
            for share in shares:
                if share > 0:
                    counts[share] = counts.get(share, 0) + 1
        else:
            counts = {s: n for s, n in counts.items() if s > 0 and n > 0}
        levels = sorted(counts)
        scale = 1
        for level in levels:
            scale = math.lcm(scale, level.denominator)
        self._scale = scale
        self._room = pcpus * scale
        # Per breakpoint j (levels[j], scaled): U at it, the sum of the
        # levels at or below it, and the vCPUs above it.
        self._levels = [level.numerator * (scale // level.denominator)
                        for level in levels]
        self._at_level = []
        self._below = [0]
        self._above = [sum(counts.values())]
        below, above = 0, self._above[0]
        for level, scaled in zip(levels, self._levels):
            above -= counts[level]
            self._at_level.append(below + (above + counts[level]) * scaled)
            below += counts[level] * scaled
            self._below.append(below)
            self._above.append(above)

    @classmethod
    def of(cls, affinity_request):
        """The headroom of a host's VMs, or None when it has no pCPU.

        One exact pCPU-Est of the current VMs: done once per host state.
        """
        levels = share_levels(affinity_request)
        return None if levels is None else cls.of_levels(*levels)

    @classmethod
    def of_levels(cls, pcpus, levels):
        """The headroom of :func:`share_levels`' ``(pcpus, levels)``."""
        return cls(pcpus, counts={Fraction(num, den): n
                                  for num, den, n in levels})

    def share(self, vcpus, cap=None):
        """Exact share of each vCPU of a new ``vcpus``-vCPU instance.

        ``cap`` is the per-vCPU cap in 0..1 (None: 1). Returns a Fraction;
        the instance's available pCPUs are ``vcpus`` times it.
        """
        num, den = self._share_ratio(vcpus, _cap_ratio(cap))
        return Fraction(num, den)

    def available_pcpus(self, vcpus, cap=None):
        """Available pCPUs of a new ``vcpus``-vCPU instance, as a float.

        The float nearest the exact value (integer true division rounds
        correctly), so it equals ``float()`` of the exact estimate.
        """
        num, den = self._share_ratio(vcpus, _cap_ratio(cap))
        return vcpus * num / den

    def _share_ratio(self, vcpus, limit):
        # (numerator, denominator) of min(limit, s*), in plain integers:
        # a Fraction per call would cost more than the search.
        if vcpus < 1:
            raise exception.InvalidInput(reason='vCPUs must be >= 1')
        room, levels, at_level = self._room, self._levels, self._at_level
        # First breakpoint where the total with the new vCPUs at that level
        # exceeds the room: the total constraint binds just below it.
        j = bisect.bisect_right(range(len(levels)), room,
                                key=lambda i: at_level[i] + vcpus * levels[i])
        num = room - self._below[j]
        den = (self._above[j] + vcpus) * self._scale
        if num * limit[1] >= limit[0] * den:
            return limit
        return num, den


def share_levels(affinity_request):
    """``(pCPUs, ((numerator, denominator, vCPUs), ...))``, or None.

    What a new instance's share needs of a host's VMs (their exact
    max-min fair shares, counted per level, ascending): the agent
    publishes it (payload 2.0 ``pcpu_levels``) so that no scheduler
    solves pCPU-Est per host state. None when the host has no pCPU.
    """
    pcpus = affinity_request.pcpus
    if pcpus is None:
        pcpus = {p for vm in affinity_request.vms.values()
                 for a in vm.vcpus.values() for p in a}
    if not pcpus:
        return None
    affinities, caps = affinity_request.flat_vcpus()
    shares = pcpu_est.fair_shares(affinities, caps, affinity_request.pcpus)
    counts = {}
    for share in shares.values():
        if share > 0:
            counts[share] = counts.get(share, 0) + 1
    return len(pcpus), tuple((s.numerator, s.denominator, counts[s])
                             for s in sorted(counts))


@functools.lru_cache(maxsize=256)
def _cap_ratio(cap):
    # Few distinct caps exist (one per flavor quota): convert each once.
    if cap is None:
        return 1, 1
    exact = network.exact_cap(cap)
    if not 0 <= exact <= 1:
        # A vCPU is one thread: pCPU-Est refuses such caps too.
        raise exception.InvalidInput(reason='cap %r is outside 0..1' % (cap,))
    return exact.numerator, exact.denominator
