"""Print the tables of cache-scheduling.rst from cache_cloud.json.

Usage::

    python benchmarks/cache_cloud_report.py [RESULTS_JSON]

RESULTS_JSON defaults to benchmarks/results/cache_cloud.json. Every figure
of doc/source/evaluation/cache-scheduling.rst comes from these tables
(RST, printed to standard output).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = ['nova-shared', 'nova-dedicated', 'spread-cache', 'agent-auto',
           'required', 'preferred', 'off', 'all-auto']


def table(header, rows):
    """An RST simple table."""
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    rule = '  '.join('=' * w for w in widths)
    line = lambda r: '  '.join(c.ljust(w) for c, w in zip(r, widths))  # noqa
    out = [rule, line(header), rule] + [line(r) for r in cells[1:]] + [rule]
    return '\n'.join(x.rstrip() for x in out)


def classifier(doc):
    """Confusion of the classifier per effect size, noise and size."""
    rows = []
    for r in doc['classifier']:
        c = r['confusion']
        mem, cpu = c['memory'], c['cpu']
        rows.append([
            '%.2f' % r['split_mem'], '%.3f' % r['sigma'], r['vcpus'],
            _pct(mem['3600'].get('memory', 0)),
            _pct(mem['21600'].get('memory', 0)),
            _pct(mem['21600'].get('other', 0)),
            _pct(cpu['21600'].get('memory', 0)),
            _pct(c['delay']['cpu']['ever_memory']),
            _minutes(c['delay']['memory']['first_memory_s'])])
    return table(['split', 'sigma', 'vCPUs', 'mem@1h', 'mem@6h',
                  'missed@6h', 'cpu->mem@6h', 'cpu ever', 'delay'], rows)


def _pct(x):
    return '%d %%' % round(100 * x)


def _minutes(s):
    return '--' if s is None else '%d min' % round(s / 60.0)


def small(doc):
    """Small clouds: each configuration over the exact optimum."""
    rows = []
    for case in doc['small']:
        best = case['optimum']['memory_perf']
        row = [case.get('scenario', '').replace('cache-cloud-', '')
               .replace('.json', ''), case['seed'], '%.3f' % best,
               '%.3f' % case['upper_bound']['memory_perf']]
        row += ['%.2f' % (case['configs'][c]['memory_perf'] / best)
                for c in CONFIGS]
        rows.append(row)
    return table(['case', 'seed', 'optimum', 'bound'] + CONFIGS, rows)


def cloud(run):
    """One 100-host run: a row per configuration."""
    res = run['result']
    bound = res['upper_bound']['memory_perf']
    rows = []
    for c in CONFIGS:
        r = res['configs'][c]
        rej = r['rejected']
        rows.append([c, '%.3f' % (r['memory_perf'] / bound),
                     '%.3f' % r['memory_clean'],
                     '%.3f' % r['memory_geomean_accepted'],
                     '%.3f' % r['memory_p10_accepted'],
                     '%.3f' % r['cpu_geomean'],
                     rej.get('memory', 0),
                     rej.get('cpu', 0) + rej.get('io', 0)])
    title = '%s (bound %.3f, Clean bound %.3f)' % (
        run['label'], bound, res['upper_bound']['memory_clean'])
    return title + '\n\n' + table(
        ['config', 'mem/bound', 'Clean', 'mem geo', 'mem p10', 'cpu geo',
         'rej mem', 'rej other'], rows)


def main(argv=None):
    """Print every table."""
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else os.path.join(HERE, 'results',
                                             'cache_cloud.json')
    with open(path) as f:
        doc = json.load(f)
    print('Calibration:', json.dumps(doc['calibration'], indent=1))
    print('\nClassifier\n\n' + classifier(doc))
    print('\nSmall clouds (config / optimum)\n\n' + small(doc))
    for run in doc['clouds']:
        print('\n' + cloud(run))
    print('\nmachine %s, date %s, load %s -> %s, command %s' % (
        doc['machine'], doc['date'], doc['loadavg_before'],
        doc['loadavg_after'], doc['command']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
