"""Benchmark the All-share planner: speed on large hosts, quality.

Usage::

    python benchmarks/planner_bench.py [--quick] [--json FILE]

1. Speed: ``cachedomain.plan`` at 32 domains x 200 and x 800 VMs, 64 x 400
   and 128 x 800 (8 CPUs per domain), with 30 %, 50 % and 100 % of the VMs
   memory-bound, ``max_vcpus_per_cpu`` 1.0 (goal < 50 ms at 32 x 800 and
   64 x 400). Baseline in the same run: the greedy phase alone.
2. Quality on random oversubscribed small hosts (goal >= 0.98 of the
   optimum on average, >= 0.95 at worst) is measured by
   ``benchmarks/planner_yardstick.py``, under the cache simulator and
   under the independent occupancy yardstick, each against its own
   exhaustive optimum.
3. Quality on the objective: the heuristic against the exact optimum
   (branch and bound) on random small and medium instances, and on large
   hosts against an ILP or its LP bound (:mod:`benchmarks.planner_ilp`).
4. Replanning on one arrival or one departure: the incremental replan
   (``allshare_replan.replan``) against the full plan, same run.

Writes ``benchmarks/results/planner_bench.json`` (or ``--json FILE``)
with the command, machine, load and date; the figures go to
doc/source/evaluation/planner.rst.
"""

import argparse
import dataclasses
import json
import os
import random
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import common  # noqa: E402
from benchmarks import planner_ilp  # noqa: E402
from nova_cacheaware.cachedomain import heuristic  # noqa: E402
from nova_cacheaware.cachedomain import model  # noqa: E402
from nova_cacheaware.cachedomain import planner as cachedomain  # noqa: E402
from nova_cacheaware.cachedomain import replan as allshare_replan  # noqa: E402
from nova_cacheaware.cachedomain import search as allshare_search  # noqa: E402


def large_host(seed, memory_fraction, n_domains=32, per_domain=8,
               n_vms=200):
    """A busy 256-CPU host: half the VMs sit in one domain, half float."""
    rng = random.Random(seed)
    domains = [model.Domain(
        id='L3-%d' % d,
        cpus=tuple(range(d * per_domain, (d + 1) * per_domain)))
        for d in range(n_domains)]
    vms = []
    for n in range(n_vms):
        vcpus = rng.choice([1, 1, 2, 2, 4])
        memory = rng.random() < memory_fraction
        movable = rng.random() < 0.95
        current = None
        if not movable or rng.random() < 0.5:
            # Unmovable ones (dedicated) are always pinned somewhere.
            cpus = domains[rng.randrange(n_domains)].cpus
            current = {i: cpus for i in range(vcpus)}
        vms.append(model.VM(
            id='vm-%03d' % n, vcpus=vcpus,
            workload='memory' if memory else rng.choice(['cpu', 'io']),
            current=current, movable=movable))
    return model.PlanInput(domains=tuple(domains), vms=tuple(vms))


def time_it(fn, repeat):
    # CPU time of this process: the machine is shared, wall time would
    # measure the neighbours too.
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        samples.append((time.process_time() - start) * 1000.0)
    samples.sort()
    return {'median_ms': round(statistics.median(samples), 2),
            'p95_ms': round(samples[int(0.95 * (len(samples) - 1))], 2),
            'max_ms': round(samples[-1], 2)}


SIZES = ((32, 200), (32, 800), (64, 400), (128, 800))


def speed(repeat, seeds):
    rows = []
    for n_domains, n_vms in SIZES:
        for fraction in (0.3, 0.5, 1.0):
            for seed in seeds:
                rows.append(_speed_row(repeat, seed, fraction, n_domains,
                                       n_vms))
    return rows


def _speed_row(repeat, seed, fraction, n_domains, n_vms):
    plan_input = large_host(seed, fraction, n_domains=n_domains,
                            n_vms=n_vms)
    inst, movable = cachedomain.build_instance(plan_input)
    full = time_it(lambda: cachedomain.plan(plan_input), repeat)
    greedy = time_it(lambda: heuristic.greedy(inst), repeat)
    result = cachedomain.plan(plan_input)
    greedy_key = allshare_search.objective(
        inst, heuristic.greedy(inst))
    return {'domains': n_domains, 'vms': n_vms,
            'memory_fraction': fraction, 'seed': seed,
            'memory_vms': len(inst.sizes), 'plan': full,
            'greedy_only': greedy,
            'objective': list(cachedomain.score(plan_input, result)),
            'greedy_objective': list(greedy_key)}


