"""Real OS threads and a wake-up that crosses threads, eventlet or not.

libvirt's default event loop blocks in C (``poll``) inside
``virEventRunDefaultImpl``. Run as a green thread (``threading`` after
``eventlet.monkey_patch()``, as in Nova's processes and functional tests) it
never yields and the whole eventlet hub stalls. So the loop runs on a real
OS thread (:func:`start_os_thread`) and tells the agent's loop about events
through :class:`Waker`: a pipe, which is safe to write from any OS thread
and which a green thread waits on cooperatively (``select`` is green after
monkey-patching) while a plain thread simply blocks in it.
"""

import collections
import os
import select
import threading


def _eventlet_patched():
    try:
        from eventlet import patcher
    except ImportError:
        return None
    if patcher.is_monkey_patched('thread'):
        return patcher
    return None


def real_threading():
    """The ``threading`` module that starts OS threads (never green ones)."""
    patcher = _eventlet_patched()
    if patcher is None:
        return threading
    return patcher.original('threading')


def start_os_thread(target, name):
    """Start ``target()`` as a daemon OS thread and return the thread."""
    thread = real_threading().Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


class Waker(object):
    """A wake-up signal with a queue of items, usable across OS threads.

    :meth:`post` may be called from any thread (libvirt's event thread):
    it appends to a deque (atomic under the GIL) and writes one byte to a
    non-blocking pipe; it takes no lock and logs nothing, so it cannot
    deadlock on a green lock held by another OS thread's hub.
    :meth:`wait` blocks until something was posted or ``timeout`` passed
    and returns the items posted since the last call.
    """

    def __init__(self):
        self._items = collections.deque()
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._closed = False

    def post(self, item=None):
        """Queue ``item`` (if not None) and wake :meth:`wait`."""
        if item is not None:
            self._items.append(item)
        try:
            os.write(self._w, b'x')
        except (BlockingIOError, OSError):
            # Pipe full: a wake-up is pending anyway. Closed: shutting down.
            pass

    def set(self):
        """Wake :meth:`wait` without an item (``threading.Event`` style)."""
        self.post()

    def wait(self, timeout=None):
        """Wait up to ``timeout`` s; return the items posted meanwhile."""
        if not self._items:
            # select.select is looked up now: after monkey_patch it is
            # eventlet's, which yields to the hub instead of blocking it.
            try:
                select.select([self._r], [], [], timeout)
            except (OSError, ValueError):
                if not self._closed:
                    raise
        self._drain()
        items = []
        while self._items:
            items.append(self._items.popleft())
        return items

    def _drain(self):
        # Read only what select says is there: after monkey_patch os.read
        # is eventlet's, which would wait for more data instead of failing
        # with EAGAIN on the empty non-blocking pipe.
        try:
            while select.select([self._r], [], [], 0)[0]:
                if len(os.read(self._r, 4096)) < 4096:
                    break
        except (OSError, ValueError):
            if not self._closed:
                raise

    def close(self):
        """Close the pipe (later posts are ignored)."""
        if not self._closed:
            self._closed = True
            os.close(self._r)
            os.close(self._w)
