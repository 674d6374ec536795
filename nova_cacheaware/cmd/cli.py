"""``nova-cacheaware``: offline tools, JSON in and out.

Subcommands live in :mod:`nova_cacheaware.cmd.commands`, one module each.
"""

import argparse
import importlib
import pkgutil
import sys

from nova_cacheaware.cmd import commands
from nova_cacheaware import exception
from nova_cacheaware import version

EXIT_USAGE = 2


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, exit code 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, '%s: error: %s\n' % (self.prog, message))


def _subcommand_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__),
                       key=lambda i: i.name):
        module = importlib.import_module('%s.%s' % (commands.__name__,
                                                    info.name))
        if hasattr(module, 'NAME'):
            yield module


def build_parser():
    """The argument parser with every discovered subcommand."""
    parser = _OneLineParser(
        prog='nova-cacheaware',
        description='Cache-, NUMA- and pCPU-aware tools for OpenStack Nova.')
    parser.add_argument('--version', action='version',
                        version=version.version_string())
    sub = parser.add_subparsers(dest='command', metavar='COMMAND',
                                parser_class=_OneLineParser)
    sub.required = True
    for module in _subcommand_modules():
        child = sub.add_parser(module.NAME, help=module.HELP,
                               description=module.HELP)
        module.configure(child)
        child.set_defaults(func=module.run)
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
