"""The devcloud's stdlib helpers: plugin resolution and the image stub.

The cloud itself is exercised by tools/devcloud-tempest.sh (opt-in); these
cover the two pieces with logic of their own, with real HTTP on loopback.
"""

import hashlib
import http.client
import http.server
import importlib.util
import io
import json
import os
import select
import subprocess
import sys
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
cloud = _load('cloud')
glance_images = _load('glance_images')
_spec = importlib.util.spec_from_file_location(
    'devcloud_wsgi_serve', os.path.join(TOOLS, '..', 'wsgi_serve.py'))
wsgi_serve = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wsgi_serve)


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
        # Nova adds the QEMU guest agent channel for this image.
        self.assertEqual('yes', doc['hw_qemu_guest_agent'])

    def test_schema_marks_custom_properties(self):
        # Nova keeps only non-base keys as image properties (kernel_id,
        # hw_qemu_guest_agent, ...), as glanceclient's schema says.
        from glanceclient.v2 import schemas
        _, body = self._get('image', '/v2/schemas/image')
        schema = schemas.Schema(json.loads(body))
        self.assertEqual(
            [False, False, False, False, True, True],
            [schema.is_base_property(k) for k in (
                'kernel_id', 'ramdisk_id', 'os_command_line',
                'hw_qemu_guest_agent', 'disk_format', 'min_ram')])

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


class AgentConfTest(testtools.TestCase):
    """The devcloud agent's config, read by the agent's own option parser."""

    def test_agent_reads_it(self):
        from nova_cacheaware.cmd import agent as agent_cmd
        uri = 'qemu+unix:///system?socket=/x/libvirt-sock'
        text = render.agent_conf({
            'debug': False, 'transport': 'rabbit://g:g@127.0.0.1:5672/v',
            'libvirt_uri': uri, 'agent_period': '3', 'cpu_shared_set': '0-1',
            'keystone': 'http://127.0.0.1:15000/v3',
            'service_password': 'pw', 'dc': '/srv/dc'})
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'agent.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = agent_cmd.make_conf(['--config-file', path])
        self.assertEqual(
            (uri, 3.0, '0-1', 'nova', False, uri),
            (conf.agent.libvirt_uri, conf.agent.period_s,
             conf.agent.cpu_shared_set, conf.agent.spec_source,
             conf.agent.counters, conf.topology.libvirt_uri))
        # Loading the auth plugin registers (and reads) its options.
        from keystoneauth1 import loading as ks_loading
        self.assertEqual('Password', type(
            ks_loading.load_auth_from_conf_options(conf, 'nova')).__name__)
        self.assertEqual(('password', 'nova', 'pw', 'public', 'RegionOne'),
                         (conf.nova.auth_type, conf.nova.username,
                          conf.nova.password, conf.nova.interface,
                          conf.nova.region_name))
        # For the agent's Placement and notification reporting.
        self.assertEqual((True, True, 'devcloud-libvirt'),
                         (conf.agent.report_placement,
                          conf.agent.notifications, conf.agent.host))
        # The pin records the libvirt hook reads, inside the devcloud.
        self.assertEqual('/srv/dc/pins/devcloud-libvirt',
                         conf.agent.pin_record_dir)
        # vCPU sizing for the tempest plugin, without the kvm_exit
        # tracepoint (TCG guests, no vCPU thread ids).
        self.assertEqual((['vcpu_sizing', 'balloon'], False),
                         (conf.agent.capabilities,
                          conf.vcpu_sizing.kvm_exit_tracepoint))
        # Ballooning for the tempest plugin: a small pool, short rounds.
        self.assertEqual((96, 3.0, 1), (conf.balloon.pool_mib,
                                        conf.balloon.interval_s,
                                        conf.balloon.sample_s))
        self.assertIn('\n[placement]\nauth_type = password\n', text)
        self.assertIn('[oslo_messaging_notifications]\ndriver = messagingv2',
                      text)

    def test_online_cpus(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'on')
        with open(path, 'w') as f:
            f.write('0-3,8\n')
        self.assertEqual('0-3,8', render.online_cpus(path))


