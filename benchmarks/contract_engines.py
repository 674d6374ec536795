"""The live state's payload: our checks and encoding against the ecosystem's.

Usage, from the repository root::

    .venv/bin/python benchmarks/contract_engines.py [--hosts 64] [--vms 200]
        [--repeats 5] [--out benchmarks/results/contract_engines.json]

Every scheduler worker reads every host's ``cacheaware.host.state``
(payload 2.0, :mod:`nova_cacheaware.contracts.state_wire`): at the design's
region, 10 000 hosts, about a thousand states a second through the state
relays. On real 2.0 states of simulated 16-domain hosts with ``--vms``
VMs (the region benchmarks' agents), per state, CPU time
(``time.process_time``), the median of ``--repeats`` passes over every
state:

* **ours**: :func:`~nova_cacheaware.contracts.state_wire.parse_state`, the
  checks (:mod:`nova_cacheaware.contracts.schema`) and the typed state;
* **jsonschema**: the same document's checks written as a JSON Schema
  (draft 7: types, bounds, required keys, the domains' objects), validated
  with ``jsonschema``'s compiled ``Draft7Validator`` - the checks alone,
  without building anything;
* **oslo.versionedobjects**: the same fields as versioned objects (a host
  object with a list of domain objects, as Nova's notification payloads
  are), ``obj_from_primitive`` of their primitive - the deserialisation
  and the fields' coercion Nova's versioned notifications pay - and the
  primitive's size as JSON against the 2.0 payload's.
"""

import argparse
import json
import os
import statistics
import sys
import time

import jsonschema
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields as ovo_fields

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import common  # noqa: E402
from benchmarks import listener_cost  # noqa: E402
from nova_cacheaware.contracts import state_wire  # noqa: E402

_COUNT = {'type': 'integer', 'minimum': 0}
_OPTIONAL_COUNT = {'type': ['integer', 'null'], 'minimum': 0}
_TEXT = {'type': 'string', 'minLength': 1}
#: What :data:`state_wire.PAYLOAD` checks, as a JSON Schema.
SCHEMA = {
    'type': 'object',
    'required': ['version', 'host', 'generation', 'agent_healthy',
                 'timestamp'],
    'properties': {
        'version': {'type': 'string', 'pattern': r'^2\.'},
        'host': _TEXT, 'generation': _COUNT,
        'agent_healthy': {'type': 'boolean'}, 'timestamp': _TEXT,
        'instances': {'type': 'string'},
        'host_provider': {'type': ['string', 'null'], 'minLength': 1},
        'available_pcpus': {'type': ['number', 'null'], 'minimum': 0},
        'storming_vms': _OPTIONAL_COUNT,
        'pcpu_levels': {
            'type': ['object', 'null'],
            'properties': {
                'pcpus': {'type': 'integer', 'minimum': 1},
                'levels': {'type': 'array', 'items': {
                    'type': 'array', 'minItems': 3, 'maxItems': 3,
                    'items': _COUNT}}}},
        'domains': {'type': 'array', 'items': {
            'type': 'object', 'required': ['id'],
            'properties': {
                'id': _TEXT, 'usable_cpus': _COUNT,
                'memory_bound': {'type': 'array', 'items': _COUNT},
                'provider_uuid': {'type': ['string', 'null'],
                                  'minLength': 1},
                'vcpus_used': _OPTIONAL_COUNT,
                'vcpus_capacity': _OPTIONAL_COUNT,
                'clean_holders': _OPTIONAL_COUNT,
                'required_holders': _OPTIONAL_COUNT}}}}}


@ovo_base.VersionedObjectRegistry.register
class DomainPayload(ovo_base.VersionedObject):
    """A domain of the state as a versioned object."""

    OBJ_PROJECT_NAMESPACE = 'cacheaware_bench'
    VERSION = '1.0'
    fields = {
        'id': ovo_fields.StringField(),
        'usable_cpus': ovo_fields.IntegerField(),
        'memory_bound': ovo_fields.ListOfIntegersField(),
        'provider_uuid': ovo_fields.StringField(nullable=True),
        'vcpus_used': ovo_fields.IntegerField(nullable=True),
        'vcpus_capacity': ovo_fields.IntegerField(nullable=True),
        'clean_holders': ovo_fields.IntegerField(nullable=True),
        'required_holders': ovo_fields.IntegerField(nullable=True),
    }


