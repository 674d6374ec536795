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
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import common
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.pcpu_est import network as pcpu_est_network
from nova_cacheaware_evaluation.baselines import pcpu_est_greedy


# --------------------------------------------------------------------------
# Synthetic hosts.
# --------------------------------------------------------------------------

def realistic_host(seed=1, pcpus=1024, vcpus=4096, numa_nodes=8,
                   pinned_fraction=0.1, capped_fraction=0.25,
                   host_wide_fraction=0.15):
    """An over-committed (4:1) host: VMs of 1-32 vCPUs.

    ``host_wide_fraction`` of the VMs float over the whole host, most float
    over one NUMA node (Nova's shared CPUs with ``hw:numa_nodes=1``; nodes
    are loaded unevenly, node j with weight j + 1); ``pinned_fraction`` pin
    each vCPU to one pCPU that floating VMs share too (study 004's "many
    vCPUs onto fewer pCPUs"); ``capped_fraction`` have a per-vCPU quota
    cap, some below the fair share.
    """
    rng = random.Random(seed)
    per_node = pcpus // numa_nodes
    nodes = [tuple(range(n * per_node, (n + 1) * per_node))
             for n in range(numa_nodes)]
    node_weights = [n + 1 for n in range(numa_nodes)]
    host = tuple(range(pcpus))
    vms = {}
    left = vcpus
    i = 0
    while left > 0:
        size = min(left, rng.choice([1, 2, 2, 4, 4, 4, 8, 8, 16, 32]))
        left -= size
        kind = rng.random()
        node = rng.choices(nodes, node_weights)[0]
        if kind < pinned_fraction:
            first = rng.randrange(per_node - size + 1)
            affs = {j: (node[first + j],) for j in range(size)}
        elif kind < pinned_fraction + host_wide_fraction:
            affs = {j: host for j in range(size)}
        else:
            affs = {j: node for j in range(size)}
        caps = {}
        if rng.random() < capped_fraction:
            cap = rng.choice([0.1, 0.2, 0.3, 0.5])
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
    # Wall time (best and median) and the best process CPU time, which
    # other load on a shared machine disturbs less.
    times = []
    cpu = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        c0 = time.process_time()
        result = fn()
        cpu.append(time.process_time() - c0)
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), min(cpu), result


def bench_estimate(args):
    """Time exact vs greedy on the synthetic hosts; print a JSON report."""
    report = {'machine': machine(), 'date': time.strftime(
        '%Y-%m-%d %H:%M UTC', time.gmtime()), 'goal_ms': 200, 'cases': []}
    cases = [('realistic', realistic_host(seed=args.seed)),
             ('uniform: no pinned/capped, all host-wide', realistic_host(
                 seed=args.seed, pinned_fraction=0, capped_fraction=0,
                 host_wide_fraction=1)),
             ('scattered windows', scattered_host(seed=args.seed))]
    for name, request in cases:
        n_vcpus = sum(len(vm.vcpus) for vm in request.vms.values())
        best, median, cpu, exact = _best_time(
            lambda: pcpu_est.estimate(request), args.runs)
        g_best, g_median, g_cpu, greedy = _best_time(
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
            'exact_cpu_ms_best': round(cpu * 1e3, 1),
            'greedy_ms_best': round(g_best * 1e3, 1),
            'greedy_ms_median': round(g_median * 1e3, 1),
            'greedy_cpu_ms_best': round(g_cpu * 1e3, 1),
            'greedy_over_exact_time': round(g_best / best, 2),
            'classes_atoms': _network_size(request),
            'max_abs_error_pcpus': round(max(errs), 4),
            'mean_abs_error_pcpus': round(statistics.fmean(errs), 4),
            'vms_with_other_recommendation': rec_diff,
            'sum_available_exact': round(total_exact, 3),
            'sum_available_greedy': round(total_greedy, 3),
        }
        report['cases'].append(case)
        print(json.dumps(case), file=sys.stderr)
    print(json.dumps(report, indent=2))


# --------------------------------------------------------------------------
# The spin-barrier experiment.
# --------------------------------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))


