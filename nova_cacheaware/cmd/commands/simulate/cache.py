"""``nova-cacheaware simulate cache``: cache-domain scheduling simulator."""

from nova_cacheaware.cmd import common
from nova_cacheaware.sim import cache

NAME = 'cache'
HELP = ('Simulate cache-domain scheduling policies (study 000 contention '
        'model) on a host or a cluster.')


def configure(parser):
    """Add the simulate cache options."""
    parser.add_argument('--scenario', required=True, metavar='FILE|-',
                        help='scenario JSON (see '
                             'doc/source/evaluation/cache-scheduling.rst)')


def run(args):
    """Load the scenario, run every policy, print JSON results."""
    scenario = cache.load_scenario(common.load_json_input(args.scenario))
    common.dump_json(cache.run(scenario))
    return 0
