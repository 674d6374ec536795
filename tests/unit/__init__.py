"""Pure tests: no services, and no eventlet monkey patching.

Nova 31 and older patch the whole process with eventlet when
``nova.api.openstack`` is imported (the extra-spec validator tests import
it), and threads and sockets of other unit tests then hang; see
:mod:`tests.nova_concurrency`.
"""

from tests import nova_concurrency

nova_concurrency.keep_unpatched()
