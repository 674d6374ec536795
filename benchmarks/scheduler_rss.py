#!/usr/bin/env python3
"""Resident memory of an idle nova-scheduler's code, with and without our
plugins, each in a fresh interpreter.

What each child loads, as nova-scheduler does before its first request:
``nova.cmd.scheduler`` and ``nova.scheduler.manager``, the configuration,
every filter and weigher class Nova's loaders find
(``nova.scheduler.filters.all_filters``, ``nova.scheduler.weights.all``),
instantiated. ``plugins`` also loads and instantiates our four plugins
through the same loaders; ``plugins_with_scipy`` in addition imports what
``pcpu_est/estimate.py`` imported at module level before it became lazy
(numpy and ``scipy.sparse.csgraph``): the state before this change. Idle
means no request: our listener starts on the first one. No database or
message bus is opened (the service's connections cost the same with or
without plugins).

Prints one JSON document (``VmRSS`` in MiB, median of ``--repeats``
children per variant) and writes it to ``--output`` when given.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys

CHILD = r'''
import sys
from oslo_config import cfg
import nova.cmd.scheduler  # noqa
from nova.scheduler import manager  # noqa
from nova.scheduler import filters
from nova.scheduler import weights
from nova import objects
objects.register_all()
cfg.CONF([], project='nova')
variant = sys.argv[1]
names = ['nova.scheduler.filters.all_filters']
weigher_names = ['nova.scheduler.weights.all_weighers']
if variant != 'nova':
    names += ['nova_cacheaware.scheduler.filters.CacheDomainFilter',
              'nova_cacheaware.scheduler.filters.FullNUMAFilter']
    weigher_names += ['nova_cacheaware.scheduler.weights.all_weighers']
if variant == 'plugins_with_scipy':
    import numpy  # noqa
    from scipy.sparse import csgraph  # noqa
loaded = [c() for c in filters.HostFilterHandler().get_matching_classes(
    names)]
loaded += [c() for c in weights.HostWeightHandler().get_matching_classes(
    weigher_names)]
with open('/proc/self/status') as f:
    rss = [int(line.split()[1]) for line in f if line.startswith('VmRSS')]
print(rss[0], len(loaded), int('numpy' in sys.modules),
      int('scipy' in sys.modules))
'''

VARIANTS = ('nova', 'plugins', 'plugins_with_scipy')


def child(variant):
    out = subprocess.run([sys.executable, '-c', CHILD, variant],
                         capture_output=True, text=True, check=True)
    rss_kib, classes, numpy, scipy = out.stdout.split()
    return int(rss_kib) / 1024, int(classes), bool(int(numpy)), \
        bool(int(scipy))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--output')
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = {}
    for variant in VARIANTS:
        runs = [child(variant) for _ in range(args.repeats)]
        results[variant] = {
            'vmrss_mib_median': round(statistics.median(r[0] for r in runs),
                                      1),
            'vmrss_mib_runs': [round(r[0], 1) for r in runs],
            'classes_loaded': runs[0][1],
            'numpy_imported': runs[0][2], 'scipy_imported': runs[0][3]}
    base = results['nova']['vmrss_mib_median']
    doc = {
        'benchmark': 'scheduler_rss',
        'command': ' '.join(['.venv/bin/python', 'benchmarks/scheduler_rss.py']
                            + [shlex.quote(a) for a in sys.argv[1:]]),
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds'),
        'machine': {'nproc': os.cpu_count(),
                    'python': platform.python_version()},
        'loadavg_before': [round(x, 2) for x in load_before],
        'results': results,
        'extra_mib_with_plugins': {
            v: round(results[v]['vmrss_mib_median'] - base, 1)
            for v in VARIANTS[1:]},
    }
    text = json.dumps(doc, indent=2)
    print(text)
    if args.output:
        with open(args.output, 'w') as f:
            f.write(text + '\n')


if __name__ == '__main__':
    main()
