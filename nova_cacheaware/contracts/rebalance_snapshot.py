"""The region snapshot the rebalance decision reads, and its JSON form.

A snapshot is what an audit knows of a region at one moment: every host
with its cache domains and the servers on it (where the agent pinned each
one, its class, what its flavor asks), the server groups, and the
``cache_clean=required`` requests Nova refused for want of a Clean place.
:func:`snapshot_from_dict` validates a JSON document into the frozen
values below (bounded sizes, one readable line for the first problem) and
:func:`snapshot_to_dict` writes it back, so that any plan can be replayed
with ``nova-cacheaware rebalance``. The format is documented in
``doc/source/user/rebalance.rst``.

Leaf module: standard library, :mod:`.schema`, :mod:`.limits` and the
project's exceptions only.
"""

import dataclasses
import functools
import typing as ty

from nova_cacheaware.contracts import limits
from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

#: The classes the agent's classifier gives (``unknown``: not yet).
CLASSES = ('memory', 'cpu', 'unknown')
CACHE_CLEAN = ('required', 'preferred', 'off')
#: The flavor's declared ``cacheaware:workload`` values.
DECLARED = ('memory', 'cpu', 'io', 'auto')
GROUP_POLICIES = ('affinity', 'anti-affinity', 'soft-affinity',
                  'soft-anti-affinity')
#: What a plan serves first: rooms for the refused ``required`` requests,
#: or Clean servers (each fitting request counted as one).
PRIORITIES = ('required', 'clean')
#: Rooms first: with Clean first, a crowded region's audits refuse more
#: ``required`` requests than no audits at all.
DEFAULT_PRIORITY = 'required'

#: Bounds no region reaches; they keep an absurd document from making the
#: planner build (and search) millions of values.
MAX_HOSTS = 1 << 14
MAX_DOMAINS_PER_HOST = 256
MAX_SERVERS_PER_HOST = 1024
MAX_SERVERS = 1 << 19
MAX_PENDING = 1 << 12
MAX_GROUPS = 1 << 16


@dataclasses.dataclass(frozen=True)
class Domain:
    """One cache domain of a host: ``capacity`` vCPUs it holds All-share.

    ``max_unit``: the most vCPUs Placement gives one server in it (its
    per-domain provider's ``CUSTOM_CACHE_DOMAIN_VCPU`` ``max_unit``, the
    domain's CPUs whatever the allocation ratio); None: no limit of its
    own (the per-host provider model, or not known).
    """

    id: str
    capacity: int
    numa_node: ty.Optional[int] = None
    max_unit: ty.Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Server:
    """One server (instance) as the audit sees it.

    ``workload``: the agent's class (``memory``, ``cpu``, ``unknown``).
    ``declared``: its flavor's ``cacheaware:workload`` (``memory``,
    ``cpu``, ``io``, ``auto``), what the agent's domain choice and the
    scheduler's filter read (None: not known, the class stands in for
    it, as documents written before this field assumed).
    ``cache_aware``: its flavor carries ``cacheaware:`` keys at all;
    ``opt_out``: an operator asked that it never be moved. ``domain``:
    the domain the agent pinned it into (None: it runs on Nova's CPUs,
    not All-share). ``storm``: the agent's spin-storm detector fires for
    it; ``pcpu_estimate``: its pCPU-Est available pCPUs (None: unknown).
    """

    uuid: str
    vcpus: int
    workload: str = 'unknown'
    cache_clean: str = 'preferred'
    cache_aware: bool = True
    opt_out: bool = False
    group: ty.Optional[str] = None
    domain: ty.Optional[str] = None
    storm: bool = False
    pcpu_estimate: ty.Optional[float] = None
    declared: ty.Optional[str] = None

    @property
    def memory_bound(self):
        """True when the classifier found it memory-bound."""
        return self.workload == 'memory'

    @property
    def wants_clean(self):
        """True when its class may make it Clean: not found CPU-bound.

        Memory-bound and not yet classified servers of a cache-aware
        flavor that does not say ``cache_clean=off``.
        """
        return (self.cache_aware and self.workload != 'cpu'
                and self.cache_clean != 'off')

    @property
    def clean_required(self):
        """True for a memory-bound server whose flavor asks ``required``."""
        return self.memory_bound and self.cache_clean == 'required'

    @property
    def flavor_clean_wanted(self):
        """True when the scheduler's filter counts it Clean-wanting.

        Its flavor's ``clean_wanted``
        (:class:`~nova_cacheaware.contracts.extra_specs.CacheAwareRequest`):
        a cache-aware flavor declaring ``memory`` or ``auto`` that does not
        say ``cache_clean=off``, whatever the classifier found since (an
        ``auto`` server found CPU-bound still counts). Without
        ``declared``: :attr:`wants_clean`.
        """
        if self.declared is None:
            return self.wants_clean
        return (self.cache_aware and self.declared in ('memory', 'auto')
                and self.cache_clean != 'off')

    @property
    def agent_clean_wanted(self):
        """True when the agent's choice counts it against Clean.

        Its flavor wants Clean (:attr:`flavor_clean_wanted`) and the
        classifier has not found it CPU-bound: the agent's pass
        (``placement_side._choose_domains``), like the live state's
        memory-bound column, counts an ``auto`` server found CPU-bound as
        no memory-bound neighbour.
        """
        return self.flavor_clean_wanted and self.workload != 'cpu'

    @property
    def flavor_clean_required(self):
        """True when the agent and the filter give it a Clean guarantee.

        Its flavor's ``clean_required``: declared ``memory`` with
        ``cache_clean=required``. Without ``declared``:
        :attr:`clean_required`.
        """
        if self.declared is None:
            return self.clean_required
        return self.declared == 'memory' and self.cache_clean == 'required'


