"""Serving a Prometheus registry over HTTP, for the agent and the scheduler.

Both serve prometheus_client's WSGI application (a daemon OS thread per
server) for a private :class:`prometheus_client.CollectorRegistry`, never the
client's global one: only our metrics are exported, and tests build as many
registries as they like. ``listen`` values are ``<address>:<port>``
(``[v6 address]:<port>`` for IPv6), as ``[agent] metrics_listen`` and
``[cacheaware_scheduler] metrics_listen`` take them.
"""

import socket
import threading
from wsgiref import simple_server

import prometheus_client

from nova_cacheaware import exception


def parse_listen(value):
    """``(address, port)`` of a ``listen`` value; None when it is empty.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` for anything
    else than ``address:port`` with a port in 1-65535.
    """
    value = (value or '').strip()
    if not value:
        return None
    address, sep, port = value.rpartition(':')
    if address.startswith('[') and address.endswith(']'):
        address = address[1:-1]
    if not sep or not address or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise exception.InvalidInput(
            reason='metrics_listen must be <address>:<port> (for example '
                   '127.0.0.1:9465 or [::]:9465), not %r' % value)
    return address, int(port)


def _os_threading():
    """``threading`` that starts OS threads, eventlet-patched or not.

    (As :func:`nova_cacheaware.agent.threads.real_threading`; the scheduler
    does not import the agent's package.)
    """
    try:
        from eventlet import patcher
    except ImportError:
        return threading
    if patcher.is_monkey_patched('thread'):
        return patcher.original('threading')
    return threading


class _Server(simple_server.WSGIServer):
    """One request at a time, on the serving thread: no thread per scrape.

    (socketserver's threading mix-in would start green threads in an
    eventlet-patched process, which never run while the OS thread serving
    them blocks in ``poll``.)
    """

    allow_reuse_address = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        """No line per scrape: Prometheus scrapes every few seconds."""


class Exporter:
    """One HTTP server exporting ``registry`` on ``address``:``port``.

    Binding happens in the constructor: an ``OSError`` (port taken,
    address not local) reaches the caller, which decides whether that is
    fatal (it never is for scheduling or pinning). The server runs on a
    real OS thread, also in an eventlet-patched process (nova-scheduler
    on releases that still patch, Nova's functional tests): there a green
    thread blocked in the server's ``poll`` would stall every other one.
    """

    def __init__(self, address, port, registry):
        self.address = address
        self.port = port
        self._server = simple_server.make_server(
            address, port, prometheus_client.make_wsgi_app(registry),
            server_class=_Server6 if ':' in address else _Server,
            handler_class=_QuietHandler)
        # handle_request() with a timeout, not serve_forever(): stopping
        # serve_forever() waits on a threading.Event, a green one in an
        # eventlet-patched process, that an OS thread never wakes.
        self._server.timeout = 0.5
        self._stopping = False
        self._thread = _os_threading().Thread(
            target=self._serve, name='metrics-http', daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stopping:
            self._server.handle_request()

    def url(self):
        """The ``/metrics`` URL of this exporter."""
        host = ('[%s]' % self.address if ':' in self.address
                else self.address)
        return 'http://%s:%d/metrics' % (host, self.port)

    def stop(self):
        """Stop serving and release the port."""
        self._stopping = True
        self._thread.join(5)
        self._server.server_close()
