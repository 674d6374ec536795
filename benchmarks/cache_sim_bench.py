"""Run the single-host cache scenarios (study 000's Q6600) and plot them.

Usage::

    pip install -r benchmarks/requirements.txt   # matplotlib, plots only
    python benchmarks/cache_sim_bench.py [--json FILE] [--no-plots]

Runs benchmarks/scenarios/cache-q6600-*.json through the same code as
``nova-cacheaware simulate cache`` and writes
doc/source/evaluation/cache-q6600.png. The cloud evaluation (operator
flavors, arrivals, the classifier, the optimum) is
benchmarks/cache_cloud_bench.py.
"""

import argparse
import json
import os
import sys
import time

from nova_cacheaware_evaluation.sim import cache
from nova_cacheaware_evaluation.sim import cache_scenario

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, '..', 'doc', 'source', 'evaluation')
HOST_SCENARIOS = [('2 memory VMs', 'cache-q6600-2vm.json'),
                  ('memory + CPU VM', 'cache-q6600-2vm-mixed.json'),
                  ('4 memory VMs', 'cache-q6600-4vm.json')]
ORDER = ['partial', 'credit', 'nova', 'agent', 'optimum']
# Study 000: run time normalised to credit (figs. 3.9 and 3.14, read off
# the bars: All share < 0.5 with 2 VMs, about 0.8 with 4 VMs).
PAPER_ALL_SHARE = {'2 memory VMs': 0.45, '4 memory VMs': 0.8}


def load(name):
    with open(os.path.join(HERE, 'scenarios', name)) as f:
        return cache_scenario.load_scenario(json.load(f))


def memory_time_vs_credit(result):
    """Run time of the memory-bound VMs relative to credit (per policy)."""
    base = result['policies']['credit']['memory_geomean']
    return {p: round(base / r['memory_geomean'], 4)
            for p, r in result['policies'].items()}


def plot_host(rows, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.16
    for k, policy in enumerate(ORDER):
        values = [row['memory_time_vs_credit'][policy] for row in rows]
        xs = [i + (k - 2) * width for i in range(len(rows))]
        ax.bar(xs, values, width, label=policy)
        for x, v in zip(xs, values):
            ax.text(x, v + 0.03, '%.2f' % v, ha='center', fontsize=7)
    for i, row in enumerate(rows):
        ref = PAPER_ALL_SHARE.get(row['scenario'])
        if ref:
            ax.plot([i - 2.5 * width, i + 2.5 * width], [ref, ref], 'k--',
                    linewidth=1)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([row['scenario'] for row in rows])
    ax.set_ylabel('memory-bound VM run time / credit')
    ax.set_title('Q6600-like host (two 2-CPU L2 domains); '
                 'dashed: study 000 All share')
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', metavar='FILE')
    parser.add_argument('--no-plots', action='store_true')
    parser.add_argument('--from-json', metavar='FILE',
                        help='only redraw the plots from an earlier --json')
    args = parser.parse_args(argv)
    if args.from_json:
        with open(args.from_json) as f:
            doc = json.load(f)
        plot_host(doc['host'], os.path.join(DOC, 'cache-q6600.png'))
        return 0
    rows = []
    for label, name in HOST_SCENARIOS:
        result = cache.run(load(name))
        rows.append({'scenario': label, 'file': name,
                     'memory_time_vs_credit': memory_time_vs_credit(result),
                     'time_vs_credit': {
                         p: r['time_vs_credit']
                         for p, r in result['policies'].items()},
                     'result': result})
    doc = {'date': time.strftime('%Y-%m-%d', time.gmtime()), 'host': rows}
    if not args.no_plots:
        plot_host(rows, os.path.join(DOC, 'cache-q6600.png'))
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write('\n')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(doc, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
