"""The host-view document: one host's CPUs, cache domains and servers.

What the status service's agents return for ``openstack cacheaware host
map`` and what ``nova-cacheaware host-map`` replays offline; both draw it
with :func:`nova_cacheaware.status.host_map.render_svg`.
:func:`from_document` checks a document once, at the edge, and returns a
frozen :class:`HostView`; bad input raises
:class:`~nova_cacheaware.exception.InvalidInput` with one line naming the
first problem. The document comes from agents and, through server names
and free-form sizing, partly from guests: it is never trusted, and sizes
no real host reaches (:data:`MAX_HOST_CPUS`, :data:`MAX_SERVERS`) are
refused before anything is drawn.

Versions are ``MAJOR.MINOR``: a reader accepts any minor of its major and
ignores keys it does not know (minors may add fields).

* 1.0: host, model, agent, NUMA nodes, domains (cpulist strings, state,
  spin storm, servers), servers (class, isolation, domain, pins, vCPUs,
  spin storm, pCPU estimate, sizing and balloon objects).

Pure module.
"""

import dataclasses
import datetime
import json
import types
import typing as ty

from nova_cacheaware.contracts import cpu_sets
from nova_cacheaware.contracts import limits
from nova_cacheaware.contracts import schema
from nova_cacheaware.contracts import timestamps
from nova_cacheaware import exception

VERSION = '1.0'
MAJOR = 1
MODELS = ('per-domain', 'per-host')
STATES = ('Empty', 'Clean', 'Dirty')
CLASSES = ('memory-bound', 'cpu-bound', 'unknown')
ISOLATIONS = ('required', 'preferred', 'none')

#: Most CPUs one host may have: twice the largest servers sold today.
MAX_HOST_CPUS = 4096
#: Most servers on one host (Nova's own tests stop far below).
MAX_SERVERS = 1000
#: Most cache domains and NUMA nodes (each has at least one CPU).
MAX_DOMAINS = 1024
MAX_NUMA_NODES = 256
#: Longest name (host, domain id, uuid) and cpulist string.
MAX_NAME = 255
MAX_CPULIST = 16384
#: Largest ``sizing`` / ``balloon`` object, as compact JSON.
MAX_DETAIL_CHARS = 2048


@dataclasses.dataclass(frozen=True)
class NumaNode:
    """A NUMA node: its CPUs and the ids of its cache domains."""

    id: int
    cpus: ty.Tuple[int, ...]
    domains: ty.Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Domain:
    """A cache domain: its CPUs, state and the servers kept there."""

    id: str
    level: str
    numa_node: int
    cpus: ty.Tuple[int, ...]
    state: str
    spin_storm: bool
    servers: ty.Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Server:
    """A server on the host; ``pins`` None: floating (not pinned)."""

    uuid: str
    workload_class: str
    isolation: ty.Optional[str]
    domain: ty.Optional[str]
    pins: ty.Optional[ty.Tuple[int, ...]]
    vcpus: int
    spin_storm: bool
    pcpu_estimate: ty.Optional[float]
    #: Free-form, bounded objects, read-only (None: not reported).
    sizing: ty.Optional[ty.Mapping[str, ty.Any]]
    balloon: ty.Optional[ty.Mapping[str, ty.Any]]


@dataclasses.dataclass(frozen=True)
class HostView:
    """One host as its agent sees it at ``generated_at`` (UTC)."""

    version: str
    host: str
    model: str
    generated_at: datetime.datetime
    agent_healthy: bool
    agent_generation: int
    numa_nodes: ty.Tuple[NumaNode, ...]
    domains: ty.Tuple[Domain, ...]
    servers: ty.Tuple[Server, ...]

    @property
    def cpus(self):
        """Every CPU of the host, sorted."""
        return tuple(sorted(c for n in self.numa_nodes for c in n.cpus))


def _is_name(value):
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME


def _cpulist(value):
    if not isinstance(value, str) or len(value) > MAX_CPULIST:
        return None
    cpus = cpu_sets.cpu_ranges(value)
    return cpus if cpus else None