@ovo_base.VersionedObjectRegistry.register
class HostPayload(ovo_base.VersionedObject):
    """The state as a versioned object (Nova's notification payloads' way)."""

    OBJ_PROJECT_NAMESPACE = 'cacheaware_bench'
    VERSION = '1.0'
    fields = {
        'host': ovo_fields.StringField(),
        'generation': ovo_fields.IntegerField(),
        'agent_healthy': ovo_fields.BooleanField(),
        'timestamp': ovo_fields.DateTimeField(),
        'instances': ovo_fields.StringField(),
        'host_provider': ovo_fields.StringField(nullable=True),
        'available_pcpus': ovo_fields.FloatField(nullable=True),
        'storming_vms': ovo_fields.IntegerField(nullable=True),
        'pcpu_levels': ovo_fields.Field(ovo_fields.List(ovo_fields.List(
            ovo_fields.Integer())), nullable=True),
        'pcpu_count': ovo_fields.IntegerField(nullable=True),
        'domains': ovo_fields.ListOfObjectsField('DomainPayload'),
    }


def to_versioned(payload, state):
    """The :class:`HostPayload` of one 2.0 ``payload``."""
    levels = payload.get('pcpu_levels')
    return HostPayload(
        host=payload['host'], generation=payload['generation'],
        agent_healthy=payload['agent_healthy'], timestamp=state.timestamp,
        instances=payload['instances'],
        host_provider=payload.get('host_provider'),
        available_pcpus=payload.get('available_pcpus'),
        storming_vms=payload.get('storming_vms'),
        pcpu_levels=None if levels is None else levels['levels'],
        pcpu_count=None if levels is None else levels['pcpus'],
        domains=[DomainPayload(**dict(
            {k: d.get(k) for k in DomainPayload.fields},
            usable_cpus=d.get('usable_cpus', 0),
            memory_bound=d.get('memory_bound', [])))
            for d in payload['domains']])


def _time(payloads, call, repeats):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        for one in payloads:
            call(one)
        times.append((time.process_time() - start) / len(payloads) * 1e6)
    return {'median_us': round(statistics.median(times), 1),
            'min_us': round(min(times), 1), 'max_us': round(max(times), 1)}


def main(argv=None):
    """Measure; print and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=64)
    parser.add_argument('--vms', type=int, default=200)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--out')
    args = parser.parse_args(argv)
    load = os.getloadavg()
    states, _beats = listener_cost.real_messages(args.hosts, args.vms, 1)
    payloads = [m['payload'] for m in states]
    parsed = [state_wire.parse_state(p) for p in payloads]
    validator = jsonschema.Draft7Validator(SCHEMA)
    for p in payloads:
        validator.validate(p)
    primitives = [to_versioned(p, s).obj_to_primitive()
                  for p, s in zip(payloads, parsed)]
    back = HostPayload.obj_from_primitive(primitives[0])
    assert back.host == payloads[0]['host']
    assert len(back.domains) == len(payloads[0]['domains'])
    sizes = {
        'payload_2_0_json_bytes': round(statistics.mean(
            len(json.dumps(p)) for p in payloads)),
        'versioned_primitive_json_bytes': round(statistics.mean(
            len(json.dumps(p, default=str)) for p in primitives))}
    result = {
        'benchmark': 'contract_engines', 'command': ' '.join(sys.argv),
        'date': common.now(), 'machine': common.machine(),
        'loadavg_before': load, 'hosts': args.hosts, 'vms': args.vms,
        'repeats': args.repeats, 'sizes': sizes,
        'per_state': {
            'ours_parse_state': _time(payloads, state_wire.parse_state,
                                      args.repeats),
            'jsonschema_validate_only': _time(payloads, validator.validate,
                                              args.repeats),
            'versionedobjects_from_primitive': _time(
                primitives, HostPayload.obj_from_primitive, args.repeats)},
        'loadavg_after': os.getloadavg()}
    print(json.dumps(result, indent=1))
    if args.out:
        common.write_json(args.out, result)
    return result


if __name__ == '__main__':
    main()
