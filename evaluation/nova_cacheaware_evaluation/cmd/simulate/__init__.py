"""``nova-cacheaware simulate <what>``: simulators, one module each here.

A module in this package defines ``NAME``, ``HELP``, ``configure(parser)``
and ``run(args)``, like the top-level subcommands, and is found
automatically.
"""

import sys

from nova_cacheaware.cmd import commands

NAME = 'simulate'
HELP = 'Run a simulator (see its own --help).'


def configure(parser):
    """Add one sub-subcommand per discovered simulator module."""
    commands.add_commands(
        parser, list(commands.command_modules(sys.modules[__name__])),
        'simulator', 'SIMULATOR', 'simulator_run')


def run(args):
    """Run the chosen simulator."""
    return args.simulator_run(args)
