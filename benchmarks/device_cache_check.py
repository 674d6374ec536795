"""What a lent many-core machine offers the cache-aware code, measured.

Run on a machine other than the 2-CPU development host (the device
machine some sessions are lent): it records the CPU and cache topology as
the kernel shows it, asks the agent's own counter source
(:class:`~nova_cacheaware.cachedomain.counters.PerfCounterSource`) whether
hardware counters can be read, and measures a contention map: the probe's
memory-bound kernels on one CPU, alone and next to a copy on every other
CPU in turn. CPUs sharing a cache with the measured one show a slowdown
the others do not, whatever sysfs says. When sysfs shows two or more cache
domains it also runs ``nova-cacheaware probe`` itself.

Standard library and this package only (the machine has no OpenStack)::

    python3 benchmarks/device_cache_check.py --out results/device.json
"""

import argparse
import contextlib
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from nova_cacheaware.cachedomain import agent as repin_agent  # noqa: E402
from nova_cacheaware.cachedomain import counters  # noqa: E402
from nova_cacheaware.topology import domains as topo_domains  # noqa: E402
from nova_cacheaware.topology import sysfs  # noqa: E402
from nova_cacheaware_evaluation.cmd import probe as probe_cmd  # noqa: E402
from nova_cacheaware_evaluation.probe import runner  # noqa: E402

CPU_ROOT = '/sys/devices/system/cpu'


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return 'unreadable: %s' % e.strerror


def machine_facts():
    """The CPU model, CPU counts, load and the raw sysfs cache entries."""
    model = ''
    for line in _read('/proc/cpuinfo').splitlines():
        if line.startswith('model name'):
            model = line.split(':', 1)[1].strip()
            break
    caches = {}
    for cpu in sorted(os.sched_getaffinity(0)):
        base = os.path.join(CPU_ROOT, 'cpu%d' % cpu, 'cache')
        if not os.path.isdir(base):
            caches[cpu] = 'no cache directory in sysfs'
            continue
        caches[cpu] = [{k: _read(os.path.join(base, idx, k))
                        for k in ('level', 'type', 'size',
                                  'shared_cpu_list')}
                       for idx in sorted(os.listdir(base))
                       if idx.startswith('index')]
    lscpu = shutil.which('lscpu')
    return {
        'uname': platform.uname()._asdict(),
        'cpu_model': model,
        'os_cpu_count': os.cpu_count(),
        'affinity': sorted(os.sched_getaffinity(0)),
        'loadavg': os.getloadavg(),
        'numa_nodes': sorted(n for n in os.listdir('/sys/devices/system/node')
                             if n.startswith('node'))
        if os.path.isdir('/sys/devices/system/node') else [],
        'sysfs_caches': caches,
        'lscpu': (subprocess.run([lscpu], capture_output=True, text=True,
                                 timeout=30).stdout if lscpu else None),
        'perf_event_paranoid': _read('/proc/sys/kernel/perf_event_paranoid'),
    }


def topology():
    """Cache domains as the project's sysfs reader builds them, or why not."""
    try:
        topo = sysfs.read_topology('/sys')
        ds = topo_domains.cache_domains(topo)
    except Exception as e:  # the finding is the error itself
        return {'error': '%s: %s' % (type(e).__name__, e)}
    return {'level': ds.level,
            'domains': [{'id': d.id, 'cpus': sorted(d.cpus),
                         'size_kib': d.size_kib} for d in ds.domains]}


def hardware_counters():
    """The agent's counter source on this thread: can it count, and what."""
    source = counters.PerfCounterSource()
    out = {'available': source.available(),
           'unsupported': source.unsupported}
    if out['available']:
        tid = threading.get_native_id()
        before = source.sample({'self': tid}).get('self', {})
        sum(i * i for i in range(2_000_000))
        after = source.sample({'self': tid}).get('self', {})
        out['derived_over_a_loop'] = repin_agent.derived(before, after)
        source.close()
    return out


def contention_map(kernel, cache_bytes, cpus, reps, samples, seconds):
    """Slowdown of each kernel on ``cpus[0]`` next to a copy on each other.

    Returns ``{kernel@factor: {'alone_ns': x, 'slowdown': {cpu: r}}}``;
    ``r`` is the median co-run ns per line over the median alone.
    """
    anchor, others = cpus[0], cpus[1:]
    cases = (('chase', 0.5), ('stream', 2.0))
    out = {}
    for name, factor in cases:
        nbytes = int(cache_bytes * factor) // 4096 * 4096
        alone, co = [], {c: [] for c in others}
        for rep in range(reps):
            run = runner.measure(kernel, name, nbytes, anchor, None,
                                 samples, seconds, 1 + rep)
            alone.extend(ns for ns, _ in run.samples)
            for c in others:
                run = runner.measure(kernel, name, nbytes, anchor, c,
                                     samples, seconds, 1 + rep)
                co[c].extend(ns for ns, _ in run.samples)
        base = statistics.median(alone)
        out['%s@%gx' % (name, factor)] = {
            'bytes': nbytes, 'anchor_cpu': anchor,
            'alone_ns': round(base, 3),
            'alone_spread': round((max(alone) - min(alone)) / base, 3),
            'slowdown': {c: round(statistics.median(v) / base, 3)
                         for c, v in co.items()}}
        print(name, factor, out['%s@%gx' % (name, factor)]['slowdown'],
              flush=True)
    return out


def full_probe(repetitions):
    """``nova-cacheaware probe --format json`` run in this process."""
    parser = argparse.ArgumentParser()
    probe_cmd.configure(parser)
    args = parser.parse_args(['--format', 'json', '--repetitions',
                              str(repetitions)])
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            probe_cmd.run(args)
    except Exception as e:
        return {'error': '%s: %s' % (type(e).__name__, e)}
    return json.loads(buf.getvalue())


def main(argv=None):
    """Write the facts, counters, contention map (and probe) as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', required=True)
    parser.add_argument('--reps', type=int, default=3)
    parser.add_argument('--samples', type=int, default=3)
    parser.add_argument('--seconds', type=float, default=0.2)
    parser.add_argument('--cache-kib', type=int, default=32768,
                        help='working-set unit when sysfs gives no size')
    parser.add_argument('--probe-repetitions', type=int, default=3)
    args = parser.parse_args(argv)
    started = time.time()
    doc = {'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
           'facts': machine_facts(), 'topology': topology(),
           'counters': hardware_counters()}
    print(json.dumps({k: doc[k] for k in ('topology', 'counters')}),
          flush=True)
    domains = doc['topology'].get('domains') or []
    size = next((d['size_kib'] for d in domains
                 if d['size_kib'] and doc['facts']['affinity'][0]
                 in d['cpus']), None) or args.cache_kib
    doc['cache_kib_used'] = size
    workdir = tempfile.mkdtemp(prefix='device-check-')
    try:
        kernel = runner.prepare_kernel('auto', workdir)
        doc['kernel'] = kernel.description
        doc['contention'] = contention_map(
            kernel, size * 1024, doc['facts']['affinity'], args.reps,
            args.samples, args.seconds)
    except runner.ProbeError as e:
        doc['contention'] = {'error': str(e)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if len(domains) >= 2:
        doc['probe'] = full_probe(args.probe_repetitions)
    doc['seconds'] = round(time.time() - started, 1)
    with open(args.out, 'w') as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
