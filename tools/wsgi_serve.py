"""Serve a WSGI application on loopback with a threaded stdlib server.

Usage: ``python tools/wsgi_serve.py MODULE [PORT]`` serves
``MODULE.application`` on 127.0.0.1 (PORT 0 or absent: a free port) and
prints ``serving MODULE on http://127.0.0.1:PORT`` as its first line, so a
test fixture can read the port back. Used by the functional tests and the
benchmarks to run the real Placement API (``placement.wsgi.api``); runs until
it gets SIGTERM.
"""

import importlib
import signal
import socketserver
import sys
from wsgiref import simple_server


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    """One thread per request, like a small uWSGI with threads."""

    daemon_threads = True
    # The default (5) drops connections when a benchmark or a sync bursts.
    request_queue_size = 128


class QuietHandler(simple_server.WSGIRequestHandler):
    """Log nothing per request: the apps log what matters."""

    def log_message(self, fmt, *args):
        pass


def main(argv):
    """Serve ``argv[1]``'s application until SIGTERM."""
    module, port = argv[1], int(argv[2]) if len(argv) > 2 else 0
    # Apps like nova's parse sys.argv as oslo.config arguments.
    sys.argv = sys.argv[:1]
    app = importlib.import_module(module).application
    server = simple_server.make_server(
        '127.0.0.1', port, app, server_class=ThreadingWSGIServer,
        handler_class=QuietHandler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print('serving %s on http://127.0.0.1:%d' % (module,
                                                 server.server_port),
          flush=True)
    server.serve_forever()


if __name__ == '__main__':
    main(sys.argv)
