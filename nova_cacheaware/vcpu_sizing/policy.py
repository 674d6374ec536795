"""Spin-aware vCPU sizing: the pure decisions behind ``vcpu_sizing``.

The agent capability (:mod:`nova_cacheaware.vcpu_sizing.agent`) reads
affinities and caps from libvirt and talks to guests; everything it decides
is here or in :mod:`.spin_storm`, over the values of :mod:`.model`, without
I/O, CONF or clock. One instance's decision in a pass, in steps:

1. **Caps** (:func:`cap_from_quota`, :func:`combine_caps`): libvirt's
   ``<cputune>`` quota and period become a per-vCPU cap in ``0..1`` for
   :mod:`~nova_cacheaware.pcpu_est.estimate`; a quota of 0 or less (or
   none) is no cap, a missing period is libvirt's
   :data:`~.model.DEFAULT_PERIOD_US`, a whole-domain quota
   (``global_quota``) is spread evenly over the vCPUs, and the tightest of
   the per-vCPU and the whole-domain cap wins.
2. **Estimate**: the pCPUs each instance really gets, by
   :mod:`~nova_cacheaware.pcpu_est.estimate` (max-min fair share). For the
   scheduler's weigher (its pCPU part), :func:`new_instance_estimate`
   adds a hypothetical new floating instance next to a host's current VMs.
3. **Spinning figures** (:func:`delay_fraction`, :func:`rate`): cumulative
   counters become per-second figures, None without an earlier sample,
   over an empty interval or when the counter went back (domain
   restarted); :mod:`.spin_storm` votes on them.
4. **Online target** (``apply`` only): with ``apply_when = storm``,
   :func:`.spin_storm.online_target`; with ``always``,
   :func:`target_online`: the current count stays while the estimate lies
   within ``(current - 1 - band, current + band]``; outside, the
   recommended count is acted on once it was wanted ``stable_passes``
   passes in a row (:class:`~.model.Target`).
5. **Which vCPUs** (:func:`plan_online`): the vCPUs to online or offline
   to reach the target, the count kept within ``[1, vCPUs]``; vCPU 0 is
   never offlined, whatever the guest claims, so the result may stay above
   the target when too few are offlinable.
6. **Guest file** (:func:`guest_file`): the text applications read in the
   guest, the count alone on line one.

Orderings and tie-breaks:

* step 1: the smaller of two caps; None only when both are None;
* step 2: the new instance floats over the request's pCPUs, or over every
  pCPU some VM uses (ascending) when the request names none;
* step 4: a new wanted count restarts the count of passes; a count equal
  to the current one is never pending;
* step 5: the highest-numbered offlinable vCPUs are offlined first, the
  lowest-numbered offline vCPUs onlined first.
"""

from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.vcpu_sizing import model

#: Name of the hypothetical instance in :func:`new_instance_estimate`.
NEW_VM = '\x00new'


def cap_from_quota(quota_us, period_us=None, vcpus=1):
    """The per-vCPU cap in ``0..1`` of a CFS quota, or None when unlimited.

    ``quota_us`` <= 0 (libvirt's -1, or 0 / unset) means no limit. With
    ``vcpus`` > 1 the quota is the whole domain's (``global_quota``) and is
    spread evenly over its vCPUs, which is a lower bound of what each gets
    when the others are idle. Bad values raise :class:`InvalidInput`.
    """
    if quota_us is None:
        return None
    try:
        quota = int(quota_us)
        period = int(period_us) if period_us else model.DEFAULT_PERIOD_US
    except (TypeError, ValueError):
        raise exception.InvalidInput(
            reason='CPU quota %r / period %r are not integers'
                   % (quota_us, period_us)) from None
    if quota <= 0:
        return None
    if period <= 0 or vcpus < 1:
        raise exception.InvalidInput(
            reason='CPU period %r (vCPUs %r) must be positive'
                   % (period_us, vcpus))
    return min(1.0, quota / (period * vcpus))


def combine_caps(*caps):
    """The tightest of several caps (None: no cap); None if all are None."""
    given = [c for c in caps if c is not None]
    return min(given) if given else None