@dataclasses.dataclass(frozen=True)
class Host:
    """A compute host: ``pcpus`` guests may use, its domains and servers.

    ``max_unit``: the most vCPUs Placement gives one server on it (the
    compute node's ``VCPU`` ``max_unit``: its CPUs in Nova's libvirt
    driver, whatever the allocation ratio); None: not known.
    """

    name: str
    pcpus: int
    domains: ty.Tuple[Domain, ...] = ()
    servers: ty.Tuple[Server, ...] = ()
    max_unit: ty.Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """A region: hosts, server group policies, refused ``required`` requests.

    ``groups``: ``((group id, policy), ...)``; ``pending``: the vCPUs of
    each ``cache_clean=required`` request that got NoValidHost;
    ``priority``: one of :data:`PRIORITIES`, what the plan serves first.
    """

    hosts: ty.Tuple[Host, ...]
    groups: ty.Tuple[ty.Tuple[str, str], ...] = ()
    pending: ty.Tuple[int, ...] = ()
    priority: str = DEFAULT_PRIORITY

    @functools.cached_property
    def _policies(self):
        # Asked per candidate move: built once, not per question.
        return dict(self.groups)

    def group_policy(self, group):
        """The policy of ``group`` (None: no group)."""
        return self._policies.get(group)


def bad(reason):
    """The error of an invalid snapshot document."""
    return exception.InvalidInput(reason=reason)


def _is_name(value):
    return isinstance(value, str) and 0 < len(value) <= 255


def _count(minimum, maximum):
    return schema.Check(
        lambda v: (isinstance(v, int) and not isinstance(v, bool)
                   and minimum <= v <= maximum),
        '%%(where)s: "%%(key)s" must be an integer in %d..%d, not '
        '%%(value)r' % (minimum, maximum))


_NAME = schema.Check(_is_name, '%(where)s: "%(key)s" must be a non-empty '
                               'string of at most 255 characters')
_OPTIONAL_NAME = schema.Check(lambda v: v is None or _is_name(v),
                              _NAME.message + ' or null')
_FLAG = schema.Check(schema.is_bool,
                     '%(where)s: "%(key)s" must be true or false')
_ESTIMATE = schema.Check(
    lambda v: v is None or (schema.is_number(v)
                            and 0 <= v <= limits.MAX_VCPUS),
    '%%(where)s: "%%(key)s" must be a number in 0..%d or null'
    % limits.MAX_VCPUS)
_NODE = schema.Check(lambda v: v is None or (
    isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1024),
    '%(where)s: "%(key)s" must be an integer in 0..1023 or null')

_MAX_UNIT = schema.Check(lambda v: v is None or (
    isinstance(v, int) and not isinstance(v, bool)
    and 1 <= v <= limits.MAX_VCPUS),
    '%%(where)s: "%%(key)s" must be an integer in 1..%d or null'
    % limits.MAX_VCPUS)

_DOMAIN = {'id': (_NAME, schema.REQUIRED),
           'vcpus': (_count(0, limits.MAX_CPUS * 16), schema.REQUIRED),
           'numa_node': (_NODE, None),
           'max_unit': (_MAX_UNIT, None)}
_SERVER = {
    'uuid': (_NAME, schema.REQUIRED),
    'vcpus': (_count(1, limits.MAX_VCPUS), schema.REQUIRED),
    'class': (schema.OneOf(CLASSES, 'memory, cpu or unknown'), 'unknown'),
    'cache_clean': (schema.OneOf(CACHE_CLEAN, 'required, preferred or off'),
                    'preferred'),
    'cache_aware': (_FLAG, True),
    'opt_out': (_FLAG, False),
    'group': (_OPTIONAL_NAME, None),
    'domain': (_OPTIONAL_NAME, None),
    'storm': (_FLAG, False),
    'pcpu_estimate': (_ESTIMATE, None),
    'declared': (schema.Check(
        lambda v: v is None or v in DECLARED,
        '%(where)s: "%(key)s" must be memory, cpu, io, auto or null'), None),
}
_HOST = {'name': (_NAME, schema.REQUIRED),
         'pcpus': (_count(0, limits.MAX_CPUS), schema.REQUIRED),
         'max_unit': (_MAX_UNIT, None)}