def _detail(value):
    """True for a JSON object whose compact JSON is small enough."""
    if not isinstance(value, dict):
        return False
    try:
        text = json.dumps(value, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False
    return len(text) <= MAX_DETAIL_CHARS


def _frozen_detail(value):
    # A copy through JSON: the view shares nothing the caller may change.
    if value is None:
        return None
    return types.MappingProxyType(json.loads(json.dumps(value)))


def _one_of(choices, optional=False):
    allowed = choices + ((None,) if optional else ())
    return schema.Check(
        lambda v: isinstance(v, (str, type(None))) and v in allowed,
        '%%(where)s: "%%(key)s" must be one of %s%s, not %%(value).40r'
        % (', '.join(choices), ' or null' if optional else ''))


def _count(maximum, minimum=0):
    return schema.Check(
        lambda v: (isinstance(v, int) and not isinstance(v, bool)
                   and minimum <= v <= maximum),
        '%%(where)s: "%%(key)s" must be an integer %d..%d, not %%(value).40r'
        % (minimum, maximum))


def _list(limit, item_test, what):
    return schema.Check(
        lambda v: (isinstance(v, list) and len(v) <= limit
                   and all(map(item_test, v))),
        '%%(where)s: "%%(key)s" must be a list of at most %d %s'
        % (limit, what), tuple)


_NAME = schema.Check(_is_name, '%%(where)s: "%%(key)s" must be a string of '
                     '1..%d characters' % MAX_NAME)
_OPTIONAL_NAME = schema.Check(
    lambda v: v is None or _is_name(v), '%%(where)s: "%%(key)s" must be '
    'null or a string of 1..%d characters' % MAX_NAME)
_CPUS = schema.Check(
    lambda v: _cpulist(v) is not None,
    '%%(where)s: "%%(key)s" must be a non-empty cpulist string such as '
    '"0-15,32-47" of distinct CPUs 0..%d' % (limits.MAX_CPUS - 1), _cpulist)
_PINS = schema.Check(
    lambda v: v is None or _cpulist(v) is not None,
    '%(where)s: "pins" must be null or a non-empty cpulist string such as '
    '"0-3"', lambda v: None if v is None else _cpulist(v))
_BOOL = schema.BOOL
_DETAIL = schema.Check(
    lambda v: v is None or _detail(v), '%%(where)s: "%%(key)s" must be null '
    'or a JSON object of at most %d characters' % MAX_DETAIL_CHARS,
    _frozen_detail)
_ESTIMATE = schema.Check(
    lambda v: v is None or (schema.is_number(v) and 0 <= v <= 1e6),
    '%(where)s: "pcpu_estimate" must be null or a number 0..1000000',
    lambda v: None if v is None else float(v))

_HEAD = schema.Obj({
    'version': (_NAME, schema.REQUIRED),
}, '%(where)s: must be a JSON object')
_DOC = schema.Obj({
    'host': (_NAME, schema.REQUIRED),
    'model': (_one_of(MODELS), schema.REQUIRED),
    'generated_at': (_NAME, schema.REQUIRED),
    'agent': (schema.Check(schema.is_object,
                           '%(where)s: "agent" must be a JSON object'),
              schema.REQUIRED),
    'numa_nodes': (_list(MAX_NUMA_NODES, schema.is_object, 'objects'),
                   schema.REQUIRED),
    'domains': (_list(MAX_DOMAINS, schema.is_object, 'objects'),
                schema.REQUIRED),
    'servers': (_list(MAX_SERVERS, schema.is_object, 'objects'),
                schema.REQUIRED),
})
_AGENT = schema.Obj({
    'healthy': (_BOOL, schema.REQUIRED),
    'generation': (_count(2 ** 53), schema.REQUIRED),
})
_NODE = schema.Obj({
    'id': (_count(MAX_NUMA_NODES * 4), schema.REQUIRED),
    'cpus': (_CPUS, schema.REQUIRED),
    'domains': (_list(MAX_DOMAINS, _is_name, 'domain ids'), schema.REQUIRED),
}, make=NumaNode)
_DOMAIN = schema.Obj({
    'id': (_NAME, schema.REQUIRED),
    'level': (_NAME, schema.REQUIRED),
    'numa_node': (_count(MAX_NUMA_NODES * 4), schema.REQUIRED),
    'cpus': (_CPUS, schema.REQUIRED),
    'state': (_one_of(STATES), schema.REQUIRED),
    'spin_storm': (_BOOL, False),
    'servers': (_list(MAX_SERVERS, _is_name, 'server uuids'), ()),
}, make=Domain)
_SERVER = schema.Obj({
    'uuid': (_NAME, schema.REQUIRED),
    'class': (_one_of(CLASSES), 'unknown'),
    'isolation': (_one_of(ISOLATIONS, optional=True), None),
    'domain': (_OPTIONAL_NAME, None),
    'pins': (_PINS, None),
    'vcpus': (_count(limits.MAX_VCPUS, 1), schema.REQUIRED),
    'spin_storm': (_BOOL, False),
    'pcpu_estimate': (_ESTIMATE, None),
    'sizing': (_DETAIL, None),
    'balloon': (_DETAIL, None),
})


_WHERE = 'host view'


def _invalid(message):
    return exception.InvalidInput(reason='%s: %s' % (_WHERE, message))


def _refused(line):
    # Schema messages already name where they are (``host view: ...``).
    return exception.InvalidInput(reason=line)


def _items(docs, field, what, key):
    """Each of ``docs`` checked by ``field``, named in messages."""
    out = []
    for i, doc in enumerate(docs):
        name = doc.get(key)
        named = isinstance(name, (str, int)) and not isinstance(name, bool)
        where = '%s: %s[%d]%s' % (_WHERE, what, i,
                                  ' %r' % (name,) if named else '')
        out.append(field.check(doc, what, where[:2 * MAX_NAME]))
    return tuple(out)


def _server(values):
    values['workload_class'] = values.pop('class')
    return Server(**values)


def _unique(values, what):
    seen = set()
    for value in values:
        if value in seen:
            raise _invalid('%s %r appears twice' % (what, value))
        seen.add(value)


def _owners(groups, members, message):
    """``{member: group id}``; a member of two groups is refused.

    ``members(group)`` lists a group's members; ``message`` is formatted
    with the member and the two groups' ids.
    """
    owner = {}
    for group in groups:
        for member in members(group):
            if member in owner:
                raise _invalid(message % (member, owner[member], group.id))
            owner[member] = group.id
    return owner


def _check_nodes(nodes):
    _unique([n.id for n in nodes], 'NUMA node')
    owner = _owners(nodes, lambda n: n.cpus, 'CPU %d is in NUMA nodes %d '
                    'and %d')
    if len(owner) > MAX_HOST_CPUS:
        raise _invalid('%d CPUs is more than a host has (at most %d)'
                       % (len(owner), MAX_HOST_CPUS))


def _check_domains(nodes, domains):
    _unique([d.id for d in domains], 'domain')
    by_node = {n.id: n for n in nodes}
    listed = _owners(nodes, lambda n: n.domains, 'domain %r is listed by '
                     'NUMA nodes %d and %d')
    for d in domains:
        node = by_node.get(d.numa_node)
        if node is None or listed.get(d.id) != d.numa_node:
            raise _invalid('domain %r: NUMA node %d does not list it'
                           % (d.id, d.numa_node))
        outside = sorted(set(d.cpus) - set(node.cpus))
        if outside:
            raise _invalid('domain %r: CPUs %s are not in NUMA node %d'
                           % (d.id, outside[:8], d.numa_node))
    _owners(domains, lambda d: d.cpus, 'CPU %d is in domains %r and %r')
    unknown = sorted(set(listed) - {d.id for d in domains})
    if unknown:
        raise _invalid('NUMA node %d lists unknown domain %r'
                       % (listed[unknown[0]], unknown[0]))


def _check_servers(view):
    _unique([s.uuid for s in view.servers], 'server')
    uuids = {s.uuid for s in view.servers}
    for d in view.domains:
        for uuid in d.servers:
            if uuid not in uuids:
                raise _invalid('domain %r lists unknown server %r'
                               % (d.id, uuid))
    domain_ids = {d.id for d in view.domains}
    cpus = set(view.cpus)
    for s in view.servers:
        if s.domain is not None and s.domain not in domain_ids:
            raise _invalid('server %r: unknown domain %r'
                           % (s.uuid, s.domain))
        outside = sorted(set(s.pins or ()) - cpus)
        if outside:
            raise _invalid('server %r: pins %s are not CPUs of the host'
                           % (s.uuid, outside[:8]))


def from_document(doc):
    """The :class:`HostView` of a host-view document, or InvalidInput.

    Checks the shape (types, bounds, known states and classes), then the
    rules across fields: unique ids, CPUs in one NUMA node and at most one
    domain, domains inside the node that lists them, servers and pins
    that exist. Unknown keys are ignored.
    """
    with schema.reraise(_refused):
        version = _HEAD.check(doc, _WHERE, _WHERE)['version']
    if version.split('.')[0] != str(MAJOR):
        raise _invalid('version %.20r not supported (major %d expected)'
                       % (version, MAJOR))
    with schema.reraise(_refused):
        top = _DOC.check(doc, _WHERE, _WHERE)
        agent = _AGENT.check(top['agent'], 'agent', _WHERE + ': agent')
        nodes = _items(top['numa_nodes'], _NODE, 'numa_nodes', 'id')
        domains = _items(top['domains'], _DOMAIN, 'domains', 'id')
        servers = tuple(_server(v) for v in _items(
            top['servers'], _SERVER, 'servers', 'uuid'))
    try:
        generated_at = timestamps.parse_time(top['generated_at'])
    except exception.InvalidInput as e:
        raise _invalid('"generated_at": %s' % e.kwargs['reason']) from None
    _check_nodes(nodes)
    _check_domains(nodes, domains)
    view = HostView(
        version=version, host=top['host'], model=top['model'],
        generated_at=generated_at, agent_healthy=agent['healthy'],
        agent_generation=agent['generation'], numa_nodes=nodes,
        domains=domains, servers=servers)
    _check_servers(view)
    return view
