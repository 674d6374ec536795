"""The ``cacheaware.host.state`` notification payload (versioned).

Pure module: plain frozen dataclasses that round-trip to JSON. The agent
builds a :class:`HostCacheState` and publishes :func:`to_payload` of it; the
scheduler's listener turns payloads back with :func:`from_payload`, which
refuses anything malformed with
:class:`~nova_cacheaware.exception.InvalidInput` (payloads come from the
message bus: never trust them blindly). What only nova-scheduler derives
from a received state (the pCPU headroom, the weigher's memo) is added by
:mod:`nova_cacheaware.scheduler.host_state`.

Versioning follows Nova's versioned notifications: ``MAJOR.MINOR``. A reader
accepts any payload of its major version (unknown fields are ignored, so
minors may add fields); another major is refused.

Minor versions:

* 1.0: domains, VMs, health.
* 1.1: optional ``vcpu_affinity``: the host's current VMs as the
  ``pcpu-est`` input document (``{"pcpus": [...], "vms": {uuid: {"vcpus":
  {index: [pCPU...]}, "caps": {index: cap}}}}``), published by the agent's
  ``vcpu_sizing`` capability; ``CacheAwareWeigher`` estimates a new
  instance's pCPUs from it. A 1.0 reader ignores it; a 1.1 reader treats
  its absence as "unknown".
* 1.2: optional ``vcpus_used`` per domain: the vCPUs of the instances the
  agent keeps in that domain (absent or null: unknown). The scheduler's
  in-host domain choice uses it for best fit
  (:mod:`nova_cacheaware.cachedomain.choice`).
* 1.3: optional top-level ``host_provider``: the uuid of the host's one
  cache child provider (``<compute node RP name>:cacheaware``) when the
  agent runs the host provider model (``[placement] provider_model =
  host``); its domains then name no provider (``provider_uuid`` null).
  Absent or null: the domain model (each domain names its provider) or
  unknown. The scheduler predicts the domain the agent will choose on
  such hosts (:mod:`nova_cacheaware.scheduler.domain_order`).
* 1.4: optional per domain ``vcpus_capacity``, the vCPUs the domain holds
  All-share as the agent sizes it (its usable CPUs times the agent's CPU
  allocation ratio, ``[agent] domain_cpu_allocation_ratio`` when set), and
  ``clean_holders``, the instances the agent's domain choice counts against
  Clean there (memory-bound VMs it pins there plus host-held instances
  that want Clean). The scheduler sizes domains with the first and
  predicts the agent's choice with the second; absent or null (older
  agents), it falls back to the usable CPUs times Nova's
  ``cpu_allocation_ratio`` and to the memory-bound VMs.
* 2.0: the compact state of :mod:`.state_wire` (and its heartbeat). A
  1.x reader refuses it: upgrade the schedulers first, or pin the agents
  to 1.5 (``[agent] state_payload_version``).
* 1.5: optional per domain ``required_holders``, the instances the agent
  keeps there whose flavor asks ``cache_clean=required``. The scheduler
  keeps other memory-bound requests out of such a domain: sharing it would
  take those instances' guaranteed Clean domain from them. Absent or null
  (older agents): none known.

Optional fields that no minor above announces (a reader of any 1.x
ignores them when unknown; absent or null means unknown): per VM
``pcpu_estimate`` (its pCPU-Est available pCPUs) and ``spin_storm``
(whether the agent's detector sees a lock-holder-preemption storm in it,
:mod:`nova_cacheaware.vcpu_sizing.spin_storm`), and the host's
``available_pcpus`` (pCPUs guests may use); all filled by the agent's
``vcpu_sizing`` capability. ``CacheAwareWeigher`` gives a host with a
storming VM its lowest weight.
"""

import dataclasses
import datetime
import functools
import sys
import typing as ty

from nova_cacheaware.contracts import cache_state
from nova_cacheaware.contracts import schema
from nova_cacheaware.contracts import timestamps
from nova_cacheaware.contracts import vcpu_affinity as affinity_docs
from nova_cacheaware import exception

EVENT_TYPE = 'cacheaware.host.state'
PAYLOAD_NAME = 'CacheAwareHostStatePayload'
VERSION = '1.5'
MAJOR = 1