class WsgiServeTest(testtools.TestCase):
    """tools/wsgi_serve.py serves an app over real HTTP on loopback."""

    SCRIPT = os.path.join(TOOLS, '..', 'wsgi_serve.py')

    def _serve(self, *args):
        root = os.path.join(TOOLS, '..', '..')
        env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
        proc = subprocess.Popen(
            [sys.executable, self.SCRIPT] + list(args), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.wait, 10)
        self.addCleanup(proc.terminate)
        line = proc.stdout.readline()
        self.assertTrue(line.startswith('serving %s on http://127.0.0.1:'
                                        % args[-2 if args[-1] == '0'
                                               else -1]), line)
        return proc, line.split()[-1]

    def test_quiet_by_default_free_port(self):
        proc, url = self._serve('wsgiref.simple_server:demo_app')
        with urllib.request.urlopen(url + '/x', timeout=10) as resp:
            self.assertIn(b'Hello world!', resp.read())
        proc.terminate()
        self.assertEqual('', proc.communicate(timeout=10)[1])

    def test_access_log(self):
        proc, url = self._serve('--access-log',
                                'wsgiref.simple_server:demo_app', '0')
        with urllib.request.urlopen(url + '/logged', timeout=10) as resp:
            resp.read()
        # The server logs after it has sent the response: wait for the
        # line instead of racing it with terminate().
        ready, _, _ = select.select([proc.stderr], [], [], 10)
        self.assertTrue(ready, 'no access log line within 10 s')
        self.assertIn('"GET /logged HTTP/1.1" 200', proc.stderr.readline())

    def test_chunked_body_decoded(self):
        # glanceclient uploads image data chunked; wsgiref alone hands the
        # app the raw socket, and an app reading the body waits for ever.
        proc, url = self._serve('tests.unit.tools.echo_app:echo')
        host, port = url.split('//')[1].split(':')
        body = b'x' * 70000 + b'\nlast line'
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request('PUT', '/upload', body=iter([body[:5], body[5:]]),
                     encode_chunked=True)
        resp = conn.getresponse()
        self.assertEqual(
            (200, b'%d %s' % (len(body),
                              hashlib.sha256(body).hexdigest().encode())),
            (resp.status, resp.read()))

    def test_config_files_are_all_the_app_sees_in_argv(self):
        proc, url = self._serve('--config-file', '/etc/a.conf',
                                '--config-file', '/etc/b.conf',
                                'tests.unit.tools.echo_app:init_argv')
        with urllib.request.urlopen(url + '/', timeout=10) as resp:
            self.assertEqual(['--config-file', '/etc/a.conf',
                              '--config-file', '/etc/b.conf'],
                             json.loads(resp.read()))

    def test_chunked_reader_trailers_and_lines(self):
        raw = io.BytesIO(b'4;ext=1\r\nab\nc\r\n3\r\nd\ne\r\n'
                         b'0\r\nTrailer: t\r\n\r\nNEXT')
        reader = wsgi_serve.ChunkedReader(raw)
        self.assertEqual([b'ab\n', b'cd\n', b'e'], list(reader))
        self.assertEqual(b'', reader.read())
        self.assertEqual(b'NEXT', raw.read())

    def test_chunked_reader_refuses_a_bad_size(self):
        reader = wsgi_serve.ChunkedReader(io.BytesIO(b'zz\r\nab\r\n'))
        self.assertRaises(ValueError, reader.read)


class FormatTableTest(testtools.TestCase):

    def test_columns_as_wide_as_their_widest_cell(self):
        self.assertEqual(
            ['NAME    HOST  PIN', 'a-long  h     0->0-1', 'b       -     '],
            cloud.format_table([('NAME', 'HOST', 'PIN'),
                                ('a-long', 'h', '0->0-1'), ('b', '-', '')]))


