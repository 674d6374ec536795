"""A simulated year of the Watcher strategy's daily audits: every figure.

Usage, from the repository root::

    .venv/bin/python benchmarks/rebalance_year.py [--quick]
        [--out benchmarks/results/rebalance_year.json]
        [--plots doc/source/evaluation]
        [--part large|small] [--budgets 0,1]
        [--mix '30 % memory-bound'] [--skip-unknown] [--skip-clean-first]
        [--large-seed 7]
    .venv/bin/python benchmarks/rebalance_year.py --combine SMALL LARGE...
        [--out ...] [--plots ...] [--reuse EARLIER.json]

``--part`` runs one half (the large clouds take most of the time: run
them in the background, one process per ``--mix``), ``--budgets`` the
large clouds' budgets (empty: none), ``--skip-unknown`` leaves out their
run with refusals unknown, ``--skip-clean-first`` the one with the
strategy's ``priority`` ``clean``, ``--large-seed`` the large clouds'
seeds (default 7); ``--combine`` writes the JSON (and
plots) of such parts (one cloud's runs from several parts made one),
with ``--reuse`` taking the no-strategy runs
(budget 0) the large parts did not run from an earlier document (a
change of the strategy leaves them as they were).

On :mod:`nova_cacheaware_evaluation.sim.rebalance_year`'s cloud (the
scheduler's and the agent's rules, the classifier's votes on CPI noise
measured by the contention probe), each seed's trace is run

* on **large clouds** (300 hosts of 4 four-CPU domains, the cache
  simulator's EPYC host, load 0.85, 120 days of warmup and a year) with
  the strategy at several budgets (migrations per 100 servers per day,
  0: no strategy), against the day's **optimum**: the most Clean any
  placement of the day's servers has (an integer program,
  :mod:`nova_cacheaware_evaluation.sim.clean_bound`; at most the older
  bound ``min(memory-bound servers, domains)``, also kept); the mixes
  are the cache simulator's (30 % and 70 % memory-bound) and one between
  them;
* on **small clouds** (8 such hosts) against the clairvoyant audit, the
  best move each day found exhaustively against the truth, at the goal's
  budget (one per 100 servers per day: one move a day there);
* the audit as shipped knows the day's refused ``required`` requests
  (the strategy's ``refused_within_hours``: Nova's ERROR servers with
  NoValidHost) and makes room for them first (``priority`` ``required``);
  at the goal's budget once with Clean first (``priority`` ``clean``)
  and once without them (``refused_within_hours = 0``).

Writes the JSON (command, machine, date, load, CPU time) and, with
``--plots``, ``rebalance-year-clean.png``, ``rebalance-year-speed.png`` and
``rebalance-year-small.png``
(matplotlib: ``pip install -r benchmarks/requirements.txt``).
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import cache_cloud_bench  # noqa: E402
from benchmarks import common  # noqa: E402
from nova_cacheaware_evaluation.sim import contention  # noqa: E402
from nova_cacheaware_evaluation.sim import rebalance_year as year  # noqa

OUT = os.path.join(ROOT, 'benchmarks', 'results', 'rebalance_year.json')
#: The cache simulator's mixes (cache-cloud-100*.json) and one between.
MIXES = {
    '30 % memory-bound': (('cpu', 5), ('io', 2), ('memory', 3)),
    '50 % memory-bound': (('cpu', 3), ('io', 2), ('memory', 5)),
    '70 % memory-bound': (('cpu', 2), ('io', 1), ('memory', 7)),
}
BUDGETS = (0, 0.25, 1)
GOAL_BUDGET = 1
SEEDS = (7, 8, 9)
#: The large clouds' seeds (each run of a year there costs about 45 s
#: of CPU on the project's CI machine).
LARGE_SEEDS = (7,)


def ratios(days, key, reference):
    """Per day ``days[key] / reference(day)`` (days with a reference)."""
    out = []
    for i, d in enumerate(days):
        ref = reference(i, d)
        if ref:
            out.append(d[key] / ref)
    return out


def summary(result, reference=None):
    """Means and worst days of one run (against the optimum by default)."""
    days = result['days']
    reference = reference or (lambda i, d: d['optimum'])
    after = ratios(days, 'clean', reference)
    before = ratios(days, 'clean_before', reference)
    loose = ratios(days, 'clean', lambda i, d: d['bound'])
    pairs = ratios(days, 'clean', lambda i, d: d['optimum_in_pairs'])
    speed = ratios(days, 'performance',
                   lambda i, d: d['performance_optimum'])
    per_server = ratios(days, 'performance',
                        lambda i, d: d['memory_bound'])
    return {'per_100': result['per_100'], 'mover': result['mover'],
            'know_refused': result['know_refused'],
            'priority': result['priority'],
            'clean_mean': round(sum(after) / len(after), 4),
            'clean_worst': round(min(after), 4),
            'clean_before_mean': round(sum(before) / len(before), 4),
            'clean_before_worst': round(min(before), 4),
            'days_below_098': sum(r < 0.98 for r in after),
            'performance_mean': round(sum(speed) / len(speed), 4),
            'performance_worst': round(min(speed), 4),
            'performance_per_server': round(sum(per_server)
                                            / len(per_server), 4),
            'clean_vs_bound_worst': round(min(loose), 4),
            'clean_vs_pairs_mean': (round(sum(pairs) / len(pairs), 4)
                                    if pairs else None),
            'clean_vs_pairs_worst': round(min(pairs), 4) if pairs else None,
            'days_below_098_vs_pairs': sum(r < 0.98 for r in pairs),
            'pairs_below_optimum_days': sum(
                d['optimum_in_pairs'] is not None
                and d['optimum_in_pairs'] < d['optimum'] for d in days),
            'optimum_below_bound_days': sum(
                d['optimum'] < d['bound'] for d in days),
            'optimum_over_bound_worst': round(min(
                d['optimum'] / d['bound'] for d in days if d['bound']), 4),
            'unseated_days': sum(d['unseated'] > 0 for d in days),
            'refused': result['refused'],
            'refused_required': result['refused_required'],
            'moved': result['moved'], 'failed': result['failed'],
            'worse': result['worse'], 'arrivals': result['arrivals'],
            'servers_mean': round(sum(d['servers'] for d in days)
                                  / len(days), 1),
            'memory_bound_mean': round(sum(d['memory_bound'] for d in days)
                                       / len(days), 1)}


def large(calib, quick, budgets=BUDGETS, mixes=tuple(MIXES),
          unknown=True, clean_first=True, seeds=LARGE_SEEDS):
    """Every mix and budget on the large cloud, per seed.

    ``unknown``: also the goal's budget with refusals unknown;
    ``clean_first``: also the goal's budget with ``priority`` ``clean``.
    """
    model = contention.Model(dirty_all=calib['dirty_all'])
    out = []
    hosts, days = (60, 120) if quick else (300, 365)
    for label in mixes:
        mix = MIXES[label]
        for seed in seeds[:1] if quick else seeds:
            spec = year.YearSpec(hosts=hosts, days=days, warmup_days=120,
                                 mix=mix)
            world = year.world(spec, model, calib['sigma'], seed)
            runs = [year.run(world, b, know_refused=True) for b in budgets]
            if clean_first:
                runs.append(year.run(world, GOAL_BUDGET, know_refused=True,
                                     priority='clean'))
            if unknown:
                runs.append(year.run(world, GOAL_BUDGET))
            out.append({'mix': label, 'seed': seed, 'hosts': hosts,
                        'days': days,
                        'summaries': [summary(r) for r in runs],
                        'series': {_key(r): [(d['clean_before'], d['clean'],
                                              d['optimum'], d['moved'],
                                              d['performance'],
                                              d['performance_optimum'],
                                              d['optimum_in_pairs'])
                                             for d in r['days']]
                                   for r in runs}})
    return out


def small(calib, quick):
    """Strategy against the clairvoyant audit on small clouds."""
    model = contention.Model(dirty_all=calib['dirty_all'])
    out = []
    for label in ('50 % memory-bound', '70 % memory-bound'):
        for seed in SEEDS[:1] if quick else SEEDS:
            spec = year.YearSpec(hosts=8, days=120 if quick else 365,
                                 warmup_days=120, mix=MIXES[label])
            world = year.world(spec, model, calib['sigma'], seed)
            none = year.run(world, 0)
            ours = year.run(world, GOAL_BUDGET, know_refused=True)
            clean = year.run(world, GOAL_BUDGET, know_refused=True,
                             priority='clean')
            best = year.run(world, GOAL_BUDGET, mover='clairvoyant')
            clairvoyant = best['days']
            out.append({
                'mix': label, 'seed': seed, 'hosts': 8,
                'summaries': [summary(r)
                              for r in (none, ours, clean, best)],
                'vs_clairvoyant': summary(
                    ours, lambda i, d: clairvoyant[i]['clean']),
                'series': {_key(r): [(d['clean_before'], d['clean'],
                                      d['optimum'], d['moved'])
                                     for d in r['days']]
                           for r in (none, ours, clean, best)}})
    return out


def _key(result):
    if not result['per_100'] or result['mover'] != 'strategy':
        return '%s %s' % (result['mover'], result['per_100'])
    if not result['know_refused']:
        return 'strategy %s refusals unknown' % result['per_100']
    return 'strategy %s%s' % (result['per_100'],
                              ' clean first'
                              if result['priority'] == 'clean' else '')


def _ratio(row, value, reference):
    """``row[value] / row[reference]``; NaN (no point) where it lacks it."""
    if len(row) <= reference or row[reference] is None:
        return float('nan')
    return row[value] / row[reference] if row[reference] else 1.0


def _ratio_lines(value, reference, label):
    """A large cloud's runs drawn as ``series[value] / series[reference]``."""
    def lines(ax, case):
        for key, series in sorted(case['series'].items()):
            if 'unknown' not in key:
                ax.plot([_ratio(s, value, reference) for s in series],
                        label=key.replace('strategy ', 'budget '), lw=0.9)
        ax.set_ylabel(label)
    return lines


