#!/usr/bin/env python3
"""Region-scale live state: payload 2.0 against 1.5 per scheduler worker.

Issue 29, part 6. Simulated compute hosts (:mod:`benchmarks.region_hosts`:
EPYC-like 16 and 32 L3 domains, hybrid P-core/E-core-cluster parts, old
shared-L2 parts; ``--vms`` VMs each) publish their live state through
real ``NotificationStatePublisher`` objects; a real endpoint and
``HostStateCache`` receive it.

* In-process (:mod:`benchmarks.region_runs`), per ``--hosts`` x ``--vms``:
  steady state (1 % of the hosts change per 10 s period) in ``--reps``
  windows of ``--periods`` periods, 2.0 (every host) and the 1.5 baseline
  (``--sample`` hosts, scaled) in the same run; the resync storm (every
  agent restarts at once) ``--reps`` times; message sizes; the agent's
  pass cost; on the smallest region, lost updates (``--drop``) and the
  storm's echo one resync interval later. Smaller ``--vms`` counts run
  at the smallest ``--hosts`` only, unless ``--all-pairs``.
* Memory (:mod:`benchmarks.region_memory`): the cache holding every
  host's newest state, one process per format.
* ``--rabbit`` (:mod:`benchmarks.region_bus`): ``--rabbit-hosts`` hosts
  at a 1 s period (10 000 hosts' message rate) through oslo.messaging and
  the RabbitMQ on 127.0.0.1, listeners in their own processes: CPU,
  AMQP bytes, staleness, the storm's drain.

Run from the repository root::

    .venv/bin/python benchmarks/region_state.py --rabbit \\
        --out benchmarks/results/region_state.json

``--quick``: a small in-process configuration (a smoke test, seconds).
"""

import argparse
import collections
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import kombu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import common  # noqa: E402
from benchmarks import region_bus  # noqa: E402
from benchmarks import region_goals  # noqa: E402
from benchmarks import region_runs  # noqa: E402
from benchmarks import region_sim as sim  # noqa: E402

QUICK = {'hosts': [40], 'vms': [50], 'periods': 2, 'reps': 3,
         'sample': 6, 'rabbit_hosts': 60, 'drop': 0.5}
#: Periods with losses in the lost-update run, at least.
LOST_PERIODS = 6


class _Parser(argparse.ArgumentParser):
    """Argument errors as one line (and exit status 2)."""

    def error(self, message):
        """Print ``prog: error: message`` and exit 2."""
        self.exit(2, '%s: error: %s\n' % (self.prog, message))


def _count(low, high):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError('%r is not an integer' % text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                '%d is not in %d..%d' % (value, low, high))
        return value
    return parse