DOMAIN_STATES = cache_state.DOMAIN_STATES
VM_CLASSES = ('memory', 'cpu', 'io', 'unknown')


def domain_state(memory_bound_vms):
    """Empty (no memory-bound VM), Clean (one) or Dirty (more): study 000."""
    return cache_state.cache_state(memory_bound_vms)


@dataclasses.dataclass(frozen=True)
class DomainState:
    """One cache domain of the host as the agent sees it."""

    id: str
    state: str
    memory_bound_vms: ty.Tuple[str, ...] = ()
    usable_cpus: int = 0
    provider_uuid: ty.Optional[str] = None
    #: vCPUs of the instances kept in the domain (1.2); None: unknown.
    vcpus_used: ty.Optional[int] = None
    #: vCPUs the domain holds All-share as the agent sizes it (1.4);
    #: None: unknown (usable CPUs x Nova's ratio is assumed).
    vcpus_capacity: ty.Optional[int] = None
    #: Instances the agent's domain choice counts against Clean (1.4);
    #: None: unknown (the memory-bound VMs are assumed).
    clean_holders: ty.Optional[int] = None
    #: ``cache_clean=required`` instances kept there (1.5); None: unknown.
    required_holders: ty.Optional[int] = None

    def capacity(self, cpu_ratio):
        """vCPUs the domain holds All-share, or None when unknown.

        The agent's ``vcpus_capacity`` when published, else the usable
        CPUs times ``cpu_ratio`` (Nova's ratio of the host: what agents
        before payload 1.4 are assumed to use). Unknown without usable
        CPUs or without ``vcpus_used`` (fullness cannot be judged).
        """
        if self.vcpus_used is None:
            return None
        if self.vcpus_capacity is not None:
            return self.vcpus_capacity
        return int(self.usable_cpus * cpu_ratio) if self.usable_cpus else None


@dataclasses.dataclass(frozen=True)
class VmState:
    """One instance: its (declared or classified) class and pCPU estimate."""

    instance_uuid: str
    workload_class: str = 'unknown'
    domain_id: ty.Optional[str] = None
    pcpu_estimate: ty.Optional[float] = None
    #: In a spin storm (agent's vcpu_sizing); None: unknown.
    spin_storm: ty.Optional[bool] = None


@dataclasses.dataclass(frozen=True)
class HostCacheState:
    """A compute host's cache-domain state at ``timestamp`` (UTC).

    ``host`` is the Nova compute service's host name (``[DEFAULT] host`` of
    nova-compute, ``HostState.host`` in the scheduler): the scheduler looks
    states up by it.
    """

    host: str
    timestamp: datetime.datetime
    agent_healthy: bool
    domains: ty.Tuple[DomainState, ...] = ()
    vms: ty.Tuple[VmState, ...] = ()
    available_pcpus: ty.Optional[float] = None
    version: str = VERSION
    #: The host's VMs, affinities and caps (payload 1.1); None: unknown.
    vcpu_affinity: ty.Optional[affinity_docs.EstimateRequest] = None
    #: The host's one cache child provider in the host model (1.3); None:
    #: the domain model or unknown.
    host_provider: ty.Optional[str] = None
    #: Numbers the agent's states; a heartbeat names the newest (2.0).
    #: None: a 1.x state (each one is its own confirmation).
    generation: ty.Optional[int] = None
    #: The instance uuids where no per-VM records came (2.0, an
    #: ``instance_ids.InstanceIds``); None: the uuids of ``vms``.
    listed: ty.Optional[ty.Any] = None
    #: VMs in a spin storm where no per-VM records came (2.0).
    storming: ty.Optional[int] = None
    #: The pCPU-Est summary (``state_wire.PcpuLevels``, 2.0) where no
    #: ``vcpu_affinity`` came; None: unknown.
    pcpu_levels: ty.Optional[ty.Any] = None

    # Derived values are computed once per received state: the scheduler
    # reads them for every request on every host.
    @functools.cached_property
    def empty_domains(self):
        """Number of domains without a memory-bound VM."""
        return sum(1 for d in self.domains if d.state == cache_state.EMPTY)

    @functools.cached_property
    def memory_bound_vms(self):
        """Number of memory-bound VMs over all domains."""
        return sum(len(d.memory_bound_vms) for d in self.domains)

    @functools.cached_property
    def busy_providers(self):
        """Provider uuids of domains holding a memory-bound VM."""
        return frozenset(d.provider_uuid for d in self.domains
                         if d.provider_uuid and d.memory_bound_vms)

    @functools.cached_property
    def domain_providers(self):
        """Provider uuids the domains name (empty in the host model)."""
        return frozenset(d.provider_uuid for d in self.domains
                         if d.provider_uuid)

    def domain_rows(self, cpu_ratio):
        """``(id, memory-bound, Clean holders, vCPUs used, capacity)`` rows.

        What the host model's room check and prediction read
        (:func:`nova_cacheaware.scheduler.domain_order.room_reason`; the
        scheduler's state keeps them per ratio). Capacity is
        :meth:`DomainState.capacity` (None: unknown); Clean holders fall
        back to the memory-bound VMs without ``clean_holders``.
        """
        return tuple(
            (d.id, len(d.memory_bound_vms),
             len(d.memory_bound_vms) if d.clean_holders is None
             else d.clean_holders,
             d.vcpus_used or 0, d.capacity(cpu_ratio))
            for d in self.domains)

    @functools.cached_property
    def required_domains(self):
        """Ids of the domains holding a ``cache_clean=required`` instance."""
        return frozenset(d.id for d in self.domains if d.required_holders)

    @functools.cached_property
    def storming_vms(self):
        """How many of the host's VMs are in a spin storm now."""
        if not self.vms and self.storming is not None:
            return self.storming
        return sum(1 for vm in self.vms if vm.spin_storm)

    @functools.cached_property
    def instance_uuids(self):
        """Uuids of every instance the state lists on the host."""
        if self.listed is not None:
            return self.listed
        return frozenset(vm.instance_uuid for vm in self.vms)

    def domain_by_provider(self):
        """``{provider_uuid: DomainState}`` for domains that name one."""
        return {d.provider_uuid: d for d in self.domains if d.provider_uuid}


