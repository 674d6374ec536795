"""``nova-cacheaware-agent``: the per-compute-node daemon (skeleton)."""

import argparse
import sys

from nova_cacheaware import version


def main(argv=None):
    """Print the version; the observe/decide/act loop arrives later."""
    parser = argparse.ArgumentParser(prog='nova-cacheaware-agent')
    parser.add_argument('--version', action='version',
                        version=version.version_string())
    parser.parse_args(argv)
    print('nova-cacheaware-agent %s' % version.version_string())
    return 0


if __name__ == '__main__':
    sys.exit(main())