class CpuCgroups:
    """A private tree under the cgroup CPU controller (v1 or v2).

    Groups are created under ``nova-cacheaware-bench-<pid>`` and removed by
    :meth:`cleanup`. Raises OSError when the controller is not writable.
    """

    def __init__(self, parent_shares):
        v1 = '/sys/fs/cgroup/cpu'
        if os.path.exists(os.path.join(v1, 'cpu.cfs_quota_us')):
            self.version, root = 1, v1
        elif 'cpu' in _read('/sys/fs/cgroup/cgroup.controllers').split():
            self.version, root = 2, '/sys/fs/cgroup'
        else:
            raise OSError('no cgroup CPU controller mounted')
        self.parent = os.path.join(root,
                                   'nova-cacheaware-bench-%d' % os.getpid())
        os.mkdir(self.parent)
        self.groups = []
        if self.version == 2:
            _write(os.path.join(self.parent, 'cgroup.subtree_control'),
                   '+cpu')
        self._set(self.parent, shares=parent_shares)

    def group(self, name, shares=1024, cpus_quota=None):
        """Create (or reset) child ``name``; return its procs file."""
        path = os.path.join(self.parent, name)
        if not os.path.isdir(path):
            os.mkdir(path)
            self.groups.append(path)
        self._set(path, shares=shares, cpus_quota=cpus_quota)
        return os.path.join(path, 'cgroup.procs')

    def _set(self, path, shares=1024, cpus_quota=None):
        period = 100000
        if self.version == 1:
            _write(os.path.join(path, 'cpu.shares'), str(shares))
            if path != self.parent:
                quota = -1 if cpus_quota is None else int(
                    cpus_quota * period)
                _write(os.path.join(path, 'cpu.cfs_period_us'), str(period))
                _write(os.path.join(path, 'cpu.cfs_quota_us'), str(quota))
        else:
            _write(os.path.join(path, 'cpu.weight'),
                   str(max(1, min(10000, shares * 100 // 1024))))
            if path != self.parent:
                _write(os.path.join(path, 'cpu.max'), '%s %d' % (
                    'max' if cpus_quota is None
                    else int(cpus_quota * period), period))

    def cleanup(self):
        """Remove the groups (their processes must have ended)."""
        for path in list(reversed(self.groups)) + [self.parent]:
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ''


def _write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def build_spin_barrier(workdir):
    """Compile benchmarks/spin_barrier.c; return the binary's path."""
    binary = os.path.join(workdir, 'spin_barrier')
    subprocess.run(['gcc', '-O2', '-pthread', '-o', binary,
                    os.path.join(HERE, 'spin_barrier.c')], check=True)
    return binary


def _in_group(procs, cpus, argv):
    # The shell joins the group, then execs taskset -> the program, so
    # every thread starts inside the group with the affinity set.
    return ['sh', '-c', 'echo $$ > "$0" && exec "$@"', procs,
            'taskset', '-c', ','.join(map(str, cpus))] + list(argv)


#: The settings: 8 threads = the configured vCPUs, on the CPUs listed, cut
#: by a VM-wide cap, a narrow affinity or a competing CPU-bound "VM" whose
#: cgroup weight is proportional to its vCPUs (as for the application).
SPIN_SETTINGS = [
    {'name': 'cap 0.5 CPU', 'kind': 'cap', 'cpus': [0, 1], 'cap': 0.5},
    {'name': 'cap 1.5 CPU', 'kind': 'cap', 'cpus': [0, 1], 'cap': 1.5},
    {'name': 'affinity 1 CPU', 'kind': 'pinning', 'cpus': [0]},
    {'name': 'affinity 2 CPUs', 'kind': 'pinning', 'cpus': [0, 1]},
    {'name': 'competitor 8 threads', 'kind': 'sharing', 'cpus': [0, 1],
     'competitor': 8},
    {'name': 'competitor 2 threads', 'kind': 'sharing', 'cpus': [0, 1],
     'competitor': 2},
]


def spin_request(setting, vcpus):
    """The pCPU-Est input that describes ``setting`` for the application.

    A VM-wide cap of ``c`` CPUs is spread as a per-vCPU cap of ``c / n``
    (the estimate's caps are per vCPU; the sum is what matters here).
    """
    cpus = tuple(setting['cpus'])
    vms = {}
    caps = {}
    if setting.get('cap') is not None:
        caps = {i: setting['cap'] / vcpus for i in range(vcpus)}
    vms['app'] = pcpu_est.VMAffinity(
        vcpus={i: cpus for i in range(vcpus)}, caps=caps)
    if setting.get('competitor'):
        vms['other'] = pcpu_est.VMAffinity(
            vcpus={i: cpus for i in range(setting['competitor'])})
    return pcpu_est.EstimateRequest(vms=vms)


def spin_experiment(args):
    """Sweep thread counts per setting; print a JSON report."""
    workdir = tempfile.mkdtemp(prefix='pcpu-spin-')
    binary = build_spin_barrier(workdir)
    report = {'machine': machine(), 'date': time.strftime(
        '%Y-%m-%d %H:%M UTC', time.gmtime()), 'vcpus': args.vcpus,
        'rounds': args.rounds, 'work': args.work, 'timeout_s': args.timeout,
        'loadavg_before': _read('/proc/loadavg').split()[:3],
        'settings': []}
    try:
        groups = CpuCgroups(parent_shares=args.parent_shares)
        report['cgroup'] = 'v%d' % groups.version
    except OSError as e:
        groups = None
        report['cgroup'] = 'unavailable: %s' % e
    try:
        for wait in WAIT_POLICIES[args.wait]:
            for setting in SPIN_SETTINGS:
                if args.only and args.only not in setting['name']:
                    continue
                if groups is None and setting['kind'] != 'pinning':
                    report['settings'].append({'name': setting['name'],
                                               'skipped': report['cgroup']})
                    continue
                result = _run_setting(setting, binary, groups, args, wait)
                report['settings'].append(result)
                print(json.dumps(result), file=sys.stderr)
    finally:
        if groups is not None:
            groups.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
    report['loadavg_after'] = _read('/proc/loadavg').split()[:3]
    report['command'] = 'python benchmarks/pcpu_est_bench.py ' + ' '.join(
        sys.argv[1:])
    report['summary'] = spin_summary(report['settings'])
    print(json.dumps(report, indent=2))
    if args.json:
        common.write_json(args.json, report)


def spin_summary(settings):
    """How many settings the recommendation got within 5 % of the best."""
    rated = [s for s in settings if 'recommended_threads' in s]
    # A recommendation that timed out has no ratio: it is a miss.
    within = [s for s in rated if s['recommended_over_best'] is not None
              and s['recommended_over_best'] <= 1.05]
    return {'settings': len(rated), 'within_5_percent': len(within),
            'misses': [{'name': s['name'], 'wait': s['wait'],
                        'recommended': s['recommended_threads'],
                        'best': s['best_threads'],
                        'recommended_over_best': s['recommended_over_best']}
                       for s in rated if s not in within]}


#: Barrier waiting: spin forever, or spin 20 000 pauses (a fraction of a
#: millisecond) and then sleep on a futex, as libgomp does by default.
WAIT_POLICIES = {'spin': [('spin', -1)], 'block': [('spin-then-block', 20000)],
                 'both': [('spin', -1), ('spin-then-block', 20000)]}


def _run_setting(setting, binary, groups, args, wait):
    n = args.vcpus
    wait_name, spin_limit = wait
    est = pcpu_est.estimate(spin_request(setting, n)).vms['app']
    counts = sorted({1, 2, 3, 4, n, est.recommended_vcpus})
    counts = [c for c in counts if c <= n]
    competitor = None
    app_procs = None
    if groups is not None:
        app_procs = groups.group('app', shares=1024 * n,
                                 cpus_quota=setting.get('cap'))
    if setting.get('competitor'):
        k = setting['competitor']
        other = groups.group('other', shares=1024 * k)
        competitor = subprocess.Popen(
            _in_group(other, setting['cpus'], [binary, 'burn', str(k)]))
        time.sleep(0.5)
    times = {c: [] for c in counts}
    try:
        for _ in range(args.reps):
            for c in counts:
                if times[c] and times[c][-1] is None:
                    continue               # timed out once: don't retry
                argv = [binary, 'run', str(c), str(args.rounds),
                        str(args.work), str(spin_limit)]
                if app_procs:
                    argv = _in_group(app_procs, setting['cpus'], argv)
                else:
                    argv = ['taskset', '-c', ','.join(
                        map(str, setting['cpus']))] + argv
                try:
                    out = subprocess.run(argv, capture_output=True,
                                         text=True, timeout=args.timeout,
                                         check=True).stdout
                    times[c].append(float(out))
                except subprocess.TimeoutExpired:
                    times[c].append(None)
    finally:
        if competitor is not None:
            competitor.kill()
            competitor.wait()
    med = {}
    for c, ts in times.items():
        done = [t for t in ts if t is not None]
        med[c] = statistics.median(done) if len(done) == len(ts) else None
    finite = {c: t for c, t in med.items() if t is not None}
    best = min(finite, key=finite.get)
    rec = est.recommended_vcpus

    def ratio(a, b):
        if med.get(a) is None or med.get(b) is None:
            return None
        return round(med[a] / med[b], 3)

    def speedup(slow, fast):
        if med.get(fast) is None:
            return None
        if med.get(slow) is None:
            return '> %.1f' % (args.timeout / med[fast])
        return round(med[slow] / med[fast], 3)

    return {
        'name': setting['name'], 'kind': setting['kind'], 'wait': wait_name,
        'cpus': setting['cpus'], 'cap': setting.get('cap'),
        'competitor_threads': setting.get('competitor'),
        'estimate_available_pcpus': round(est.available_pcpus, 4),
        'recommended_threads': rec, 'best_threads': best,
        'median_s': {str(c): (None if t is None else round(t, 3))
                     for c, t in med.items()},
        # The spread of the repetitions, to judge whether a miss is noise.
        'min_max_s': {str(c): (None if med[c] is None else
                               [round(min(ts), 3), round(max(ts), 3)])
                      for c, ts in times.items()},
        # > 1: the recommendation is faster than configured (speed-up);
        # recommended / best: 1.0 = the recommendation is the best count.
        'speedup_recommended_vs_configured': speedup(n, rec),
        'recommended_over_best': ratio(rec, best),
        'speedup_best_vs_configured': speedup(n, best),
    }


def _network_size(request):
    affs = {(n, i): a for n, vm in request.vms.items()
            for i, a in vm.vcpus.items()}
    caps = {(n, i): vm.cap(i) for n, vm in request.vms.items()
            for i in vm.vcpus}
    classes, atoms, _ = pcpu_est_network.build_network(affs, caps, None)
    return [len(classes), len(atoms)]


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
    p = sub.add_parser('spin', help='spin-barrier experiment (root)')
    p.add_argument('--vcpus', type=int, default=8,
                   help='configured vCPUs = threads (default 8)')
    p.add_argument('--rounds', type=int, default=200)
    p.add_argument('--work', type=int, default=150000,
                   help='total work units (1 unit = 1000 LCG steps)')
    p.add_argument('--reps', type=int, default=9,
                   help='repetitions per thread count (default 9: 3 were '
                   'too few to tell 1 from 2 threads on a 2-CPU machine)')
    p.add_argument('--wait', choices=sorted(WAIT_POLICIES), default='both',
                   help='barrier wait policy (default both)')
    p.add_argument('--timeout', type=float, default=8.0,
                   help='seconds before a run counts as "too slow"')
    p.add_argument('--parent-shares', type=int, default=16384,
                   help='cpu.shares of the experiment\'s parent cgroup, '
                        'against other load on the machine')
    p.add_argument('--only', help='run only settings whose name has this')
    p.add_argument('--json', help='also write the report to this file, '
                   'e.g. benchmarks/results/pcpu_est_spin.json')
    p.set_defaults(func=spin_experiment)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
