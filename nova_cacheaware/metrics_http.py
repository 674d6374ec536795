"""Serving a Prometheus registry over HTTP, for the agent and the scheduler.

Both use prometheus_client's own HTTP server (a daemon thread per server)
on a private :class:`prometheus_client.CollectorRegistry`, never the
client's global one: only our metrics are exported, and tests build as many
registries as they like. ``listen`` values are ``<address>:<port>``
(``[v6 address]:<port>`` for IPv6), as ``[agent] metrics_listen`` and
``[cacheaware_scheduler] metrics_listen`` take them.
"""

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


class Exporter:
    """One HTTP server exporting ``registry`` on ``address``:``port``.

    Binding happens in the constructor: an ``OSError`` (port taken,
    address not local) reaches the caller, which decides whether that is
    fatal (it never is for scheduling or pinning).
    """

    def __init__(self, address, port, registry):
        self.address = address
        self.port = port
        self._server, self._thread = prometheus_client.start_http_server(
            port, addr=address, registry=registry)

    def url(self):
        """The ``/metrics`` URL of this exporter."""
        host = ('[%s]' % self.address if ':' in self.address
                else self.address)
        return 'http://%s:%d/metrics' % (host, self.port)

    def stop(self):
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
