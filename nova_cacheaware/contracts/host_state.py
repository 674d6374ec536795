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
  ``vcpu_sizing`` capability; ``PCPUAvailabilityWeigher`` estimates a new
  instance's pCPUs from it. A 1.0 reader ignores it; a 1.1 reader treats
  its absence as "unknown".
* 1.2: optional ``vcpus_used`` per domain: the vCPUs of the instances the
  agent keeps in that domain (absent or null: unknown). The scheduler's
  in-host domain choice uses it for best fit
  (:mod:`nova_cacheaware.policy.domain_choice`).
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

Optional fields that no minor above announces (a reader of any 1.x
ignores them when unknown; absent or null means unknown): per VM
``pcpu_estimate`` (its pCPU-Est available pCPUs) and ``spin_storm``
(whether the agent's detector sees a lock-holder-preemption storm in it,
:mod:`nova_cacheaware.policy.spin_storm`), and the host's
``available_pcpus`` (pCPUs guests may use); all filled by the agent's
``vcpu_sizing`` capability. ``PCPUAvailabilityWeigher`` gives a host with a
storming VM its lowest weight.
"""

import dataclasses
import datetime
import functools
import math
import typing as ty

from nova_cacheaware.contracts import cache_state
from nova_cacheaware.contracts import vcpu_affinity as affinity_docs
from nova_cacheaware import exception

EVENT_TYPE = 'cacheaware.host.state'
PAYLOAD_NAME = 'CacheAwareHostStatePayload'
VERSION = '1.4'
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

        What the host model's room check and prediction read per request
        (:func:`nova_cacheaware.scheduler.domain_order.room_reason`),
        made once per state and ratio. Capacity is
        :meth:`DomainState.capacity` (None: unknown); Clean holders fall
        back to the memory-bound VMs without ``clean_holders``.
        """
        memo = self.__dict__.setdefault('_rows_by_ratio', {})
        rows = memo.get(cpu_ratio)
        if rows is None:
            rows = memo[cpu_ratio] = tuple(
                (d.id, len(d.memory_bound_vms),
                 len(d.memory_bound_vms) if d.clean_holders is None
                 else d.clean_holders,
                 d.vcpus_used or 0, d.capacity(cpu_ratio))
                for d in self.domains)
        return rows

    @functools.cached_property
    def storming_vms(self):
        """How many of the host's VMs are in a spin storm now."""
        return sum(1 for vm in self.vms if vm.spin_storm)

    @functools.cached_property
    def instance_uuids(self):
        """Uuids of every instance the state lists on the host."""
        return frozenset(vm.instance_uuid for vm in self.vms)

    def domain_by_provider(self):
        """``{provider_uuid: DomainState}`` for domains that name one."""
        return {d.provider_uuid: d for d in self.domains if d.provider_uuid}


def to_payload(state):
    """JSON-ready dict of a :class:`HostCacheState`."""
    return {
        'version': state.version,
        'host': state.host,
        'timestamp': _format_time(state.timestamp),
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
        } for d in state.domains],
        'vms': [dataclasses.asdict(vm) for vm in state.vms],
        'vcpu_affinity': (None if state.vcpu_affinity is None
                          else state.vcpu_affinity.to_dict()),
        'host_provider': state.host_provider,
    }


def from_payload(payload):
    """Parse a payload dict into a :class:`HostCacheState`.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` naming the first
    problem: wrong major version, missing or mistyped field, unknown domain
    state or VM class, a domain state that contradicts its VM list.
    """
    doc = _mapping(payload, 'payload')
    version = _str(doc, 'version')
    if version.split('.')[0] != str(MAJOR):
        raise exception.InvalidInput(
            reason='payload version %s not supported (major %d expected)'
                   % (version, MAJOR))
    domains = tuple(_domain(d) for d in _list(doc, 'domains'))
    ids = [d.id for d in domains]
    if len(set(ids)) != len(ids):
        raise exception.InvalidInput(reason='duplicate domain ids %s' % ids)
    pcpus = doc.get('available_pcpus')
    if pcpus is not None:
        pcpus = _number(pcpus, 'available_pcpus')
    affinity = doc.get('vcpu_affinity')
    if affinity is not None:
        try:
            affinity = affinity_docs.EstimateRequest.from_dict(affinity)
        except exception.InvalidInput as e:
            raise exception.InvalidInput(
                reason='vcpu_affinity: %s' % e.kwargs.get('reason', e))
    healthy = doc.get('agent_healthy')
    if not isinstance(healthy, bool):
        raise exception.InvalidInput(reason='agent_healthy must be a bool')
    host_provider = doc.get('host_provider')
    if host_provider is not None:
        host_provider = _str_item(host_provider, 'host_provider')
    return HostCacheState(
        host=_str(doc, 'host'),
        timestamp=_parse_time(_str(doc, 'timestamp')),
        agent_healthy=healthy,
        domains=domains,
        vms=tuple(_vm(v) for v in _list(doc, 'vms')),
        available_pcpus=pcpus,
        version=version,
        vcpu_affinity=affinity,
        host_provider=host_provider)


