"""Functional tests on Nova's own functional base (real API, conductor,
scheduler, in-process Placement, libvirt driver on Nova's fake libvirt).

Importing ``nova.tests`` applies Nova's concurrency mode. We ask for Nova's
native-threading mode (the default from Nova 2026.1 on; eventlet is
deprecated) unless something in this test process has already imported
eventlet, in which case Nova's eventlet mode is used; the tests pass in both.
"""

import os
import sys

if 'eventlet' not in sys.modules:
    os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', 'true')

from nova import monkey_patch  # noqa: E402

monkey_patch.patch()
