"""``nova-cacheaware simulate numa``: study 003's experiment, per policy."""

from nova_cacheaware.cmd import common
from nova_cacheaware_evaluation.sim import numa

NAME = 'numa'
HELP = ('Simulate Blackbox, vNUMA and full-NUMA with hand-off (study 003) '
        'and print the mean job times and reductions.')


def configure(parser):
    """Add the simulate numa options."""
    parser.add_argument('--scenario', default=None, metavar='FILE|-',
                        help='JSON object overriding the model defaults '
                             '(doc/source/evaluation/numa.rst); none: the '
                             'defaults')
    parser.add_argument('--format', default='table',
                        choices=['table', 'json'],
                        help='output format (default table)')


def run(args):
    """Simulate and print the table or the JSON document."""
    doc = (common.load_json_input(args.scenario) if args.scenario
           else {})
    result = numa.compare(numa.scenario_from_dict(doc))
    if args.format == 'json':
        common.dump_json(result)
    else:
        print(format_table(result))
    return 0


def format_table(result):
    """Mean job time per policy and full-NUMA's reduction against it."""
    lines = ['%-10s %12s %12s %12s' % ('POLICY', 'MEAN JOB s', 'REDUCTION',
                                       'STUDY')]
    for policy in numa.POLICIES:
        reduction = result['reduction'].get(policy)
        study = result['study_reduction'].get(policy)
        lines.append('%-10s %12.2f %12s %12s' % (
            policy, result['mean_job_s'][policy],
            '-' if reduction is None else '%.0f %%' % (100 * reduction),
            '-' if study is None else '%.0f %%' % (100 * study)))
    return '\n'.join(lines)
