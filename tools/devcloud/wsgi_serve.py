"""Serve one WSGI application on loopback with the standard library.

Usage: ``python wsgi_serve.py MODULE[:ATTR] PORT [HOST]``

The devcloud runs Keystone, Placement and the Nova API with this instead of
uWSGI or Apache: nothing to compile, one process per service, and the
threaded server is plenty for one developer and a tempest run.
"""

import importlib
import socketserver
import sys
from wsgiref import simple_server


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    """wsgiref's server with one thread per request."""

    daemon_threads = True
    allow_reuse_address = True


class LoggingHandler(simple_server.WSGIRequestHandler):
    """Access log lines on stderr (the service's log file)."""

    def log_message(self, fmt, *args):
        sys.stderr.write('%s %s\n' % (self.address_string(), fmt % args))


def main():
    """Import the application and serve it until killed."""
    target, port = sys.argv[1], int(sys.argv[2])
    host = sys.argv[3] if len(sys.argv) > 3 else '127.0.0.1'
    # Nova's WSGI module parses sys.argv as oslo.config CLI arguments.
    sys.argv = sys.argv[:1]
    module, _, attr = target.partition(':')
    app = getattr(importlib.import_module(module), attr or 'application')
    if callable(app) and attr.startswith('init'):
        app = app()
    server = simple_server.make_server(
        host, port, app, server_class=ThreadingWSGIServer,
        handler_class=LoggingHandler)
    print('serving %s on http://%s:%d' % (target, host, port), flush=True)
    server.serve_forever()


if __name__ == '__main__':
    main()
