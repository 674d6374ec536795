"""``nova-cacheaware pcpu-est``: the CLI contract, through ``main()``."""

import io
import json
import os
import tempfile

import fixtures
import testtools

from nova_cacheaware.cmd import cli
from tests.unit.pcpu_est import test_estimate as test_pcpu_est

STUDY = {'vms': {
    'vm1': {'vcpus': {'0': [0, 1, 2, 3], '1': [0, 1, 2, 3]}},
    'vm2': {'vcpus': {'0': [0, 1, 2, 3], '1': [0, 1, 2, 3],
                      '2': [0, 1, 2, 3]}}}}


class PcpuEstCommandTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def _file(self, text):
        fd, path = tempfile.mkstemp(dir=self.tmp, suffix='.json')
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        return path

    def test_study_example_from_file(self):
        rc = cli.main(['pcpu-est', '--input', self._file(json.dumps(STUDY))])
        self.assertEqual(0, rc)
        self.assertEqual('', self.stderr.getvalue())
        self.assertEqual(
            {'vms': {
                'vm1': {'available_pcpus': 1.6, 'recommended_vcpus': 2,
                        'vcpus': {'0': 0.8, '1': 0.8}},
                'vm2': {'available_pcpus': 2.4, 'recommended_vcpus': 3,
                        'vcpus': {'0': 0.8, '1': 0.8, '2': 0.8}}}},
            json.loads(self.stdout.getvalue()))

    def test_stdin_with_pcpus_and_caps(self):
        doc = {'pcpus': [0, 1],
               'vms': {'a': {'vcpus': {'0': [0, 1, 2], '1': [0, 1, 2]},
                             'caps': {'1': 0.25}}}}
        self.useFixture(fixtures.MonkeyPatch(
            'sys.stdin', io.StringIO(json.dumps(doc))))
        self.assertEqual(0, cli.main(['pcpu-est', '--input', '-']))
        out = json.loads(self.stdout.getvalue())
        self.assertEqual({'available_pcpus': 1.25, 'recommended_vcpus': 2,
                          'vcpus': {'0': 1.0, '1': 0.25}}, out['vms']['a'])

    def test_empty_vms(self):
        self.assertEqual(0, cli.main(['pcpu-est', '--input',
                                      self._file('{"vms": {}}')]))
        self.assertEqual({'vms': {}}, json.loads(self.stdout.getvalue()))

    def _assert_refused(self, argv):
        rc = cli.main(argv)
        self.assertEqual(2, rc)
        self.assertEqual('', self.stdout.getvalue())
        err = self.stderr.getvalue()
        self.assertEqual(1, err.count('\n'), err)
        self.assertTrue(err.startswith('nova-cacheaware pcpu-est: error: '),
                        err)

    def test_bad_documents_exit_2_with_one_line(self):
        for name, doc in test_pcpu_est.BAD_REQUESTS.items():
            self.stdout.seek(0)
            self.stdout.truncate()
            self.stderr.seek(0)
            self.stderr.truncate()
            self._assert_refused(['pcpu-est', '--input',
                                  self._file(json.dumps(doc))])

    def test_not_json(self):
        self._assert_refused(['pcpu-est', '--input', self._file('{"vms": ')])

    def test_nan_refused(self):
        self._assert_refused(['pcpu-est', '--input', self._file(
            '{"vms": {"a": {"vcpus": {"0": [0]}, "caps": {"0": NaN}}}}')])

    def test_missing_file(self):
        self._assert_refused(['pcpu-est', '--input',
                              os.path.join(self.tmp, 'absent.json')])

    def test_missing_option_is_a_usage_error(self):
        err = self.assertRaises(SystemExit, cli.main, ['pcpu-est'])
        self.assertEqual(2, err.code)
        self.assertEqual('', self.stdout.getvalue())
