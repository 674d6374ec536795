"""Serve a WSGI application on loopback with a threaded stdlib server.

Usage::

    python tools/wsgi_serve.py [--access-log] [--config-file FILE]...
        MODULE[:ATTR] [PORT [HOST]]

serves ``MODULE.ATTR`` (default attribute ``application``; an attribute whose
name starts with ``init`` is called to build the app) on HOST (default
127.0.0.1) and PORT (0 or absent: a free port), and prints ``serving MODULE
on http://HOST:PORT`` as its first line, so a test fixture can read the port
back. Runs until it gets SIGTERM. ``--config-file FILE`` (repeatable) is
all the app sees in ``sys.argv`` (``--config-file FILE``), for apps that
parse it with oslo.config and have no variable for their file (Watcher).

Used by the functional tests and the benchmarks to run the real Placement
API (``placement.wsgi.api``, quiet), and by the devcloud for Keystone,
Placement and the Nova API (``--access-log``: one line per request on stderr,
which is the service's log file). Nothing to compile, one process per
service; the threaded server is plenty for one developer and a tempest run.

Request bodies sent with ``Transfer-Encoding: chunked`` (glanceclient and
openstacksdk upload image data that way) are decoded here: ``wsgiref``
passes the raw socket on, and an app that waits for the body then waits
for ever. The app gets the decoded bytes and ``wsgi.input_terminated``.
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


class ChunkedReader:
    """A file over a chunked request body that yields the decoded bytes.

    Reads chunk by chunk from ``raw`` (the connection's buffered reader)
    and returns ``b''`` after the last chunk and its trailers. A malformed
    chunk size raises ``ValueError``, which ends the request.
    """

    def __init__(self, raw):
        self._raw = raw
        self._left = 0      # bytes left in the current chunk
        self._done = False

    def _next_chunk(self):
        if self._left == 0 and not self._done:
            line = self._raw.readline(65537)
            size = int(line.split(b';', 1)[0].strip() or b'x', 16)
            if size < 0:
                raise ValueError('negative chunk size')
            if size == 0:
                # Trailers, if any, end with an empty line.
                while self._raw.readline(65537) not in (b'\r\n', b'\n', b''):
                    pass
                self._done = True
            self._left = size

    def read(self, size=-1):
        """Up to ``size`` decoded bytes (all of them when negative)."""
        out = []
        while size != 0:
            self._next_chunk()
            if self._done:
                break
            n = self._left if size < 0 else min(size, self._left)
            data = self._raw.read(n)
            if not data:
                raise ValueError('chunked body cut short')
            out.append(data)
            self._left -= len(data)
            if size > 0:
                size -= len(data)
            if self._left == 0:
                self._raw.readline(3)   # the CRLF after each chunk
        return b''.join(out)

    def readline(self, size=-1):
        """One line of the decoded body (at most ``size`` bytes)."""
        out = b''
        while size < 0 or len(out) < size:
            c = self.read(1)
            if not c:
                break
            out += c
            if c == b'\n':
                break
        return out

    def __iter__(self):
        line = self.readline()
        while line:
            yield line
            line = self.readline()


class ChunkedAwareHandler(simple_server.WSGIRequestHandler):
    """``wsgiref``'s handler with chunked request bodies decoded."""

    def handle(self):
        """Handle one request, as wsgiref does, with the body decoded."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.requestline = ''
            self.request_version = ''
            self.command = ''
            self.send_error(414)
            return
        if not self.parse_request():
            return
        environ = self.get_environ()
        if (self.headers.get('Expect', '').lower() == '100-continue'
                and self.request_version != 'HTTP/1.0'):
            # curl waits a second for this before it sends a large body.
            self.wfile.write(b'HTTP/1.1 100 Continue\r\n\r\n')
            self.wfile.flush()
        stdin = self.rfile
        if 'chunked' in self.headers.get('Transfer-Encoding', '').lower():
            stdin = ChunkedReader(self.rfile)
            environ['wsgi.input_terminated'] = True
        handler = simple_server.ServerHandler(
            stdin, self.wfile, self.get_stderr(), environ,
            multithread=False)
        handler.request_handler = self
        handler.run(self.server.get_app())


class QuietHandler(ChunkedAwareHandler):
    """Log nothing per request: the apps log what matters."""

    def log_message(self, fmt, *args):
        pass


class AccessLogHandler(ChunkedAwareHandler):
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
    parser.add_argument('--config-file', action='append', default=[],
                        metavar='FILE',
                        help='passed on to the app in sys.argv, for apps '
                             'that parse it with oslo.config (Watcher\'s)')
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
    # Apps like nova's parse sys.argv as oslo.config arguments: they get
    # only the config files named here.
    sys.argv = sys.argv[:1] + [a for f in args.config_file
                               for a in ('--config-file', f)]
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
