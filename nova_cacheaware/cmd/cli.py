"""``nova-cacheaware``: offline tools, JSON in and out.

Subcommands live in :mod:`nova_cacheaware.cmd.commands`, one module each.
"""

import argparse
import sys

from nova_cacheaware.cmd import commands
from nova_cacheaware import exception
from nova_cacheaware import version

EXIT_USAGE = 2


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, exit code 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, '%s: error: %s\n' % (self.prog, message))


def build_parser():
    """The argument parser with every discovered subcommand."""
    parser = _OneLineParser(
        prog='nova-cacheaware',
        description='Cache-, NUMA- and pCPU-aware tools for OpenStack Nova.')
    parser.add_argument('--version', action='version',
                        version=version.version_string())
    commands.add_commands(parser, commands, 'command', 'COMMAND', 'func')
    return parser


def main(argv=None):
    """Entry point: parse, run, map errors to one line and exit code 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except exception.CacheAwareError as e:
        sys.stderr.write('nova-cacheaware %s: error: %s\n' % (args.command, e))
        return EXIT_USAGE
    except BrokenPipeError:
        return 0  # e.g. piped into head


if __name__ == '__main__':
    sys.exit(main())
