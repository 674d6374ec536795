"""Balloon policies outside the uniform model: skew, scans, moving sets.

Every run uses the LRU page-cache model
(``nova_cacheaware_evaluation.sim.lru``: each read of a file is a real
LRU hit or miss) and, unless the family says ``exact``, the guest
helper's error (``nova_cacheaware_evaluation.sim.estimator``, calibrated
in doc/source/evaluation/balloon.rst).  Families: an access
pattern (``uniform``, ``zipf`` with exponents 0.6 / 0.9 / 1.2, ``hotcold``,
``scan_mix``, ``scan``, ``moving``, ``mixed`` = a different one per VM)
times an estimator (``helper``, ``exact``, ``blind`` = VM 0's reads are
invisible to ``read_bytes``, ``busy`` = 13 MiB/s of non-file reads).
Scenarios: study 002's setup and randomised ones
(``balloon_sim_scenarios.random_scenario``), all with 4 MiB files (2500
files, the study's working sets / 4) to keep the runs short.

    python benchmarks/balloon_patterns.py [--scenarios N] [--jobs J]
        [--families a,b] [--json-out FILE]

Prints per family and policy the mean over scenarios of the arithmetic
and geometric means and the default's wins / losses.  About 10 minutes
with 2 jobs on a 2-core machine.
"""

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
import types

from benchmarks import balloon_sim_scenarios as base
from nova_cacheaware_evaluation.sim import balloon as sim
from nova_cacheaware_evaluation.sim import balloon_policies

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
#: ``--baseline REV``: balloon_default.py as of REV, run as 'default@REV'.
BASELINE = {}

POLICIES = ('static', 'mom', 'hit_ratio_a', 'hit_ratio_b', 'default',
            'oracle')
#: The policies this run simulates (``--policies``; the rest may come from
#: ``--merge``).
RUN = list(POLICIES)
#: The calibrated helper error (see the evaluation page, "The estimator").
HELPER = {'nonfile_mib_s': 1.0, 'readahead': 0.003, 'sample_s': 5,
          'cache_extra_mib': 16}
PATTERNS = {
    'uniform': {'pattern': 'uniform'},
    'zipf-0.6': {'pattern': 'zipf', 'exponent': 0.6},
    'zipf-0.9': {'pattern': 'zipf', 'exponent': 0.9},
    'zipf-1.2': {'pattern': 'zipf', 'exponent': 1.2},
    'hotcold': {'pattern': 'hotcold', 'hot_reads': 5000},
    'scan_mix': {'pattern': 'scan_mix'},
    'scan': {'pattern': 'scan'},
    'moving': {'pattern': 'moving'},
}
MIXED = ('zipf-0.9', 'scan_mix', 'uniform', 'hotcold', 'moving')
ESTIMATORS = {'helper': HELPER, 'exact': None,
              'blind': dict(HELPER, blind_vms=[0]),
              'busy': dict(HELPER, nonfile_mib_s=13.0)}
FAMILIES = (['%s/helper' % p for p in PATTERNS] + ['mixed/helper']
            + ['uniform/exact', 'zipf-0.9/exact', 'uniform/blind',
               'zipf-0.9/blind', 'zipf-0.9/busy'])