def speed_summary(rows):
    """Per size: the worst median and the worst max over mixes and seeds."""
    out = []
    for n_domains, n_vms in SIZES:
        mine = [r for r in rows
                if (r['domains'], r['vms']) == (n_domains, n_vms)]
        out.append({'domains': n_domains, 'vms': n_vms,
                    'worst_median_ms': max(r['plan']['median_ms']
                                           for r in mine),
                    'worst_max_ms': max(r['plan']['max_ms'] for r in mine)})
    return out


def applied(plan_input, result):
    """``plan_input`` once the agent applied ``result``."""
    return dataclasses.replace(plan_input, vms=tuple(
        dataclasses.replace(vm, current=dict(result.vms[vm.id].pinning))
        for vm in plan_input.vms))


def _moved_before(now, previous, result):
    return sum(1 for vm in now.vms
               if vm.id in result.vms and vm.memory_bound and vm.movable
               and vm.id not in previous.unplaced
               and result.vms[vm.id].pinning != now.pinning_now(vm))


def replan_rows(repeat, seeds):
    """Arrival and departure: incremental replan vs full plan."""
    rows = []
    for n_domains, n_vms in ((32, 800), (64, 400)):
        for fraction in (0.3, 1.0):
            for seed in seeds:
                plan_input = large_host(seed, fraction, n_domains=n_domains,
                                        n_vms=n_vms)
                previous = cachedomain.plan(plan_input)
                now = applied(plan_input, previous)
                rng = random.Random(seed)
                memory = [vm for vm in now.vms
                          if vm.memory_bound and vm.movable]
                gone = memory[rng.randrange(len(memory))].id
                arrival = model.VM(id='new', workload='memory',
                                   vcpus=rng.choice([1, 2, 4]))
                for kind, after in (
                        ('arrival', dataclasses.replace(
                            now, vms=now.vms + (arrival,))),
                        ('departure', dataclasses.replace(
                            now, vms=tuple(v for v in now.vms
                                           if v.id != gone)))):
                    rows.append(_replan_row(repeat, now, previous, after,
                                            kind, (n_domains, n_vms,
                                                   fraction, seed)))
    return rows


def _replan_row(repeat, now, previous, after, kind, where):
    def incremental():
        return allshare_replan.replan(after, now, previous.unplaced)
    full = cachedomain.plan(after)
    inc, used = incremental()
    # The same replan without the dirt threshold (as before it existed).
    loose, loose_used = allshare_replan.replan(after, now, previous.unplaced,
                                               dirt_bound=None)
    return {'domains': where[0], 'vms': where[1],
            'memory_fraction': where[2], 'seed': where[3], 'change': kind,
            'incremental_used': used,
            'without_dirt_check': {
                'incremental_used': loose_used,
                'objective': list(cachedomain.score(after, loose))},
            'full': time_it(lambda: cachedomain.plan(after), repeat),
            'incremental': time_it(incremental, repeat),
            'full_objective': list(cachedomain.score(after, full)),
            'incremental_objective': list(cachedomain.score(after, inc)),
            'full_moved_before': _moved_before(after, previous, full),
            'incremental_moved_before': _moved_before(after, previous, inc)}


def ilp_rows(time_limit):
    """Dirt of the plan against the ILP (32 domains) or LP bound (64)."""
    rows = []
    for n_domains, n_vms, relax in ((32, 200, False), (64, 400, True)):
        for fraction in (0.5, 1.0):
            plan_input = large_host(1, fraction, n_domains=n_domains,
                                    n_vms=n_vms)
            inst, _ = cachedomain.build_instance(plan_input)
            got = planner_ilp.dirt_ilp(inst, time_limit, relax=relax)
            rows.append(dict(got, domains=n_domains, vms=n_vms,
                             memory_fraction=fraction, seed=1,
                             method='LP relaxation' if relax else 'ILP',
                             plan=list(cachedomain.score(
                                 plan_input, cachedomain.plan(plan_input)))))
    return rows


