"""The devcloud's stdlib helpers: plugin resolution and the image stub.

The cloud itself is exercised by tools/devcloud-tempest.sh (opt-in); these
cover the two pieces with logic of their own, with real HTTP on loopback.
"""

import http.server
import importlib.util
import json
import os
import threading
import urllib.error
import urllib.request

import fixtures
import testtools

TOOLS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                     'devcloud')


def _load(name):
    spec = importlib.util.spec_from_file_location(
        'devcloud_' + name, os.path.join(TOOLS, name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = _load('render')
image_stub = _load('image_stub')


class ResolvePluginsTest(testtools.TestCase):
    """Importable paths are kept, the rest left out with a reason."""

    def test_importable_class_kept_and_enabled(self):
        out = render.resolve_plugins(['collections.OrderedDict'],
                                     ['OrderedDict'], [])
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'collections.OrderedDict'],
                         out['available_filters'])
        self.assertEqual(render.NOVA_FILTERS + ['OrderedDict'],
                         out['enabled_filters'])
        self.assertEqual([], out['notes'])

    def test_missing_module_left_out_with_note(self):
        out = render.resolve_plugins(['no_such_pkg.filters.all_filters'],
                                     ['CacheDomainFilter'],
                                     ['no_such_pkg.weights.all_weighers'])
        self.assertEqual(['nova.scheduler.filters.all_filters'],
                         out['available_filters'])
        self.assertEqual(render.NOVA_FILTERS, out['enabled_filters'])
        self.assertEqual(['nova.scheduler.weights.all_weighers'],
                         out['weight_classes'])
        self.assertEqual(3, len(out['notes']))
        self.assertIn('no_such_pkg.filters.all_filters left out: '
                      'ModuleNotFoundError', out['notes'][0])
        self.assertIn('CacheDomainFilter left out', out['notes'][1])
        self.assertIn('weigher path no_such_pkg.weights.all_weighers',
                      out['notes'][2])

    def test_function_not_returning_classes_left_out(self):
        # A path to a function is called for its classes, like nova does.
        out = render.resolve_plugins([], [], ['os.getcwd'])
        self.assertEqual(['nova.scheduler.weights.all_weighers'],
                         out['weight_classes'])
        self.assertEqual(['weigher path os.getcwd left out: TypeError: '
                          'it did not return a list of classes'],
                         out['notes'])


class ImageStubTest(testtools.TestCase):
    """The read-only Glance/Neutron subset over real HTTP."""

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        for name, data in (('vmlinuz', b'K' * 100), ('initrd.gz', b'I' * 50)):
            with open(os.path.join(tmp, name), 'wb') as f:
                f.write(data)
        images = image_stub.load_images(tmp)
        self.urls = {}
        for kind in ('image', 'network'):
            srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                  image_stub.Handler)
            srv.kind, srv.images = kind, images
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            self.addCleanup(srv.server_close)
            self.addCleanup(srv.shutdown)
            self.urls[kind] = 'http://127.0.0.1:%d' % srv.server_address[1]

    def _get(self, kind, path, method='GET'):
        req = urllib.request.Request(self.urls[kind] + path, method=method)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()

    def test_lists_three_images(self):
        status, body = self._get('image', '/v2/images')
        names = sorted(i['name'] for i in json.loads(body)['images'])
        self.assertEqual(200, status)
        self.assertEqual(['devcloud-busybox', 'devcloud-initrd',
                          'devcloud-kernel'], names)

    def test_disk_image_names_kernel_and_ramdisk(self):
        _, body = self._get('image', '/v2/images/' + image_stub.DISK_ID)
        doc = json.loads(body)
        self.assertEqual(image_stub.KERNEL_ID, doc['kernel_id'])
        self.assertEqual(image_stub.RAMDISK_ID, doc['ramdisk_id'])
        self.assertEqual(image_stub.ROOT_DISK_BYTES, doc['size'])

    def test_file_download(self):
        status, body = self._get(
            'image', '/v2/images/%s/file' % image_stub.KERNEL_ID)
        self.assertEqual((200, b'K' * 100), (status, body))

    def test_unknown_image_404(self):
        e = self.assertRaises(urllib.error.HTTPError, self._get, 'image',
                              '/v2/images/nope')
        self.assertEqual(404, e.code)

    def test_writes_refused(self):
        e = self.assertRaises(urllib.error.HTTPError, self._get, 'image',
                              '/v2/images', 'POST')
        self.assertEqual(501, e.code)

    def test_network_collections_empty(self):
        status, body = self._get('network', '/v2.0/ports?device_id=x')
        self.assertEqual((200, {'ports': []}), (status, json.loads(body)))
