"""``nova-cacheaware simulate cache``: cache-domain scheduling simulator."""

from nova_cacheaware.cmd import common
from nova_cacheaware import exception
from nova_cacheaware_evaluation.sim import cache
from nova_cacheaware_evaluation.sim import cache_scenario
from nova_cacheaware_evaluation.sim import calibration

NAME = 'cache'
HELP = ('Simulate cache-domain scheduling (study 000 contention model) on '
        'a host, or on a cloud with operator flavors, arrivals and the '
        'classifier.')


def configure(parser):
    """Add the simulate cache options."""
    parser.add_argument('--scenario', required=True, metavar='FILE|-',
                        help='scenario JSON (see '
                             'doc/source/evaluation/cache-scheduling.rst)')
    parser.add_argument('--calibration', metavar='FILE',
                        help='JSON of nova-cacheaware probe --format json: '
                             'the same-domain co-run slowdown it measured '
                             'replaces the model\'s dirty_all (see '
                             'doc/source/evaluation/contention-probe.rst)')
    parser.add_argument('--calibration-cell', metavar='KERNEL:FACTOR',
                        help='use one cell of the probe (e.g. chase:0.5) '
                             'instead of the geometric mean of all its '
                             'same-domain cells')


def run(args):
    """Load the scenario, run every policy, print JSON results."""
    scenario = cache_scenario.load_scenario(
        common.load_json_input(args.scenario))
    calib = None
    if args.calibration_cell and not args.calibration:
        raise exception.InvalidInput(
            reason='--calibration-cell needs --calibration')
    if args.calibration:
        cell = (calibration.parse_cell(args.calibration_cell)
                if args.calibration_cell else None)
        calib = calibration.from_probe(
            common.load_json_input(args.calibration), args.calibration,
            cell)
        scenario['model'] = calib.apply(scenario['model'])
    result = cache.run(scenario)
    if calib:
        result['calibration'] = calib.to_dict(scenario['model'])
    common.dump_json(result)
    return 0
