"""``nova-cacheaware balloon-plan``: one round of study 002's balancer."""

from nova_cacheaware.cmd import common
from nova_cacheaware.policy import balloon

NAME = 'balloon-plan'
HELP = ("Run one round of study 002's hit-ratio memory balancer "
        '(modes A/B) on a JSON snapshot.')


def configure(parser):
    """Add the balloon-plan options."""
    parser.add_argument('--input', required=True, metavar='FILE',
                        help='JSON input document, - for standard input')


def run(args):
    """Validate the input, plan one round and print the JSON result."""
    doc = common.load_json_input(args.input)
    params, vms, free_mib = balloon.request_from_dict(doc)
    plan = balloon.study_plan(params, vms, free_mib)
    common.dump_json(balloon.plan_to_dict(plan))
    return 0
