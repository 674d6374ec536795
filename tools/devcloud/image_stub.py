"""A read-only Glance v2 subset and an empty Neutron, for the devcloud.

Usage: ``python image_stub.py IMAGE_DIR GLANCE_PORT NEUTRON_PORT``
(``-`` as GLANCE_PORT: the network side only, next to a real Glance)

The devcloud runs real Glance by default (``DEVCLOUD_GLANCE=1``) and this
stub only for its network side; with ``DEVCLOUD_GLANCE=0`` the stub also
stands in for Glance (no database, store or upload), and ``glance_images.py``
uploads the same three images into real Glance from ``load_images``. It
serves exactly what Nova's image API client and the libvirt driver read:
``GET /v2/images``, ``/v2/images/{id}``, ``/v2/images/{id}/file`` and the
image schema, for three images built by ``build_image.sh``:

* ``devcloud-kernel`` (aki), ``devcloud-initrd`` (ari) and
* ``devcloud-busybox`` (ami, a 1 MiB raw root disk whose ``kernel_id`` and
  ``ramdisk_id`` point at the two above, so the libvirt driver boots the
  kernel with the busybox initramfs directly; ``hw_qemu_guest_agent=yes``,
  so Nova gives it the QEMU guest agent's channel).

Writes (image upload, snapshots) answer 501. The Neutron side answers every
``GET`` on a collection with an empty list, which is all Nova needs for
servers created with ``networks: none``. Tokens are not checked: it listens
on 127.0.0.1 only and serves nothing secret.
"""

import hashlib
import http.server
import json
import os
import re
import sys
import threading
import uuid

# Fixed ids so that flavors, tempest.conf and the demo can name them.
KERNEL_ID = '5b0c2ea4-2a4b-4e57-9c43-6d3b8a1f0a01'
RAMDISK_ID = '5b0c2ea4-2a4b-4e57-9c43-6d3b8a1f0a02'
DISK_ID = '5b0c2ea4-2a4b-4e57-9c43-6d3b8a1f0a03'
ROOT_DISK_BYTES = 1024 * 1024


def _image(image_id, name, path_or_data, disk_format, container_format,
           properties=None):
    if isinstance(path_or_data, bytes):
        data = path_or_data
    else:
        with open(path_or_data, 'rb') as f:
            data = f.read()
    doc = {
        'id': image_id, 'name': name, 'status': 'active',
        'visibility': 'public', 'protected': False, 'os_hidden': False,
        'disk_format': disk_format, 'container_format': container_format,
        'size': len(data), 'virtual_size': len(data),
        'min_disk': 0, 'min_ram': 0,
        'checksum': hashlib.md5(data, usedforsecurity=False).hexdigest(),
        'os_hash_algo': 'sha512',
        'os_hash_value': hashlib.sha512(data).hexdigest(),
        'owner': None, 'tags': [],
        'created_at': '2026-01-01T00:00:00Z',
        'updated_at': '2026-01-01T00:00:00Z',
        'self': '/v2/images/' + image_id,
        'file': '/v2/images/%s/file' % image_id,
        'schema': '/v2/schemas/image',
    }
    doc.update(properties or {})
    return doc, data


def load_images(image_dir):
    """The three images, as ``{id: (document, bytes)}``."""
    kernel = _image(KERNEL_ID, 'devcloud-kernel',
                    os.path.join(image_dir, 'vmlinuz'), 'aki', 'aki')
    ramdisk = _image(RAMDISK_ID, 'devcloud-initrd',
                     os.path.join(image_dir, 'initrd.gz'), 'ari', 'ari')
    disk = _image(DISK_ID, 'devcloud-busybox', b'\0' * ROOT_DISK_BYTES,
                  'ami', 'ami',
                  {'kernel_id': KERNEL_ID, 'ramdisk_id': RAMDISK_ID,
                   'os_command_line': 'console=ttyS0 rdinit=/init',
                   'hw_disk_bus': 'virtio',
                   # The initramfs runs qemu-ga: Nova adds the
                   # org.qemu.guest_agent.0 channel the agent talks to.
                   'hw_qemu_guest_agent': 'yes'})
    return {i[0]['id']: i for i in (kernel, ramdisk, disk)}


