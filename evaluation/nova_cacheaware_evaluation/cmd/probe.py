"""``nova-cacheaware probe``: measure shared-cache contention on this host.

See doc/source/user/probe.rst. The pure parts are in
:mod:`nova_cacheaware_evaluation.probe.analysis`, the processes in
:mod:`nova_cacheaware_evaluation.probe.runner`.
"""

import dataclasses
import datetime
import os
import sys

from nova_cacheaware.cmd import common
from nova_cacheaware import exception
from nova_cacheaware.topology import domains as topo_domains
from nova_cacheaware.topology import sysfs
from nova_cacheaware_evaluation.probe import analysis as cp
from nova_cacheaware_evaluation.probe import runner

NAME = 'probe'
HELP = ('Measure how much a memory-bound program slows down when a second '
        'one shares its cache domain (and when it runs in another).')

#: Version of the JSON document (``nova-cacheaware simulate cache
#: --calibration`` reads it).
FORMAT_VERSION = 1


def configure(parser):
    """Add the probe options."""
    parser.add_argument('--sysfs-root', metavar='DIR', default='/sys',
                        help='directory standing in for /sys (default /sys)')
    parser.add_argument('--level', default='auto',
                        choices=['auto', '1', '2', '3', '4'],
                        help='cache level of the domains (default auto)')
    parser.add_argument('--domain', metavar='ID',
                        help='cache domain to measure in (default: the first '
                             'with two physical cores)')
    parser.add_argument('--cache-kib', type=int, metavar='KIB',
                        help="the domain's cache size, when sysfs has none")
    parser.add_argument('--factors', default='0.125,0.5,2',
                        metavar='F[,F...]',
                        help='working sets as multiples of the cache size '
                             '(default 0.125,0.5,2)')
    parser.add_argument('--kernels', default='chase,stream',
                        metavar='K[,K...]',
                        help='kernels: chase, stream (default both)')
    parser.add_argument('--kernel-impl', default='auto',
                        choices=runner.IMPLS,
                        help='C kernel compiled with cc, or numpy (default '
                             'auto: C when a compiler works)')
    parser.add_argument('--repetitions', type=int, default=5, metavar='N',
                        help='runs of every placement, interleaved '
                             '(default 5)')
    parser.add_argument('--samples', type=int, default=3, metavar='N',
                        help='timed samples per run (default 3)')
    parser.add_argument('--sample-seconds', type=float, default=0.2,
                        metavar='S', help='length of a sample (default 0.2)')
    parser.add_argument('--min-gain', type=float,
                        default=cp.DEFAULT_MIN_GAIN, metavar='R',
                        help='smallest slowdown difference that counts '
                             '(default 0.05)')
    parser.add_argument('--min-cpu-share', type=float, default=0.0,
                        metavar='R',
                        help='drop samples during which the kernel ran less '
                             'than this share of the wall time (default 0: '
                             'keep all)')
    parser.add_argument('--seed', type=int, default=1,
                        help='random seed of the chase (default 1)')
    parser.add_argument('--format', default='table',
                        choices=['table', 'json'],
                        help='output format (default table)')


def _list(text, convert, name, allowed=None):
    try:
        values = [convert(v) for v in text.split(',') if v.strip()]
    except ValueError:
        values = []
    if not values or len(values) > 8 or (
            allowed and any(v not in allowed for v in values)) or len(
                set(values)) != len(values):
        raise exception.InvalidInput(
            reason='--%s must be 1 to 8 distinct comma-separated %s, not %r'
                   % (name, 'of ' + '/'.join(allowed) if allowed
                      else 'numbers', text))
    return values


def _check_range(value, low, high, name):
    if not low <= value <= high:
        raise exception.InvalidInput(
            reason='--%s must be between %s and %s, not %s'
                   % (name, low, high, value))


def check_args(args):
    """The validated ``(kernels, factors)``; raises InvalidInput."""
    kernels = _list(args.kernels, str.strip, 'kernels', cp.KERNELS)
    factors = _list(args.factors, float, 'factors')
    for f in factors:
        _check_range(f, 0.001, 64, 'factors')
    _check_range(args.repetitions, 1, 100, 'repetitions')
    _check_range(args.samples, 1, 100, 'samples')
    _check_range(args.sample_seconds, 0.01, 10, 'sample-seconds')
    _check_range(args.min_gain, 0, 10, 'min-gain')
    _check_range(args.min_cpu_share, 0, 1, 'min-cpu-share')
    if args.cache_kib is not None:
        _check_range(args.cache_kib, 1, 2 ** 30, 'cache-kib')
    return kernels, factors


