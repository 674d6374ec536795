"""``nova-cacheaware probe``: options and topology checked before running.

Nothing here starts a kernel (that is the functional test's job): every
case fails before the first process.
"""

from tests.fixtures import machines
from tests.fixtures import sysfs_tree
from tests.unit.cmd import base


class ProbeArgumentsTest(base.CLITestCase):

    def _root(self, name='q6600'):
        return sysfs_tree.cached_tree(name, machines.ALL[name])

    def test_bad_options(self):
        for argv, fragment in [
                (['--factors', '0.5,x'], '--factors must be 1 to 8'),
                (['--factors', '0.5,0.5'], '--factors must be 1 to 8'),
                (['--factors', '100'], '--factors must be between'),
                (['--kernels', 'chase,walk'],
                 '--kernels must be 1 to 8 distinct comma-separated of '
                 'chase/stream'),
                (['--repetitions', '0'], '--repetitions must be between'),
                (['--samples', '1000'], '--samples must be between'),
                (['--sample-seconds', '0'], '--sample-seconds must be'),
                (['--min-cpu-share', '2'], '--min-cpu-share must be'),
                (['--kernel-impl', 'rust'], 'invalid choice'),
                (['--domain', 'L3-9', '--sysfs-root', self._root()],
                 "no cache domain 'L3-9' (domains: L2-0, L2-1)"),
                (['--level', '3', '--sysfs-root', self._root()],
                 'no level-3 cache on this host'),
                (['--sysfs-root', self._root('arm-nocache')],
                 'cache domain pkg-0 has no size in sysfs; give --cache-kib'),
                (['--sysfs-root', self._root(), '--factors', '0.0001'],
                 '--factors must be between')]:
            self.assertOneLineError(['probe'] + argv, fragment)
