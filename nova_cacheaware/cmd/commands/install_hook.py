"""``nova-cacheaware install-hook``: the live-migration libvirt hook."""

from nova_cacheaware.agent import hook_install
from nova_cacheaware.cmd import common

NAME = 'install-hook'
HELP = ("Install the libvirt qemu hook that keeps live migrations of "
        "agent-pinned guests from failing and restores the agent's pins "
        "when a guest starts while the agent is down (run as root on "
        "compute nodes).")


def configure(parser):
    """Add the install-hook options."""
    parser.add_argument('--hooks-dir', metavar='DIR',
                        default=hook_install.DEFAULT_HOOKS_DIR,
                        help="libvirt's hooks directory (default "
                             "%(default)s)")
    parser.add_argument('--drop-in', action='store_true',
                        help='install as DIR/qemu.d/nova-cacheaware even '
                             'when DIR/qemu is free (another program\'s '
                             'DIR/qemu always gets ours as a drop-in)')
    parser.add_argument('--pin-record-dir', metavar='DIR',
                        default=hook_install.DEFAULT_PIN_RECORD_DIR,
                        help="the agent's [agent] pin_record_dir (default "
                             "%(default)s)")


def run(args):
    """Install the hook and print what was done as JSON."""
    result = hook_install.install(
        args.hooks_dir, drop_in=args.drop_in,
        content=hook_install.hook_source(args.pin_record_dir))
    common.dump_json(result.to_dict())
    return 0
