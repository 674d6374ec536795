"""The live state's wire forms: compact state 2.x, heartbeat, dispatch.

Payload 1.x (:mod:`.host_state`) is a host's whole state every agent
period. At the design's region (10 000 hosts, 200 VMs each) that is
hundreds of MB/s per scheduler worker, most of it unchanged. Major 2
splits it the way Nova splits ``update_instance_info`` from its service
heartbeat (and Kubernetes its Lease from NodeStatus):

* ``cacheaware.host.heartbeat`` (:class:`Heartbeat`): host, health and
  the ``generation`` of the newest state, sent at ``[agent]
  state_heartbeat_s``; a few hundred bytes.
* ``cacheaware.host.state`` 2.0 (:func:`to_compact`): the full state,
  sent when it changes (a new ``generation``) and at ``[agent]
  state_resync_s``. Compact: the instance uuids as one base64 string of
  16-byte uuids (sorted), each domain's memory-bound instances as indices
  into it, no per-VM records (the scheduler reads only the number of VMs
  in a spin storm), and instead of every vCPU's CPU list the pCPU-Est
  share levels the weigher needs (:class:`PcpuLevels`, exact:
  :mod:`nova_cacheaware.pcpu_est.headroom`). Optional fields are left
  out when unknown.

:func:`parse_state` reads either major; :func:`render_state` writes the
version an agent is pinned to (``[agent] state_payload_version``).
Readers ignore keys they do not know, so 2.x minors may add fields.
Pure module.
"""

import base64
import binascii
import dataclasses
import typing as ty
import uuid as uuid_mod

from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import instance_ids
from nova_cacheaware.contracts import schema
from nova_cacheaware.contracts import timestamps
from nova_cacheaware import exception

HEARTBEAT_EVENT = 'cacheaware.host.heartbeat'
VERSION = '2.0'
MAJOR = 2
#: The versions an agent can be told to write.
WRITABLE = (VERSION, host_state.VERSION)
#: The RPC namespace and version of ``send_state(spread)``, the schedulers'
#: request for an agent's full state (cast on the agents' RPC topic).
STATE_REQUEST_NAMESPACE = 'cacheaware_state'
STATE_REQUEST_VERSION = '1.0'


@dataclasses.dataclass(frozen=True)
class PcpuLevels:
    """A host's pCPU-Est summary: what a new instance's share needs.

    ``pcpus``: the pCPUs a new floating instance may use; ``levels``:
    ``((numerator, denominator, vCPUs), ...)``, the exact max-min fair
    share of the current vCPUs and how many vCPUs have it, ascending.
    """

    pcpus: int
    levels: ty.Tuple[ty.Tuple[int, int, int], ...] = ()


@dataclasses.dataclass(frozen=True)
class Heartbeat:
    """The agent of ``host`` is alive; its newest state is ``generation``."""

    host: str
    generation: int
    agent_healthy: bool = True
    version: str = VERSION


def render_state(state, version=VERSION):
    """The payload of ``state`` in ``version`` (one of :data:`WRITABLE`)."""
    if version == VERSION:
        return to_compact(state)
    if version == host_state.VERSION:
        return host_state.to_payload(state)
    raise ValueError('cannot write payload version %r (one of %s)'
                     % (version, ', '.join(WRITABLE)))


def parse_state(payload, make=None):
    """A ``cacheaware.host.state`` payload of major 1 or 2, parsed.

    :class:`~nova_cacheaware.exception.InvalidInput` for any other major
    or a malformed payload (one line naming the problem). ``make``: the
    :class:`~.host_state.HostCacheState` subclass to build, if not it.
    """
    with schema.reraise(_invalid):
        version = host_state.VERSION_FIELD.check(
            payload, 'payload', '')['version']
    if version.split('.')[0] == str(MAJOR):
        return from_compact(payload, make)
    return host_state.from_payload(payload, make)


