"""The devcloud's private libvirtd starts on a host where libvirtd never ran.

README command 1 failed on a fresh machine ("mount: /run/libvirt: mount
point does not exist"): ``tools/devcloud/libvirt_ns.sh`` bind-mounted over
libvirt's state directories without creating them, and only a machine on
which the test command (or a libvirtd) had run before had them. This test
re-creates that fresh state for real: in a private mount namespace, empty
tmpfs mounts hide ``/run`` (so no ``/run/libvirt``), ``/var/lib/libvirt``
and ``/var/log/libvirt``; the script must then start a libvirtd that
answers ``virsh``.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

from tests.functional import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'tools', 'devcloud', 'libvirt_ns.sh')

# A host on which libvirtd never ran: what it would have created is hidden.
FRESH = r'''
set -euo pipefail
mount --make-rprivate /
for d in /run /var/lib/libvirt /var/log/libvirt; do
    mount -t tmpfs fresh-host "$d"
done
if [ -e /run/libvirt ] || [ -e /var/lib/libvirt/qemu ]; then
    echo "fresh state not reached" >&2
    exit 3
fi
exec bash "$1" "$2"
'''


class FreshHostLibvirtdTest(base.FunctionalTestCase):
    """``libvirt_ns.sh`` creates the mount points it binds over."""

    def setUp(self):
        super().setUp()
        tools = ('unshare', 'libvirtd', 'virtlogd', 'virsh', 'mount')
        self.require(os.geteuid() == 0
                     and all(shutil.which(t) for t in tools),
                     'root with libvirtd, virtlogd, virsh and unshare')
        self.dir = tempfile.mkdtemp(prefix='ca-fresh-libvirt-')
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.addCleanup(self._stop_daemons)

    def _stop_daemons(self):
        for name in ('libvirtd.pid', 'virtlogd.pid'):
            try:
                with open(os.path.join(self.dir, name)) as f:
                    pid = int(f.read().strip())
            except (OSError, ValueError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)

    def test_starts_where_libvirtd_never_ran(self):
        proc = subprocess.run(
            ['unshare', '-m', '--propagation', 'private', 'bash', '-c',
             FRESH, 'fresh', SCRIPT, self.dir],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(0, proc.returncode,
                         'libvirt_ns.sh failed on a fresh host: %s'
                         % proc.stderr[-2000:])
        uri = 'qemu+unix:///system?socket=%s/sock/libvirt-sock' % self.dir
        deadline = time.monotonic() + 30
        while True:
            check = subprocess.run(['virsh', '-c', uri, 'uri'],
                                   capture_output=True, text=True,
                                   timeout=30)
            if check.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(0, check.returncode, check.stderr)
        self.assertEqual(uri, check.stdout.strip())