#: Glance's own image attributes; every other key is a custom property.
BASE_ATTRIBUTES = frozenset((
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'container_format', 'disk_format', 'created_at',
    'updated_at', 'tags', 'direct_url', 'locations', 'min_ram', 'min_disk',
    'self', 'file', 'schema'))


def _schema(images):
    """The image schema, with ``is_base: false`` on custom properties.

    Nova (through glanceclient's ``Schema.is_base_property``) passes on
    only the keys the schema marks as not base as image *properties*:
    without the mark, ``kernel_id``, ``ramdisk_id``, ``os_command_line``
    and ``hw_qemu_guest_agent`` were dropped and the guest booted its empty
    disk instead of the kernel.
    """
    keys = set()
    for doc, _ in images.values():
        keys.update(doc)
    return {'name': 'image', 'links': [],
            'additionalProperties': {'type': 'string'},
            'properties': {k: ({} if k in BASE_ATTRIBUTES
                               else {'type': 'string', 'is_base': False})
                           for k in sorted(keys)}}


class Handler(http.server.BaseHTTPRequestHandler):
    """One class for both ports; ``server.kind`` says which API."""

    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):
        sys.stderr.write('%s %s %s\n' % (
            self.log_date_time_string(), self.server.kind, fmt % args))

    def _json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.send_header('x-openstack-request-id', 'req-' + str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split('?')[0].rstrip('/')
        if self.server.kind == 'image':
            return self._glance(path)
        return self._neutron(path)

    def _glance(self, path):
        images = self.server.images
        base = 'http://%s:%d' % self.server.server_address[:2]
        if path in ('', '/versions'):
            return self._json(200, {'versions': [
                {'id': 'v2.16', 'status': 'CURRENT',
                 'links': [{'rel': 'self', 'href': base + '/v2/'}]}]})
        if path == '/v2/schemas/image':
            return self._json(200, _schema(images))
        if path == '/v2/images':
            return self._json(200, {'images': [d for d, _ in images.values()],
                                    'schema': '/v2/schemas/images',
                                    'first': '/v2/images'})
        m = re.match(r'^/v2/images/([^/]+)(/file)?$', path)
        if m and m.group(1) in images:
            doc, data = images[m.group(1)]
            if not m.group(2):
                return self._json(200, doc)
            self.send_response(200)
            self.send_header('Content-Type', 'application/octet-stream')
            self.send_header('Content-Length', str(len(data)))
            self.send_header('Content-MD5', doc['checksum'])
            self.end_headers()
            self.wfile.write(data)
            return None
        return self._json(404, {'message': 'no image at %s' % path})

    def _neutron(self, path):
        if path == '':
            return self._json(200, {'versions': [
                {'id': 'v2.0', 'status': 'CURRENT', 'links': []}]})
        m = re.match(r'^/v2.0/([a-z_-]+)$', path)
        if m:
            return self._json(200, {m.group(1).replace('-', '_'): []})
        return self._json(404, {'NeutronError': {
            'type': 'NotFound', 'message': 'devcloud network stub: %s'
                                           % path, 'detail': ''}})

    def _refuse(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        self._json(501, {'message': 'the devcloud %s stub is read-only'
                                    % self.server.kind})

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse


def main():
    """Serve the image API and the network API until killed."""
    image_dir, glance_port, neutron_port = sys.argv[1:4]
    images = load_images(image_dir)
    servers = []
    for kind, port in (('image', glance_port), ('network', neutron_port)):
        if port == '-':
            continue    # real Glance serves images (DEVCLOUD_GLANCE=1)
        srv = http.server.ThreadingHTTPServer(('127.0.0.1', int(port)),
                                              Handler)
        srv.kind, srv.images = kind, images
        servers.append(srv)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    print('image stub on :%s, network stub on :%s'
          % (glance_port, neutron_port), flush=True)
    threading.Event().wait()


if __name__ == '__main__':
    main()