def to_compact(state):
    """JSON-ready 2.0 dict of a :class:`~.host_state.HostCacheState`.

    Instance ids must be uuids (Nova's are), and a domain's memory-bound
    instances among them: ``ValueError`` (or ``KeyError``) otherwise.
    """
    uuids = sorted(str(uuid_mod.UUID(u)) for u in state.instance_uuids)
    index = {u: i for i, u in enumerate(uuids)}
    raw = b''.join(uuid_mod.UUID(u).bytes for u in uuids)
    doc = {'version': VERSION, 'host': state.host,
           'timestamp': timestamps.format_time(state.timestamp),
           'generation': state.generation or 0,
           'agent_healthy': state.agent_healthy,
           'instances': base64.b64encode(raw).decode('ascii'),
           'domains': [_domain_doc(d, index) for d in state.domains]}
    _put(doc, 'host_provider', state.host_provider)
    _put(doc, 'available_pcpus', state.available_pcpus)
    _put(doc, 'storming_vms', state.storming_vms
         if state.vms or state.storming is not None else None)
    levels = state.pcpu_levels
    if levels is not None:
        doc['pcpu_levels'] = {'pcpus': levels.pcpus,
                              'levels': [list(x) for x in levels.levels]}
    return doc


def _domain_doc(domain, index):
    doc = {'id': domain.id, 'usable_cpus': domain.usable_cpus,
           'memory_bound': [index[str(uuid_mod.UUID(u))]
                            for u in domain.memory_bound_vms]}
    for key in ('provider_uuid', 'vcpus_used', 'vcpus_capacity',
                'clean_holders', 'required_holders'):
        _put(doc, key, getattr(domain, key))
    return doc


def _put(doc, key, value):
    if value is not None:
        doc[key] = value


def _invalid(message):
    return exception.InvalidInput(reason=message)


def _is_count(value):
    return (isinstance(value, int) and not isinstance(value, bool)
            and value >= 0)


_COUNT = schema.Check(_is_count, '%(key)s must be an int >= 0')
_OPTIONAL_COUNT = schema.Check(lambda v: v is None or _is_count(v),
                               '%(key)s must be an int >= 0')
_TEXT = schema.Check(lambda v: isinstance(v, str) and v != '',
                     '%(key)s must be a non-empty string')
_OPTIONAL_TEXT = schema.Check(lambda v: v is None or (isinstance(v, str)
                                                      and v != ''),
                              '%(key)s must be a non-empty string')
_LIST = '%(key)s must be a list'

DOMAIN = schema.Obj({
    'id': (_TEXT, schema.AS_NULL),
    'usable_cpus': (_COUNT, 0),
    'memory_bound': (schema.ListOf(_COUNT, _LIST), ()),
    'provider_uuid': (_OPTIONAL_TEXT, None),
    'vcpus_used': (_OPTIONAL_COUNT, None),
    'vcpus_capacity': (_OPTIONAL_COUNT, None),
    'clean_holders': (_OPTIONAL_COUNT, None),
    'required_holders': (_OPTIONAL_COUNT, None),
}, 'domain must be an object')
LEVELS = schema.Obj({
    'pcpus': (schema.Check(lambda v: _is_count(v) and v > 0,
                           '%(key)s must be an int >= 1'), schema.AS_NULL),
    'levels': (schema.ListOf(schema.Check(
        lambda v: (isinstance(v, list) and len(v) == 3
                   and all(_is_count(x) for x in v) and v[1] > 0),
        '%(key)s must be [numerator, denominator >= 1, vCPUs]'), _LIST), ()),
}, 'pcpu_levels must be an object')
#: What a state and a heartbeat both say of their sender.
_SENDER = {
    'host': (_TEXT, schema.AS_NULL),
    'generation': (_COUNT, schema.AS_NULL),
    'agent_healthy': (schema.Check(schema.is_bool, '%(key)s must be a bool'),
                      schema.AS_NULL),
}
PAYLOAD = schema.Obj(dict(
    _SENDER,
    timestamp=(_TEXT, schema.AS_NULL),
    instances=(schema.Check(lambda v: isinstance(v, str),
                            '%(key)s must be a string'), ''),
    domains=(schema.ListOf(DOMAIN, _LIST), ()),
    host_provider=(_OPTIONAL_TEXT, None),
    available_pcpus=(host_state.OPTIONAL_AMOUNT, None),
    storming_vms=(_OPTIONAL_COUNT, None),
    pcpu_levels=(schema.Check(lambda v: v is None or isinstance(v, dict),
                              'pcpu_levels must be an object'), None)))
