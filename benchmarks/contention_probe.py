"""Run ``nova-cacheaware probe`` a few times on this machine; keep it all.

Usage::

    python benchmarks/contention_probe.py [--runs 3] [--json FILE]
        [-- PROBE OPTIONS...]
    python benchmarks/contention_probe.py --report FILE   # the doc's tables

Each run is ``nova-cacheaware probe --format json`` (the C kernel where a
compiler works, else numpy) with the probe's defaults unless options follow
``--``; then one run with ``--kernel-impl numpy`` where numpy is installed,
so that both kernels are on record. Runs follow one another; the load
average is recorded around each.

Besides every probe document (all samples), the summary recomputes each
run's matrix from the samples during which the kernel ran at least
:data:`UNDISTURBED` of the wall time: on a shared machine a sample during
which other processes ran on the kernel's CPU measures their cache use too.

Writes ``benchmarks/results/contention_probe.json`` (or ``--json FILE``)
with the command, machine, load and date; the figures go to
doc/source/evaluation/contention-probe.rst.
"""

import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import common  # noqa: E402
from nova_cacheaware_evaluation.probe import analysis as cp  # noqa: E402

DEFAULT_JSON = os.path.join(REPO, 'benchmarks', 'results',
                            'contention_probe.json')
#: The CPU share from which a sample counts as undisturbed.
UNDISTURBED = 0.8


def probe(extra):
    """One probe run: its JSON document."""
    proc = subprocess.run(
        [sys.executable, '-m', 'nova_cacheaware.cmd.cli', 'probe',
         '--format', 'json'] + extra,
        capture_output=True, text=True, cwd=REPO, check=False)
    if proc.returncode:
        raise SystemExit('probe failed: %s' % proc.stderr.strip())
    return json.loads(proc.stdout)


def condensed(doc, min_share=0.0):
    """``{kernel factor: {placement: [slowdown, low, high]}}``, alone ns."""
    samples = {}
    for r in doc['runs']:
        co = r['co_cpu_share']
        shares = [s if co is None else min(s, co) for s in r['cpu_share']]
        samples.setdefault((r['kernel'], r['factor'], r['placement']),
                           []).extend(zip(r['ns_per_line'], shares))
    kept, dropped = cp.select_samples(samples, min_share)
    if any(not v for k, v in kept.items() if k[2] == cp.ALONE):
        return {'dropped': sum(dropped.values()), 'matrix': None}
    kept = {k: v for k, v in kept.items() if v}
    matrix = cp.slowdown_matrix(kept)
    out = {}
    for (kernel, factor), base in matrix.alone.items():
        row = {'alone_ns': round(base.median, 2),
               'alone_spread': round(base.spread, 3)}
        for c in matrix.cells:
            if (c.kernel, c.factor) == (kernel, factor):
                row[c.placement] = [round(c.slowdown, 3), round(c.low, 3),
                                    round(c.high, 3)]
        out['%s %gx' % (kernel, factor)] = row
    return {'dropped': sum(dropped.values()), 'matrix': out,
            'verdict': cp.verdict(matrix, doc['settings']['min_gain']).code}


def report(doc):
    """The tables of the evaluation page, from a results document."""
    lines = ['%s; %s; load %s -> %s; %s' % (
        doc['machine'], doc['date'], doc['loadavg_before'],
        doc['loadavg_after'], doc['command'])]
    for n, run in enumerate(doc['runs']):
        s = run['summary']
        lines.append('run %d: %s kernel, load %.2f -> %.2f, median CPU share '
                     '%s, verdict %s' % (
                         n, s['kernel'], s['loadavg_before'][0],
                         s['loadavg_after'][0], s['median_cpu_share'],
                         s['verdict']))
        for label in ('all_samples', 'undisturbed'):
            part = s[label]
            lines.append('  %s (%d samples dropped)%s' % (
                label, part['dropped'],
                '' if part['matrix'] else ': no alone sample left'))
            for key, row in (part['matrix'] or {}).items():
                same = row.get('same')
                lines.append('    %-14s alone %8.2f ns (spread %4.0f %%)  '
                             'same %s' % (
                                 key, row['alone_ns'],
                                 100 * row['alone_spread'],
                                 '%.2fx [%.2f-%.2f]' % tuple(same)
                                 if same else '-'))
    return '\n'.join(lines)


def main(argv=None):
    """Run the probes and write the results document."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = common.command('contention_probe.py', argv, python='python')
    extra = []
    if '--' in argv:
        extra = argv[argv.index('--') + 1:]
        argv = argv[:argv.index('--')]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--no-numpy-run', action='store_true')
    parser.add_argument('--json', default=DEFAULT_JSON)
    parser.add_argument('--report', metavar='FILE',
                        help='print the tables of a results file and exit')
    args = parser.parse_args(argv)
    if args.report:
        with open(args.report) as f:
            print(report(json.load(f)))
        return 0
    plans = [extra] * args.runs
    if not args.no_numpy_run:
        try:
            import numpy  # noqa: F401
            plans.append(extra + ['--kernel-impl', 'numpy'])
        except ImportError:
            pass
    doc = {
        'command': command,
        'date': common.now(),
        'machine': common.machine(),
        'loadavg_before': [round(x, 2) for x in os.getloadavg()],
        'undisturbed_cpu_share': UNDISTURBED,
        'runs': [],
    }
    for n, plan in enumerate(plans):
        result = probe(plan)
        summary = {'probe_options': plan,
                   'kernel': result['kernel']['impl'],
                   'date': result['date'],
                   'loadavg_before': result['loadavg_before'],
                   'loadavg_after': result['loadavg_after'],
                   'median_cpu_share': result['cpu_share'],
                   'verdict': result['verdict']['code'],
                   'all_samples': condensed(result),
                   'undisturbed': condensed(result, UNDISTURBED)}
        doc['runs'].append({'summary': summary, 'probe': result})
        print('run %d (%s, load %.2f -> %.2f): %s' % (
            n, summary['kernel'], result['loadavg_before'][0],
            result['loadavg_after'][0],
            json.dumps(summary['all_samples']['matrix'])), flush=True)
    doc['loadavg_after'] = [round(x, 2) for x in os.getloadavg()]
    common.write_json(args.json, doc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
