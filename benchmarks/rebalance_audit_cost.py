"""CPU time of the rebalance decision per audit on the simulated year.

Usage, from the repository root::

    .venv/bin/python benchmarks/rebalance_audit_cost.py [--root .]
        [--days 60] [--hosts 300] [--mix '70 % memory-bound']

On :mod:`nova_cacheaware_evaluation.sim.rebalance_year`'s cloud (seed 7,
120 days of warmup, budget one migration per 100 servers a day, refused
requests known, rooms first), the process CPU time of each
:func:`nova_cacheaware.rebalance.policy.plan_moves` call of the last
``--days`` audits: mean, median and worst, and the moves planned.
``--root`` runs the code of another checkout (a ``git worktree`` of an
earlier commit) for a comparison in the same session: its
``nova_cacheaware`` and ``evaluation`` come first on ``sys.path``.
Prints one line of JSON.
"""

import argparse
import json
import os
import statistics
import sys
import time


def main(argv=None):
    """Run the year and print the audits' CPU times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--root', default='.')
    parser.add_argument('--days', type=int, default=60)
    parser.add_argument('--hosts', type=int, default=300)
    parser.add_argument('--mix', default='70 % memory-bound')
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:0] = [root, os.path.join(root, 'evaluation'), here]
    from benchmarks import cache_cloud_bench
    from benchmarks import common
    from benchmarks import rebalance_year as by
    from nova_cacheaware.rebalance import policy
    from nova_cacheaware_evaluation.sim import contention
    from nova_cacheaware_evaluation.sim import rebalance_year as year

    calib = cache_cloud_bench.probe_calibration()
    model = contention.Model(dirty_all=calib['dirty_all'])
    spec = year.YearSpec(hosts=args.hosts, days=args.days, warmup_days=120,
                         mix=by.MIXES[args.mix])
    world = year.world(spec, model, calib['sigma'], 7)
    times = []
    plan_moves = policy.plan_moves

    def timed(snapshot, budget):
        started = time.process_time()
        plan = plan_moves(snapshot, budget)
        times.append((time.process_time() - started, len(plan.moves)))
        return plan

    year.rebalance.plan_moves = timed
    load = os.getloadavg()
    year.run(world, 1, know_refused=True, priority='required')
    last = times[-args.days:]
    cpu = [t for t, _moves in last]
    print(json.dumps({
        'benchmark': 'rebalance_audit_cost', 'date': common.now(),
        'machine': common.machine(), 'loadavg_before': load,
        'policy': policy.__file__.replace(root, '<root>'),
        'hosts': args.hosts, 'mix': args.mix, 'audits': len(cpu),
        'mean_s': round(statistics.mean(cpu), 3),
        'median_s': round(statistics.median(cpu), 3),
        'max_s': round(max(cpu), 3),
        'moves': sum(m for _t, m in last)}))


if __name__ == '__main__':
    main()