def to_payload(state):
    """JSON-ready dict of a :class:`HostCacheState`."""
    return {
        'version': state.version,
        'host': state.host,
        'timestamp': timestamps.format_time(state.timestamp),
        'agent_healthy': state.agent_healthy,
        'available_pcpus': state.available_pcpus,
        'domains': [{
            'id': d.id, 'state': d.state,
            'memory_bound_vms': list(d.memory_bound_vms),
            'usable_cpus': d.usable_cpus,
            'provider_uuid': d.provider_uuid,
            'vcpus_used': d.vcpus_used,
            'vcpus_capacity': d.vcpus_capacity,
            'clean_holders': d.clean_holders,
            'required_holders': d.required_holders,
        } for d in state.domains],
        'vms': [dataclasses.asdict(vm) for vm in state.vms],
        'vcpu_affinity': (None if state.vcpu_affinity is None
                          else state.vcpu_affinity.to_dict()),
        'host_provider': state.host_provider,
    }


def _is_text(value):
    return isinstance(value, str) and value != ''


def _is_count(value):
    return (isinstance(value, int) and not isinstance(value, bool)
            and value >= 0)


def _is_amount(value):
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            value = float(value)
        except OverflowError:
            # Beyond a float's range: refused (the old walker crashed).
            return False
    return isinstance(value, float) and 0 <= value <= sys.float_info.max


def _to_float(value):
    return None if value is None else float(value)


# The payload, declared once. Messages are whole lines worded as before
# the declared schema (they name the field). Keys a schema does not name
# are ignored: a newer minor version may add fields.
_TEXT = schema.Check(_is_text, '%(key)s must be a non-empty string')
_LIST = '%(key)s must be a list'
_OPTIONAL_COUNT = schema.Check(
    lambda v: v is None or _is_count(v), '%(key)s must be an int >= 0 or null')
OPTIONAL_AMOUNT = schema.Check(
    lambda v: v is None or _is_amount(v),
    '%(key)s must be a finite number >= 0', _to_float)
_OPTIONAL_STR = schema.Check(
    lambda v: v is None or isinstance(v, str), '%(key)s must be a string')