def run(args):
    """Discover, measure, print the slowdown matrix and the verdict."""
    kernels, factors = check_args(args)
    if not hasattr(os, 'sched_setaffinity'):
        raise runner.ProbeError(reason='this platform cannot pin processes '
                                       '(no sched_setaffinity)')
    topology = sysfs.read_topology(args.sysfs_root)
    domain_set = topo_domains.cache_domains(
        topology, topo_domains.parse_level(args.level))
    cpus = cp.choose_cpus(domain_set.domains, topology.core_of(),
                          args.domain)
    home = next(d for d in domain_set.domains if d.id == cpus.domain)
    cache_kib = args.cache_kib or home.size_kib
    if not cache_kib:
        raise exception.InvalidInput(
            reason='cache domain %s has no size in sysfs; give --cache-kib'
                   % home.id)
    sizes = cp.working_sets(cache_kib * 1024, factors)
    load_before = os.getloadavg()
    kernel, samples, runs = _measure(args, cpus, kernels, sizes)
    kept, dropped = cp.select_samples(samples, args.min_cpu_share)
    empty = [k for k, v in kept.items() if not v]
    if empty:
        raise runner.ProbeError(
            reason='no sample of %s %gx %s ran --min-cpu-share %s of the '
                   'time; lower it or probe a quieter host' % (
                       empty[0] + (args.min_cpu_share,)))
    matrix = cp.slowdown_matrix(kept)
    verdict = cp.verdict(matrix, args.min_gain)
    if args.format == 'table':
        print(format_table(matrix, verdict, cpus))
        print('Kernel: %s; load average %.2f before, %.2f after; cache %d '
              'KiB (%s); median CPU share %s; %d samples dropped' % (
                  kernel.description, load_before[0], os.getloadavg()[0],
                  cache_kib, 'given' if args.cache_kib else 'sysfs',
                  _shares_text(samples), sum(dropped.values())))
        return 0
    doc = {
        'format_version': FORMAT_VERSION,
        'date': _now(),
        'loadavg_before': [round(x, 2) for x in load_before],
        'loadavg_after': [round(x, 2) for x in os.getloadavg()],
        'kernel': {'impl': kernel.impl, 'description': kernel.description},
        'topology': _topology_doc(domain_set),
        'cpus': dataclasses.asdict(cpus),
        'settings': {'cache_kib': cache_kib, 'factors': factors,
                     'kernels': kernels, 'repetitions': args.repetitions,
                     'samples': args.samples,
                     'sample_seconds': args.sample_seconds,
                     'min_gain': args.min_gain,
                     'min_cpu_share': args.min_cpu_share, 'seed': args.seed},
        'dropped_samples': sum(dropped.values()),
        'cpu_share': _shares(samples),
        'verdict': verdict_to_dict(verdict),
        'runs': runs,
    }
    doc.update(matrix_to_dict(matrix, dict(sizes)))
    common.dump_json(doc)
    return 0


def _measure(args, cpus, kernels, sizes):
    """Build the kernel, run every measurement; the kernel is removed."""
    progress = _progress if sys.stderr.isatty() else None
    with runner.workdir() as tmp:
        kernel = runner.prepare_kernel(args.kernel_impl, tmp)
        samples, runs = runner.run_probe(
            kernel, cpus, kernels, sizes, args.repetitions, args.samples,
            args.sample_seconds, seed=args.seed, progress=progress)
    return kernel, samples, runs


def _topology_doc(domain_set):
    return {'level': domain_set.level,
            'domains': [{'id': d.id, 'cpus': list(d.cpus),
                         'size_kib': d.size_kib,
                         'numa_nodes': list(d.numa_nodes)}
                        for d in domain_set.domains]}


def _shares(samples):
    """Median CPU share of the samples, per placement."""
    by = {}
    for (_, _, placement), values in samples.items():
        by.setdefault(placement, []).extend(s for _, s in values)
    return {p: round(cp.summarise([max(s, 1e-9) for s in v]).median, 3)
            for p, v in sorted(by.items())}


def _shares_text(samples):
    return ', '.join('%s %.2f' % kv for kv in _shares(samples).items())


def _progress(run):
    sys.stderr.write('probe: %s %gx %s: %s ns/line\n' % (
        run['kernel'], run['factor'], run['placement'],
        ' '.join('%.2f' % v for v in run['ns_per_line'])))


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec='seconds')


# --------------------------------------------------------------------------
# Output

def _r(value):
    return round(value, 4)


def matrix_to_dict(matrix, sizes):
    """The ``alone`` and ``matrix`` parts of the probe's JSON.

    ``sizes``: {factor: bytes}.
    """
    alone = [{'kernel': k, 'factor': f, 'bytes': sizes[f],
              'n': s.n, 'median_ns': _r(s.median), 'low_ns': _r(s.low),
              'high_ns': _r(s.high), 'spread': _r(s.spread)}
             for (k, f), s in matrix.alone.items()]
    cells = [{'kernel': c.kernel, 'factor': c.factor,
              'placement': c.placement, 'slowdown': _r(c.slowdown),
              'low': _r(c.low), 'high': _r(c.high)}
             for c in matrix.cells]
    return {'alone': alone, 'matrix': cells}


def verdict_to_dict(v):
    """The ``verdict`` part of the probe's JSON."""
    return {'code': v.code, 'reason': v.reason, 'dirty': v.dirty,
            'evidence': [{'kernel': k, 'factor': f} for k, f in v.evidence]}


def format_table(matrix, v, cpus):
    """The slowdown matrix for a person (rows kernel x working set)."""
    placements = [p for p in cp.CO_RUNS if cpus.co_cpu(p) is not None]
    heads = {cp.SAME: 'same domain (CPU %s)' % cpus.same,
             cp.DIFFERENT: 'other domain %s (CPU %s)' % (
                 cpus.different_domain, cpus.different)}
    lines = ['Measured CPU %d in cache domain %s' % (cpus.alone,
                                                     cpus.domain),
             '%-8s %-6s %-22s %s' % ('KERNEL', 'SET', 'ALONE ns/line',
                                     '   '.join(heads[p]
                                                for p in placements))]
    for (kernel, factor), base in matrix.alone.items():
        row = '%-8s %-6s %-22s' % (
            kernel, '%gx' % factor,
            '%.2f (spread %.0f %%)' % (base.median, 100 * base.spread))
        for p in placements:
            c = matrix.cell(kernel, factor, p)
            row += ' %.2fx [%.2f-%.2f]' % (c.slowdown, c.low, c.high)
        lines.append(row)
    lines.append('Slowdown: median co-run / median alone [noise band].')
    lines.append('Verdict: %s: %s' % (v.code, v.reason))
    return '\n'.join(lines)
