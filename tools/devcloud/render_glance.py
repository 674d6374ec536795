"""The devcloud's real Glance: configuration text.

Used by ``render.py`` when ``DEVCLOUD_GLANCE=1`` (the default). Glance API
from the package registry, served by ``tools/wsgi_serve.py`` (which decodes
the chunked uploads glanceclient and openstacksdk send) on the image port,
its database on MariaDB next to the others, one file store under
``.devcloud/glance`` (plus the staging and tasks stores Glance reserves
for image import), Keystone authentication with its own ``glance``
service user.
"""


def api_conf(v, authtoken):
    """``glance-api.conf``; ``authtoken`` renders ``[keystone_authtoken]``."""
    return """\
[DEFAULT]
debug = {debug}
# Glance's own URL, which the import workflow hands to its peers; Glance
# refuses to start on a database it has not migrated without it.
worker_self_reference_url = {image}
enabled_backends = fs:file
[database]
connection = {db}/{prefix}glance?charset=utf8
[glance_store]
default_backend = fs
[fs]
filesystem_store_datadir = {dc}/glance/images
[os_glance_staging_store]
filesystem_store_datadir = {dc}/glance/staging
[os_glance_tasks_store]
filesystem_store_datadir = {dc}/glance/tasks
[paste_deploy]
flavor = keystone
config_file = {dc}/etc/glance/glance-api-paste.ini
[oslo_concurrency]
lock_path = {dc}/glance/lock
""".format(**v) + authtoken(v, 'glance')
