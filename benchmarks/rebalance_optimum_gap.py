"""How far the greedy rebalance plan is from the exhaustive optimum.

Usage, from the repository root::

    PYTHONPATH=. python benchmarks/rebalance_optimum_gap.py
        [--examples 1500] [--json-out benchmarks/results/FILE.json]

Random small regions (2-4 hosts of 1-3 domains, up to 4 servers each:
``tests/unit/rebalance/strategies.py``, drawn derandomized, so a
run is repeatable), budgets 1 and 2: the greedy plan of
:func:`nova_cacheaware.rebalance.policy.plan_moves` against the best score
any sequence of legal moves reaches
(``tests/unit/rebalance/optimum.py``). Counted: regions where the
scores are equal, where the Clean counts are equal, and, where the
optimum gains Clean servers, the mean and worst share of that gain the
greedy plan gets.
"""

import argparse
import sys

import hypothesis
from hypothesis import strategies as st

from benchmarks import common
from nova_cacheaware.rebalance import policy as rebalance
from tests.unit.rebalance import optimum as rebalance_optimum
from tests.unit.rebalance import strategies as rebalance_strategies


def run(examples):
    """The counts described in the module docstring."""
    counts = {'regions': 0, 'score_equal': 0, 'clean_equal': 0,
              'optimum_gains_clean': 0, 'gain_share_sum': 0.0,
              'worst_gain_share': None, 'greedy_above_optimum': 0}

    @hypothesis.settings(max_examples=examples, deadline=None,
                         derandomize=True, database=None)
    @hypothesis.given(rebalance_strategies.snapshots(max_hosts=4),
                      st.integers(1, 2))
    def one(snap, budget):
        plan = rebalance.plan_moves(snap, budget)
        best = rebalance_optimum.optimum(snap, budget)
        counts['regions'] += 1
        counts['score_equal'] += plan.after == best
        counts['clean_equal'] += plan.after.clean == best.clean
        counts['greedy_above_optimum'] += plan.after > best
        if best.clean > plan.before.clean:
            share = ((plan.after.clean - plan.before.clean)
                     / (best.clean - plan.before.clean))
            counts['optimum_gains_clean'] += 1
            counts['gain_share_sum'] += share
            worst = counts['worst_gain_share']
            counts['worst_gain_share'] = (share if worst is None
                                          else min(worst, share))

    one()
    gains = counts.pop('gain_share_sum')
    counts['mean_gain_share'] = round(
        gains / max(1, counts['optimum_gains_clean']), 4)
    return counts


def main(argv=None):
    """Run, print and optionally write the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--examples', type=int, default=1500)
    parser.add_argument('--json-out')
    args = parser.parse_args(argv)
    doc = {'benchmark': 'rebalance_optimum_gap', 'machine': common.machine(),
           'date': common.now(), 'examples': args.examples,
           'counts': run(args.examples)}
    print(doc['counts'])
    if args.json_out:
        common.write_json(args.json_out, doc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
