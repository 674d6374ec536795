"""Spin storms (study 001) detected and acted on, with a real program.

A "VM" is the spin-barrier program of the pCPU-Est benchmark
(``benchmarks/spin_barrier.c``, waiters spin forever) run as a stream of
jobs (parallel regions) with ``--threads`` threads - its vCPUs - on the
CPUs ``--cpus``. Three phases: quiet, storm, quiet. The storm is a
competing CPU-bound program on the same CPUs (``competitor``) or a CPU cap
on the VM's cgroup (``cap``): the VM then gets fewer pCPUs than it runs
threads, and its waiters spin while the barrier's last thread waits for a
CPU (lock-holder preemption).

Every ``--period`` seconds the agent's own detector
(:class:`nova_cacheaware.vcpu_sizing.storm_states.StormWatch`, i.e.
:mod:`nova_cacheaware.vcpu_sizing.spin_storm` with the default thresholds)
reads the real run delay of the VM's threads from
``/proc/<pid>/task/<tid>/schedstat`` (polled every 20 ms, so threads of a
job that ended are counted too). With ``react`` the next jobs run
:func:`~nova_cacheaware.vcpu_sizing.spin_storm.online_target` threads:
pCPU-Est's recommendation (of what runs now: the competitor as another
VM, the cap as per-vCPU caps) while the storm lasts, all after - what
``apply`` does with vCPUs. Without, always ``--threads``.

Reported per scenario and mode: work units per second in each phase, the
storm's detection time (periods after it began) and the end (periods after
it ended), and the ratio of storm-phase throughput with and without the
reaction (same run, same machine).

Run from the repository root (root: cgroups)::

    python benchmarks/storm_bench.py [--scenario competitor|cap|both]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchmarks import pcpu_est_bench as pcb
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.vcpu_sizing import model as storm_model
from nova_cacheaware.vcpu_sizing import spin_storm as storm_policy
from nova_cacheaware.vcpu_sizing import storm_states as spin_storm

POLL_S = 0.02


def read_schedstat(pid):
    """``{tid: (run ns, wait ns)}`` of every thread of ``pid`` now."""
    out = {}
    try:
        tids = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open('/proc/%d/task/%s/schedstat' % (pid, tid)) as f:
                run, wait = f.read().split()[:2]
        except (OSError, ValueError):
            continue
        out[int(tid)] = (int(run), int(wait))
    return out


class Jobs(threading.Thread):
    """Runs spin-barrier jobs back to back with ``threads()`` threads."""

    def __init__(self, binary, procs, cpus, rounds, work, threads):
        super().__init__(daemon=True)
        self.argv = [binary, 'run']
        self.tail = [str(rounds), str(work), '-1']
        self.procs, self.cpus, self.threads = procs, cpus, threads
        self.work = work
        self.done = []          # (end time, work units, threads)
        self.pid = None
        self.stop = threading.Event()

    def run(self):
        """Start jobs until :attr:`stop` is set."""
        while not self.stop.is_set():
            n = self.threads()
            argv = pcb._in_group(self.procs, self.cpus,
                                 self.argv + [str(n)] + self.tail)
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
            self.pid = p.pid
            p.wait()
            self.pid = None
            if p.returncode == 0:
                self.done.append((time.monotonic(), self.work, n))


class DelayMeter:
    """Share of the VM's runnable time spent waiting, per period."""

    def __init__(self, jobs):
        self.jobs = jobs
        self.seen = {}          # (pid, tid) -> (run, wait) last read
        self.base = {}          # (pid, tid) -> (run, wait) at period start

    def poll(self):
        """Read the running job's threads (between two periods)."""
        pid = self.jobs.pid
        if pid is not None:
            for tid, value in read_schedstat(pid).items():
                self.seen[(pid, tid)] = value

    def period(self):
        """Run-delay share since the last call (None: nothing ran)."""
        run = wait = 0
        for key, (r, w) in self.seen.items():
            r0, w0 = self.base.get(key, (0, 0))
            run += r - r0
            wait += w - w0
        self.base = dict(self.seen)
        # Threads of ended jobs are not read again: keep only live ones.
        live = self.jobs.pid
        self.seen = {k: v for k, v in self.seen.items() if k[0] == live}
        self.base = {k: v for k, v in self.base.items() if k[0] == live}
        total = run + wait
        return None if total <= 0 else wait / total


