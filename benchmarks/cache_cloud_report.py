"""Print the tables of cache-scheduling.rst from cache_cloud.json.

Usage::

    python benchmarks/cache_cloud_report.py [RESULTS_JSON]
        [--compare OTHER_JSON]

RESULTS_JSON defaults to benchmarks/results/cache_cloud.json. Every figure
of doc/source/evaluation/cache-scheduling.rst comes from these tables
(RST, printed to standard output). ``--compare`` adds the headline figures
of another results file (another calibration) beside the first:
``--compare benchmarks/results/cache_cloud-loaded-probe.json`` gives the
page's comparison with the loaded machine's probe.
"""

import argparse
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


def _headline(doc, label, config):
    for run in doc['clouds']:
        if run['label'] == label:
            res = run['result']
            return (res['configs'][config]['memory_perf']
                    / res['upper_bound']['memory_perf'])
    return None


def _small_range(doc, scenario, config):
    ratios = [case['configs'][config]['memory_perf']
              / case['optimum']['memory_perf'] for case in doc['small']
              if case['scenario'] == scenario]
    return '%.2f-%.2f' % (min(ratios), max(ratios))


def compare(old, new):
    """Headline figures of two results files (old -> new), RST."""
    cal = table(['', 'dirty_all', 'sigma', 'sigma worst', 'probe'], [
        [name, '%.3f' % d['calibration']['dirty_all'],
         '%.3f' % d['calibration']['sigma'],
         '%.3f' % d['calibration']['sigma_max'],
         d['calibration']['source'].split(' ')[0]]
        for name, d in (('old', old), ('new', new))])
    # The headline runs: 30 % and 70 % memory-bound, and the one that
    # depends most on the classifier (1.4x effect, worst noise).
    labels = [run['label'] for run in new['clouds']]
    runs = [(labels[0], '30 %'), (labels[1], '70 %'),
            (labels[-1], '1.4x noisy')]
    rows = []
    for c in CONFIGS:
        row = [c]
        for label, _short in runs:
            row += ['%.3f' % _headline(d, label, c) for d in (old, new)]
        for name in ('cache-cloud-small.json', 'cache-cloud-small-tight.json'):
            row += [_small_range(d, name, c) for d in (old, new)]
        rows.append(row)
    head = ['config']
    for short in [r[1] for r in runs] + ['small', 'tight']:
        head += [short + ' old', 'new']
    legend = '\n'.join('%s: %s' % (short, label) for label, short in runs)
    return '\n\n'.join([cal, legend, table(head, rows),
                        _compare_classifier(old, new)])


def _compare_classifier(old, new):
    rows = []
    for a, b in zip(old['classifier'], new['classifier']):
        row = ['%.2f' % b['split_mem'], b['sigma_source'], b['vcpus']]
        for r in (a, b):
            c = r['confusion']
            row += ['%.3f' % r['sigma'],
                    _pct(c['memory']['21600'].get('other', 0)),
                    _minutes(c['delay']['memory']['first_memory_s'])]
        rows.append(row)
    return table(['split', 'sigma', 'vCPUs', 'old sigma', 'missed@6h',
                  'delay', 'new sigma', 'missed@6h', 'delay'], rows)


def load_results(argv, default_name, description):
    """``(path, doc, compare path, compare doc)`` from a report's command.

    The command is ``[RESULTS_JSON] [--compare OTHER_JSON]``, RESULTS_JSON
    defaulting to ``benchmarks/results/<default_name>``; the compared
    document is None without ``--compare``.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('results', nargs='?', default=os.path.join(
        HERE, 'results', default_name))
    parser.add_argument('--compare', metavar='OTHER_JSON')
    args = parser.parse_args(argv)
    docs = []
    for path in (args.results, args.compare):
        if path is None:
            docs.append(None)
            continue
        with open(path) as f:
            docs.append(json.load(f))
    return args.results, docs[0], args.compare, docs[1]


def main(argv=None):
    """Print every table."""
    _, doc, other_path, other = load_results(
        argv, 'cache_cloud.json', __doc__.splitlines()[0])
    print('Calibration:', json.dumps(doc['calibration'], indent=1))
    print('\nClassifier\n\n' + classifier(doc))
    print('\nSmall clouds (config / optimum)\n\n' + small(doc))
    for run in doc['clouds']:
        print('\n' + cloud(run))
    if other is not None:
        print('\nCompared with %s (old -> new)\n\n%s'
              % (other_path, compare(other, doc)))
    print('\nmachine %s, date %s, load %s -> %s, command %s' % (
        doc['machine'], doc['date'], doc['loadavg_before'],
        doc['loadavg_after'], doc['command']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
