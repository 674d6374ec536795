"""The default balloon policy against static and study 002's mode A.

Runs the study-002 scenario and 20 randomised scenarios (2-5 VMs, host
memory, process memory, disk and cache speeds and phase length drawn from
the scenario number) through the simulator and prints, per scenario, the
arithmetic / geometric means of static, mode A, default and oracle, and
whether default beats static on both means and A on the geometric mean.

    python benchmarks/balloon_sim_scenarios.py [--scenarios N] [--json]
        [--json-out FILE]

Exits 1 if the default loses anywhere.  About 30 s on a 2-core machine.
These scenarios use the closed-form uniform model, the default policy's
own assumption; benchmarks/balloon_patterns.py runs the same scenarios
outside it.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

from benchmarks import common
from nova_cacheaware_evaluation.sim import balloon as sim

COMPARED = ('static', 'hit_ratio_a', 'default', 'oracle')


def random_scenario(number):
    """The scenario document for randomised scenario ``number``."""
    rng = random.Random(1000 + number)
    vms = rng.randint(2, 5)
    return {'seed': number, 'vms': vms,
            'host_memory_mib': rng.randint(vms * 1200, vms * 3000),
            'process_mib': rng.randint(150, 500),
            'disk_mib_s': rng.uniform(40, 200),
            'cache_mib_s': rng.uniform(800, 3000),
            'duration_s': 3600, 'phase_s': rng.choice([300, 600, 900])}


def wins(means):
    """True when default beats static (both means) and A (geometric)."""
    st, a, de = means['static'], means['hit_ratio_a'], means['default']
    return de[0] > st[0] and de[1] > st[1] and de[1] > a[1]


def ratios(rows):
    """min / median / max of default over static (both means) and A."""
    pairs = {'default/static arith': ('static', 0),
             'default/static geo': ('static', 1),
             'default/hit_ratio_a geo': ('hit_ratio_a', 1)}
    out = {}
    for label, (peer, j) in pairs.items():
        vals = [r['means']['default'][j] / r['means'][peer][j]
                for r in rows]
        out[label] = [min(vals), statistics.median(vals), max(vals)]
    return out


def run(doc):
    """Means per compared policy for one scenario document."""
    results = sim.simulate(sim.scenario_from_dict(doc), COMPARED)
    return {k: (r.arith_mean(), r.geo_mean()) for k, r in results.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scenarios', type=int, default=20)
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--json-out', metavar='FILE',
                        help='also write the results with command, '
                             'machine, load and date')
    args = parser.parse_args(argv)
    started, load0 = time.time(), os.getloadavg()
    rows = [('study-002', {})] + [('random-%d' % n, random_scenario(n))
                                  for n in range(args.scenarios)]
    out, losses = [], 0
    for name, doc in rows:
        means = run(doc)
        ok = wins(means)
        losses += not ok
        out.append({'scenario': name, 'doc': doc, 'means': means, 'ok': ok})
        if not args.json:
            print('%-10s ' % name + '  '.join(
                '%s %.0f/%.0f' % (k, *means[k]) for k in COMPARED)
                + ('  OK' if ok else '  LOSS'))
    if args.json_out:
        common.write_json(args.json_out, {
            'command': 'python benchmarks/balloon_sim_scenarios.py '
                       + ' '.join(sys.argv[1:] if argv is None else argv),
            'machine': common.machine(), 'date': common.now(),
            'load': {'start': load0, 'end': os.getloadavg()},
            'elapsed_s': time.time() - started, 'losses': losses,
            'ratios': ratios(out[1:]), 'rows': out})
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        print('losses: %d of %d   (%.0f s)' % (losses, len(rows),
                                               time.time() - started))
    return 1 if losses else 0


if __name__ == '__main__':
    sys.exit(main())
