"""The refinement's exact step: planner CPU time with it and without it.

Usage::

    python benchmarks/planner_bench_exact.py [--repeat 5] [--json FILE]

Same process, interleaved (the machine is shared: CPU time of this
process, each host timed with the step on, then off, ``--repeat`` times,
the median kept):

* large hosts (``planner_bench.large_host``: 32 x 800 and 64 x 400, 30 %,
  50 % and 100 % memory-bound, seeds 1-3): the step never runs there
  (more than ``fair_share.MAX_VMS`` movable memory-bound VMs), the cost
  must not move (goal < 50 ms);
* the random oversubscribed small hosts of ``planner_class_only.py``
  (``planner_quality.random_host``, seeds 7-14, 40 hosts each, at the
  host's ratio): per host the ratio on / off, and how many hosts the step
  changes.

"Off" is ``fair_share.EXACT_MAX_PLANS = 0`` (the local search alone, the
planner before the step). Writes
``benchmarks/results/planner_bench-exact-refine.json``.
"""

import argparse
import math
import os
import random
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import common  # noqa: E402
from benchmarks import planner_bench  # noqa: E402
from benchmarks import planner_quality  # noqa: E402
from nova_cacheaware.cachedomain import fair_share  # noqa: E402
from nova_cacheaware.cachedomain import model  # noqa: E402
from nova_cacheaware.cachedomain import planner  # noqa: E402

BOUND = fair_share.EXACT_MAX_PLANS


def _cpu_ms(fn, bound, repeat):
    """Median CPU ms of ``fn()`` with the exact step's bound ``bound``."""
    fair_share.EXACT_MAX_PLANS = bound
    try:
        samples = []
        for _ in range(repeat):
            start = time.process_time()
            fn()
            samples.append((time.process_time() - start) * 1000.0)
        return statistics.median(samples)
    finally:
        fair_share.EXACT_MAX_PLANS = BOUND


def _on_off(plan_input, repeat):
    """``(on ms, off ms, plans differ)`` for one input."""
    on = _cpu_ms(lambda: planner.plan(plan_input), BOUND, repeat)
    off = _cpu_ms(lambda: planner.plan(plan_input), 0, repeat)
    fair_share.EXACT_MAX_PLANS = 0
    try:
        before = planner.plan(plan_input)
    finally:
        fair_share.EXACT_MAX_PLANS = BOUND
    return on, off, planner.plan(plan_input) != before


def small_input(domains, vms):
    """The planner's input for a ``random_host`` at the host's ratio."""
    ratio = math.ceil(sum(vm.vcpus for vm in vms)
                      / sum(len(d) for d in domains))
    return model.input_from_dict({
        'domains': [{'id': 'd%d' % n, 'cpus': list(cpus)}
                    for n, cpus in enumerate(domains)],
        'vms': [{'id': vm.id, 'vcpus': vm.vcpus, 'workload': vm.workload}
                for vm in vms],
        'max_vcpus_per_cpu': float(ratio), 'objective': 'contract'})


def large_rows(repeat):
    rows = []
    for n_domains, n_vms in ((32, 800), (64, 400)):
        for fraction in (0.3, 0.5, 1.0):
            for seed in (1, 2, 3):
                pi = planner_bench.large_host(seed, fraction,
                                              n_domains=n_domains,
                                              n_vms=n_vms)
                on, off, changed = _on_off(pi, repeat)
                rows.append({'domains': n_domains, 'vms': n_vms,
                             'memory_fraction': fraction, 'seed': seed,
                             'on_ms': round(on, 2), 'off_ms': round(off, 2),
                             'changed': changed})
    return rows


def small_rows(repeat, seeds, hosts):
    rows = []
    for seed in seeds:
        rng = random.Random(seed)
        for n in range(hosts):
            domains, vms = planner_quality.random_host(rng)
            on, off, changed = _on_off(small_input(domains, vms), repeat)
            rows.append({'seed': seed, 'host': n, 'on_ms': round(on, 3),
                         'off_ms': round(off, 3), 'changed': changed})
    return rows


def summary(rows):
    """Worst and mean CPU ms on/off, the mean per-input ratio on/off."""
    ratios = [r['on_ms'] / r['off_ms'] for r in rows if r['off_ms'] > 0]
    return {'inputs': len(rows),
            'worst_on_ms': max(r['on_ms'] for r in rows),
            'worst_off_ms': max(r['off_ms'] for r in rows),
            'mean_on_ms': round(statistics.fmean(r['on_ms'] for r in rows),
                                3),
            'mean_off_ms': round(statistics.fmean(r['off_ms'] for r in rows),
                                 3),
            'mean_ratio': round(statistics.fmean(ratios), 3),
            'changed': sum(r['changed'] for r in rows)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--seeds', default='7,8,9,10,11,12,13,14')
    parser.add_argument('--hosts', type=int, default=40)
    parser.add_argument(
        '--json', metavar='FILE',
        default='benchmarks/results/planner_bench-exact-refine.json')
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(',')]
    load_before = os.getloadavg()
    started = time.monotonic()
    large = large_rows(args.repeat)
    small = small_rows(args.repeat, seeds, args.hosts)
    doc = {'benchmark': 'planner_bench_exact',
           'command': common.command('planner_bench_exact.py', argv or []),
           'date': common.now(), 'machine': common.machine(),
           'exact_max_plans': BOUND,
           'large_summary': {
               '%d x %d' % size: summary([r for r in large if (
                   r['domains'], r['vms']) == size])
               for size in ((32, 800), (64, 400))},
           'small_summary': summary(small),
           'large': large, 'small': small}
    doc['loadavg_before'] = [round(x, 2) for x in load_before]
    doc['loadavg_after'] = [round(x, 2) for x in os.getloadavg()]
    doc['wall_s'] = round(time.monotonic() - started, 1)
    common.write_json(args.json, doc)
    for name, s in list(doc['large_summary'].items()) + [
            ('small hosts', doc['small_summary'])]:
        print('%-12s worst %.2f ms (off %.2f), mean %.3f ms (off %.3f), '
              'mean ratio %.3f, changed %d/%d' % (
                  name, s['worst_on_ms'], s['worst_off_ms'], s['mean_on_ms'],
                  s['mean_off_ms'], s['mean_ratio'], s['changed'],
                  s['inputs']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
