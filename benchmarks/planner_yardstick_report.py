"""Print the yardstick tables of planner.rst from planner_yardstick.json.

Usage::

    python benchmarks/planner_yardstick_report.py [RESULTS_JSON]
        [--compare OTHER_JSON]

RESULTS_JSON defaults to benchmarks/results/planner_yardstick.json. Prints
(RST, standard output) the geometric-mean ratios per policy and seed, the
ratios to the class-only references, the distribution and the variants;
``--compare`` adds the yardstick's mean / worst of another results file
(another calibration) beside the first.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.cache_cloud_report import load_results  # noqa: E402
from benchmarks.cache_cloud_report import table  # noqa: E402

CLASS = 'class-only optimum (knows classes, not parameters)'
CAPPED = 'class-only optimum within the host ratio\'s capacity'


def _cell(r):
    g = r['geomean']
    return '%.3f / %.3f (%d)' % (g['mean'], g['worst'], g['below_0_95'])


def main_table(doc):
    """Policy x (simulator, yardstick) x seed: mean / worst (< 0.95)."""
    runs = doc['runs']
    names = list(runs[0]['yardsticks']['calibrated'])
    rows = []
    for name in names:
        row = [name]
        for y in ('simulator', 'calibrated'):
            row += [_cell(run['yardsticks'][y][name])
                    if name in run['yardsticks'][y] else '-'
                    for run in runs]
        rows.append(row)
    head = ['policy'] + ['%s, seed %d' % (y, run['seed'])
                         for y in ('simulator', 'yardstick')
                         for run in runs]
    return table(head, rows)


def class_only(doc):
    """The planners against the class-only references (calibrated)."""
    pairs = [('contract, host ratio',
              'calibrated, vs class-only within capacity'),
             ('throughput, host ratio',
              'calibrated, vs class-only within capacity'),
             ('throughput, no capacity limit', 'calibrated, vs class-only')]
    rows = [['%s / %s' % (name, y.split(', ', 1)[1])]
            + [_cell(run['yardsticks'][y][name]) for run in doc['runs']]
            for name, y in pairs]
    return table(['planner / reference'] + [
        'seed %d' % run['seed'] for run in doc['runs']], rows)


def distribution(doc):
    """Hosts per bin (calibrated yardstick), seeds summed."""
    names = ['no planner (every vCPU floating)', 'Nova dedicated pinning',
             'contract, host ratio', 'throughput, host ratio', CLASS]
    bins = list(doc['runs'][0]['yardsticks']['calibrated'][names[0]][
        'geomean']['histogram'])
    rows = [[name] + [sum(run['yardsticks']['calibrated'][name]['geomean'][
        'histogram'][b] for run in doc['runs']) for b in bins]
        for name in names]
    return table(['policy'] + bins, rows)


def variants(doc):
    """Every yardstick variant: mean / worst (< 0.95) per seed."""
    names = ['contract, host ratio', 'throughput, host ratio', CLASS]
    rows = []
    for y in ('calibrated', 'no bandwidth cap', 'no split cost',
              'doubled stall (stress)'):
        for name in names:
            if name in doc['runs'][0]['yardsticks'][y]:
                rows.append([y, name] + [_cell(run['yardsticks'][y][name])
                                         for run in doc['runs']])
    return table(['variant', 'policy'] + [
        'seed %d' % run['seed'] for run in doc['runs']], rows)


def compare(old, new):
    """The calibrated yardstick's mean / worst, old beside new."""
    names = list(new['runs'][0]['yardsticks']['calibrated'])
    rows = []
    for name in names:
        row = [name]
        for o, n in zip(old['runs'], new['runs']):
            row += [_cell(d['yardsticks']['calibrated'][name])
                    for d in (o, n)]
        rows.append(row)
    head = ['policy']
    for run in new['runs']:
        head += ['seed %d old' % run['seed'], 'new']
    stall = 'stall range: old %s (%s), new %s (%s)' % (
        old['calibration']['stall_range'], old['calibration']['probe_file'],
        new['calibration']['stall_range'], new['calibration']['probe_file'])
    return stall + '\n\n' + table(head, rows)


def main(argv=None):
    """Print every table."""
    _, doc, other_path, other = load_results(
        argv, 'planner_yardstick.json', __doc__.splitlines()[0])
    print('Calibration: %s' % {k: v for k, v in doc['calibration'].items()
                               if k != 'parameters'})
    print('\n' + main_table(doc))
    print('\n' + class_only(doc))
    print('\n' + distribution(doc))
    print('\n' + variants(doc))
    if other is not None:
        print('\nCompared with %s (old -> new)\n\n%s'
              % (other_path, compare(other, doc)))
    print('\nmachine %s, date %s, load %s -> %s, %s s, command %s' % (
        doc['machine'], doc['date'], doc['loadavg_before'],
        doc['loadavg_after'], doc['wall_s'], doc['command']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