def recommended(setting, threads, storming):
    """pCPU-Est's count for the VM given what runs now."""
    cpus = tuple(setting['cpus'])
    caps = {}
    if storming and setting['kind'] == 'cap':
        caps = {i: setting['cap'] / threads for i in range(threads)}
    vms = {'vm': pcpu_est.VMAffinity(
        vcpus={i: cpus for i in range(threads)}, caps=caps)}
    if storming and setting['kind'] == 'competitor':
        vms['other'] = pcpu_est.VMAffinity(
            vcpus={i: cpus for i in range(setting['competitor'])})
    return pcpu_est.estimate(pcpu_est.EstimateRequest(vms=vms)).vms[
        'vm'].recommended_vcpus


def run_one(binary, groups, setting, args, react):
    """One quiet-storm-quiet run; its timeline and phase figures."""
    quiet, storm_s, after = args.phases
    app = groups.group('vm', shares=1024 * args.threads)
    state = {'threads': args.threads}
    jobs = Jobs(binary, app, setting['cpus'], args.rounds, args.work,
                lambda: state['threads'])
    meter = DelayMeter(jobs)
    watch = spin_storm.StormWatch()
    competitor = None
    timeline = []
    t0 = time.monotonic()
    edges = (t0 + quiet, t0 + quiet + storm_s, t0 + quiet + storm_s + after)
    jobs.start()
    next_period = t0 + args.period
    cause_on = False
    try:
        while time.monotonic() < edges[2]:
            now = time.monotonic()
            storming = edges[0] <= now < edges[1]
            if storming != cause_on:
                cause_on = storming
                competitor = _storm_cause(storming, competitor, groups,
                                          binary, setting, args)
            meter.poll()
            if now < next_period:
                time.sleep(POLL_S)
                continue
            next_period += args.period
            share = meter.period()
            entry = ({} if share is None else
                     {'run_delay': {str(i): share
                                    for i in range(state['threads'])}})
            decision = watch.observe('vm', entry)
            if react:
                state['threads'] = storm_policy.online_target(
                    decision.storm, recommended(setting, args.threads,
                                                storming), args.threads)
            timeline.append([round(now - t0, 2), int(storming),
                             None if share is None else round(share, 3),
                             decision.vote, int(decision.storm),
                             state['threads']])
    finally:
        jobs.stop.set()
        _storm_cause(False, competitor, groups, binary, setting, args)
        jobs.join()
    return _figures(timeline, jobs.done, t0, edges, args.period)


def _storm_cause(on, competitor, groups, binary, setting, args):
    """Start or stop the storm's cause; the competitor process or None."""
    if setting['kind'] == 'cap':
        groups.group('vm', shares=1024 * args.threads,
                     cpus_quota=setting['cap'] if on else None)
        return None
    if on and competitor is None:
        procs = groups.group('other', shares=1024 * setting['competitor'])
        return subprocess.Popen(pcb._in_group(
            procs, setting['cpus'],
            [binary, 'burn', str(setting['competitor'])]))
    if not on and competitor is not None:
        competitor.kill()
        competitor.wait()
        return None
    return competitor


def _figures(timeline, done, t0, edges, period):
    starts = (t0, edges[0], edges[1])
    names = ('before', 'storm', 'after')
    rate = {}
    for name, a, b in zip(names, starts, edges):
        units = sum(w for end, w, _ in done if a <= end < b)
        rate[name] = round(units / (b - a), 1)
    storm_start = edges[0] - t0
    storm_end = edges[1] - t0
    detected = next((t for t, _, _, _, s, _ in timeline
                     if t >= storm_start and s), None)
    ended = next((t for t, _, _, _, s, _ in timeline
                  if t >= storm_end and not s), None)
    false_storm = sum(1 for t, on, _, _, s, _ in timeline
                      if s and not on and t < storm_start)
    return {
        'units_per_s': rate,
        'detected_after_periods': (None if detected is None else
                                   round((detected - storm_start) / period,
                                         1)),
        'ended_after_periods': (None if ended is None else
                                round((ended - storm_end) / period, 1)),
        'storm_periods_before_the_storm': false_storm,
        'storm_changes': sum(1 for a, b in zip(timeline, timeline[1:])
                             if a[4] != b[4]),
        'timeline': timeline,
    }


