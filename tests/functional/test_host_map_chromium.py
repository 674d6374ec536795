"""The host map as a browser shows it: headless Chromium's screenshot.

Renders host-view documents to SVG, has Debian's ``chromium`` (installed
by ``tools/setup.sh``, bindep's ``test`` profile) screenshot each one,
and reads the PNG back (:mod:`tests.fixtures.png`): the picture must not
be blank, and each domain state's colour, the spin-storm red and the
servers' colours must be on it. Skipped on a developer box without
Chromium; under CI (``NOVA_CACHEAWARE_CI_SERVICES=1``) its absence fails.
"""

import collections
import os
import shutil
import subprocess

import fixtures

from nova_cacheaware.contracts import host_view
from nova_cacheaware.status import host_map
from tests.fixtures import host_views
from tests.fixtures import png
from tests.functional import base

SCREENSHOT_TIMEOUT_S = 180


def chromium():
    """The Chromium executable, or None when it is not installed."""
    return shutil.which('chromium') or shutil.which('chromium-browser')


def rgb(colour):
    """``'#66bb6a'`` as ``(102, 187, 106)``."""
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def _size(svg):
    root_tag = svg.split('>', 1)[0]
    width = int(root_tag.split(' width="', 1)[1].split('"', 1)[0])
    height = int(root_tag.split(' height="', 1)[1].split('"', 1)[0])
    return width, height


class HostMapScreenshotTest(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.require(chromium(), 'chromium (Debian package "chromium")')
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def screenshot(self, doc, name):
        """The pixels of Chromium's screenshot of ``doc``'s SVG."""
        svg = host_map.render_svg(doc)
        width, height = _size(svg)
        path = os.path.join(self.tmp, '%s.svg' % name)
        with open(path, 'w') as f:
            f.write(svg)
        shot = os.path.join(self.tmp, '%s.png' % name)
        # A profile of its own: the test must not touch the user's, nor
        # need a writable home; --no-sandbox as root in CI containers.
        proc = subprocess.run(
            [chromium(), '--headless', '--disable-gpu', '--no-sandbox',
             '--hide-scrollbars', '--no-first-run',
             '--user-data-dir=%s' % os.path.join(self.tmp, 'profile'),
             '--screenshot=%s' % shot,
             '--window-size=%d,%d' % (width, height), 'file://' + path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=SCREENSHOT_TIMEOUT_S, env=dict(os.environ,
                                                   HOME=self.tmp),
            check=False)
        self.assertTrue(os.path.exists(shot), proc.stdout[-2000:])
        shot_width, shot_height, rows = png.read(shot)
        self.assertEqual((width, height), (shot_width, shot_height))
        return collections.Counter(p for row in rows for p in row)

    def assert_picture(self, pixels, doc):
        total = sum(pixels.values())
        white = pixels[(255, 255, 255)]
        # Not blank: a fifth of the page at least is drawn, in many colours.
        self.assertGreater(total - white, total // 5)
        self.assertGreater(len(pixels), 50)
        states = {d['state'] for d in doc['domains']}
        for state in host_view.STATES:
            count = pixels[rgb(host_map.STATE_COLOURS[state])]
            if state in states:
                # A header band at least (the narrowest panel's).
                self.assertGreater(count, 2000, state)
        self.assertGreater(pixels[rgb(host_map.STORM)], 200)
        for server in doc['servers'][:5]:
            self.assertGreater(pixels[rgb(host_map.server_colour(
                server['uuid']))], 50, server['uuid'])

    def test_epyc_128_cpus_16_domains_200_servers(self):
        doc = host_views.populated(host_views.epyc_16x_l3(), 200)
        self.assert_picture(self.screenshot(doc, 'epyc'), doc)

    def test_devcloud_fake_zen(self):
        doc = host_views.populated(host_views.devcloud('fake-zen'), 12)
        self.assertEqual({'Empty', 'Clean', 'Dirty'},
                         {d['state'] for d in doc['domains']})
        self.assert_picture(self.screenshot(doc, 'zen'), doc)
