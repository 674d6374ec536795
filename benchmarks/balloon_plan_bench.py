"""Benchmark ``nova-cacheaware balloon-plan`` (study policy) at scale.

Usage, from the repository root (the old code is imported from tests/)::

    PYTHONPATH=. python benchmarks/balloon_plan_bench.py
        [--sizes 10000,30000,100000] [--old-budget-s 60]
        [--json-out benchmarks/results/FILE.json]

For each size, one seeded random round (a third of the VMs donors, hit
ratios spread over 0..1, every VM's room below its cap spread evenly over
0..8 GiB so that the caps of many receivers bind) is timed:

* ``new_cli_s``: the whole command in-process (read the JSON file, validate,
  plan, write the JSON) with the O(n log n) water-filling;
* ``new_plan_s``: :func:`balloon.study_plan` alone;
* ``old_cli_s``: the same command with the original input check (a
  ``list.count`` per VM id) and round (:mod:`tests.fixtures.balloon_quadratic`)
  put back in, stopped after ``--old-budget-s`` (``null``);
* ``old_plan_s``: the original round alone, same budget (``null`` past it,
  with ``old_finished: false``).

Both plans are compared when the old one finishes: they must be equal.
Times are CPU seconds of this process (``time.process_time``; the budget
is CPU time too): the machine is shared, and wall time would measure the
neighbours as well. The load average is recorded.
"""

import argparse
import datetime
import io
import json
import os
import random
import signal
import sys
import tempfile
import time
from unittest import mock

from benchmarks import common
from nova_cacheaware.balloon import study_balancer as balloon
from nova_cacheaware.cmd import cli
from tests.fixtures import balloon_quadratic

PARAMS = {'threshold': 0.99, 'alpha': 0.1, 'beta': 0.1, 'mode': 'A',
          'interval_s': 10}


def random_round(n, seed=1):
    """The ``balloon-plan`` input document for ``n`` VMs."""
    rng = random.Random(seed)
    vms = []
    for i in range(n):
        lo = rng.choice([256, 512, 1024])
        memory = rng.randint(lo, 16384)
        # Rooms spread evenly: the water level rises past a few receivers
        # at a time, the case that made the old water-filling quadratic.
        hi = memory + rng.randint(0, 8192)
        donor = rng.random() < 1 / 3
        vms.append({'id': 'vm-%06d' % i, 'memory_mib': memory,
                    'hit_ratio': (1.0 if donor
                                  else round(rng.random() * 0.98, 4)),
                    'streak': rng.randint(0, 4) if donor else 0,
                    'min_mib': lo, 'max_mib': hi})
    return {'params': dict(PARAMS), 'free_mib': rng.randint(0, 65536),
            'vms': vms}


class _OverBudget(Exception):
    pass


def _alarm(signum, frame):
    raise _OverBudget()


def timed(fn, budget_s=None):
    """``(CPU seconds, result)``; ``(None, None)`` past ``budget_s``."""
    previous = signal.signal(signal.SIGPROF, _alarm)
    if budget_s:
        signal.setitimer(signal.ITIMER_PROF, budget_s)
    start = time.process_time()
    try:
        result = fn()
    except _OverBudget:
        return None, None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    return round(time.process_time() - start, 3), result


def run_cli(path):
    """The command, in-process, on ``path``; stdout captured."""
    out, real = io.StringIO(), sys.stdout
    sys.stdout = out
    try:
        code = cli.main(['balloon-plan', '--input', path])
    finally:
        sys.stdout = real
    if code != 0:
        raise RuntimeError('balloon-plan exited %d' % code)
    return out.getvalue()


def bench(n, old_budget_s, tmpdir):
    doc = random_round(n)
    path = os.path.join(tmpdir, 'round-%d.json' % n)
    with open(path, 'w') as f:
        json.dump(doc, f)
    params, vms, free_mib = balloon.request_from_dict(doc)
    row = {'vms': n}
    row['new_cli_s'], _ = timed(lambda: run_cli(path))
    row['new_plan_s'], new = timed(
        lambda: balloon.study_plan(params, vms, free_mib))
    with mock.patch.object(balloon, 'request_from_dict',
                           balloon_quadratic.request_from_dict), \
            mock.patch.object(balloon, 'share_capped',
                              balloon_quadratic.share_capped):
        row['old_cli_s'], _ = timed(lambda: run_cli(path), old_budget_s)
    row['old_plan_s'], old = timed(
        lambda: balloon_quadratic.study_plan(params, vms, free_mib),
        old_budget_s)
    row['old_finished'] = row['old_plan_s'] is not None
    if row['old_finished']:
        if old != new:
            raise AssertionError('plans differ at %d VMs' % n)
        row['plan_speedup'] = round(row['old_plan_s'] / row['new_plan_s'],
                                    1)
    if row['old_cli_s'] is not None:
        row['cli_speedup'] = round(row['old_cli_s'] / row['new_cli_s'], 1)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='10000,30000,100000')
    parser.add_argument('--old-budget-s', type=int, default=60)
    parser.add_argument('--json-out', metavar='FILE')
    args = parser.parse_args(argv)
    result = {'command': 'python benchmarks/balloon_plan_bench.py '
                         + ' '.join(argv if argv is not None
                                    else sys.argv[1:]),
              'date': datetime.datetime.now(datetime.timezone.utc)
              .isoformat(timespec='seconds'),
              'machine': common.machine(), 'load_before': os.getloadavg(),
              'rows': []}
    with tempfile.TemporaryDirectory() as tmpdir:
        bench(100, args.old_budget_s, tmpdir)  # imports, caches: not timed
        for n in (int(s) for s in args.sizes.split(',')):
            row = bench(n, args.old_budget_s, tmpdir)
            print(json.dumps(row), file=sys.stderr)
            result['rows'].append(row)
    result['load_after'] = os.getloadavg()
    text = json.dumps(result, indent=2)
    if args.json_out:
        with open(args.json_out, 'w') as f:
            f.write(text + '\n')
    print(text)


if __name__ == '__main__':
    main()
