"""``nova-cacheaware install-hook`` on a temporary hooks directory."""

import os
import stat
import subprocess

import fixtures
import testtools

from nova_cacheaware.agent import hook_install
from tests.unit.cmd import base

FOREIGN = b'#!/bin/sh\n# some other program\'s hook\nexit 0\n'


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


class InstallHookTest(base.CLITestCase):

    def setUp(self):
        super().setUp()
        self.etc = self.useFixture(fixtures.TempDir()).path
        self.hooks = os.path.join(self.etc, 'hooks')
        self.main = os.path.join(self.hooks, 'qemu')
        self.drop_in = os.path.join(self.hooks, 'qemu.d', 'nova-cacheaware')

    def install(self, *extra):
        return self.cli_json(['install-hook', '--hooks-dir', self.hooks]
                             + list(extra))

    def write(self, path, content, perm=0o755):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(content)
        os.chmod(path, perm)

    def read(self, path):
        with open(path, 'rb') as f:
            return f.read()

    def test_fresh_host_gets_the_main_hook_executable(self):
        self.assertEqual({'path': self.main, 'action': 'installed',
                          'chained_after': None, 'restart_libvirtd': True},
                         self.install())
        self.assertEqual(hook_install.hook_source(), self.read(self.main))
        self.assertEqual(0o755, mode(self.main))
        self.assertFalse(os.path.exists(os.path.dirname(self.drop_in)))
        # Only the hook itself is left in the directory (no temp files).
        self.assertEqual(['qemu'], os.listdir(self.hooks))

    def test_second_run_changes_nothing(self):
        self.install()
        before = os.stat(self.main)
        self.assertEqual({'path': self.main, 'action': 'unchanged',
                          'chained_after': None, 'restart_libvirtd': False},
                         self.install())
        self.assertEqual(before.st_ino, os.stat(self.main).st_ino)

    def test_older_version_of_ours_is_updated_without_restart(self):
        self.write(self.main, b'#!/usr/bin/env python3\n'
                   + hook_install.MARKER + b' old\n', perm=0o644)
        self.assertEqual({'path': self.main, 'action': 'updated',
                          'chained_after': None, 'restart_libvirtd': False},
                         self.install())
        self.assertEqual(hook_install.hook_source(), self.read(self.main))
        self.assertEqual(0o755, mode(self.main))

    def test_ours_without_exec_bit_is_fixed(self):
        self.write(self.main, hook_install.hook_source(), perm=0o644)
        self.assertEqual('updated', self.install()['action'])
        self.assertEqual(0o755, mode(self.main))

    def test_foreign_main_hook_is_kept_and_ours_chained_after_it(self):
        self.write(self.main, FOREIGN, perm=0o700)
        self.assertEqual({'path': self.drop_in, 'action': 'installed',
                          'chained_after': self.main,
                          'restart_libvirtd': True}, self.install())
        self.assertEqual((FOREIGN, 0o700),
                         (self.read(self.main), mode(self.main)))
        self.assertEqual(hook_install.hook_source(),
                         self.read(self.drop_in))
        self.assertEqual(0o755, mode(self.drop_in))
        self.assertEqual('unchanged', self.install()['action'])

    def test_directory_in_place_of_the_main_hook_is_not_replaced(self):
        os.makedirs(self.main)
        self.assertEqual(self.drop_in, self.install()['path'])
        self.assertTrue(os.path.isdir(self.main))

    def test_drop_in_on_request(self):
        self.assertEqual({'path': self.drop_in, 'action': 'installed',
                          'chained_after': None, 'restart_libvirtd': True},
                         self.install('--drop-in'))
        self.assertFalse(os.path.exists(self.main))

    def test_earlier_drop_in_of_ours_is_updated_where_it_is(self):
        self.write(self.drop_in, b'#!/bin/sh\n' + hook_install.MARKER + b'\n')
        self.assertEqual({'path': self.drop_in, 'action': 'updated',
                          'chained_after': None, 'restart_libvirtd': False},
                         self.install())
        self.assertFalse(os.path.exists(self.main))

    def test_foreign_file_at_the_drop_in_path_is_refused(self):
        self.write(self.drop_in, FOREIGN)
        err = self.assertOneLineError(
            ['install-hook', '--hooks-dir', self.hooks, '--drop-in'],
            'exists and is not nova-cacheaware\'s hook')
        self.assertIn(self.drop_in, err)
        self.assertEqual(FOREIGN, self.read(self.drop_in))

    def test_missing_libvirt_config_dir_is_one_line(self):
        missing = os.path.join(self.etc, 'no-libvirt', 'hooks')
        self.assertOneLineError(
            ['install-hook', '--hooks-dir', missing],
            'no-libvirt does not exist: is libvirt installed on this host?')

    def test_unwritable_place_is_one_line(self):
        # A file where the qemu.d directory must go: an OSError even as
        # root.
        self.write(self.main, FOREIGN)
        self.write(os.path.join(self.hooks, 'qemu.d'), b'', perm=0o644)
        self.assertOneLineError(['install-hook', '--hooks-dir', self.hooks],
                                'cannot install the libvirt hook: ')

    def test_installed_file_runs_as_libvirt_runs_it(self):
        self.install()
        # Through its shebang, outside the package: it must be standalone.
        proc = subprocess.run([self.main, 'instance-1', 'migrate', 'begin',
                               '-'], input='<domain/>', capture_output=True,
                              text=True, env={'PATH': os.defpath},
                              cwd=self.etc)
        self.assertEqual((0, '', ''),
                         (proc.returncode, proc.stdout, proc.stderr))


class ChooseTargetTest(testtools.TestCase):
    """The pure choice, over every state of the main hook."""

    def test_table(self):
        main, drop_in = '/h/qemu', '/h/qemu.d/nova-cacheaware'
        ours = hook_install.hook_source()
        for content, want_drop_in, in_drop_in, expected in [
                (None, False, None, (main, None)),
                (ours, False, None, (main, None)),
                (FOREIGN, False, None, (drop_in, main)),
                (None, True, None, (drop_in, None)),
                (ours, True, None, (drop_in, None)),
                (FOREIGN, True, None, (drop_in, main)),
                # An earlier copy of ours in qemu.d stays the only one.
                (None, False, ours, (drop_in, None)),
                (ours, False, ours, (main, None)),
                (None, False, FOREIGN, (main, None))]:
            self.assertEqual(expected, hook_install.choose_target(
                '/h', content, want_drop_in, in_drop_in),
                (content and content[:20], want_drop_in,
                 in_drop_in and in_drop_in[:20]))

    def test_marker_is_in_the_shipped_hook(self):
        self.assertTrue(hook_install.is_ours(hook_install.hook_source()))
        self.assertFalse(hook_install.is_ours(FOREIGN))
