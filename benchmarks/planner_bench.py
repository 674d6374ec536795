"""Benchmark the All-share planner: speed on a large host, quality vs optimum.

Usage::

    python benchmarks/planner_bench.py [--quick] [--json FILE]

1. Speed: ``cachedomain.plan`` on 256 CPUs / 32 domains (8 CPUs each) / 200
   VMs, with 30 %, 50 % and 100 % of the VMs memory-bound (goal < 50 ms).
   Baseline in the same run: the greedy phase alone (no local search).
2. Quality: the heuristic against the exact optimum (branch and bound,
   cross-checked by brute force in the unit tests) on random small (<= 4
   domains, <= 4 memory-bound VMs) and medium (5-6 domains, 5-7 VMs)
   instances; how often it is optimal and by how much it misses on each
   criterion; and how often the budgeted refinement that ``plan`` applies
   up to 8 movable memory-bound VMs reaches the optimum.

Results go to doc/source/evaluation/planner.rst (by hand, with the machine
and the date).
"""

import argparse
import json
import platform
import random
import statistics
import sys
import time

from nova_cacheaware.policy import allshare_search
from nova_cacheaware.policy import cachedomain


def large_host(seed, memory_fraction, n_domains=32, per_domain=8,
               n_vms=200):
    """A busy 256-CPU host: half the VMs sit in one domain, half float."""
    rng = random.Random(seed)
    domains = [cachedomain.Domain(
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
        vms.append(cachedomain.VM(
            id='vm-%03d' % n, vcpus=vcpus,
            workload='memory' if memory else rng.choice(['cpu', 'io']),
            current=current, movable=movable))
    return cachedomain.PlanInput(domains=tuple(domains), vms=tuple(vms))


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


def speed(repeat, seeds):
    rows = []
    for fraction in (0.3, 0.5, 1.0):
        for seed in seeds:
            plan_input = large_host(seed, fraction)
            inst, movable = cachedomain.build_instance(plan_input)
            full = time_it(lambda: cachedomain.plan(plan_input), repeat)
            greedy = time_it(lambda: allshare_search.heuristic(
                inst, max_passes=0, kick_budget=0), repeat)
            result = cachedomain.plan(plan_input)
            greedy_key = allshare_search.objective(
                inst, allshare_search.heuristic(inst, max_passes=0,
                                                kick_budget=0))
            rows.append({
                'memory_fraction': fraction, 'seed': seed,
                'memory_vms': len(inst.sizes), 'plan': full,
                'greedy_only': greedy,
                'objective': list(cachedomain.score(plan_input, result)),
                'greedy_objective': list(greedy_key)})
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
        heur = allshare_search.heuristic(inst)
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
                        help='also write the results to FILE')
    args = parser.parse_args(argv)
    repeat = 5 if args.quick else 21
    count = 100 if args.quick else 1000
    doc = {
        'machine': {'python': platform.python_version(),
                    'processor': platform.processor() or platform.machine()},
        'date': time.strftime('%Y-%m-%d', time.gmtime()),
        'speed': speed(repeat, seeds=[1, 2, 3]),
        'quality': [
            quality('small (1-4 domains, 1-4 VMs)', count, (1, 4), (1, 4),
                    seed=11),
            quality('medium (5-6 domains, 5-7 VMs)', count // 4, (5, 6),
                    (5, 7), seed=12)],
    }
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write('\n')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(doc, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
