"""The cache simulator's scenario document, on a declared schema.

What ``nova-cacheaware simulate cache --scenario`` and the benchmarks
read (:func:`load_scenario`); :mod:`.cache` runs it.
Unknown keys are ignored, as they always were; an absent key takes its
default (:data:`DEFAULTS`, :data:`CLOUD_DEFAULTS`).
"""

import dataclasses
import math

from nova_cacheaware.contracts import limits
from nova_cacheaware.contracts import schema
from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import classifier_trace
from nova_cacheaware_evaluation.sim import cloud
from nova_cacheaware_evaluation.sim import contention

HOST_POLICIES = ('credit', 'nova', 'agent', 'optimum', 'partial')
WORKLOADS = ('memory', 'cpu', 'io')
NAMED_HOSTS = {
    'q6600': [[0, 1], [2, 3]],
    'epyc-4ccx': [list(range(i, i + 4)) for i in range(0, 16, 4)],
}


def _invalid(message):
    return exception.InvalidInput(reason=message)


def is_finite(value):
    """A finite number (not a bool) that a float can hold.

    An int beyond a float's range made the old walker crash in
    ``math.isfinite``; it is refused instead.
    """
    if not schema.is_number(value):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _positive(value):
    return is_finite(value) and value > 0


def _integer(low, key='%(key)s'):
    return schema.Check(lambda value: (
        isinstance(value, int) and not isinstance(value, bool)
        and value >= low), '%%(where)s: "%s" must be an integer >= %d'
        % (key, low))


class Made:
    """A field made by ``make(**value)``: what ``make`` refuses is the line.

    The record's own rules (a dataclass's keywords, its ``__post_init__``)
    word the message, as the old walker let them. ``test``: what the
    record must pass after, else ``message`` (formatted as Check's).
    """

    def __init__(self, make, test=None, message=None):
        self.make = make
        # Not ``test``: a field's ``test`` is its whole check (schema.All).
        self.after = test
        self.message = message

    def check(self, value, key, where):
        """The record, or :class:`schema.SchemaError`."""
        try:
            record = self.make(**value)
        except (TypeError, ValueError) as e:
            raise schema.SchemaError(where, key, line='%s: "%s": %s'
                                     % (where, key, e)) from None
        if self.after is not None and not self.after(record):
            raise schema.SchemaError(where, key, line=self.message % {
                'where': where, 'key': key, 'value': value})
        return record


def _cpu_lists(value):
    return NAMED_HOSTS.get(value, value) if isinstance(value, str) else value


def _is_host(value):
    host = _cpu_lists(value)
    return (isinstance(host, list) and bool(host)
            and all(isinstance(d, list) and d for d in host))


def _distinct_cpus(value):
    flat = [c for d in _cpu_lists(value) for c in d]
    return (all(limits.is_cpu_id(c) for c in flat)
            and len(set(flat)) == len(flat))


def _model_positive(model):
    return all(_positive(getattr(model, f.name))
               for f in dataclasses.fields(model))


def _names(known):
    return schema.Check(
        lambda value: (isinstance(value, list) and bool(value)
                       and all(p in known for p in value)),
        '%%(where)s: "%%(key)s" must be a non-empty list of %s'
        % ', '.join(known), convert=list)


def _weights(test, words):
    return schema.Check(
        lambda value: (isinstance(value, dict) and bool(value) and all(
            test(k) and _positive(w) for k, w in value.items())),
        '%%(where)s: "%%(key)s" must map %s to weights > 0' % words,
        convert=dict)


def _is_size(key):
    try:
        return key.isascii() and key.isdigit() and int(key) >= 1
    except (AttributeError, ValueError):
        # Not a string, or over int()'s digit limit: both were a crash.
        return False


def _ratio(test, words):
    return schema.Check(
        lambda value: is_finite(value) and test(value),
        '%%(where)s: "%%(key)s" must be a number %s' % words, convert=float)


#: The scenario's host and model, in the order they are checked.
BASE_SCHEMA = {
    'host': schema.All(
        schema.Check(lambda value: (not isinstance(value, str)
                                    or value in NAMED_HOSTS),
                     '%%(where)s: unknown host %%(value)r (known: %s)'
                     % ', '.join(sorted(NAMED_HOSTS))),
        schema.Check(_is_host, '%(where)s: "host" must name a host or '
                               'list CPU lists'),
        schema.Check(_distinct_cpus, '%%(where)s: "host" CPU ids must be '
                     'distinct integers 0..%d' % (limits.MAX_CPUS - 1)),
        convert=lambda value: [tuple(sorted(d)) for d in _cpu_lists(value)]),
    'model': Made(contention.Model, _model_positive,
                  '%(where)s: "model" values must be positive numbers'),
    'seed': _integer(0), 'slices': _integer(1)}
#: One host's VMs (then each VM, see :func:`_vms`) and policies.
VMS = schema.Check(lambda value: isinstance(value, list) and value,
                   '%(where)s: "vms" must be a non-empty list (or give '
                   '"cloud")')
POLICIES = _names(HOST_POLICIES)
CONFIGS = _names(tuple(cloud.CONFIGS))
VM_OBJECT = schema.Check(schema.is_object, '%(where)s must be an object')
VM_ID = schema.Check(lambda value: isinstance(value, str),
                     '%(where)s: "id" must be a unique string')
