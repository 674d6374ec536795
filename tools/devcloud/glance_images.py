"""Upload the devcloud's three guest images into the real Glance.

Usage (devcloud venv's Python, ``OS_CLIENT_CONFIG_FILE`` = the devcloud's
``clouds.yaml``)::

    glance_images.py IMAGE_DIR

The same three images the read-only stub serves (``image_stub.py``, which
builds them from ``build_image.sh``'s kernel and initramfs), with the same
fixed ids, names, formats and properties, so that flavors, tempest.conf
and the demo name them the same way with either. Idempotent: an image
that is already ``active`` with the same checksum is left alone, one that
is not (an upload cut short) is deleted and uploaded again. Goes through
Keystone as admin (public images need it), like any client of the cloud.
"""

import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloud as cloudlib  # noqa: E402
import image_stub  # noqa: E402

#: Image attributes Glance sets itself or refuses on create.
_GLANCE_OWNED = frozenset((
    'status', 'size', 'virtual_size', 'checksum', 'os_hash_algo',
    'os_hash_value', 'owner', 'created_at', 'updated_at', 'self', 'file',
    'schema', 'os_hidden', 'tags'))


def create_body(doc):
    """The ``POST /v2/images`` body for one stub image document."""
    return {k: v for k, v in doc.items() if k not in _GLANCE_OWNED}


class Glance(object):
    """Image API v2 calls with the devcloud's admin credentials."""

    def __init__(self, cloud='devcloud'):
        # The same Keystone session as every other devcloud client.
        self.session = cloudlib.Cloud(cloud).session

    def request(self, method, path, ok=(200, 201, 204), **kwargs):
        """One image API request; ``RuntimeError`` on another status."""
        resp = self.session.request(
            path, method, raise_exc=False,
            endpoint_filter={'service_type': 'image', 'interface': 'public'},
            **kwargs)
        if resp.status_code not in ok:
            raise RuntimeError('image %s %s -> %s %s' % (
                method, path, resp.status_code, resp.text[:400]))
        return resp


def ensure_image(glance, doc, data):
    """Make image ``doc['id']`` active in Glance with ``data``; say what."""
    path = '/v2/images/' + doc['id']
    have = glance.request('GET', path, ok=(200, 404))
    if have.status_code == 200:
        found = have.json()
        if (found['status'] == 'active'
                and found.get('os_hash_value') == doc['os_hash_value']):
            return '%s: active' % doc['name']
        glance.request('DELETE', path)
    glance.request('POST', '/v2/images', json=create_body(doc))
    glance.request('PUT', path + '/file', data=data,
                   headers={'Content-Type': 'application/octet-stream'})
    got = glance.request('GET', path).json()
    if (got['status'] != 'active'
            or got.get('os_hash_value') != hashlib.sha512(data).hexdigest()):
        raise RuntimeError('%s: %s after upload, hash %s' % (
            doc['name'], got['status'], got.get('os_hash_value')))
    return '%s: uploaded %d bytes' % (doc['name'], len(data))


def main(argv):
    """Upload what is missing; one line per image; 1 on failure."""
    if len(argv) != 2:
        print('usage: glance_images.py IMAGE_DIR', file=sys.stderr)
        return 2
    images = image_stub.load_images(argv[1])
    glance = Glance()
    t0 = time.monotonic()
    try:
        # Kernel and ramdisk first: the disk image names them.
        for image_id in (image_stub.KERNEL_ID, image_stub.RAMDISK_ID,
                         image_stub.DISK_ID):
            print(ensure_image(glance, *images[image_id]), flush=True)
    except (RuntimeError, OSError) as exc:
        print('glance_images: %s' % exc, file=sys.stderr)
        return 1
    print('glance_images: done in %.1f s' % (time.monotonic() - t0))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
