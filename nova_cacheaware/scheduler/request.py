"""A request's flavor as the plugins need it, parsed once per request.

Every filter runs once per host and every weigher once per host, but what
they read from the flavor (the ``cacheaware:`` keys, the vCPU count, the
``quota:`` cap, ``hw:cpu_policy``) is the same for every host. :func:`of`
computes it once per flavor object: the parse is kept in a table keyed by
the flavor object, weakly, so it lives exactly as long as the flavor.

Why per flavor object and not on the plugins: filter and weigher objects
are shared by every request and every concurrent scheduling thread, so they
hold no per-request state. The ``RequestSpec``'s flavor lives exactly as
long as the request: multi-create filters the same ``RequestSpec`` once per
instance and reuses the parse, while a resize or a new request brings a new
flavor object and a new parse. Nothing during scheduling mutates a flavor's
extra specs in place. Nova's object is left untouched (nothing of ours is
written into it); two threads that parse the same flavor at once store
equal values.
"""

import dataclasses
import typing as ty
import weakref

from nova_cacheaware.api import spec_rules
from nova_cacheaware.contracts import extra_specs as specs
from nova_cacheaware import exception
from nova_cacheaware.vcpu_sizing import policy as vcpu_sizing

#: ``{flavor object: Request}``; an entry goes with its flavor. Nova's
#: objects hash by identity, so a lookup never compares fields.
_PARSED = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True)
class Request:
    """The per-request inputs of every nova-cacheaware plugin."""

    #: The parsed ``cacheaware:`` keys (empty when ``invalid``).
    cacheaware: specs.CacheAwareRequest
    #: Why the ``cacheaware:`` keys are invalid, or None when they are not.
    invalid: ty.Optional[str]
    vcpus: int
    #: Per-vCPU cap from ``quota:cpu_quota`` / ``quota:cpu_period``.
    cap: ty.Optional[float]
    #: ``hw:cpu_policy=dedicated``: Placement's exclusive PCPU inventory.
    dedicated: bool
    #: Cross-key contradictions of the ``cacheaware:`` keys (empty: none).
    contradictions: ty.Tuple[str, ...] = ()

    @property
    def full_numa(self):
        """True for ``cacheaware:numa=full`` requests."""
        return self.cacheaware.numa == 'full'

    @property
    def contention_weighed(self):
        """True when the weigher's contention part prefers Clean domains."""
        return self.cacheaware.present and self.cacheaware.clean_wanted

    @property
    def pcpu_weighed(self):
        """True when CacheAwareWeigher's pCPU part scores hosts."""
        return (self.cacheaware.present and not self.dedicated
                and self.vcpus >= 1)


def of(spec_obj):
    """The :class:`Request` of ``spec_obj``'s flavor, parsed at most once."""
    flavor = spec_obj.flavor
    memo = _PARSED.get(flavor)
    if memo is None:
        memo = _PARSED[flavor] = _parse(flavor)
    return memo


def cacheaware_request(spec_obj):
    """The parsed ``cacheaware:`` keys of ``spec_obj``'s flavor.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` for invalid keys,
    like :func:`~nova_cacheaware.contracts.extra_specs.parse_extra_specs`.
    """
    memo = of(spec_obj)
    if memo.invalid is not None:
        raise exception.InvalidInput(reason=memo.invalid)
    return memo.cacheaware


def _parse(flavor):
    extra_specs = flavor.extra_specs or {}
    invalid = None
    try:
        parsed = specs.parse_extra_specs(extra_specs)
    except exception.InvalidInput as e:
        # Flavors written before the validators were installed.
        parsed = specs.CacheAwareRequest()
        invalid = e.kwargs.get('reason', str(e))
    problems = ()
    if parsed.present:
        problems = tuple(spec_rules.request_contradictions(
            parsed, flavor.memory_mb))
    return Request(cacheaware=parsed, invalid=invalid, vcpus=flavor.vcpus,
                   cap=flavor_cap(extra_specs),
                   dedicated=extra_specs.get('hw:cpu_policy') == 'dedicated',
                   contradictions=problems)


def flavor_cap(extra_specs):
    """The per-vCPU cap of ``quota:cpu_quota``/``quota:cpu_period``, or None.

    Nova's libvirt driver writes these into ``<cputune>``, where libvirt
    applies the quota to each vCPU. Unreadable values count as no cap (Nova
    validates them at flavor creation).
    """
    quota = (extra_specs or {}).get('quota:cpu_quota')
    try:
        return vcpu_sizing.cap_from_quota(
            quota, (extra_specs or {}).get('quota:cpu_period'))
    except exception.InvalidInput:
        return None
