"""``nova-cacheaware flavor check``: audit every flavor of a cloud.

Lists every flavor (public and private) through Nova's API, reads its
extra specs and prints, one line each, what
:func:`nova_cacheaware.api.flavor_specs.audit` finds wrong: keys Nova's
one-key validators let through although they contradict each other or the
flavor, and Placement keys that differ from what ``flavor set`` writes.
Exit 0: every flavor is clean; 1: something is wrong; 2: usage error or
the cloud could not be read.
"""

from nova_cacheaware.api import flavor_specs

EXIT_PROBLEMS = 1


def configure(actions, cloud_args):
    """Add the ``check`` action to the ``flavor`` subparsers."""
    parser = actions.add_parser(
        'check', help='audit the cache-aware specs of every flavor',
        description='Print what is wrong with the cacheaware: extra specs '
                    'of every flavor of the cloud (exit 1 when something '
                    'is, 0 when every flavor is clean).')
    cloud_args(parser)
    return parser


def flavor_lines(flavor, extra_specs):
    """The report lines for one flavor (none when it is clean)."""
    return ['flavor %s (%s): %s' % (flavor.name, flavor.id, problem)
            for problem in flavor_specs.audit(extra_specs, flavor.vcpus,
                                              flavor.ram)]


def run(args, list_flavors):
    """Print the audit; return 0 (clean) or 1 (something is wrong).

    ``list_flavors(args)`` yields ``(novaclient flavor, extra specs)``
    pairs (injected by the ``flavor`` command, which owns the cloud
    connection).
    """
    checked, wrong, lines = 0, 0, []
    for flavor, extra_specs in list_flavors(args):
        found = flavor_lines(flavor, extra_specs)
        checked += 1
        wrong += bool(found)
        lines.extend(found)
    for line in lines:
        print(line)
    print('%d flavor(s) checked, %d with problems' % (checked, wrong))
    return EXIT_PROBLEMS if wrong else 0
