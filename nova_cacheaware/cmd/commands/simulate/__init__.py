"""``nova-cacheaware simulate <what>``: simulators, one module each here.

A module in this package defines ``NAME``, ``HELP``, ``configure(parser)``
and ``run(args)``, like the top-level subcommands, and is found
automatically.
"""

import importlib
import pkgutil

NAME = 'simulate'
HELP = 'Run a simulator (see its own --help).'


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module('%s.%s' % (__name__, info.name))
        if hasattr(module, 'NAME'):
            yield module


def configure(parser):
    """Add one sub-subcommand per discovered simulator module."""
    sub = parser.add_subparsers(dest='simulator', metavar='SIMULATOR',
                                parser_class=type(parser))
    sub.required = True
    for module in _modules():
        child = sub.add_parser(module.NAME, help=module.HELP,
                               description=module.HELP)
        module.configure(child)
        child.set_defaults(simulator_run=module.run)


def run(args):
    """Run the chosen simulator."""
    return args.simulator_run(args)