class OverCapacityTest(testtools.TestCase):
    """The demo's check for domain providers used beyond capacity."""

    class FakeCloud:
        def __init__(self, providers):
            self.providers = providers

        def placement(self, method, path):
            rp, what = path.split('/')[2:4]
            return {what: self.providers[rp][what]}

    def _inv(self, total, reserved=0, ratio=1.0):
        return {'total': total, 'reserved': reserved,
                'allocation_ratio': ratio}

    def test_reports_only_domains_above_capacity(self):
        fake = self.FakeCloud({
            'a': {'inventories': {
                'CUSTOM_CACHE_DOMAIN_MEMBOUND': self._inv(1)},
                'usages': {'CUSTOM_CACHE_DOMAIN_MEMBOUND': 2}},
            'b': {'inventories': {
                'CUSTOM_CACHE_DOMAIN_MEMBOUND': self._inv(1, reserved=1)},
                'usages': {'CUSTOM_CACHE_DOMAIN_MEMBOUND': 0}},
            'c': {'inventories': {
                'CUSTOM_CACHE_DOMAIN_VCPU': self._inv(4, ratio=2.0)},
                'usages': {'CUSTOM_CACHE_DOMAIN_VCPU': 8}},
        })
        names = {'a': 'h:cacheaware:L3-2', 'b': 'h:cacheaware:L3-0',
                 'c': 'h:cacheaware:L3-1', 'root': 'h'}
        self.assertEqual(
            ["h:cacheaware:L3-2: CUSTOM_CACHE_DOMAIN_MEMBOUND used 2 > "
             "capacity 1 (inventory {'total': 1, 'reserved': 0, "
             "'allocation_ratio': 1.0})"],
            cloud.over_capacity(fake, names))

    def test_agent_column(self):
        self.assertEqual('memory keep L3-0', cloud._agent_column(
            {'workload': 'memory', 'action': 'keep', 'domains': ['L3-0']}))
        self.assertEqual('unknown keep -', cloud._agent_column(
            {'workload': 'unknown', 'action': 'keep', 'domains': []}))
        self.assertEqual('-', cloud._agent_column(None))


