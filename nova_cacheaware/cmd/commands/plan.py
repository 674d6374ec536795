"""``nova-cacheaware plan``: replay the All-share planner on a JSON input."""

from nova_cacheaware.cachedomain import model as cachedomain_model
from nova_cacheaware.cachedomain import replan as allshare_replan
from nova_cacheaware.cmd import common

NAME = 'plan'
HELP = 'Plan All-share pinning of memory-bound VMs over cache domains.'


def configure(parser):
    """Add the plan options."""
    parser.add_argument('--input', required=True, metavar='FILE|-',
                        help='JSON input (see doc/source/user/plan.rst); '
                             '"-" reads standard input')


def run(args):
    """Read, check, plan, print the plan as JSON.

    An input with a ``previous`` section (the agent's ``--dump-state`` after
    an incremental replan) is replanned against it, as the agent did.
    """
    doc = common.load_json_input(args.input)
    common.dump_json(cachedomain_model.plan_to_dict(
        allshare_replan.plan_from_dict(doc)))
    return 0
