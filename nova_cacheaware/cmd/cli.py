"""``nova-cacheaware``: offline tools, JSON in and out.

Subcommands live in :mod:`nova_cacheaware.cmd.commands`, one module each,
and in other distributions' modules named by the
``nova_cacheaware.cli.commands`` entry points.
"""

import argparse
import contextlib
import io
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
    modules = list(commands.command_modules(commands))
    modules += commands.plugin_modules()
    commands.add_commands(parser, modules, 'command', 'COMMAND', 'func')
    return parser


def error_line(args, error):
    """The one stderr line for ``error``: the same prefix for every command.

    It names the sub-subcommand too (``nova-cacheaware flavor set: error:
    ...``), exactly as argparse names it in a usage error.
    """
    command = args.command
    for nested in ('flavor_action', 'simulator'):
        if getattr(args, nested, None):
            command = '%s %s' % (command, getattr(args, nested))
    message = ' '.join(str(error).split())  # one line, whatever it held
    return 'nova-cacheaware %s: error: %s\n' % (command, message)


def main(argv=None):
    """Entry point: parse, run, map errors to one line and exit code 2.

    What a subcommand prints is held back until it returns, so a failure
    leaves nothing on standard output: never half a JSON document.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held):
            code = args.func(args) or 0
    except exception.CacheAwareError as e:
        sys.stderr.write(error_line(args, e))
        return EXIT_USAGE
    try:
        sys.stdout.write(held.getvalue())
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # e.g. piped into head
    return code


if __name__ == '__main__':
    sys.exit(main())
