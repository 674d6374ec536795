"""The host-state payload walker before the declared schema."""
# flake8: noqa

import datetime
import math

from nova_cacheaware.contracts import vcpu_affinity as affinity_docs
from nova_cacheaware.contracts.host_state import (
    DOMAIN_STATES, DomainState, HostCacheState, MAJOR, VM_CLASSES, VmState,
    domain_state)
from nova_cacheaware import exception

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