_large_lines = _ratio_lines(0, 2,
                            'Clean memory-bound / optimum (before audit)')
_speed_lines = _ratio_lines(4, 5, 'memory-bound speed / optimum')
_pairs_lines = _ratio_lines(1, 6, 'Clean memory-bound / optimum in pairs')


def _small_lines(ax, case):
    for key, series in sorted(case['series'].items()):
        ax.plot([s[1] for s in series], label=key, lw=0.9)
    ax.plot([s[2] for s in next(iter(case['series'].values()))],
            label='optimum (any placement)', lw=0.7, ls=':')
    ax.set_ylabel('Clean memory-bound servers')


def plots(doc, where):
    """The four figures of the evaluation page."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    for cases, lines, name in (
            (doc['large'], _large_lines, 'rebalance-year-clean.png'),
            (doc['large'], _speed_lines, 'rebalance-year-speed.png'),
            (doc['large'], _pairs_lines, 'rebalance-year-pairs.png'),
            (doc['small'], _small_lines, 'rebalance-year-small.png')):
        cases = [c for c in cases if c['seed'] == SEEDS[0]]
        fig, axes = plt.subplots(1, len(cases),
                                 figsize=(5 * len(cases), 3.6),
                                 squeeze=False)
        for ax, case in zip(axes[0], cases):
            lines(ax, case)
            ax.set_title('%s, %d hosts (seed %d)'
                         % (case['mix'], case['hosts'], case['seed']))
            ax.set_xlabel('day')
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(where, name), dpi=90)
        plt.close(fig)


def main(argv=None):
    """Run everything; write the JSON (and the plots)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true')
    parser.add_argument('--out', default=OUT)
    parser.add_argument('--plots')
    parser.add_argument('--part', choices=('large', 'small'))
    parser.add_argument('--budgets', default=','.join(map(str, BUDGETS)),
                        help='the large clouds\' budgets, comma-separated')
    parser.add_argument('--mix', action='append', choices=tuple(MIXES),
                        help='a large-cloud mix (repeat; default: all)')
    parser.add_argument('--skip-unknown', action='store_true',
                        help='no large-cloud run with refusals unknown')
    parser.add_argument('--skip-clean-first', action='store_true',
                        help='no large-cloud run with priority "clean"')
    parser.add_argument('--large-seed', type=int, action='append',
                        help='a large-cloud seed (repeat; default: %s)'
                        % ','.join(map(str, LARGE_SEEDS)))
    parser.add_argument('--combine', nargs='+', metavar='PART',
                        help='SMALL then LARGE files: one document')
    parser.add_argument('--reuse', metavar='DOC',
                        help='with --combine: the large clouds\' budgets '
                        'the parts did not run, from this earlier document '
                        '(a change that leaves them as they were)')
    args = parser.parse_args(argv)
    if args.combine:
        return combine(args.combine, args.out, args.plots, args.reuse)
    budgets = tuple(float(b) if '.' in b else int(b)
                    for b in args.budgets.split(',') if b)
    started, cpu = time.time(), time.process_time()
    load = os.getloadavg()
    calib = cache_cloud_bench.probe_calibration()
    doc = {'benchmark': 'rebalance_year',
           'command': common.command(
               'rebalance_year.py', sys.argv[1:] if argv is None else argv),
           'date': common.now(), 'machine': common.machine(),
           'loadavg_before': load,
           'calibration': {k: calib[k] for k in ('dirty_all', 'sigma',
                                                 'probe_file')},
           'budgets': budgets, 'seeds': SEEDS,
           'large_seeds': tuple(args.large_seed or LARGE_SEEDS),
           'large': ([] if args.part == 'small'
                     else large(calib, args.quick, budgets,
                                tuple(args.mix or MIXES),
                                not args.skip_unknown,
                                not args.skip_clean_first,
                                tuple(args.large_seed or LARGE_SEEDS))),
           'small': [] if args.part == 'large' else small(
               calib, args.quick)}
    doc.update(loadavg_after=os.getloadavg(),
               wall_s=round(time.time() - started, 1),
               cpu_s=round(time.process_time() - cpu, 1))
    common.write_json(args.out, doc)
    if args.plots:
        plots(doc, args.plots)
    for case in doc['large'] + doc['small']:
        for s in case['summaries']:
            print(case['mix'], case['hosts'], case['seed'], s)
    return doc


