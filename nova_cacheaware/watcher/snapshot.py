"""The rebalance snapshot of an audit, from what the audit read.

The Watcher strategy (:mod:`.strategy`) reads three things and this pure
function joins them into a
:class:`~nova_cacheaware.contracts.rebalance_snapshot.Snapshot`:

* each host's view from its agent (the ``describe_host`` document,
  :mod:`nova_cacheaware.contracts.host_view`): the cache domains with
  their CPUs, and per server its class, the domain the agent pinned it
  into, its spin storm and pCPU estimate;
* Nova's servers and compute hosts (Watcher's compute model): which host
  each server is on, its vCPUs, state, metadata and flavor extra specs,
  and each host's VCPU inventory (total less reserved, allocation ratio);
* Placement's per-server limits (:meth:`.sources.ApiSource.
  placement_limits`): the compute node's ``VCPU`` ``max_unit`` and each
  per-domain provider's ``CUSTOM_CACHE_DOMAIN_VCPU`` ``max_unit``;
* Nova's server groups with their policy and members.

Rules, each a table row in ``tests/unit/watcher/test_snapshot.py``:

* A host is in the snapshot when Nova lists it enabled and up and its
  agent answered with a healthy view; any other host is left out, its
  servers neither moved nor counted, and no server is moved to it.
* A server is on the host Nova says. The agent's entry for it gives its
  class, domain, storm and pCPU estimate; a server the agent does not
  list yet (it just arrived) is kept where it is (``opt_out``), and an
  agent entry Nova no longer places on that host is dropped.
* ``cache_aware``: the flavor has ``cacheaware:`` keys; ``cache_clean``
  and ``declared`` (its ``cacheaware:workload``, what the agent's domain
  choice and the scheduler's filter read) from them. A server is never
  moved (``opt_out``) when its flavor or its metadata says
  ``cacheaware:rebalance=no``, its flavor's ``cacheaware:`` keys are
  invalid, it is not ACTIVE, it is locked, the audit scope
  excludes it, or it is in a server group of a policy this version does
  not know.
* A domain holds its CPUs times the host's VCPU allocation ratio (what
  the scheduler assumes of an agent that sends no capacity); the host's
  pCPUs are its VCPU inventory total less reserved.
* The host's and each domain's ``max_unit`` are Placement's (none where
  it was not read, or the domain has no provider of its own: the
  per-host provider model), so the plan neither moves a server nor
  counts a room for a request larger than Placement gives one server.
"""

import dataclasses
import math
import typing as ty

from nova_cacheaware.contracts import extra_specs
from nova_cacheaware.contracts import rebalance_snapshot as rs
from nova_cacheaware import exception

#: The opt-out key, in a server's metadata or a flavor's extra specs.
OPT_OUT_KEY = extra_specs.REBALANCE
OPT_OUT_VALUE = 'no'
#: The host view's classes as the snapshot's.
CLASSES = {'memory-bound': 'memory', 'cpu-bound': 'cpu'}
#: Nova's server state a live migration needs.
ACTIVE = 'active'


@dataclasses.dataclass(frozen=True)
class NovaHost:
    """A compute host as Nova and Placement see it.

    ``pcpus``: its VCPU inventory total less reserved; ``cpu_ratio`` the
    VCPU allocation ratio; ``usable``: the service is enabled and up;
    ``uuid``: its compute node (the root resource provider);
    ``vcpu_max_unit``: the root's ``VCPU`` ``max_unit``;
    ``domain_max_units``: ``{domain id: max_unit}`` of its per-domain
    providers (None, empty: not read).
    """

    name: str
    pcpus: int
    cpu_ratio: float = 1.0
    usable: bool = True
    uuid: ty.Optional[str] = None
    vcpu_max_unit: ty.Optional[int] = None
    domain_max_units: ty.Mapping[str, int] = dataclasses.field(
        default_factory=dict)


@dataclasses.dataclass(frozen=True)
class NovaServer:
    """A server as Nova sees it (Watcher's compute model instance)."""

    uuid: str
    host: str
    vcpus: int
    extra_specs: ty.Mapping[str, str] = dataclasses.field(
        default_factory=dict)
    metadata: ty.Mapping[str, str] = dataclasses.field(default_factory=dict)
    state: str = ACTIVE
    locked: bool = False
    excluded: bool = False


@dataclasses.dataclass(frozen=True)
class ServerGroup:
    """A Nova server group: its policy and member uuids."""

    id: str
    policy: str
    members: ty.Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Audited:
    """The snapshot, and what was left out of it and why.

    ``left_out``: ``((host or server, reason), ...)`` for the audit's log.
    """

    snapshot: rs.Snapshot
    left_out: ty.Tuple[ty.Tuple[str, str], ...] = ()

    @property
    def servers(self):
        """How many servers the snapshot holds."""
        return sum(len(h.servers) for h in self.snapshot.hosts)