def _fraction(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a number' % text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError('%s is not in [0, 1)' % text)
    return value


def parse_args(argv=None):
    """The command line; ``--quick`` overrides the sizes."""
    parser = _Parser(prog='region_state.py',
                     description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=_count(10, 100000), nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--vms', type=_count(1, 1000), nargs='+',
                        default=[16, 200], help='VMs per host')
    parser.add_argument('--periods', type=_count(1, 1000), default=3,
                        help='10 s periods per steady window')
    parser.add_argument('--reps', type=_count(1, 100), default=3)
    parser.add_argument('--all-pairs', action='store_true',
                        help='every --hosts x --vms pair (default: the '
                             'smaller VM counts at the smallest size only)')
    parser.add_argument('--sample', type=_count(1, 100000), default=40,
                        help='hosts with a 1.5 publisher (baseline)')
    parser.add_argument('--drop', type=_fraction, default=0.1,
                        help='fraction of messages lost (lost updates)')
    parser.add_argument('--seed', type=_count(0, 2 ** 31), default=29)
    parser.add_argument('--rabbit', action='store_true',
                        help='also run through RabbitMQ on 127.0.0.1')
    parser.add_argument('--rabbit-hosts', type=_count(10, 100000),
                        default=1000)
    parser.add_argument('--only-rabbit', action='store_true',
                        help='the RabbitMQ part alone (no in-process '
                             'region, no goals that need it)')
    parser.add_argument('--quick', action='store_true',
                        help='small and fast (smoke test)')
    parser.add_argument('--out', help='write the JSON document here')
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    args.rabbit = args.rabbit or args.only_rabbit
    return args


def memory(exp, hosts):
    """The cache's memory per format, each in its own process."""
    out = {}
    for version, region in (('2.0', exp.new), ('1.5', exp.old)):
        with tempfile.NamedTemporaryFile('w', suffix='.jsonl') as f:
            for body in region.last_body.values():
                f.write(body + '\n')
            f.flush()
            done = subprocess.run(
                [sys.executable, '-m', 'benchmarks.region_memory',
                 '--bodies', f.name, '--hosts', str(hosts)],
                cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                capture_output=True, text=True, check=True)
        out[version] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def run_config(hosts, vms, args, lost):
    """Every in-process figure of one region size."""
    exp = region_runs.Experiment(hosts, vms, args.seed, args.sample)
    out = {'hosts': hosts, 'vms': vms,
           'kinds': dict(collections.Counter(s.kind for s in exp.sims)),
           'sizes': region_runs.sizes(exp.sims),
           'agent_pass_ms': region_runs.agent_costs(exp.sims, args.reps)}
    started = time.monotonic()
    with exp.memo.installed():
        exp.warm_up()
        windows = [exp.window(args.periods) for _ in range(args.reps)]
        if lost:
            out['lost_updates'] = exp.lost_updates(
                args.drop, max(args.periods, LOST_PERIODS))
        storms = [exp.storm() for _ in range(args.reps)]
        if lost:
            out['storm_echo'] = exp.echo()
    out['steady'] = aggregate(windows)
    out['storm'] = aggregate(storms)
    out['simulated_s'] = round(exp.clock.now, 1)
    out['wall_s'] = round(time.monotonic() - started, 1)
    out['memory'] = memory(exp, hosts)
    gc.unfreeze()
    return out


def aggregate(runs):
    """Mean/min/max over repetitions of every number in ``runs``."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: aggregate([r[k] for r in runs]) for k in first}
    numbers = [r for r in runs if isinstance(r, (int, float))
               and not isinstance(r, bool)]
    return region_runs.summary(numbers) if numbers else first


def rabbit_ready(url):
    """None when RabbitMQ answers at ``url``, else why not (one line)."""
    try:
        with kombu.Connection(region_bus.kombu_url(url),
                              connect_timeout=3) as conn:
            conn.connect()
    except Exception as e:
        return 'RabbitMQ at %s is not reachable: %s' % (url, e)
    return None


def sizes(args):
    """``(hosts, VMs)`` of the in-process regions, smallest first.

    The largest VM count at every region size; the smaller VM counts at
    the smallest region only (``--all-pairs``: every pair). The lost
    updates and the storm's echo (cadence, not size) run on the smallest.
    """
    out = []
    for hosts in sorted(set(args.hosts)):
        for vms in sorted(set(args.vms)):
            if (args.all_pairs or vms == max(args.vms)
                    or hosts == min(args.hosts)):
                out.append((hosts, vms))
    return out


def run(args):
    """The whole benchmark; the results document."""
    load_before = os.getloadavg()
    started = time.monotonic()
    configs = []
    for hosts, vms in [] if args.only_rabbit else sizes(args):
        configs.append(run_config(
            hosts, vms, args,
            (hosts, vms) == (min(args.hosts), min(args.vms))))
        print('region_state: %d x %d done (%.0f s)' % (
            hosts, vms, time.monotonic() - started), file=sys.stderr)
    doc = {'benchmark': 'region_state',
           'command': common.command('region_state.py', sys.argv[1:]),
           'date': common.now(), 'machine': common.machine(),
           'cpu': _cpu(), 'python': platform.python_version(),
           'settings': {'period_s': sim.PERIOD_S,
                        'heartbeat_s': sim.HEARTBEAT_S,
                        'resync_s': sim.RESYNC_S, 'ttl_s': sim.TTL_S,
                        'changing_per_period': 0.01, 'reps': args.reps,
                        'periods_per_window': args.periods,
                        'baseline_sample_hosts': args.sample,
                        'seed': args.seed},
           'configs': configs}
    if args.rabbit:
        quick = {'window_periods': 10, 'quiet_periods': 5,
                 'storm_periods': 5, 'idle_s': 2.0} if args.quick else {}
        doc['rabbit'] = region_bus.run_bus(
            args.rabbit_hosts, max(args.vms), args.seed, **quick)
    doc['goals'] = region_goals.evaluate(doc)
    doc['loadavg_before'] = [round(x, 2) for x in load_before]
    doc['loadavg_after'] = [round(x, 2) for x in os.getloadavg()]
    doc['wall_s'] = round(time.monotonic() - started, 1)
    return doc


def _cpu():
    """``lscpu``'s model name and CPU count."""
    try:
        out = subprocess.run(['lscpu'], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {'model': platform.processor(), 'cpus': os.cpu_count()}
    fields = dict(line.split(':', 1) for line in out.splitlines()
                  if ':' in line)
    return {'model': fields.get('Model name', '?').strip(),
            'cpus': int(fields.get('CPU(s)', os.cpu_count()))}


def main(argv=None):
    """Run; print the goals table; write ``--out``. Exit status."""
    args = parse_args(argv)
    if args.rabbit:
        why = rabbit_ready(region_bus.RABBIT_URL)
        if why:
            print('region_state.py: error: %s' % why, file=sys.stderr)
            return 1
    doc = run(args)
    for row in doc['goals']:
        print('%-45s %12s <= %-8s %s' % (
            row['goal'], row['figure'], row['limit'],
            {True: 'met', False: 'MISSED', None: '-'}[row['met']]))
    if args.out:
        common.write_json(args.out, doc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