VM_SCHEMA = {
    'workload': (schema.Check(lambda value: value in WORKLOADS,
                              '%%(where)s: "workload" must be one of %s'
                              % ', '.join(WORKLOADS)), schema.AS_NULL),
    'vcpus': (schema.Check(limits.is_vcpu_count, '%%(where)s: "vcpus" must '
                           'be an integer 1..%d' % limits.MAX_VCPUS),
              schema.AS_NULL)}
#: A cloud's arrival trace and classifier, in the order they are checked.
CLOUD_SCHEMA = {
    'hosts': _integer(1), 'arrivals': _integer(1),
    'sample_every': _integer(1), 'warmup': _integer(0),
    'slices': _integer(1, 'cloud slices'),
    'mean_interarrival': _ratio(lambda value: value > 0, '> 0'),
    'mean_lifetime': _ratio(lambda value: value > 0, '> 0'),
    'time_unit_s': _ratio(lambda value: value > 0, '> 0'),
    'mix': _weights(lambda key: key in WORKLOADS, 'memory/cpu/io'),
    'sizes': _weights(_is_size, 'vCPU counts'),
    'declared': _ratio(lambda value: 0 <= value <= 1, 'in 0..1'),
    'sigma': _ratio(lambda value: value >= 0, '>= 0'),
    # Kept as given; the run makes the Schedule again.
    'schedule': schema.All(
        schema.Check(schema.is_object, '%(where)s: "%(key)s" must be an '
                                       'object'),
        Made(classifier_trace.Schedule), convert=dict)}
CLOUD_OBJECT = schema.Check(schema.is_object,
                            '%(where)s: "%(key)s" must be an object')
DEFAULTS = {'host': 'q6600', 'model': {}, 'seed': 0, 'slices': 2000,
            'vms': None, 'policies': list(HOST_POLICIES),
            'configs': list(cloud.CONFIGS)}
CLOUD_DEFAULTS = {'hosts': 100, 'arrivals': 1000, 'sample_every': 100,
                  'warmup': 0, 'slices': 40, 'mean_interarrival': 1.0,
                  'mean_lifetime': 400.0, 'time_unit_s': 60.0,
                  'mix': {'memory': 3, 'cpu': 5, 'io': 2},
                  'sizes': {'1': 2, '2': 4, '4': 2}, 'declared': 1.0,
                  'sigma': 0.1, 'schedule': {}}
WHERE = 'scenario'
RETIRED = ('%s: "cluster" and its "cacheaware" policy are retired: give '
           '"cloud" and "configs" (see doc/source/evaluation/'
           'cache-scheduling.rst)' % WHERE)


def _fields(merged, checks):
    return schema.fields(merged, {key: (field, schema.REQUIRED)
                                  for key, field in checks.items()}, WHERE)


def load_scenario(doc):
    """Check a scenario document and fill in defaults.

    Shape (JSON)::

        {"seed": int, "slices": int, "policies": [..],
         "host": "q6600" | [[cpu, ...], ...],
         "model": {Model field: number, ...},
         "vms": [{"id", "vcpus", "workload"}]          # one host, or
         "cloud": {"hosts", "arrivals", "mean_interarrival",
                   "mean_lifetime", "mix": {workload: weight},
                   "sizes": {"1": w, "2": w, ...}, "sample_every",
                   "warmup", "slices", "declared", "sigma",
                   "time_unit_s", "schedule": {...}},
         "configs": [..]}                              # a cloud

    Unknown keys are ignored; a key's default is :data:`DEFAULTS`'.
    """
    with schema.reraise(_invalid):
        schema.obj(doc, WHERE)
        merged = {**DEFAULTS, **doc}
        base = _fields(merged, BASE_SCHEMA)
        result = {'domains': base['host'], 'model': base['model'],
                  'seed': base['seed'], 'slices': base['slices']}
        if 'cluster' in doc:
            raise schema.SchemaError(WHERE, 'cluster', line=RETIRED)
        if 'cloud' in doc:
            cloud_doc = CLOUD_OBJECT.check(doc['cloud'], 'cloud', WHERE)
            result['cloud'] = _fields({**CLOUD_DEFAULTS, **cloud_doc},
                                      CLOUD_SCHEMA)
            result['configs'] = CONFIGS.check(merged['configs'], 'configs',
                                              WHERE)
            return result
        result['vms'] = _vms(VMS.check(merged['vms'], 'vms', WHERE))
        result['policies'] = POLICIES.check(merged['policies'], 'policies',
                                            WHERE)
        return result


def _vms(docs):
    vms = []
    for n, v in enumerate(docs):
        where = '%s: vms[%d]' % (WHERE, n)
        VM_OBJECT.check(v, 'vms', where)
        vm_id = VM_ID.check(v.get('id', 'vm%d' % n), 'id', where)
        if any(x.id == vm_id for x in vms):
            raise schema.SchemaError(where, 'id', line=VM_ID.message % {
                'where': where})
        got = schema.fields(v, VM_SCHEMA, '%s: VM %r' % (WHERE, vm_id))
        vms.append(contention.SimVM(vm_id, got['vcpus'], got['workload']))
    return vms
