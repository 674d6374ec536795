"""Pure tests: no services, and no eventlet monkey patching.

Nova 31 and older patch the whole process with eventlet when
``nova.api.openstack`` is imported (the extra-spec validator tests import
it), and threads and sockets of other unit tests then hang; see
:mod:`tests.nova_concurrency`.
"""

import hypothesis

from tests import nova_concurrency

nova_concurrency.keep_unpatched()

# Hypothesis's default 200 ms deadline per example fails healthy property
# tests when the machine is loaded (a shared 2-core CI host); the tests
# assert behaviour, and speed is measured in benchmarks/, not here.
hypothesis.settings.register_profile('nova-cacheaware', deadline=None)
hypothesis.settings.load_profile('nova-cacheaware')