#: One cache domain (its state must match its memory-bound VMs: checked
#: by :func:`from_payload` after the shape).
DOMAIN = schema.Obj({
    'memory_bound_vms': (schema.ListOf(_TEXT, _LIST), ()),
    'state': (schema.All(_TEXT, schema.Check(
        lambda v: v in DOMAIN_STATES,
        'domain state %%(value)r not one of %s' % (DOMAIN_STATES,))),
        schema.AS_NULL),
    'usable_cpus': (schema.Check(_is_count, '%(key)s must be an int >= 0'),
                    0),
    'provider_uuid': (_OPTIONAL_STR, None),
    'vcpus_used': (_OPTIONAL_COUNT, None),
    'vcpus_capacity': (_OPTIONAL_COUNT, None),
    'clean_holders': (_OPTIONAL_COUNT, None),
    'required_holders': (_OPTIONAL_COUNT, None),
    'id': (_TEXT, schema.AS_NULL),
}, 'domain must be an object', make=DomainState)
#: One instance.
VM = schema.Obj({
    'workload_class': (schema.Check(
        lambda v: v in VM_CLASSES,
        '%%(key)s %%(value)r not one of %s' % (VM_CLASSES,)), 'unknown'),
    'pcpu_estimate': (OPTIONAL_AMOUNT, None),
    'domain_id': (_OPTIONAL_STR, None),
    'spin_storm': (schema.Check(lambda v: v is None or isinstance(v, bool),
                                '%(key)s must be a bool'), None),
    'instance_uuid': (_TEXT, schema.AS_NULL),
}, 'vm must be an object', make=VmState)
#: Checked first, alone: another major version may have another shape.
VERSION_FIELD = schema.Obj({'version': (_TEXT, schema.AS_NULL)},
                           'payload must be an object')
#: The rest of a payload of this major version. ``vcpu_affinity`` is the
#: ``pcpu-est`` input document, checked by its own contract.
PAYLOAD = schema.Obj({
    'domains': (schema.ListOf(DOMAIN, _LIST), ()),
    'available_pcpus': (OPTIONAL_AMOUNT, None),
    'agent_healthy': (schema.Check(schema.is_bool, '%(key)s must be a bool'),
                      schema.AS_NULL),
    'host_provider': (schema.Check(lambda v: v is None or _is_text(v),
                                   '%(key)s must be a non-empty string'),
                      None),
    'host': (_TEXT, schema.AS_NULL),
    'timestamp': (_TEXT, schema.AS_NULL),
    'vms': (schema.ListOf(VM, _LIST), ()),
})


def _invalid(message):
    return exception.InvalidInput(reason=message)


def from_payload(payload, make=None):
    """Parse a payload dict into a :class:`HostCacheState`.

    ``make``: the class to build (a subclass; the scheduler's keeps its
    derived values), :class:`HostCacheState` by default.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` naming the first
    problem: wrong major version, missing or mistyped field, unknown domain
    state or VM class, a domain state that contradicts its VM list.
    Unknown fields are ignored (a newer minor version's).
    """
    with schema.reraise(_invalid):
        version = VERSION_FIELD.check(payload, 'payload', '')['version']
    if version.split('.')[0] != str(MAJOR):
        raise _invalid('payload version %s not supported (major %d '
                       'expected)' % (version, MAJOR))
    with schema.reraise(_invalid):
        doc = PAYLOAD.check(payload, 'payload', '')
    # The rules across fields, on a payload of the right shape.
    domains = doc['domains']
    for d in domains:
        if d.state != domain_state(len(d.memory_bound_vms)):
            raise _invalid('domain %s is %s but lists %d memory-bound VMs'
                           % (d.id, d.state, len(d.memory_bound_vms)))
    ids = [d.id for d in domains]
    if len(set(ids)) != len(ids):
        raise _invalid('duplicate domain ids %s' % ids)
    affinity = payload.get('vcpu_affinity')
    if affinity is not None:
        try:
            affinity = affinity_docs.EstimateRequest.from_dict(affinity)
        except exception.InvalidInput as e:
            raise _invalid('vcpu_affinity: %s' % e.kwargs.get('reason', e))
    return (make or HostCacheState)(
        host=doc['host'], timestamp=timestamps.parse_time(doc['timestamp']),
        agent_healthy=doc['agent_healthy'], domains=domains, vms=doc['vms'],
        available_pcpus=doc['available_pcpus'], version=version,
        vcpu_affinity=affinity, host_provider=doc['host_provider'])
