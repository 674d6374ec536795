"""``nova-cacheaware plan``: replay the All-share planner on a JSON input."""

from nova_cacheaware.cmd import common
from nova_cacheaware.policy import cachedomain

NAME = 'plan'
HELP = 'Plan All-share pinning of memory-bound VMs over cache domains.'


def configure(parser):
    """Add the plan options."""
    parser.add_argument('--input', required=True, metavar='FILE|-',
                        help='JSON input (see doc/source/user/plan.rst); '
                             '"-" reads standard input')


def run(args):
    """Read, check, plan, print the plan as JSON."""
    plan_input = cachedomain.input_from_dict(
        common.load_json_input(args.input))
    common.dump_json(cachedomain.plan_to_dict(cachedomain.plan(plan_input)))
    return 0