def _no_dirs(command):
    """``command`` with its ``--out`` file named without its folder."""
    words = command.split(' ')
    return ' '.join(os.path.basename(w) if i and words[i - 1] == '--out'
                    else w for i, w in enumerate(words))


def _reused(larges, path):
    """``larges`` with the budgets they lack taken from document ``path``.

    Per large cloud (mix, seed, hosts, days): the earlier document's
    summaries and series of the budgets its parts did not run (budget 0,
    no strategy, is what a change of the strategy leaves as it was).
    Returns the reused budgets.
    """
    import json
    with open(path) as f:
        earlier = {(c['mix'], c['seed'], c['hosts'], c['days']): c
                   for c in json.load(f)['large']}
    reused = set()
    for part in larges:
        for case in part['large']:
            old = earlier[(case['mix'], case['seed'], case['hosts'],
                           case['days'])]
            ran = {(s['per_100'], s['know_refused'])
                   for s in case['summaries']}
            taken = [s for s in old['summaries']
                     if (s['per_100'], s['know_refused']) not in ran
                     and not s['per_100']]
            for s in taken:
                key = 'strategy %s' % s['per_100']
                case['series'][key] = old['series'][key]
                reused.add(s['per_100'])
            case['summaries'] = sorted(
                taken + case['summaries'],
                key=lambda s: (s['per_100'], not s['know_refused']))
    return sorted(reused)


