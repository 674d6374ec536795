"""How often the replanner's dirt check catches a dirtier incremental plan.

Usage::

    python benchmarks/planner_dirt_check.py [--changes 3000] [--json FILE]

Random hosts of 3-6 domains (2-4 CPUs) with 10-16 memory-bound VMs (half
of them pinned inside a random domain, the rest floating), planned in full
and the plan applied, then one change: an arrival (1, 2 or 4 vCPUs) or a
departure. Each change is replanned incrementally without the dirt check
(``dirt_bound=None``) and with it, and planned in full: how many
incremental plans were more than ``DIRT_BOUND`` dirtier than the full plan,
and how many of those the check (against the full plan's greedy phase)
sent to the full plan. Writes ``benchmarks/results/planner_dirt_check.json``.
"""

import argparse
import dataclasses
import os
import random
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import common  # noqa: E402
from nova_cacheaware.cachedomain import model  # noqa: E402
from nova_cacheaware.cachedomain import planner as cachedomain  # noqa: E402
from nova_cacheaware.cachedomain import replan as allshare_replan  # noqa: E402


def random_host(rng):
    """A small host whose memory-bound VMs outnumber its domains."""
    domains, cpu = [], 0
    for _ in range(rng.randint(3, 6)):
        size = rng.randint(2, 4)
        domains.append(model.Domain(
            id='d%d' % len(domains), cpus=tuple(range(cpu, cpu + size))))
        cpu += size
    vms = []
    for n in range(rng.randint(10, 16)):
        vcpus = rng.choice([1, 1, 2, 2, 4])
        current = None
        if rng.random() < 0.5:
            cpus = rng.choice(domains).cpus
            current = {i: cpus for i in range(vcpus)}
        vms.append(model.VM(id='vm%02d' % n, vcpus=vcpus,
                            workload='memory', current=current))
    return model.PlanInput(domains=tuple(domains), vms=tuple(vms))


def one_change(seed):
    """(dirt without check, dirt with it, full dirt, check used inc.)."""
    rng = random.Random(seed)
    plan_input = random_host(rng)
    previous = cachedomain.plan(plan_input)
    now = dataclasses.replace(plan_input, vms=tuple(
        dataclasses.replace(vm, current=dict(previous.vms[vm.id].pinning))
        for vm in plan_input.vms))
    if rng.random() < 0.5:
        after = dataclasses.replace(now, vms=now.vms + (model.VM(
            id='new', workload='memory', vcpus=rng.choice([1, 2, 4])),))
    else:
        gone = rng.choice(now.vms).id
        after = dataclasses.replace(now, vms=tuple(
            vm for vm in now.vms if vm.id != gone))
    loose, loose_used = allshare_replan.replan(
        after, now, previous.unplaced, dirt_bound=None)
    checked, used = allshare_replan.replan(after, now, previous.unplaced)
    full = cachedomain.plan(after)
    return {'incremental_without_check': loose_used,
            'incremental_with_check': used,
            'dirt': [cachedomain.score(after, p)[2]
                     for p in (loose, checked, full)]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--changes', type=int, default=3000)
    parser.add_argument('--json', metavar='FILE',
                        default='benchmarks/results/planner_dirt_check.json')
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.monotonic()
    rows = [one_change(seed) for seed in range(args.changes)]
    bound = allshare_replan.DIRT_BOUND
    dirtier = [r for r in rows if r['incremental_without_check']
               and r['dirt'][0] > r['dirt'][2] * (1 + bound)]
    kept = [r for r in rows if r['incremental_with_check']]
    doc = {'benchmark': 'planner_dirt_check',
           'command': common.command('planner_dirt_check.py', argv or []),
           'date': common.now(), 'machine': common.machine(),
           'dirt_bound': bound, 'changes': args.changes,
           'incremental_without_check': sum(
               r['incremental_without_check'] for r in rows),
           'dirtier_than_full_beyond_bound': len(dirtier),
           'caught_by_check': sum(not r['incremental_with_check']
                                  for r in dirtier),
           'incremental_with_check': len(kept),
           'kept_beyond_bound': sum(
               1 for r in kept if r['dirt'][1] > r['dirt'][2] * (1 + bound)),
           'worst_kept_over_full': max(
               (r['dirt'][1] / r['dirt'][2] for r in kept if r['dirt'][2]),
               default=None)}
    doc['loadavg_before'] = [round(x, 2) for x in load_before]
    doc['loadavg_after'] = [round(x, 2) for x in os.getloadavg()]
    doc['wall_s'] = round(time.monotonic() - started, 1)
    common.write_json(args.json, doc)
    print({k: v for k, v in doc.items() if k not in ('machine', 'command')})
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