def build(views, hosts, servers, groups=(), pending=(),
          priority=rs.DEFAULT_PRIORITY):
    """The :class:`Audited` snapshot of what one audit read.

    ``views``: :class:`~nova_cacheaware.contracts.host_view.HostView` of
    the hosts whose agent answered; ``hosts``: :class:`NovaHost`;
    ``servers``: :class:`NovaServer`; ``groups``: :class:`ServerGroup`;
    ``pending``: the vCPUs of refused ``cache_clean=required`` requests
    (:func:`~nova_cacheaware.watcher.sources.refused_required`);
    ``priority``: what the plan serves first (the strategy's parameter).
    """
    left_out = []
    by_name = {h.name: h for h in hosts}
    kept = []
    for view in sorted(views, key=lambda v: v.host):
        nova_host = by_name.get(view.host)
        reason = _unusable(view, nova_host)
        if reason:
            left_out.append((view.host, reason))
        else:
            kept.append((view, nova_host))
    answered = {view.host for view in views}
    left_out.extend((h.name, 'no view from its agent')
                    for h in sorted(hosts, key=lambda h: h.name)
                    if h.usable and h.name not in answered)
    group_of, policies, unknown = _groups(groups)
    on_host = {}
    for server in servers:
        on_host.setdefault(server.host, []).append(server)
    out_hosts = []
    for view, nova_host in kept:
        out_hosts.append(_host(view, nova_host, on_host.get(view.host, ()),
                               group_of, unknown, left_out))
    used = {s.group for h in out_hosts for s in h.servers}
    snapshot = rs.Snapshot(
        hosts=tuple(out_hosts),
        groups=tuple(sorted((g, p) for g, p in policies.items()
                            if g in used)),
        pending=tuple(sorted(pending)), priority=priority)
    return Audited(snapshot, tuple(left_out))


def _unusable(view, nova_host):
    """Why a host with a view is left out, or None."""
    if nova_host is None:
        return 'not a compute host of the audit'
    if not nova_host.usable:
        return 'its compute service is disabled or down'
    if not view.agent_healthy:
        return 'its agent reports itself unhealthy'
    return None


def _groups(groups):
    """``({server: group}, {group: policy}, {groups of unknown policy})``."""
    group_of, policies, unknown = {}, {}, set()
    for group in groups:
        if group.policy in rs.GROUP_POLICIES:
            policies[group.id] = group.policy
        else:
            unknown.add(group.id)
        for member in group.members:
            group_of[member] = group.id
    return group_of, policies, unknown


def _host(view, nova_host, nova_servers, group_of, unknown, left_out):
    """The snapshot's :class:`~.rebalance_snapshot.Host` of one view."""
    domains = tuple(
        rs.Domain(d.id, int(math.floor(len(d.cpus) * nova_host.cpu_ratio)),
                  d.numa_node, nova_host.domain_max_units.get(d.id))
        for d in view.domains)
    seen = {s.uuid: s for s in view.servers}
    listed = set()
    out = []
    for nova in sorted(nova_servers, key=lambda s: s.uuid):
        listed.add(nova.uuid)
        out.append(_server(nova, seen.get(nova.uuid), group_of, unknown))
    left_out.extend((uuid, 'listed by the agent of %s, not there in Nova'
                     % view.host) for uuid in sorted(set(seen) - listed))
    return rs.Host(name=view.host, pcpus=nova_host.pcpus, domains=domains,
                   servers=tuple(out), max_unit=nova_host.vcpu_max_unit)


def _server(nova, seen, group_of, unknown):
    """The snapshot's :class:`~.rebalance_snapshot.Server` of one server."""
    try:
        spec = extra_specs.parse_extra_specs(nova.extra_specs)
        invalid = False
    except exception.InvalidInput:
        spec, invalid = extra_specs.CacheAwareRequest(), True
    group = group_of.get(nova.uuid)
    opt_out = (invalid or seen is None or nova.state != ACTIVE
               or nova.locked or nova.excluded or group in unknown
               or spec.rebalance == OPT_OUT_VALUE
               or nova.metadata.get(OPT_OUT_KEY) == OPT_OUT_VALUE)
    return rs.Server(
        uuid=nova.uuid, vcpus=max(1, nova.vcpus),
        workload=CLASSES.get(seen.workload_class, 'unknown')
        if seen else 'unknown',
        cache_clean=spec.cache_clean,
        cache_aware=spec.present and not invalid,
        # What the agent's choice and the filter read, not the class.
        declared=None if invalid else spec.workload,
        opt_out=opt_out,
        group=None if group in unknown else group,
        domain=seen.domain if seen else None,
        storm=bool(seen and seen.spin_storm),
        pcpu_estimate=seen.pcpu_estimate if seen else None)
