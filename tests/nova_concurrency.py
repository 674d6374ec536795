"""Nova's concurrency mode for the tests: one place for every test package.

Nova 32 and later choose eventlet or native threads in
``monkey_patch.patch()``. The functional tests run with native threads
where the release's own test fixtures support them (Nova 34 and later;
Nova 33's notification fixture still asks eventlet for the current green
thread) and with eventlet otherwise. Either way the choice is made before
anything imports oslo.db or eventlet (:mod:`tests.functional` applies it):
thread-local state built before the patching stays on the unpatched
``threading.local``. Nova 31 (2025.1) and older have eventlet only and
patch the whole process when ``nova.monkey_patch`` is imported (``nova.api.
openstack`` imports it) unless ``OS_NOVA_DISABLE_EVENTLET_PATCHING`` is
set: their functional base needs that patching, pure unit tests must not
get it.
"""

import importlib.metadata
import os
import sys

_DISABLE = 'OS_NOVA_DISABLE_EVENTLET_PATCHING'


def _nova_major():
    try:
        return int(importlib.metadata.version('nova').split('.')[0])
    except importlib.metadata.PackageNotFoundError:
        return None


def patches_on_import():
    """True for a Nova that monkey-patches when ``nova.monkey_patch`` loads."""
    major = _nova_major()
    return major is not None and major < 32


def fixtures_support_threads():
    """True for a Nova whose functional fixtures run with native threads."""
    major = _nova_major()
    return major is not None and major >= 34


def keep_unpatched():
    """Stop an old Nova from patching this process on import (unit tests)."""
    if patches_on_import():
        os.environ.setdefault(_DISABLE, 'true')


_applied = False


def apply():
    """Select and apply Nova's concurrency mode for its functional base.

    Call it before anything imports oslo.db or eventlet: thread-local state
    built before the choice stays on the unpatched ``threading.local``.
    """
    global _applied
    if _applied:
        return
    _applied = True
    if patches_on_import():
        # Eventlet is this Nova's only mode; a unit-test module imported
        # earlier in this process may have switched the import-time
        # patching off.
        os.environ.pop(_DISABLE, None)
        from eventlet import patcher
        from nova import monkey_patch
        if not patcher.is_monkey_patched('thread'):
            monkey_patch._monkey_patch()
        return
    native = fixtures_support_threads() and 'eventlet' not in sys.modules
    os.environ.setdefault(_DISABLE, 'true' if native else 'false')
    from nova import monkey_patch
    monkey_patch.patch()
