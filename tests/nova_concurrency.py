"""Nova's concurrency mode for the tests: one place for every test package.

Nova 32 and later choose eventlet or native threads in
``monkey_patch.patch()``; the functional tests ask for native threads (the
default from Nova 2026.1 on; eventlet is deprecated) unless something in
the process already imported eventlet. Nova 31 (2025.1) and older have
eventlet only and patch the whole process when ``nova.monkey_patch`` is
imported (``nova.api.openstack`` imports it) unless
``OS_NOVA_DISABLE_EVENTLET_PATCHING`` is set: their functional base needs
that patching, pure unit tests must not get it.
"""

import importlib.metadata
import os
import sys

_DISABLE = 'OS_NOVA_DISABLE_EVENTLET_PATCHING'


def patches_on_import():
    """True for a Nova that monkey-patches when ``nova.monkey_patch`` loads."""
    try:
        major = int(importlib.metadata.version('nova').split('.')[0])
    except importlib.metadata.PackageNotFoundError:
        return False
    return major < 32


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
    if 'eventlet' not in sys.modules:
        os.environ.setdefault(_DISABLE, 'true')
    from nova import monkey_patch
    monkey_patch.patch()
