"""Serve a WSGI application on loopback with a threaded stdlib server.

Usage::

    python tools/wsgi_serve.py [--access-log] MODULE[:ATTR] [PORT [HOST]]

serves ``MODULE.ATTR`` (default attribute ``application``; an attribute whose
name starts with ``init`` is called to build the app) on HOST (default
127.0.0.1) and PORT (0 or absent: a free port), and prints ``serving MODULE
on http://HOST:PORT`` as its first line, so a test fixture can read the port
back. Runs until it gets SIGTERM.

Used by the functional tests and the benchmarks to run the real Placement
API (``placement.wsgi.api``, quiet), and by the devcloud for Keystone,
Placement and the Nova API (``--access-log``: one line per request on stderr,
which is the service's log file). Nothing to compile, one process per
service; the threaded server is plenty for one developer and a tempest run.
"""

import argparse
import importlib
import signal
import socketserver
import sys
from wsgiref import simple_server


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    """One thread per request, like a small uWSGI with threads."""

    daemon_threads = True
    # A restarted devcloud service binds its port again at once.
    allow_reuse_address = True
    # The default (5) drops connections when a benchmark or a sync bursts.
    request_queue_size = 128


class QuietHandler(simple_server.WSGIRequestHandler):
    """Log nothing per request: the apps log what matters."""

    def log_message(self, fmt, *args):
        pass


class AccessLogHandler(simple_server.WSGIRequestHandler):
    """One access log line per request on stderr."""

    def log_message(self, fmt, *args):
        sys.stderr.write('%s %s\n' % (self.address_string(), fmt % args))


def parse_args(argv):
    """The command line (``argv`` without the program name)."""
    parser = argparse.ArgumentParser(
        prog='wsgi_serve.py',
        description='Serve a WSGI application with a threaded stdlib '
                    'server.')
    parser.add_argument('--access-log', action='store_true',
                        help='log every request on stderr')
    parser.add_argument('target', metavar='MODULE[:ATTR]')
    parser.add_argument('port', nargs='?', type=int, default=0,
                        help='TCP port (default 0: a free one)')
    parser.add_argument('host', nargs='?', default='127.0.0.1')
    return parser.parse_args(argv)


def load_app(target):
    """The WSGI application named by ``MODULE[:ATTR]``."""
    module, _, attr = target.partition(':')
    app = getattr(importlib.import_module(module), attr or 'application')
    if attr.startswith('init') and callable(app):
        app = app()
    return app


def main(argv):
    """Serve the application named in ``argv[1:]`` until SIGTERM."""
    args = parse_args(argv[1:])
    # Apps like nova's parse sys.argv as oslo.config arguments.
    sys.argv = sys.argv[:1]
    app = load_app(args.target)
    server = simple_server.make_server(
        args.host, args.port, app, server_class=ThreadingWSGIServer,
        handler_class=AccessLogHandler if args.access_log else QuietHandler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print('serving %s on http://%s:%d' % (args.target, args.host,
                                          server.server_port), flush=True)
    server.serve_forever()


if __name__ == '__main__':
    main(sys.argv)