def _domain(raw):
    doc = _mapping(raw, 'domain')
    vms = tuple(_str_item(v, 'memory_bound_vms')
                for v in _list(doc, 'memory_bound_vms'))
    state = _str(doc, 'state')
    if state not in DOMAIN_STATES:
        raise exception.InvalidInput(
            reason='domain state %r not one of %s' % (state, DOMAIN_STATES))
    if state != domain_state(len(vms)):
        raise exception.InvalidInput(
            reason='domain %s is %s but lists %d memory-bound VMs'
                   % (doc.get('id'), state, len(vms)))
    usable = doc.get('usable_cpus', 0)
    if not isinstance(usable, int) or isinstance(usable, bool) or usable < 0:
        raise exception.InvalidInput(reason='usable_cpus must be an int >= 0')
    provider = doc.get('provider_uuid')
    if provider is not None and not isinstance(provider, str):
        raise exception.InvalidInput(reason='provider_uuid must be a string')
    counts = {key: _optional_count(doc, key) for key in (
        'vcpus_used', 'vcpus_capacity', 'clean_holders')}
    return DomainState(id=_str(doc, 'id'), state=state, memory_bound_vms=vms,
                       usable_cpus=usable, provider_uuid=provider, **counts)


def _optional_count(doc, key):
    value = doc.get(key)
    if value is not None and (not isinstance(value, int)
                              or isinstance(value, bool) or value < 0):
        raise exception.InvalidInput(
            reason='%s must be an int >= 0 or null' % key)
    return value


def _vm(raw):
    doc = _mapping(raw, 'vm')
    klass = doc.get('workload_class', 'unknown')
    if klass not in VM_CLASSES:
        raise exception.InvalidInput(
            reason='workload_class %r not one of %s' % (klass, VM_CLASSES))
    estimate = doc.get('pcpu_estimate')
    if estimate is not None:
        estimate = _number(estimate, 'pcpu_estimate')
    domain = doc.get('domain_id')
    if domain is not None and not isinstance(domain, str):
        raise exception.InvalidInput(reason='domain_id must be a string')
    storm = doc.get('spin_storm')
    if storm is not None and not isinstance(storm, bool):
        raise exception.InvalidInput(reason='spin_storm must be a bool')
    return VmState(instance_uuid=_str(doc, 'instance_uuid'),
                   workload_class=klass, domain_id=domain,
                   pcpu_estimate=estimate, spin_storm=storm)


def _mapping(value, what):
    if not isinstance(value, dict):
        raise exception.InvalidInput(reason='%s must be an object' % what)
    return value


def _list(doc, key):
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise exception.InvalidInput(reason='%s must be a list' % key)
    return value


def _str(doc, key):
    return _str_item(doc.get(key), key)


def _str_item(value, key):
    if not isinstance(value, str) or not value:
        raise exception.InvalidInput(
            reason='%s must be a non-empty string' % key)
    return value


def _number(value, key):
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < 0):
        raise exception.InvalidInput(
            reason='%s must be a finite number >= 0' % key)
    return float(value)


def _format_time(moment):
    return moment.astimezone(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%S.%fZ')


def _parse_time(text):
    try:
        moment = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        raise exception.InvalidInput(
            reason='timestamp %r is not ISO 8601' % text) from None
    if moment.tzinfo is None:
        raise exception.InvalidInput(
            reason='timestamp %r has no time zone' % text)
    return moment.astimezone(datetime.timezone.utc)