HEARTBEAT = schema.Obj(dict(_SENDER, version=(_TEXT, schema.AS_NULL)),
                       'payload must be an object')


def from_compact(payload, make=None):
    """Parse a 2.x payload into a :class:`~.host_state.HostCacheState`.

    ``make``: the subclass to build, as for :func:`parse_state`.

    :class:`~nova_cacheaware.exception.InvalidInput` naming the first
    problem. The state has no per-VM records: its instance uuids, spin
    storm count and pCPU levels stand for them.
    """
    with schema.reraise(_invalid):
        doc = PAYLOAD.check(payload, 'payload', '')
        levels = doc['pcpu_levels']
        if levels is not None:
            levels = LEVELS.check(levels, 'pcpu_levels', '')
    ids = _instances(doc['instances'])
    domains = []
    for d in doc['domains']:
        try:
            bound = tuple(ids.uuid_at(i) for i in d['memory_bound'])
        except IndexError:
            raise _invalid('domain %s: memory_bound index out of range'
                           % d['id']) from None
        domains.append(host_state.DomainState(
            id=d['id'], state=host_state.domain_state(len(bound)),
            memory_bound_vms=bound, usable_cpus=d['usable_cpus'],
            provider_uuid=d['provider_uuid'], vcpus_used=d['vcpus_used'],
            vcpus_capacity=d['vcpus_capacity'],
            clean_holders=d['clean_holders'],
            required_holders=d['required_holders']))
    names = [d.id for d in domains]
    if len(set(names)) != len(names):
        raise _invalid('duplicate domain ids %s' % names)
    return (make or host_state.HostCacheState)(
        host=doc['host'], timestamp=timestamps.parse_time(doc['timestamp']),
        agent_healthy=doc['agent_healthy'], domains=tuple(domains),
        available_pcpus=doc['available_pcpus'],
        version=payload['version'], host_provider=doc['host_provider'],
        generation=doc['generation'], listed=ids,
        storming=doc['storming_vms'],
        pcpu_levels=None if levels is None else PcpuLevels(
            pcpus=levels['pcpus'],
            levels=tuple(tuple(x) for x in levels['levels'])))


def _instances(text):
    try:
        raw = base64.b64decode(text.encode('ascii'), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise _invalid('instances must be base64') from None
    if len(raw) % 16:
        raise _invalid('instances must be whole 16-byte uuids')
    ids = instance_ids.InstanceIds(raw)
    if ids.raw != raw:
        # The domains name members by their index in this order.
        raise _invalid('instances must be sorted and unique')
    return ids


def heartbeat_payload(beat):
    """JSON-ready dict of a :class:`Heartbeat`."""
    return {'version': beat.version, 'host': beat.host,
            'generation': beat.generation,
            'agent_healthy': beat.agent_healthy}


def parse_heartbeat(payload):
    """A :class:`Heartbeat` of a ``cacheaware.host.heartbeat`` payload.

    :class:`~nova_cacheaware.exception.InvalidInput` on another major or
    a malformed payload.
    """
    with schema.reraise(_invalid):
        doc = HEARTBEAT.check(payload, 'payload', '')
    if doc['version'].split('.')[0] != str(MAJOR):
        raise _invalid('heartbeat version %s not supported (major %d '
                       'expected)' % (doc['version'], MAJOR))
    return Heartbeat(host=doc['host'], generation=doc['generation'],
                     agent_healthy=doc['agent_healthy'],
                     version=doc['version'])