def _merged(cases):
    """``cases`` with those of one cloud made one.

    Parts that ran one cloud's budgets apart: their summaries and series
    together.
    """
    out = {}
    for case in cases:
        key = (case['mix'], case['seed'], case['hosts'], case['days'])
        if key not in out:
            out[key] = dict(case, summaries=list(case['summaries']),
                            series=dict(case['series']))
            continue
        out[key]['summaries'].extend(case['summaries'])
        out[key]['series'].update(case['series'])
    return list(out.values())


def combine(paths, out, where=None, reuse=None):
    """One document of ``--part small`` and ``--part large`` runs.

    Each part keeps its own command, dates, load and CPU time; ``reuse``:
    an earlier document whose no-strategy runs (budget 0) stand in for
    the ones the parts did not run (:func:`_reused`).
    """
    import json
    parts = []
    for path in paths:
        with open(path) as f:
            parts.append(json.load(f))
    larges = [part for part in parts if part['large']]
    merged = _merged(c for part in larges for c in part['large'])
    # After merging: a cloud run in several parts takes the earlier
    # runs once.
    reused = _reused([{'large': merged}], reuse) if reuse else []
    doc = {'benchmark': 'rebalance_year', 'combined': True,
           'budgets': larges[0]['budgets'] if larges else None,
           'seeds': SEEDS,
           'large_seeds': sorted({c['seed'] for part in larges
                                  for c in part['large']}),
           'calibration': parts[0]['calibration'],
           'runs': [dict({k: part[k] for k in (
               'date', 'machine', 'loadavg_before', 'loadavg_after',
               'wall_s', 'cpu_s')}, command=_no_dirs(part['command']))
               for part in parts],
           'large': merged,
           'small': [c for part in parts for c in part['small']]}
    if reused:
        doc['budgets'] = sorted(set(doc['budgets']) | set(reused))
        doc['reused'] = {'budgets': reused,
                         'from': os.path.basename(reuse)}
    common.write_json(out, doc)
    if where:
        plots(doc, where)
    return doc


if __name__ == '__main__':
    main()