def scenario(family, number):
    """Scenario document: number 0 is study 002's, n > 0 random n - 1."""
    pattern, est = family.split('/')
    doc = {} if number == 0 else base.random_scenario(number - 1)
    vms = doc.get('vms', 3)
    if pattern == 'mixed':
        access = [PATTERNS[MIXED[i % len(MIXED)]] for i in range(vms)]
    else:
        access = PATTERNS[pattern]
    working = sim.DEFAULTS['working_sets']
    doc = dict(doc, file_mib=4, files=2500, access=access,
               working_sets=[w // 4 for w in working])
    if ESTIMATORS[est] is not None:
        doc['estimator'] = ESTIMATORS[est]
    return doc


#: Where the default balancer lived, newest first.
BASELINE_PATHS = ('nova_cacheaware/balloon/default_balancer.py',
                  'nova_cacheaware/policy/balloon_default.py')


def load_baseline(rev):
    """Our default balancer as of git revision ``rev``, as a module."""
    for where in BASELINE_PATHS:
        got = subprocess.run(['git', 'show', '%s:%s' % (rev, where)],
                             cwd=ROOT, capture_output=True, text=True)
        if got.returncode == 0:
            src = got.stdout
            break
    else:
        raise ValueError('no default balancer at revision %s' % rev)
    # A revision from before the capability packages imports study 002's
    # balancer from where it lived then.
    src = src.replace('from nova_cacheaware.policy import balloon\n',
                      'from nova_cacheaware.balloon import study_balancer '
                      'as balloon\n')
    module = types.ModuleType('balloon_default_at_%s' % rev)
    exec(compile(src, 'balloon_default.py@%s' % rev, 'exec'),
         module.__dict__)
    return module


def run_task(task):
    """Means per policy for one (family, scenario number)."""
    family, number = task
    started = time.time()
    sc = sim.scenario_from_dict(scenario(family, number))
    schedule = sc.schedule()
    results = {k: sim.simulate_policy(sc, k, schedule) for k in RUN}
    for label, module in BASELINE.items():
        results[label] = sim.simulate_policy(
            sc, label, schedule,
            balloon_policies.Default(sc, module, label))
    return {'family': family, 'scenario': number,
            'name': 'study-002' if number == 0 else 'random-%d' % (number - 1),
            'means': {k: [r.arith_mean(), r.geo_mean()]
                      for k, r in results.items()},
            'seconds': time.time() - started}


def merge(rows, path):
    """Add the figures of policies not run here from an earlier run."""
    with open(path) as f:
        earlier = {(r['family'], r['scenario']): r for r in
                   json.load(f)['rows']}
    for row in rows:
        old = earlier[(row['family'], row['scenario'])]['means']
        for k, v in old.items():
            key = 'default@merged' if k == 'default' and k in RUN else k
            row['means'].setdefault(key, v)


def family_summary(rows):
    """Per policy: mean arith / geo over scenarios; default's losses."""
    out = {}
    for k in rows[0]['means']:
        out[k] = [sum(r['means'][k][j] for r in rows) / len(rows)
                  for j in (0, 1)]
    peers = [k for k in POLICIES if k not in ('default', 'oracle')]
    best = max(peers, key=lambda k: out[k][1])
    loses = sorted({k for r in rows for k in peers
                    if r['means'][k][1] > r['means']['default'][1]})
    return {'means': out, 'best_peer': best,
            'default_loses_geo_to': loses,
            'scenarios_lost_geo': sum(
                1 for r in rows if any(r['means'][k][1]
                                       > r['means']['default'][1]
                                       for k in peers))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scenarios', type=int, default=3,
                        help='random scenarios besides the study (3)')
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--families', default=','.join(FAMILIES))
    parser.add_argument('--baseline', metavar='REV',
                        help='also run balloon_default.py as of git REV')
    parser.add_argument('--policies', default=','.join(POLICIES),
                        help='policies to simulate (default: all)')
    parser.add_argument('--merge', metavar='FILE',
                        help="take the other policies' figures from an "
                             'earlier run of the same families and '
                             'scenarios; its "default" is kept as '
                             '"default@merged"')
    parser.add_argument('--json-out')
    args = parser.parse_args(argv)
    if args.baseline:
        BASELINE['default@' + args.baseline] = load_baseline(args.baseline)
    RUN[:] = args.policies.split(',')
    families = args.families.split(',')
    tasks = [(f, n) for f in families for n in range(args.scenarios + 1)]
    load0, started = os.getloadavg(), time.time()
    rows = []
    with multiprocessing.Pool(args.jobs) as pool:
        for row in pool.imap_unordered(run_task, tasks):
            rows.append(row)
            print('%s %s %.0f s' % (row['family'], row['name'],
                                    row['seconds']), file=sys.stderr,
                  flush=True)
    rows.sort(key=lambda r: (families.index(r['family']), r['scenario']))
    if args.merge:
        merge(rows, args.merge)
    summary = {}
    for f in families:
        summary[f] = family_summary([r for r in rows if r['family'] == f])
        m = summary[f]['means']
        print('%-15s ' % f + ' '.join('%s %.0f/%.0f' % (k[:9], *m[k])
                                      for k in m)
              + '  lost %d' % summary[f]['scenarios_lost_geo'], flush=True)
    doc = {'command': 'python benchmarks/balloon_patterns.py '
                      + ' '.join(argv if argv is not None else sys.argv[1:]),
           'machine': '%s, %d CPUs, Python %s' % (
               platform.machine(), os.cpu_count(),
               platform.python_version()),
           'load': {'start': load0, 'end': os.getloadavg()},
           'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
           'elapsed_s': time.time() - started,
           'policies': POLICIES, 'helper_estimator': HELPER,
           'merged_from': args.merge,
           'summary': summary, 'rows': rows}
    if args.json_out:
        with open(args.json_out, 'w') as f:
            json.dump(doc, f, indent=1)
            f.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
