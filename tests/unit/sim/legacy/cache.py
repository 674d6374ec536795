"""The cache simulator's scenario walker before the declared schema."""
# flake8: noqa

import math

from nova_cacheaware.contracts import limits
from nova_cacheaware import exception
from nova_cacheaware.sim import classifier_trace
from nova_cacheaware.sim import cloud
from nova_cacheaware.sim import contention
from nova_cacheaware.sim.cache import HOST_POLICIES
from nova_cacheaware.sim.cache import NAMED_HOSTS
from nova_cacheaware.sim.cache import WORKLOADS


def _bad(reason):
    return exception.InvalidInput(reason='scenario: ' + reason)


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
    """
    if not isinstance(doc, dict):
        raise _bad('must be a JSON object')
    host = doc.get('host', 'q6600')
    if isinstance(host, str):
        if host not in NAMED_HOSTS:
            raise _bad('unknown host %r (known: %s)'
                       % (host, ', '.join(sorted(NAMED_HOSTS))))
        host = NAMED_HOSTS[host]
    if (not isinstance(host, list) or not host
            or not all(isinstance(d, list) and d for d in host)):
        raise _bad('"host" must name a host or list CPU lists')
    flat = [c for d in host for c in d]
    if (not all(limits.is_cpu_id(c) for c in flat)
            or len(set(flat)) != len(flat)):
        raise _bad('"host" CPU ids must be distinct integers 0..%d'
                   % (limits.MAX_CPUS - 1))
    domains = [tuple(sorted(d)) for d in host]
    try:
        model = contention.Model(**doc.get('model', {}))
    except TypeError as e:
        raise _bad('"model": %s' % e) from None
    if not all(_positive(getattr(model, f.name))
               for f in model.__dataclass_fields__.values()):
        raise _bad('"model" values must be positive numbers')
    seed = _int(doc.get('seed', 0), 'seed', 0)
    slices = _int(doc.get('slices', 2000), 'slices', 1)
    result = {'domains': domains, 'model': model, 'seed': seed,
              'slices': slices}
    if 'cluster' in doc:
        raise _bad('"cluster" and its "cacheaware" policy are retired: '
                   'give "cloud" and "configs" (see '
                   'doc/source/evaluation/cache-scheduling.rst)')
    if 'cloud' in doc:
        result['cloud'] = _cloud(doc['cloud'])
        result['configs'] = _names(doc.get('configs', list(cloud.CONFIGS)),
                                   'configs', tuple(cloud.CONFIGS))
        return result
    result['vms'] = _vms(doc.get('vms'))
    result['policies'] = _names(doc.get('policies', list(HOST_POLICIES)),
                                'policies', HOST_POLICIES)
    return result


def _names(value, what, known):
    if (not isinstance(value, list) or not value
            or any(p not in known for p in value)):
        raise _bad('"%s" must be a non-empty list of %s'
                   % (what, ', '.join(known)))
    return value


def _positive(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def _int(value, name, low):
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise _bad('"%s" must be an integer >= %d' % (name, low))
    return value


def _vms(docs):
    if not isinstance(docs, list) or not docs:
        raise _bad('"vms" must be a non-empty list (or give "cloud")')
    vms = []
    for n, v in enumerate(docs):
        if not isinstance(v, dict):
            raise _bad('vms[%d] must be an object' % n)
        vm_id = v.get('id', 'vm%d' % n)
        if not isinstance(vm_id, str) or any(x.id == vm_id for x in vms):
            raise _bad('vms[%d]: "id" must be a unique string' % n)
        if v.get('workload') not in WORKLOADS:
            raise _bad('VM %r: "workload" must be one of %s'
                       % (vm_id, ', '.join(WORKLOADS)))
        if not limits.is_vcpu_count(v.get('vcpus')):
            raise _bad('VM %r: "vcpus" must be an integer 1..%d'
                       % (vm_id, limits.MAX_VCPUS))
        vms.append(contention.SimVM(vm_id, _int(v.get('vcpus'), 'vcpus', 1),
                                    v['workload']))
    return vms


def _cloud(doc):
    if not isinstance(doc, dict):
        raise _bad('"cloud" must be an object')
    out = {'hosts': _int(doc.get('hosts', 100), 'hosts', 1),
           'arrivals': _int(doc.get('arrivals', 1000), 'arrivals', 1),
           'sample_every': _int(doc.get('sample_every', 100),
                                'sample_every', 1),
           'warmup': _int(doc.get('warmup', 0), 'warmup', 0),
           'slices': _int(doc.get('slices', 40), 'cloud slices', 1)}
    for key, default in (('mean_interarrival', 1.0),
                         ('mean_lifetime', 400.0), ('time_unit_s', 60.0)):
        value = doc.get(key, default)
        if not _positive(value):
            raise _bad('"%s" must be a number > 0' % key)
        out[key] = float(value)
    mix = doc.get('mix', {'memory': 3, 'cpu': 5, 'io': 2})
    if (not isinstance(mix, dict) or not mix
            or any(k not in WORKLOADS or not _positive(w)
                   for k, w in mix.items())):
        raise _bad('"mix" must map memory/cpu/io to weights > 0')
    sizes = doc.get('sizes', {'1': 2, '2': 4, '4': 2})
    if (not isinstance(sizes, dict) or not sizes
            or any(not (k.isascii() and k.isdigit()) or int(k) < 1
                   or not _positive(w)
                   for k, w in sizes.items())):
        raise _bad('"sizes" must map vCPU counts to weights > 0')
    out['mix'] = mix
    out['sizes'] = sizes
    return _classifier(doc, out)


def _classifier(doc, out):
    for key, default in (('declared', 1.0), ('sigma', 0.1)):
        value = doc.get(key, default)
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not math.isfinite(value) or value < 0
                or (key == 'declared' and value > 1)):
            raise _bad('"%s" must be a number %s' % (
                key, 'in 0..1' if key == 'declared' else '>= 0'))
        out[key] = float(value)
    schedule = doc.get('schedule', {})
    if not isinstance(schedule, dict):
        raise _bad('"schedule" must be an object')
    try:
        classifier_trace.Schedule(**schedule)
    except (TypeError, ValueError) as e:
        raise _bad('"schedule": %s' % e) from None
    out['schedule'] = schedule
    return out