def random_instance(rng, n_domains, n_vms, max_cpus=4, max_vcpus=4):
    caps = [rng.randint(1, max_cpus) for _ in range(n_domains)]
    fixed = [rng.choice([0, 0, 0, 1]) for _ in range(n_domains)]
    free = [max(0, c - f * rng.randint(0, 1)) for c, f in zip(caps, fixed)]
    sizes, current, touch = [], [], []
    for _ in range(n_vms):
        size = rng.randint(1, max_vcpus)
        sizes.append(size)
        if rng.random() < 0.3:
            current.append(None)
            touch.append(frozenset(range(n_domains)))
        else:
            counts = [0] * n_domains
            for _ in range(size):
                counts[rng.randrange(n_domains)] += 1
            current.append(tuple(counts))
            touch.append(frozenset(d for d, n in enumerate(counts) if n))
    return allshare_search.Instance(
        free=tuple(free), capacity=tuple(caps), fixed_touch=tuple(fixed),
        sizes=tuple(sizes), current=tuple(current),
        current_touch=tuple(touch))


def quality(label, count, domains_range, vms_range, seed):
    rng = random.Random(seed)
    optimal = refined_optimal = 0
    refined_ms = []
    lost = [0, 0, 0, 0]  # first criterion where the heuristic is worse
    gap_sum = [0, 0, 0, 0]
    exact_ms = []
    for _ in range(count):
        inst = random_instance(rng, rng.randint(*domains_range),
                               rng.randint(*vms_range))
        heur = heuristic.heuristic(inst)
        h_key = allshare_search.objective(inst, heur)
        start = time.process_time()
        best = allshare_search.exact(inst, incumbent=heur)
        exact_ms.append((time.process_time() - start) * 1000.0)
        o_key = allshare_search.objective(inst, best)
        assert h_key >= o_key, (inst, h_key, o_key)
        # What ``plan`` does on hosts with 5-8 movable memory-bound VMs.
        start = time.process_time()
        refined = cachedomain.solve(inst, 'refined')
        refined_ms.append((time.process_time() - start) * 1000.0)
        refined_optimal += allshare_search.objective(inst, refined) == o_key
        if h_key == o_key:
            optimal += 1
            continue
        first = next(i for i in range(4) if h_key[i] != o_key[i])
        lost[first] += 1
        for i in range(4):
            gap_sum[i] += h_key[i] - o_key[i]
    names = ['unplaced', 'excess', 'dirt', 'moves']
    return {'set': label, 'instances': count,
            'optimal_pct': round(100.0 * optimal / count, 1),
            'first_worse_on': dict(zip(names, lost)),
            'mean_gap': {n: round(g / count, 3)
                         for n, g in zip(names, gap_sum)},
            'exact_median_ms': round(statistics.median(exact_ms), 2),
            'refined_optimal_pct': round(100.0 * refined_optimal / count, 1),
            'refined_median_ms': round(statistics.median(refined_ms), 2),
            'refined_max_ms': round(max(refined_ms), 2)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='fewer repetitions and instances')
    parser.add_argument('--json', metavar='FILE',
                        default='benchmarks/results/planner_bench.json',
                        help='where to write the results')
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    count = 100 if args.quick else 400
    load_before = os.getloadavg()
    started = time.monotonic()
    rows = speed(repeat, seeds=[1, 2, 3])
    doc = {
        'benchmark': 'planner_bench',
        'command': common.command('planner_bench.py', argv or []),
        'date': common.now(),
        'machine': common.machine(),
        'speed_summary': speed_summary(rows),
        'speed': rows,
        'replan': replan_rows(repeat, seeds=[1, 2, 3]),
        'ilp': ilp_rows(30.0 if args.quick else 120.0),
        'objective': [
            quality('small (1-4 domains, 1-4 VMs)', count, (1, 4), (1, 4),
                    seed=11),
            quality('medium (5-6 domains, 5-7 VMs)', count // 4, (5, 6),
                    (5, 7), seed=12)],
    }
    doc['loadavg_before'] = [round(x, 2) for x in load_before]
    doc['loadavg_after'] = [round(x, 2) for x in os.getloadavg()]
    doc['wall_s'] = round(time.monotonic() - started, 1)
    common.write_json(args.json, doc)
    print(json.dumps({k: doc[k] for k in ('speed_summary', 'ilp')},
                     indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
