"""Subcommands other distributions add through entry points."""

import contextlib
from importlib import metadata
import io
from unittest import mock

import testtools

from nova_cacheaware.cmd import cli
from nova_cacheaware.cmd import commands


def entry(name, value):
    return metadata.EntryPoint(name=name, value=value,
                               group=commands.PLUGIN_GROUP)


class PluginCommandsTest(testtools.TestCase):

    def test_the_evaluation_adds_probe_and_simulate(self):
        # tools/setup.sh installs nova-cacheaware-evaluation beside the
        # product: its two subcommands come through the entry points.
        names = {m.NAME for m in commands.plugin_modules()}
        self.assertEqual({'probe', 'simulate'}, names)
        parser = cli.build_parser()
        self.assertEqual('probe', parser.parse_args(['probe']).command)

    def test_a_broken_plugin_is_left_out_with_one_line(self):
        found = [entry('simulate', 'nova_cacheaware_evaluation.cmd.simulate'),
                 entry('broken', 'no_such_package.anywhere')]
        err = io.StringIO()
        with mock.patch.object(metadata, 'entry_points', autospec=True,
                               return_value=found), \
                contextlib.redirect_stderr(err):
            got = commands.plugin_modules()
        self.assertEqual(['simulate'], [m.NAME for m in got])
        lines = err.getvalue().splitlines()
        self.assertEqual(1, len(lines))
        self.assertIn("subcommand 'broken' (no_such_package.anywhere) not "
                      "loaded", lines[0])

    def test_without_plugins_the_product_commands_remain(self):
        with mock.patch.object(commands, 'plugin_modules', autospec=True,
                               return_value=[]):
            parser = cli.build_parser()
            self.assertEqual('plan', parser.parse_args(
                ['plan', '--input', '-']).command)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertRaises(SystemExit, parser.parse_args, ['probe'])
        self.assertIn("invalid choice: 'probe'", err.getvalue())