class RenderModesTest(testtools.TestCase):
    """Every rendered file is 0600: most carry a password."""

    def test_main_writes_owner_only_files_even_over_old_ones(self):
        dc = self.useFixture(fixtures.TempDir()).path
        venv = self.useFixture(fixtures.TempDir()).path
        os.makedirs(os.path.join(venv, 'etc', 'nova'))
        with open(os.path.join(venv, 'etc', 'nova', 'api-paste.ini'),
                  'w') as f:
            f.write('[composite:x]\n')
        os.makedirs(os.path.join(venv, 'etc', 'glance'))
        with open(os.path.join(venv, 'etc', 'glance',
                               'glance-api-paste.ini'), 'w') as f:
            f.write('[composite:glance-api]\n')
        env = {'DIR': dc, 'VENV': venv, 'TOOLS': TOOLS,
               'KEYSTONE_PORT': '1', 'PLACEMENT_PORT': '2',
               'IMAGE_PORT': '3', 'NETWORK_PORT': '4',
               'DB_URL': 'mysql+pymysql://root@127.0.0.1', 'DB_PREFIX': 't_',
               'TRANSPORT_URL': 'rabbit://guest:guest@127.0.0.1:5672/',
               'ADMIN_PASSWORD': 'secret-a', 'SERVICE_PASSWORD': 'secret-s',
               'LIBVIRT_URI': 'qemu:///system', 'AVAILABLE_FILTERS': '',
               'ENABLED_FILTERS': '', 'WEIGHERS': '',
               'CPU_SHARED_SET': '0-1', 'WATCHER': '1',
               'WATCHER_PORT': '5', 'CACHEAWARE_API_PORT': '6',
               'COMPUTES': json.dumps([{'name': 'c1',
                                        'driver': 'libvirt'}])}
        for name, value in env.items():
            self.useFixture(fixtures.EnvironmentVariable('DEVCLOUD_' + name,
                                                         value))
        old = os.path.join(dc, 'clouds.yaml')
        with open(old, 'w') as f:
            f.write('left by an older render\n')
        os.chmod(old, 0o644)
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', io.StringIO()))
        render.main()
        secret_files = ['clouds.yaml', 'openrc', 'etc/nova/nova.conf',
                        'etc/nova/compute-c1.conf',
                        'etc/nova-cacheaware/agent.conf',
                        'etc/nova-cacheaware/api.conf',
                        'etc/placement/placement.conf',
                        'etc/glance/glance-api.conf',
                        'etc/watcher/watcher.conf',
                        'etc/keystone/keystone.conf']
        for name in secret_files:
            path = os.path.join(dc, name)
            self.assertEqual(0o600, os.stat(path).st_mode & 0o777, name)
        with open(old) as f:
            self.assertIn('password: secret-a', f.read())
        with open(os.path.join(dc, 'etc', 'glance', 'glance-api.conf')) as f:
            glance = f.read()
        for line in ('worker_self_reference_url = http://127.0.0.1:3',
                     'connection = mysql+pymysql://root@127.0.0.1/'
                     't_glance?charset=utf8',
                     'filesystem_store_datadir = %s/glance/images' % dc,
                     'username = glance', 'password = secret-s'):
            self.assertIn('\n' + line + '\n', glance)
        with open(os.path.join(dc, 'etc', 'watcher', 'watcher.conf')) as f:
            watcher = f.read()
        for line in ('connection = mysql+pymysql://root@127.0.0.1/'
                     't_watcher?charset=utf8',
                     'port = 5', 'enable_extended_attributes = true',
                     'api_endpoint = http://127.0.0.1:6',
                     'collector_plugins = compute',
                     'username = watcher', 'password = secret-s'):
            self.assertIn('\n' + line + '\n', watcher)
        self.assertEqual(2, watcher.count('username = watcher\n'))
        with open(os.path.join(dc, 'etc', 'nova-cacheaware',
                               'api.conf')) as f:
            api = f.read()
        for line in ('auth_strategy = keystone',
                     'transport_url = rabbit://guest:guest@127.0.0.1:5672/',
                     'www_authenticate_uri = http://127.0.0.1:1/v3',
                     'username = cacheaware', 'password = secret-s'):
            self.assertIn('\n' + line + '\n', api)


class GlanceImagesTest(testtools.TestCase):
    """The stub's image documents as ``POST /v2/images`` bodies."""

    def test_create_body_keeps_ids_formats_and_boot_properties(self):
        image_dir = self.useFixture(fixtures.TempDir()).path
        for name in ('vmlinuz', 'initrd.gz'):
            with open(os.path.join(image_dir, name), 'wb') as f:
                f.write(b'k')
        doc, data = image_stub.load_images(image_dir)[image_stub.DISK_ID]
        self.assertEqual(
            {'id': image_stub.DISK_ID, 'name': 'devcloud-busybox',
             'visibility': 'public', 'protected': False,
             'disk_format': 'ami', 'container_format': 'ami',
             'min_disk': 0, 'min_ram': 0,
             'kernel_id': image_stub.KERNEL_ID,
             'ramdisk_id': image_stub.RAMDISK_ID,
             'os_command_line': 'console=ttyS0 rdinit=/init',
             'hw_disk_bus': 'virtio', 'hw_qemu_guest_agent': 'yes'},
            glance_images.create_body(doc))
        self.assertEqual(image_stub.ROOT_DISK_BYTES, len(data))


