"""Run ``nova-cacheaware`` in-process and capture what it prints."""

import io
import json

import fixtures
import testtools

from nova_cacheaware.cmd import cli


class CLITestCase(testtools.TestCase):
    """Base class: ``self.cli(args, stdin=...)`` -> (code, stdout, stderr)."""

    def cli(self, argv, stdin=''):
        """Run the CLI with ``argv``; SystemExit codes are returned."""
        out, err = io.StringIO(), io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err))
        self.useFixture(fixtures.MonkeyPatch('sys.stdin',
                                             io.StringIO(stdin)))
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code
        return code, out.getvalue(), err.getvalue()

    def cli_json(self, argv, stdin=''):
        """Run the CLI, expect success, return the parsed JSON output."""
        code, out, err = self.cli(argv, stdin)
        self.assertEqual(0, code, err)
        return json.loads(out)

    def assertOneLineError(self, argv, fragment, stdin=''):
        """Exit code 2, nothing on stdout, one stderr line with fragment."""
        code, out, err = self.cli(argv, stdin)
        self.assertEqual(2, code)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn(fragment, err)
        self.assertNotIn('Traceback', err)
        return err
