"""The planner against the pattern ILP's class-only pinning, large hosts.

Usage::

    python benchmarks/planner_class_only_ilp.py [--small-hosts 20]
        [--large-hosts 3] [--draws 8] [--eval-draws 32] [--json FILE]

:mod:`benchmarks.planner_class_only` measures the planner against the
exhaustive class-only optimum on small hosts. Here the class-only pinning
comes from the iterated pattern ILP of
``nova_cacheaware_evaluation.sim.class_only_ilp`` (a heuristic: the best
pinning it visits, by the calibrated occupancy yardstick's mean log score
over ``--draws`` selection draws), started from every VM floating and
from the planner's own pinning, then hill-climbed on that same objective
(``class_only_ilp.improve``: at most ``--budget`` evaluations on a large
host, 1000 on a small one).

1. **Validation, small hosts**: the hosts of ``planner_class_only.py``
   (seed 7, same generator, same draw streams): the ILP's pinning against
   the exhaustive class-only optimum chosen on the same selection draws,
   both scored on the selection draws (does it find the optimum of the
   same objective?) and on ``--eval-draws`` others.
2. **Large hosts**: 8-CPU domains, 32 domains with 800 vCPUs (3.1 per
   CPU) and 64 domains with 400 VMs (about 900 vCPUs); VMs of 1, 2, 2 or
   4 vCPUs, 20-50 % memory-bound, the rest CPU- or I/O-bound. The
   planner (``contract`` at the host's ratio) against the reference: the
   best by the selection draws of the ILP's pinnings and the planner's.
   Ratio = exp(mean log score of the planner - mean log score of the
   reference) over the evaluation draws; the ILP's pinning alone beside
   it. A ratio below 1 is a proven gap (up to sampling); at 1 the planner
   may still be below the unknown optimum.
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
from benchmarks import planner_class_only  # noqa: E402
from benchmarks import planner_quality  # noqa: E402
from benchmarks import planner_yardstick  # noqa: E402
from nova_cacheaware_evaluation.sim import class_only_ilp  # noqa: E402
from nova_cacheaware_evaluation.sim import contention  # noqa: E402
from nova_cacheaware_evaluation.sim import occupancy  # noqa: E402
from nova_cacheaware_evaluation.sim import yardstick  # noqa: E402

SHAPES = (('32 domains x 800 vCPUs', 32, 'vcpus', 800),
          ('64 domains x 400 VMs', 64, 'vms', 400))


def large_host(rng, n_domains, unit, target):
    """(domains, vms) of a random oversubscribed large host."""
    domains = [tuple(range(d * 8, (d + 1) * 8)) for d in range(n_domains)]
    share = rng.uniform(0.2, 0.5)
    vms, total = [], 0
    while (total if unit == 'vcpus' else len(vms)) < target:
        vcpus = rng.choice([1, 2, 2, 4])
        kind = ('memory' if rng.random() < share
                else rng.choice(['cpu', 'cpu', 'io']))
        vms.append(contention.SimVM('v%d' % len(vms), vcpus, kind))
        total += vcpus
    return domains, vms


def pinned_of(domains, plan):
    """``{vm id: domain}`` of the VMs a plan holds in one domain."""
    where = {tuple(d): n for n, d in enumerate(domains)}
    return {vm_id: where[cpus[0]] for vm_id, cpus in plan.items()
            if cpus[0] in where and len(set(cpus)) == 1}


def mean_log(domains, vms, works, allowed, params):
    """Mean log geometric mean of performance over ``works``."""
    return statistics.fmean(
        math.log(yardstick.score(domains, vms, w, allowed, params)[0])
        for w in works)


def reference(domains, vms, chosen_on, over, params, plan, budget):
    """The ILP's best pinning, then hill-climbed; with what it took.

    Returns ``(ILP's best {vm id: domain}, after the local search,
    facts)``; both chosen by the yardstick's mean log score on
    ``chosen_on`` (:func:`class_only_ilp.value`).
    """
    def capacity(cpus):
        return cpus * over
    started = time.process_time()
    found = []
    for start in (None, pinned_of(domains, plan)):
        for pin in class_only_ilp.candidates(
                domains, vms, chosen_on, capacity, params, start=start,
                rounds=3):
            if pin not in found:
                found.append(pin)
    ilp_s = time.process_time() - started
    ilp = max(found, key=lambda p: class_only_ilp.value(
        domains, vms, chosen_on, p, params))
    best, _value, spent = class_only_ilp.improve(
        domains, vms, chosen_on, ilp, capacity, params, budget=budget)
    return ilp, best, {'ilp_pinnings': len(found),
                       'ilp_cpu_s': round(ilp_s, 1),
                       'search_evaluations': spent,
                       'total_cpu_s': round(time.process_time() - started,
                                            1)}


def small_row(seed, n, domains, vms, counts, mix, params, budget):
    """The ILP against the exhaustive class-only optimum on one host."""
    over = math.ceil(sum(vm.vcpus for vm in vms)
                     / sum(len(d) for d in domains))
    plan = planner_quality.planner_at('host')(domains, vms, over)
    chosen_on = planner_class_only.draws(seed, n, 0, counts[0], vms, mix,
                                         params)
    works = planner_class_only.draws(seed, n, counts[0], counts[1], vms,
                                     mix, params)
    exact = yardstick.class_optimum(
        domains, vms, chosen_on, params,
        capacity=[len(d) * over for d in domains] + [math.inf])
    ilp, best, facts = reference(domains, vms, chosen_on, over, params,
                                 plan, budget)
    exact_sel = mean_log(domains, vms, chosen_on, exact, params)
    exact_eval = mean_log(domains, vms, works, exact, params)
    row = {'host': n}
    for name, pin in (('ilp', ilp), ('searched', best)):
        allowed = class_only_ilp.allowed(domains, vms, pin)
        row[name] = {
            'selection_gap': round(exact_sel - mean_log(
                domains, vms, chosen_on, allowed, params), 5),
            'eval_ratio': round(math.exp(mean_log(
                domains, vms, works, allowed, params) - exact_eval), 4)}
    row.update(facts)
    return row


def large_row(seed, shape, counts, mix, params, budget):
    """The planner against the ILP's reference on one large host."""
    name, n_domains, unit, target = shape
    domains, vms = large_host(random.Random(seed * 7919 + n_domains),
                              n_domains, unit, target)
    over = math.ceil(sum(vm.vcpus for vm in vms)
                     / sum(len(d) for d in domains))
    started = time.process_time()
    plan = planner_quality.planner_at('host')(domains, vms, over)
    plan_ms = (time.process_time() - started) * 1000
    chosen_on = planner_class_only.draws(seed, n_domains, 0, counts[0], vms,
                                         mix, params)
    works = planner_class_only.draws(seed, n_domains, counts[0], counts[1],
                                     vms, mix, params)
    ilp, best, facts = reference(domains, vms, chosen_on, over, params,
                                 plan, budget)
    best = class_only_ilp.allowed(domains, vms, best)
    ilp = class_only_ilp.allowed(domains, vms, ilp)
    ref = (best if mean_log(domains, vms, chosen_on, best, params)
           > mean_log(domains, vms, chosen_on, plan, params) else plan)
    got = mean_log(domains, vms, works, plan, params)
    row = {'shape': name, 'seed': seed, 'vms': len(vms),
           'vcpus': sum(vm.vcpus for vm in vms),
           'memory_vms': sum(vm.workload == 'memory' for vm in vms),
           'ratio': over, 'planner_cpu_ms': round(plan_ms, 1),
           'planner_pinned': len(pinned_of(domains, plan)),
           'reference': 'planner' if ref is plan else 'searched',
           'planner_vs_reference': round(math.exp(
               got - mean_log(domains, vms, works, ref, params)), 4),
           'planner_vs_ilp': round(math.exp(
               got - mean_log(domains, vms, works, ilp, params)), 4)}
    row.update(facts)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--small-hosts', type=int, default=20)
    parser.add_argument('--small-seed', type=int, default=7)
    parser.add_argument('--small-draws', type=int, default=16)
    parser.add_argument('--large-hosts', type=int, default=3)
    parser.add_argument('--draws', type=int, default=8,
                        help='selection draws on the large hosts')
    parser.add_argument('--eval-draws', type=int, default=32)
    parser.add_argument('--budget', type=int, default=100,
                        help='local search evaluations per large host')
    parser.add_argument('--probe', default=planner_yardstick.PROBE)
    parser.add_argument(
        '--json', metavar='FILE',
        default='benchmarks/results/planner_class_only_ilp.json')
    args = parser.parse_args(argv)
    try:
        if min(args.draws, args.eval_draws, args.small_draws) < 1:
            raise ValueError('draw counts must be at least 1')
        mix, calib = planner_yardstick.probe_mix(args.probe)
    except (ValueError, OSError, KeyError) as e:
        print('planner_class_only_ilp: %s' % e, file=sys.stderr)
        return 2
    params = occupancy.Params()
    load_before = os.getloadavg()
    started, cpu = time.monotonic(), time.process_time()
    rng = random.Random(args.small_seed)
    small = []
    for n in range(args.small_hosts):
        domains, vms = planner_quality.random_host(rng)
        small.append(small_row(args.small_seed, n, domains, vms,
                               (args.small_draws, args.eval_draws), mix,
                               params, 1000))
    large = [large_row(seed, shape, (args.draws, args.eval_draws), mix,
                       params, args.budget)
             for shape in SHAPES for seed in range(1, args.large_hosts + 1)]
    doc = {'benchmark': 'planner_class_only_ilp',
           'command': common.command('planner_class_only_ilp.py', argv or []),
           'date': common.now(), 'machine': common.machine(),
           'calibration': calib, 'small': small, 'large': large}
    if small:
        doc['small_summary'] = {name: {
            'hosts': len(small),
            'optimum_found': sum(r[name]['selection_gap'] <= 1e-9
                                 for r in small),
            'max_selection_gap': max(r[name]['selection_gap']
                                     for r in small),
            'eval_ratio_mean': round(statistics.fmean(
                r[name]['eval_ratio'] for r in small), 4),
            'eval_ratio_worst': min(r[name]['eval_ratio'] for r in small)}
            for name in ('ilp', 'searched')}
    doc['loadavg_before'] = [round(x, 2) for x in load_before]
    doc['loadavg_after'] = [round(x, 2) for x in os.getloadavg()]
    doc['wall_s'] = round(time.monotonic() - started, 1)
    doc['cpu_s'] = round(time.process_time() - cpu, 1)
    common.write_json(args.json, doc)
    if small:
        print('small: %s' % doc['small_summary'])
    for r in large:
        print('%-22s seed %d | planner/ref %.4f (%s) planner/ilp %.4f | '
              'ILP %.1f s, all %.1f s' % (
                  r['shape'], r['seed'], r['planner_vs_reference'],
                  r['reference'], r['planner_vs_ilp'], r['ilp_cpu_s'],
                  r['total_cpu_s']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