class LogLevelsTest(testtools.TestCase):
    """DEVCLOUD_DEBUG_LOGGERS: named loggers at DEBUG, oslo.log's kept."""

    def test_none_keeps_defaults(self):
        self.assertEqual('', render.log_levels(' '))

    def test_named_loggers_appended_to_oslo_defaults(self):
        from oslo_log import _options
        line = render.log_levels('a.b, c')
        self.assertTrue(line.startswith('default_log_levels = '))
        levels = line.split(' = ', 1)[1].strip().split(',')
        self.assertEqual(list(_options.DEFAULT_LOG_LEVELS)
                         + ['a.b=DEBUG', 'c=DEBUG'], levels)


class NumaShapesTest(testtools.TestCase):
    """The full-NUMA tempest tests' host shapes from the topology files."""

    def test_fake_computes(self):
        self.useFixture(fixtures.MonkeyPatch('sys.path',
                                             [TOOLS] + sys.path))
        shapes = _load('numa_shapes')
        self.assertEqual(
            ['8+8', '8+8', '8', None],
            [shapes.shape(t) if t else None for t in map(
                shapes.topology_of, ['devcloud-fake-zen',
                                     'devcloud-fake-zen-plain-02',
                                     'devcloud-fake-ecluster',
                                     'devcloud-no-such-topology'])])


class ZonesTest(testtools.TestCase):
    """Availability zones that keep moves among computes that carry them."""

    COMPUTES = [
        {'name': 'devcloud-libvirt', 'driver': 'libvirt'},
        {'name': 'devcloud-libvirt2', 'driver': 'libvirt'},
        {'name': 'devcloud-fake-zen', 'driver': 'fake'},
        {'name': 'devcloud-fake-ecluster', 'driver': 'fake'},
    ]

    def test_each_libvirt_compute_is_a_zone_the_fakes_share_one(self):
        self.assertEqual({
            'devcloud-libvirt': ['devcloud-libvirt'],
            'devcloud-libvirt2': ['devcloud-libvirt2'],
            'devcloud-fake': ['devcloud-fake-zen', 'devcloud-fake-ecluster'],
        }, cloud.zones_of(self.COMPUTES))

    def test_ensure_zones_creates_what_is_missing_only(self):
        calls = []
        existing = [{'id': 7, 'name': 'devcloud-fake',
                     'availability_zone': 'devcloud-fake',
                     'hosts': ['devcloud-fake-zen']}]

        class Nova(object):
            def nova(self, method, path, body=None, **kwargs):
                calls.append((method, path, body))
                if method == 'GET':
                    return {'aggregates': existing}
                return {'aggregate': {'id': 9, 'hosts': []}}

        with fixtures.MonkeyPatch('sys.stdout', io.StringIO()):
            cloud.ensure_zones(Nova(), {
                'devcloud-fake': ['devcloud-fake-zen',
                                  'devcloud-fake-ecluster'],
                'devcloud-libvirt': ['devcloud-libvirt']})
        self.assertEqual([
            ('GET', '/os-aggregates', None),
            ('POST', '/os-aggregates/7/action',
             {'add_host': {'host': 'devcloud-fake-ecluster'}}),
            ('POST', '/os-aggregates', {'aggregate': {
                'name': 'devcloud-libvirt',
                'availability_zone': 'devcloud-libvirt'}}),
            ('POST', '/os-aggregates/9/action',
             {'add_host': {'host': 'devcloud-libvirt'}}),
        ], calls)

    def test_pin_to_zone_only_active_servers_with_a_zone(self):
        calls = []

        class Nova(object):
            def nova(self, method, path, body=None, **kwargs):
                calls.append((method, path, body, kwargs.get('version')))

        self.assertEqual('devcloud-fake', cloud.pin_to_zone(Nova(), {
            'id': 's1', 'status': 'ACTIVE',
            'OS-EXT-AZ:availability_zone': 'devcloud-fake'}))
        self.assertIsNone(cloud.pin_to_zone(Nova(), {
            'id': 's2', 'status': 'ERROR',
            'OS-EXT-AZ:availability_zone': ''}))
        self.assertEqual([('PUT', '/servers/s1', {'server': {
            'pinned_availability_zone': 'devcloud-fake'}}, '2.104')], calls)