SETTINGS = {
    'competitor': {'name': 'competitor 2 threads on the 2 CPUs',
                   'kind': 'competitor', 'cpus': [0, 1], 'competitor': 2},
    'cap': {'name': 'VM capped at 1.0 CPU', 'kind': 'cap', 'cpus': [0, 1],
            'cap': 1.0},
}


def main(argv=None):
    """Run the scenarios; print (and with --out write) the JSON report."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--scenario', choices=['competitor', 'cap', 'both'],
                   default='competitor')
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--period', type=float, default=0.5,
                   help='detector period in seconds (the agent: period_s)')
    p.add_argument('--phases', type=float, nargs=3, default=[10, 30, 15],
                   metavar=('QUIET', 'STORM', 'AFTER'))
    p.add_argument('--rounds', type=int, default=200)
    p.add_argument('--work', type=int, default=100000)
    p.add_argument('--reps', type=int, default=2)
    p.add_argument('--parent-shares', type=int, default=262144,
                   help="cpu.shares of the bench's parent cgroup, against "
                        'the rest of the machine (v1 maximum)')
    p.add_argument('--out', help='also write the report here')
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='storm-bench-')
    report = {
        'command': 'python benchmarks/storm_bench.py ' + ' '.join(
            sys.argv[1:] if argv is None else argv),
        'machine': pcb.machine(),
        'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
        'loadavg_before': pcb._read('/proc/loadavg').split()[:3],
        'thresholds': storm_model.to_dict(storm_model.StormThresholds()),
        'args': vars(args), 'scenarios': {}}
    groups = pcb.CpuCgroups(parent_shares=args.parent_shares)
    # This driver (job starts, 20 ms polls) runs inside the parent group
    # too: on a loaded machine it would otherwise lag behind the rest.
    driver = groups.group('driver', shares=1024)
    pcb._write(driver, str(os.getpid()))
    try:
        binary = pcb.build_spin_barrier(workdir)
        names = (['competitor', 'cap'] if args.scenario == 'both'
                 else [args.scenario])
        for name in names:
            report['scenarios'][name] = _scenario(binary, groups,
                                                  SETTINGS[name], args)
    finally:
        pcb._write('/sys/fs/cgroup/cpu/cgroup.procs'
                   if groups.version == 1 else '/sys/fs/cgroup/cgroup.procs',
                   str(os.getpid()))
        groups.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
    report['loadavg_after'] = pcb._read('/proc/loadavg').split()[:3]
    text = json.dumps(report, indent=1)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text + '\n')
    print(text)


def _scenario(binary, groups, setting, args):
    """Every rep without, then with the reaction (alternating)."""
    out = {'setting': setting,
           'recommended_in_storm': recommended(setting, args.threads, True),
           'no_reaction': [], 'react': []}
    for _ in range(args.reps):
        for react in (False, True):
            key = 'react' if react else 'no_reaction'
            one = run_one(binary, groups, setting, args, react)
            out[key].append(one)
            print(json.dumps({setting['kind']: key, 'units_per_s':
                              one['units_per_s']}), file=sys.stderr)
    for key in ('no_reaction', 'react'):
        out['median_units_per_s_' + key] = {
            phase: statistics.median(r['units_per_s'][phase]
                                     for r in out[key])
            for phase in ('before', 'storm', 'after')}
    a = out['median_units_per_s_no_reaction']['storm']
    b = out['median_units_per_s_react']['storm']
    out['storm_speedup_react_vs_none'] = round(b / a, 3) if a else None
    base = out['median_units_per_s_no_reaction']['before']
    out['storm_over_quiet'] = {
        key: round(out['median_units_per_s_' + key]['storm'] / base, 3)
        for key in ('no_reaction', 'react')} if base else None
    return out


if __name__ == '__main__':
    sys.exit(main())
