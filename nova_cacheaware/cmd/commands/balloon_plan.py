"""``nova-cacheaware balloon-plan``: one round of a memory balancer.

``--policy study`` (the default) is study 002's algorithm, whose JSON
contract is fixed; ``--policy default`` replays our default policy from an
agent snapshot (doc/source/user/balloon-plan.rst).
"""

from nova_cacheaware.balloon import default_balancer
from nova_cacheaware.balloon import study_balancer
from nova_cacheaware.cmd import common

NAME = 'balloon-plan'
HELP = ("Run one round of study 002's hit-ratio memory balancer "
        '(modes A/B) on a JSON snapshot.')


def configure(parser):
    """Add the balloon-plan options."""
    parser.add_argument('--input', required=True, metavar='FILE',
                        help='JSON input document, - for standard input')
    parser.add_argument('--policy', default='study',
                        choices=['study', 'default'],
                        help="study 002's algorithm, modes A/B (default), "
                             'or our default policy')


def run(args):
    """Validate the input, plan one round and print the JSON result."""
    doc = common.load_json_input(args.input)
    if args.policy == 'default':
        params, vms, free_mib = default_balancer.request_from_dict(doc)
        plan = default_balancer.default_plan(params, vms, free_mib)
        common.dump_json(default_balancer.plan_to_dict(plan))
        return 0
    params, vms, free_mib = study_balancer.request_from_dict(doc)
    plan = study_balancer.study_plan(params, vms, free_mib)
    common.dump_json(study_balancer.plan_to_dict(plan))
    return 0
