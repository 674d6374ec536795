"""Scenario test: a guest image uploaded through the image API boots.

Nova gets the images it boots from Glance. This copies the reporting
guest image (``[cacheaware] guest_image_ref``) through the public image
API: downloads its data, creates a new image with the same formats and
boot properties (``kernel_id``/``ramdisk_id``, the QEMU guest agent),
uploads the data chunked (tempest's client does, as glanceclient does),
boots a server from the copy on ``[cacheaware] agent_host`` and waits for
the guest's own ``cacheaware-guest:`` line on its console. It proves that
the image service stores and serves what a client uploads, and that Nova
downloads it and the guest really runs from it; with the devcloud's former
read-only image stub the upload was refused (501).
"""

import io
import time

from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators

from nova_cacheaware_tempest_plugin.tests.scenario import base
from nova_cacheaware_tempest_plugin.tests.scenario import test_vcpu_sizing

CONF = config.CONF
#: Properties of the guest image that make it boot (AMI with its kernel).
BOOT_PROPERTIES = ('kernel_id', 'ramdisk_id', 'os_command_line',
                   'hw_disk_bus', 'hw_qemu_guest_agent')
WAIT_S = 180


class ImageUploadTest(base.CacheAwareScenarioTest):
    """Upload a copy of the guest image, boot it, see the guest report."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.glance:
            raise cls.skipException('[service_available] glance is False: '
                                    'no image service to upload to')
        opts = CONF.cacheaware
        if not opts.guest_image_ref or not opts.agent_host:
            raise cls.skipException(
                '[cacheaware] guest_image_ref and agent_host are needed: a '
                'guest image that reports on its console, and a host that '
                'runs real guests')
        if not CONF.compute_feature_enabled.console_output:
            raise cls.skipException('[compute-feature-enabled] '
                                    'console_output is False')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.images_client = cls.os_admin.image_client_v2

    def _copy_image(self, source_id):
        source = self.images_client.show_image(source_id)
        data = self.images_client.show_image_file(source_id).data
        props = {k: source[k] for k in BOOT_PROPERTIES if k in source}
        image = self.images_client.create_image(
            name=data_utils.rand_name('cacheaware-upload'),
            disk_format=source['disk_format'],
            container_format=source['container_format'],
            visibility='private', **props)
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.images_client.delete_image, image['id'])
        self.images_client.store_image_file(image['id'], io.BytesIO(data))
        return self.images_client.show_image(image['id']), data

    @decorators.idempotent_id('5d0c3e52-8a1f-4b6e-9d27-3f4a6c8b1e90')
    def test_uploaded_image_boots_and_the_guest_runs(self):
        image, data = self._copy_image(CONF.cacheaware.guest_image_ref)
        self.assertEqual(('active', len(data)),
                         (image['status'], image['size']))
        server = self.boot(self.create_flavor(), image=image['id'],
                           host=CONF.cacheaware.agent_host)
        self.assertEqual(image['id'], server['image']['id'])
        deadline = time.monotonic() + WAIT_S
        reports = []
        while not reports and time.monotonic() < deadline:
            console = self.admin_servers_client.get_console_output(
                server['id'])['output']
            reports = test_vcpu_sizing.guest_reports(console)
            if not reports:
                time.sleep(3)
        self.assertTrue(reports, 'the guest booted from the uploaded image '
                        'printed no cacheaware-guest line within %d s'
                        % WAIT_S)
