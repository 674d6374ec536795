"""``nova-cacheaware rebalance``: replay a rebalance decision.

Reads a region snapshot (:mod:`nova_cacheaware.contracts.rebalance_snapshot`,
documented in ``doc/source/user/rebalance.rst``) and prints the live
migrations :func:`nova_cacheaware.rebalance.policy.plan_moves` proposes.
"""

import dataclasses

from nova_cacheaware.cmd import common
from nova_cacheaware.contracts import rebalance_snapshot
from nova_cacheaware import exception
from nova_cacheaware.rebalance import policy as rebalance

NAME = 'rebalance'
HELP = ('Plan the live migrations that restore the most Clean and '
        'All-share servers of a region snapshot.')

#: Far more migrations than one audit may make (a typo guard).
MAX_BUDGET = 1 << 16


def configure(parser):
    """Add the options."""
    parser.add_argument('--input', required=True, metavar='FILE|-',
                        help='the region snapshot (JSON); "-" reads '
                             'standard input')
    parser.add_argument('--budget', type=int, default=1, metavar='N',
                        help='the most live migrations to propose '
                             '(default 1)')


def plan_to_dict(plan):
    """The JSON document of a :class:`~.rebalance_model.Plan`."""
    return {'before': plan.before.counts(),
            'after': plan.after.counts(),
            'moves': [dict(dataclasses.asdict(m), score=m.score.counts())
                      for m in plan.moves]}


def run(args):
    """Read and check the snapshot, plan, print the plan."""
    if not 0 <= args.budget <= MAX_BUDGET:
        raise exception.InvalidInput(
            reason='--budget must be in 0..%d, not %d'
            % (MAX_BUDGET, args.budget))
    snapshot = rebalance_snapshot.snapshot_from_dict(
        common.load_json_input(args.input))
    common.dump_json(plan_to_dict(rebalance.plan_moves(snapshot,
                                                       args.budget)))
    return 0
