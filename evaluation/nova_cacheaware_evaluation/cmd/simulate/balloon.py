"""``nova-cacheaware simulate balloon``: study 002's experiment, per policy."""

from nova_cacheaware.cmd import common
from nova_cacheaware_evaluation.sim import balloon

NAME = 'balloon'
HELP = ('Simulate hit-ratio memory ballooning (study 002) under every '
        'policy and print the mean throughputs.')


def configure(parser):
    """Add the simulate balloon options."""
    parser.add_argument('--scenario', required=True, metavar='FILE',
                        help='JSON scenario, - for standard input ({} is '
                             "the study's setup)")
    parser.add_argument('--format', default='table',
                        choices=['table', 'json'],
                        help='output format (default table)')


def run(args):
    """Simulate and print the table or the JSON summary."""
    scenario = balloon.scenario_from_dict(
        common.load_json_input(args.scenario))
    doc = balloon.summary(balloon.simulate(scenario))
    if args.format == 'json':
        common.dump_json(doc)
    else:
        print(format_table(doc))
    return 0


def format_table(doc):
    """Render the summary for a person, best geometric mean first."""
    rows = sorted(doc['policies'].items(),
                  key=lambda kv: -kv[1]['geo_mean_mib_s'])
    lines = ['%-14s %14s %14s' % ('POLICY', 'ARITH MiB/s', 'GEO MiB/s')]
    for name, r in rows:
        lines.append('%-14s %14.1f %14.1f' % (
            name, r['arith_mean_mib_s'], r['geo_mean_mib_s']))
    return '\n'.join(lines)
