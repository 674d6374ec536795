"""Study-002 scenario: the simulator table and plots like its Figs. 6 and 7.

    pip install -r benchmarks/requirements.txt
    python benchmarks/balloon_sim_plots.py [--out doc/source/evaluation]
        [--json-out FILE]

Runs every policy of ``nova-cacheaware simulate balloon`` on the study's
setup (the scenario ``{}``) plus mode A with the study's best parameters
(alpha 0, beta 0.15), prints the table as reStructuredText and writes

* ``balloon-means.png``: arithmetic and geometric means per policy (Fig. 6);
* ``balloon-memory.png``: memory per VM over time next to each VM's working
  set, for static, A, B and the default policy (Fig. 7).
"""

import argparse
import os
import sys
import time

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

from benchmarks import common  # noqa: E402
from nova_cacheaware_evaluation.sim import balloon as sim  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, '..', 'doc', 'source', 'evaluation')
BEST_A = 'hit_ratio_a (α 0, β 0.15)'


def run_all():
    """(scenario, schedule, {label: PolicyResult}) for the study setup."""
    sc = sim.scenario_from_dict({})
    schedule = sc.schedule()
    results = {name: sim.simulate_policy(sc, name, schedule)
               for name in sim.POLICIES}
    best = sim.scenario_from_dict({'params': {'alpha': 0.0, 'beta': 0.15}})
    results[BEST_A] = sim.simulate_policy(best, 'hit_ratio_a', schedule)
    return sc, schedule, results


def rst_table(results):
    """The results as an RST list-table, best geometric mean first."""
    static = results['static']
    rows = sorted(results.items(), key=lambda kv: -kv[1].geo_mean())
    lines = ['.. list-table::', '   :header-rows: 1', '',
             '   * - policy', '     - arithmetic mean (MiB/s)',
             '     - geometric mean (MiB/s)', '     - geo / static']
    for name, r in rows:
        lines += ['   * - ``%s``' % name if '(' not in name else
                  '   * - %s' % name,
                  '     - %.1f' % r.arith_mean(),
                  '     - %.1f' % r.geo_mean(),
                  '     - %.2f' % (r.geo_mean() / static.geo_mean())]
    return '\n'.join(lines)


def plot_means(results, path):
    names = [n for n in sim.POLICIES] + [BEST_A]
    arith = [results[n].arith_mean() for n in names]
    geo = [results[n].geo_mean() for n in names]
    fig, ax = plt.subplots(figsize=(9, 4))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], arith, 0.4, label='arithmetic mean')
    ax.bar([x + 0.2 for x in xs], geo, 0.4, label='geometric mean')
    ax.set_xticks(list(xs))
    ax.set_xticklabels([n.replace(' (', '\n(') for n in names], fontsize=8)
    ax.set_ylabel('throughput (MiB/s)')
    ax.set_title('Study-002 scenario, simulated (3 VMs, 7071 MiB)')
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_memory(sc, schedule, results, path):
    shown = ('static', 'hit_ratio_a', 'hit_ratio_b', 'default')
    fig, axes = plt.subplots(len(shown), 1, figsize=(9, 9), sharex=True)
    colours = ['tab:blue', 'tab:orange', 'tab:green', 'tab:red', 'tab:purple']
    for ax, name in zip(axes, shown):
        r = results[name]
        for i in range(sc.vms):
            c = colours[i % len(colours)]
            ax.plot(r.trace_t, [m[i] for m in r.trace_memory], color=c,
                    label='VM%d memory' % i)
            xs, ys = [], []
            for p, row in enumerate(schedule):
                xs += [p * sc.phase_s, min((p + 1) * sc.phase_s,
                                           sc.duration_s)]
                ys += [row[i] + sc.process_mib] * 2
            ax.plot(xs, ys, color=c, linestyle=':', linewidth=1)
        ax.set_ylabel('MiB')
        ax.set_ylim(0, sc.host_memory_mib * 1.05)
        ax.set_title('%s (dotted: working set + process memory)' % name,
                     fontsize=9)
    axes[0].legend(fontsize=7, ncol=3, loc='upper right')
    axes[-1].set_xlabel('time (s)')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=DEFAULT_OUT)
    parser.add_argument('--json-out', metavar='FILE')
    args = parser.parse_args(argv)
    started, load0 = time.time(), os.getloadavg()
    sc, schedule, results = run_all()
    elapsed = time.time() - started
    plot_means(results, os.path.join(args.out, 'balloon-means.png'))
    plot_memory(sc, schedule, results,
                os.path.join(args.out, 'balloon-memory.png'))
    print(rst_table(results))
    print()
    print('schedule (MiB per VM per phase): %s' % schedule)
    print('simulated %d policies in %.1f s' % (len(results), elapsed))
    if args.json_out:
        common.write_json(args.json_out, {
            'command': 'python benchmarks/balloon_sim_plots.py '
                       + ' '.join(sys.argv[1:] if argv is None else argv),
            'machine': common.machine(), 'date': common.now(),
            'load': {'start': load0, 'end': os.getloadavg()},
            'elapsed_s': elapsed, 'schedule': schedule,
            'policies': {k: {'arith_mean_mib_s': r.arith_mean(),
                             'geo_mean_mib_s': r.geo_mean()}
                         for k, r in results.items()}})
    return 0


if __name__ == '__main__':
    sys.exit(main())
