"""``nova-cacheaware-api``: the status API on a small threaded server.

For a production cloud, serve :func:`nova_cacheaware.status.app.
init_application` from the WSGI server the other API services use; this
command is the same app on ``[cacheaware_api] bind_host``/``bind_port``.
"""

import signal
import socketserver
import sys
import threading
from wsgiref import simple_server

from oslo_log import log as logging

from nova_cacheaware.status import app

LOG = logging.getLogger(__name__)


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


def main(argv=None):
    """Serve until SIGTERM/SIGINT."""
    conf = app.make_conf(sys.argv[1:] if argv is None else argv)
    logging.setup(conf, app.PROJECT)
    service = app.Service(conf)
    opts = conf.cacheaware_api
    server = simple_server.make_server(opts.bind_host, opts.bind_port,
                                       service.wrapped(), _Server)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: server.shutdown())
    LOG.info('%s listening on http://%s:%d', app.PROJECT, opts.bind_host,
             server.server_port)
    # serve_forever in a thread: shutdown() from the signal handler (the
    # main thread) would wait for ever on a loop running in that thread.
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        thread.join()
    finally:
        server.server_close()
        service.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
