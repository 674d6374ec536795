"""Subcommands of ``nova-cacheaware``: one module each, found automatically.

A module here defines ``NAME`` (the subcommand), ``HELP`` (one line),
``configure(parser)`` to add its arguments and ``run(args)`` returning the exit
code. Raise :class:`nova_cacheaware.exception.CacheAwareError` for bad input:
the CLI turns it into one line on stderr and exit code 2.
"""