def _list(doc, key, where, bound):
    """``doc[key]`` (absent: empty), a list of at most ``bound`` items."""
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise bad('%s: "%s" must be a list' % (where, key))
    if len(value) > bound:
        raise bad('%s: at most %d %s (%d given)'
                  % (where, bound, key, len(value)))
    return value


def _domain(raw, where):
    fields = schema.fields(raw, _DOMAIN, where)
    return Domain(id=fields['id'], capacity=fields['vcpus'],
                  numa_node=fields['numa_node'],
                  max_unit=fields['max_unit'])


def _server(raw, where, domains, groups):
    fields = schema.fields(raw, _SERVER, where)
    uuid = fields['uuid']
    schema.only_keys(raw, _SERVER, 'server %s' % uuid)
    if fields['domain'] is not None and fields['domain'] not in domains:
        raise bad('server %s: domain %r is not a domain of its host'
                  % (uuid, fields['domain']))
    if fields['group'] is not None and fields['group'] not in groups:
        raise bad('server %s: group %r is not in "groups"'
                  % (uuid, fields['group']))
    fields['workload'] = fields.pop('class')
    return Server(**fields)


def _host(raw, where, groups, seen):
    fields = schema.fields(raw, _HOST, where)
    name = fields['name']
    schema.only_keys(raw, ('name', 'pcpus', 'max_unit', 'domains',
                           'servers'), 'host %s' % name)
    domains = tuple(_domain(d, 'host %s domain' % name) for d in _list(
        raw, 'domains', 'host %s' % name, MAX_DOMAINS_PER_HOST))
    ids = {d.id for d in domains}
    if len(ids) != len(domains):
        raise bad('host %s: a domain id is listed twice' % name)
    servers = []
    for one in _list(raw, 'servers', 'host %s' % name,
                     MAX_SERVERS_PER_HOST):
        server = _server(one, 'host %s server' % name, ids, groups)
        if server.uuid in seen:
            raise bad('server %s is listed twice' % server.uuid)
        seen.add(server.uuid)
        servers.append(server)
    return Host(name=name, pcpus=fields['pcpus'], domains=domains,
                servers=tuple(servers), max_unit=fields['max_unit'])


def _groups(doc):
    groups = doc.get('groups', {})
    if not isinstance(groups, dict) or len(groups) > MAX_GROUPS:
        raise bad('"groups" must be an object of at most %d {id: policy}'
                  % MAX_GROUPS)
    policy = schema.OneOf(GROUP_POLICIES, ', '.join(GROUP_POLICIES))
    for group, value in groups.items():
        _NAME.check(group, 'group id', 'groups')
        policy.check(value, 'policy', 'group %s' % group)
    return tuple(sorted(groups.items()))


def snapshot_from_dict(doc):
    """The :class:`Snapshot` of a JSON document, or :class:`InvalidInput`."""
    if not isinstance(doc, dict):
        raise bad('the snapshot must be a JSON object')
    with schema.reraise(bad):
        schema.only_keys(doc, ('hosts', 'groups', 'pending', 'priority'),
                         'snapshot')
        groups = _groups(doc)
        seen, names, hosts, total = set(), set(), [], 0
        for raw in _list(doc, 'hosts', 'snapshot', MAX_HOSTS):
            host = _host(raw, 'host', dict(groups), seen)
            if host.name in names:
                raise bad('host %s is listed twice' % host.name)
            names.add(host.name)
            total += len(host.servers)
            if total > MAX_SERVERS:
                raise bad('at most %d servers in all' % MAX_SERVERS)
            hosts.append(host)
        pending = tuple(
            _count(1, limits.MAX_VCPUS).check(
                schema.obj(one, 'pending').get('vcpus'), 'vcpus', 'pending')
            for one in _list(doc, 'pending', 'snapshot', MAX_PENDING))
        priority = schema.OneOf(PRIORITIES, ', '.join(PRIORITIES)).check(
            doc.get('priority', DEFAULT_PRIORITY), 'priority', 'snapshot')
    return Snapshot(hosts=tuple(hosts), groups=groups, pending=pending,
                    priority=priority)


def _server_to_dict(server):
    out = dataclasses.asdict(server)
    out['class'] = out.pop('workload')
    # Written only when known: a document without it reads as before.
    if out['declared'] is None:
        del out['declared']
    return out


def _with_max_unit(out, value):
    # Written only when known: a snapshot without Placement's limits
    # reads as it did before they were added.
    if value is not None:
        out['max_unit'] = value
    return out


def _host_to_dict(host):
    return _with_max_unit({
        'name': host.name, 'pcpus': host.pcpus,
        'domains': [_with_max_unit({'id': d.id, 'vcpus': d.capacity,
                                    'numa_node': d.numa_node}, d.max_unit)
                    for d in host.domains],
        'servers': [_server_to_dict(s) for s in host.servers]},
        host.max_unit)


def snapshot_to_dict(snapshot):
    """The JSON document :func:`snapshot_from_dict` reads back."""
    return {
        'hosts': [_host_to_dict(h) for h in snapshot.hosts],
        'groups': dict(snapshot.groups),
        'pending': [{'vcpus': v} for v in snapshot.pending],
        'priority': snapshot.priority}
