"""Functional tests on Nova's own functional base (real API, conductor,
scheduler, in-process Placement, libvirt driver on Nova's fake libvirt).

Nova's test tree monkey-patches with eventlet when it is imported
(``nova/tests/__init__.py``); the environment variable below would make it
use native threads instead, which Nova 34 supports. We keep Nova's default
(eventlet) like Nova's own functional jobs, but apply it here explicitly and
first, as Nova's test package does.
"""

from nova import monkey_patch

monkey_patch.patch()
