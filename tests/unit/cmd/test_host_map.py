"""``nova-cacheaware host-map``: the CLI contract, through ``main()``."""

import json
import os

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from nova_cacheaware.status import host_map
from tests.fixtures import host_views
from tests.unit.cmd import base
from tests.unit.contracts import test_host_view


class HostMapCommandTest(base.CLITestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.doc = host_views.populated(host_views.devcloud('fake-zen'), 12)
        self.input = os.path.join(self.tmp, 'view.json')
        with open(self.input, 'w') as f:
            json.dump(self.doc, f)

    def test_writes_the_picture(self):
        output = os.path.join(self.tmp, 'host.svg')
        code, out, err = self.cli(['host-map', '--input', self.input,
                                   '--output', output])
        self.assertEqual((0, '', ''), (code, out, err))
        with open(output) as f:
            self.assertEqual(host_map.render_svg(self.doc), f.read())

    def test_standard_input_and_output(self):
        code, out, err = self.cli(['host-map', '--input', '-',
                                   '--output', '-'],
                                  stdin=json.dumps(self.doc))
        self.assertEqual((0, ''), (code, err))
        self.assertEqual(host_map.render_svg(self.doc), out)

    def test_bad_document_is_one_line_and_keeps_the_old_picture(self):
        output = os.path.join(self.tmp, 'host.svg')
        with open(output, 'w') as f:
            f.write('old')
        self.doc['domains'][0]['state'] = 'Hot'
        with open(self.input, 'w') as f:
            json.dump(self.doc, f)
        err = self.assertOneLineError(
            ['host-map', '--input', self.input, '--output', output],
            'nova-cacheaware host-map: error: invalid input: host view: '
            'domains[0] \'L3-0\': "state" must be one of Empty, Clean, '
            'Dirty, not \'Hot\'')
        self.assertTrue(err.endswith('\n'))
        with open(output) as f:
            self.assertEqual('old', f.read())

    def test_unreadable_input_and_output(self):
        self.assertOneLineError(
            ['host-map', '--input', os.path.join(self.tmp, 'none.json'),
             '--output', '-'], 'none.json: No such file or directory')
        self.assertOneLineError(
            ['host-map', '--input', '-', '--output', '-'],
            'standard input: not valid JSON', stdin='{')
        self.assertOneLineError(
            ['host-map', '--input', self.input, '--output', self.tmp],
            'invalid input: %s: Is a directory' % self.tmp)

    def test_both_options_are_required(self):
        code, out, err = self.cli(['host-map', '--input', self.input])
        self.assertEqual((2, ''), (code, out))
        self.assertIn('the following arguments are required: --output', err)


class HostMapFuzzTest(base.CLITestCase):
    """Any document: a picture and exit 0, or one line and exit 2."""

    @settings(max_examples=100, deadline=None)
    @given(test_host_view.valid_documents(), st.data())
    def test_damaged_documents(self, doc, data):
        paths = [p for p in test_host_view._paths(doc) if p]
        path = data.draw(st.sampled_from(paths))
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = data.draw(test_host_view.JSON)
        code, out, err = self.cli(['host-map', '--input', '-',
                                   '--output', '-'], stdin=json.dumps(doc))
        if code == 0:
            self.assertEqual('', err)
            self.assertTrue(out.startswith('<svg '))
        else:
            self.assertEqual((2, ''), (code, out))
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertNotIn('Traceback', err)
