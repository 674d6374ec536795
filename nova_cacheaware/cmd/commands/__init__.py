"""Subcommands of ``nova-cacheaware``: one module each, found automatically.

A module here defines ``NAME`` (the subcommand), ``HELP`` (one line),
``configure(parser)`` to add its arguments and ``run(args)`` returning the exit
code. Raise :class:`nova_cacheaware.exception.CacheAwareError` for bad input:
the CLI turns it into one line on stderr and exit code 2.

Other distributions add subcommands the same way, as modules named by the
``nova_cacheaware.cli.commands`` entry points (nova-cacheaware-evaluation
adds ``probe`` and ``simulate``).
"""

import importlib
from importlib import metadata
import pkgutil
import sys

PLUGIN_GROUP = 'nova_cacheaware.cli.commands'


def command_modules(package):
    """The modules of ``package`` that define a command (``NAME``), sorted."""
    for info in sorted(pkgutil.iter_modules(package.__path__),
                       key=lambda i: i.name):
        module = importlib.import_module('%s.%s' % (package.__name__,
                                                    info.name))
        if hasattr(module, 'NAME'):
            yield module


def plugin_modules(group=PLUGIN_GROUP):
    """Command modules other distributions register under ``group``.

    One that cannot be imported is left out with one line on stderr: a
    broken plugin must not take the other subcommands with it.
    """
    found = []
    for entry in sorted(metadata.entry_points(group=group),
                        key=lambda e: e.name):
        try:
            module = entry.load()
        except Exception as e:  # whatever the plugin raises on import
            sys.stderr.write('nova-cacheaware: subcommand %r (%s) not '
                             'loaded: %s\n' % (entry.name, entry.value, e))
            continue
        if hasattr(module, 'NAME'):
            found.append(module)
    return found


def add_commands(parser, modules, dest, metavar, run_key):
    """Add one required sub-parser per command module in ``modules``.

    Each module's ``run`` is stored in the parsed arguments as ``run_key``.
    """
    sub = parser.add_subparsers(dest=dest, metavar=metavar,
                                parser_class=type(parser))
    sub.required = True
    for module in sorted(modules, key=lambda m: m.NAME):
        child = sub.add_parser(module.NAME, help=module.HELP,
                               description=module.HELP)
        module.configure(child)
        child.set_defaults(**{run_key: module.run})
