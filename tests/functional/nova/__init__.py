"""Functional tests on Nova's own functional base (real API, conductor,
scheduler, in-process Placement, libvirt driver on Nova's fake libvirt).

Nova's concurrency mode is applied first (:mod:`tests.nova_concurrency`):
native threads unless this process already imported eventlet (or the Nova
release has eventlet only); the tests pass in both.
"""

from tests import nova_concurrency

nova_concurrency.apply()