def new_instance_estimate(affinity_request, vcpus, cap=None):
    """Available pCPUs of a new floating instance next to the current VMs.

    ``affinity_request`` is the host's
    :class:`~nova_cacheaware.pcpu_est.estimate.EstimateRequest` (its VMs and
    the pCPUs guests may use); the new instance gets ``vcpus`` vCPUs over
    all those pCPUs (over every pCPU some VM uses when the request names
    none), each capped at ``cap``. Returns the new instance's
    :class:`~nova_cacheaware.pcpu_est.estimate.VMEstimate`, or None when the
    host has no known pCPU.
    """
    if vcpus < 1:
        raise exception.InvalidInput(reason='vCPUs must be >= 1')
    pcpus = affinity_request.pcpus
    if pcpus is None:
        pcpus = tuple(sorted({p for vm in affinity_request.vms.values()
                              for a in vm.vcpus.values() for p in a}))
    if not pcpus:
        return None
    new = pcpu_est.VMAffinity(
        vcpus={i: tuple(pcpus) for i in range(vcpus)},
        caps={} if cap is None else {i: cap for i in range(vcpus)})
    vms = dict(affinity_request.vms)
    vms[NEW_VM] = new
    result = pcpu_est.estimate(pcpu_est.EstimateRequest(
        vms=vms, pcpus=affinity_request.pcpus))
    return result.vms[NEW_VM]


def target_online(current, available, vcpus, band=0.25, pending=None,
                  stable_passes=2):
    """The online vCPU count ``apply`` aims for, with hysteresis.

    ``current`` online vCPUs stay while ``available`` lies within
    ``(current - 1 - band, current + band]``: a recommendation that only
    flickers across an integer never changes the guest. Outside that band
    the new count is :func:`pcpu_est.recommended_vcpus`; it is acted on
    once the same count was wanted ``stable_passes`` passes in a row
    (``pending`` is ``(count, passes so far)`` of the previous call, or
    None). Returns ``(Target, new pending)``.
    """
    if vcpus < 1 or not 1 <= current <= vcpus:
        raise exception.InvalidInput(
            reason='online vCPUs %r out of 1..%r' % (current, vcpus))
    if band < 0 or stable_passes < 1:
        raise exception.InvalidInput(
            reason='hysteresis band and stable passes must be >= 0 / >= 1')
    if current - 1 - band < available <= current + band:
        return model.Target(current, False, 'within hysteresis band'), None
    want = pcpu_est.recommended_vcpus(available, vcpus)
    if want == current:
        # Only reachable with a band of 0 at an exact integer.
        return model.Target(current, False, 'at recommendation'), None
    seen = pending[1] + 1 if pending and pending[0] == want else 1
    if seen < stable_passes:
        return (model.Target(want, False, 'waiting (%d/%d passes)'
                             % (seen, stable_passes)), (want, seen))
    return model.Target(want, True, 'recommendation %d held %d passes'
                        % (want, seen)), None


def plan_online(every, online, offlinable, count):
    """``(to_online, to_offline)`` that leave ``count`` vCPUs online.

    Offlines the highest-numbered offlinable vCPUs and onlines the lowest
    offline ones; vCPU 0 is never offlined (whatever the guest claims), so
    the result may stay above ``count`` when too few are offlinable.
    """
    every, online = set(every), set(online) & set(every)
    count = max(1, min(count, len(every)))
    if len(online) < count:
        missing = sorted(every - online)[:count - len(online)]
        return frozenset(missing), frozenset()
    spare = sorted((set(offlinable) & online) - {0}, reverse=True)
    return frozenset(), frozenset(spare[:len(online) - count])


def delay_fraction(before, after, seconds):
    """Share of the last ``seconds`` a vCPU spent runnable but not running.

    ``before``/``after`` are cumulative ``vcpu.N.delay`` values (ns). None
    when there is no earlier sample, the interval is empty or the counter
    went back (domain restarted).
    """
    return rate(before, after, seconds, scale=1e-9)


def rate(before, after, seconds, scale=1.0):
    """``(after - before) * scale / seconds``; None when not meaningful."""
    if before is None or after is None or seconds <= 0 or after < before:
        return None
    return (after - before) * scale / seconds


def guest_file(estimate, mode, storm=False):
    """The ``/run/cacheaware/pcpus`` text: the count alone on line one.

    Applications read the first line (``$(head -n1 ...)``); the rest is for
    people and scripts: the estimate, the mode and, while the agent sees a
    spin storm in the instance, a last line ``spin_storm yes``.
    """
    return '%d\navailable_pcpus %.3f\nmode %s\n%s' % (
        estimate.recommended_vcpus, estimate.available_pcpus, mode,
        'spin_storm yes\n' if storm else '')
