"""The planner against the best class-only pinning, in expectation.

Usage::

    python benchmarks/planner_class_only.py [--hosts 40] [--seeds 7,8,9,10]
        [--draws 32] [--eval-draws 128] [--json FILE]

The random oversubscribed small hosts of
:mod:`benchmarks.planner_yardstick` (same generator, same seeds, so the
same hosts) are scored by the independent occupancy yardstick
(``sim.occupancy``), calibrated from the quiet contention probe, and by
its doubled-stall stress variant, and without its memory-bandwidth caps
(which tells the hosts lost to bandwidth saturation, a cost the contract
does not model, from the others). Per host, draws of every VM's hidden
workload parameters (working set, miss curve, stall, bandwidth, write
sharing, I/O duty) that no planner sees:

* the **class-only optimum within capacity** is the pinning, among every
  assignment of each memory-bound VM to one whole domain or to floating
  within the capacity the planner is given (``max_vcpus_per_cpu`` = the
  host's ratio), with the highest mean over ``--draws`` draws of the log
  of the geometric mean of every VM's performance - exhaustively: the
  best a planner that knows only the VMs' classes can do, up to the
  sampling of the draws;
* it and the planner (the contract at the host's ratio, as the agent
  runs it) are then scored on ``--eval-draws`` other draws. Scored on the
  draws it was chosen on, the optimum would carry their luck: among
  equivalent pinnings (three identical VMs on two equal domains) it picks
  the labelling the draws happened to favour, and looks up to 5 % better
  than an equivalent plan.

Ratio = exp(mean log score of the planner - mean log score of the
optimum) over the evaluation draws: the ratio of their geometric means.
Above 1 where the planner beats the choice made on the selection draws
(the optimum's estimate is then the limit of the measurement). Beside it,
the same for total work (sum of every vCPU's throughput), and the
single-draw ratio ``planner_yardstick.py`` reports (the host's own draw,
the optimum chosen on 8 others), which carries the luck of one draw.
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
from benchmarks import planner_quality  # noqa: E402
from benchmarks import planner_yardstick  # noqa: E402
from nova_cacheaware_evaluation.sim import yardstick  # noqa: E402

VARIANTS = ('calibrated', 'doubled stall (stress)', 'no bandwidth cap')
GOAL_MEAN, GOAL_WORST = 0.99, 0.97


def draws(seed, n, first, count, vms, mix, params):
    """``count`` workload dicts for the host's VMs (its own stream)."""
    out = []
    for k in range(first, first + count):
        rng = random.Random((seed * 100003 + n) * 131 + k + 7)
        out.append({vm.id: yardstick.draw(rng, vm, mix, params)
                    for vm in vms})
    return out


def mean_logs(domains, vms, works, allowed, params):
    """Mean over ``works`` of (log geometric mean, log total work)."""
    scores = [yardstick.score(domains, vms, w, allowed, params)
              for w in works]
    return (statistics.fmean(math.log(s[0]) for s in scores),
            statistics.fmean(math.log(s[1]) for s in scores))


def one_host(seed, n, domains, vms, counts, yard):
    """Expected ratios of the planner on one host, per variant."""
    over = math.ceil(sum(vm.vcpus for vm in vms)
                     / sum(len(d) for d in domains))
    plan = planner_quality.planner_at('host')(domains, vms, over)
    capacity = [len(d) * over for d in domains] + [math.inf]
    out = {}
    for vname in VARIANTS:
        params, mix = yard[vname]
        chosen_on = draws(seed, n, 0, counts[0], vms, mix, params)
        works = draws(seed, n, counts[0], counts[1], vms, mix, params)
        best = yardstick.class_optimum(domains, vms, chosen_on, params,
                                       capacity=capacity)
        got = mean_logs(domains, vms, works, plan, params)
        ref = mean_logs(domains, vms, works, best, params)
        out[vname] = {'geomean': math.exp(got[0] - ref[0]),
                      'work': math.exp(got[1] - ref[1])}
    return out


def summary(values):
    """Mean, worst and counts below the goals of a list of ratios."""
    return {'mean': round(statistics.fmean(values), 4),
            'worst': round(min(values), 4),
            'below_0_97': sum(v < GOAL_WORST for v in values),
            'below_0_95': sum(v < 0.95 for v in values)}


def run_seed(hosts, seed, counts, mix):
    """Every host of one seed (the yardstick benchmark's hosts)."""
    rng = random.Random(seed)
    yard = planner_yardstick.variants(mix)
    per_host = []
    for n in range(hosts):
        domains, vms = planner_quality.random_host(rng)
        per_host.append(one_host(seed, n, domains, vms, counts, yard))
    return {'seed': seed, 'hosts': hosts, 'draws': counts[0],
            'eval_draws': counts[1],
            'ratios': {v: {k: summary([h[v][k] for h in per_host])
                           for k in ('geomean', 'work')}
                       for v in VARIANTS},
            'per_host_geomean': [{v: round(h[v]['geomean'], 4)
                                  for v in VARIANTS} for h in per_host]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=40)
    parser.add_argument('--seeds', default='7,8,9,10')
    parser.add_argument('--draws', type=int, default=32,
                        help='draws the class-only optimum is chosen on')
    parser.add_argument('--eval-draws', type=int, default=128,
                        help='other draws both are scored on')
    parser.add_argument('--probe', default=planner_yardstick.PROBE)
    parser.add_argument(
        '--json', metavar='FILE',
        default='benchmarks/results/planner_class_only.json')
    args = parser.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(',')]
        if min(args.draws, args.eval_draws, args.hosts) < 1:
            raise ValueError('--draws, --eval-draws and --hosts must be '
                             'at least 1')
        mix, calib = planner_yardstick.probe_mix(args.probe)
    except (ValueError, OSError, KeyError) as e:
        print('planner_class_only: %s' % e, file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    started, cpu = time.monotonic(), time.process_time()
    doc = {'benchmark': 'planner_class_only',
           'command': common.command('planner_class_only.py', argv or []),
           'date': common.now(), 'machine': common.machine(),
           'calibration': calib,
           'goal': {'mean': GOAL_MEAN, 'worst': GOAL_WORST},
           'runs': [run_seed(args.hosts, s, (args.draws, args.eval_draws),
                             mix) for s in seeds]}
    doc['loadavg_before'] = [round(x, 2) for x in load_before]
    doc['loadavg_after'] = [round(x, 2) for x in os.getloadavg()]
    doc['wall_s'] = round(time.monotonic() - started, 1)
    doc['cpu_s'] = round(time.process_time() - cpu, 1)
    common.write_json(args.json, doc)
    for run in doc['runs']:
        for vname, by_kind in run['ratios'].items():
            for kind, r in by_kind.items():
                print('seed %d | %-24s | %-7s | mean %.4f worst %.4f '
                      '<0.97: %d' % (run['seed'], vname, kind, r['mean'],
                                     r['worst'], r['below_0_97']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
