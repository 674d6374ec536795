"""Subcommands of ``nova-cacheaware``: one module each, found automatically.

A module here defines ``NAME`` (the subcommand), ``HELP`` (one line),
``configure(parser)`` to add its arguments and ``run(args)`` returning the exit
code. Raise :class:`nova_cacheaware.exception.CacheAwareError` for bad input:
the CLI turns it into one line on stderr and exit code 2.
"""

import importlib
import pkgutil


def command_modules(package):
    """The modules of ``package`` that define a command (``NAME``), sorted."""
    for info in sorted(pkgutil.iter_modules(package.__path__),
                       key=lambda i: i.name):
        module = importlib.import_module('%s.%s' % (package.__name__,
                                                    info.name))
        if hasattr(module, 'NAME'):
            yield module


def add_commands(parser, package, dest, metavar, run_key):
    """Add one required sub-parser per command module of ``package``.

    Each module's ``run`` is stored in the parsed arguments as ``run_key``.
    """
    sub = parser.add_subparsers(dest=dest, metavar=metavar,
                                parser_class=type(parser))
    sub.required = True
    for module in command_modules(package):
        child = sub.add_parser(module.NAME, help=module.HELP,
                               description=module.HELP)
        module.configure(child)
        child.set_defaults(**{run_key: module.run})
