"""Flavor extra specs per instance: where declared workloads come from.

:class:`SpecSource` is the narrow interface; :class:`NovaSpecSource` asks the
Nova API (keystoneauth, microversion 2.47+, where a server embeds its
flavor with ``extra_specs``) and caches the answer per instance uuid until
:meth:`forget` is called (the agent forgets an instance when it stops, so a
resize is seen after the restart). :class:`NullSpecSource` (no Nova API
configured) gives no specs: every instance is ``auto`` and floating unless
its domain XML shows Nova's dedicated pinning.
"""

import abc
import json
import logging
import os
import threading

from nova_cacheaware import exception

LOG = logging.getLogger(__name__)

#: 2.47 embeds the flavor (with extra_specs) in the server body.
MICROVERSION = '2.47'


class SpecLookupFailed(exception.CacheAwareError):
    """The Nova API did not give the specs of an instance."""

    msg_fmt = 'cannot read flavor extra specs of %(uuid)s: %(reason)s'


class SpecSource(abc.ABC):
    """``extra_specs(uuid) -> dict`` of the instance's flavor."""

    @abc.abstractmethod
    def extra_specs(self, uuid):
        """The flavor extra specs of instance ``uuid`` (a dict)."""

    def forget(self, uuid):
        """Drop anything cached about ``uuid`` (default: nothing cached)."""


class NullSpecSource(SpecSource):
    """No Nova API: no declared specs."""

    def extra_specs(self, uuid):
        """Always ``{}``."""
        return {}


class StaticSpecSource(SpecSource):
    """Specs from a mapping ``{uuid: {key: value}}`` (replays, tests).

    The mapping is read at each lookup, so its owner may add instances.
    """

    def __init__(self, specs):
        self.specs = specs

    def extra_specs(self, uuid):
        """The dict given for ``uuid``, or ``{}``."""
        return dict(self.specs.get(uuid, {}))


class FileSpecSource(SpecSource):
    """Specs from a JSON file ``{uuid: {key: value}}``, re-read on change.

    For hosts without a reachable Nova API, and for replays.
    """

    def __init__(self, path):
        self.path = path
        self._mtime = None
        self._specs = {}

    def extra_specs(self, uuid):
        """The specs the file gives for ``uuid`` (``{}`` if none)."""
        try:
            mtime = os.stat(self.path).st_mtime_ns
            if mtime != self._mtime:
                with open(self.path) as f:
                    doc = json.load(f)
                if not isinstance(doc, dict):
                    raise ValueError('expected {uuid: {key: value}}')
                self._specs, self._mtime = doc, mtime
        except (OSError, ValueError) as e:
            raise SpecLookupFailed(uuid=uuid, reason='%s: %s'
                                   % (self.path, e)) from None
        return dict(self._specs.get(uuid) or {})


def specs_from_server(server):
    """Extract flavor extra specs from a server body (dict) at >= 2.47.

    Raises :class:`SpecLookupFailed` when the body has no embedded flavor
    (an older microversion).
    """
    flavor = server.get('flavor') if isinstance(server, dict) else None
    if not isinstance(flavor, dict) or 'original_name' not in flavor:
        raise SpecLookupFailed(
            uuid=(server or {}).get('id', '?'),
            reason='the server has no embedded flavor; the Nova API must '
                   'support microversion %s' % MICROVERSION)
    specs = flavor.get('extra_specs') or {}
    if not isinstance(specs, dict):
        raise SpecLookupFailed(uuid=server.get('id', '?'),
                               reason='extra_specs is not a mapping')
    return {str(k): str(v) for k, v in specs.items()}


class NovaSpecSource(SpecSource):
    """Ask Nova's API for each instance once; cache per instance uuid.

    ``client_factory()`` returns an object whose ``get(uuid)`` returns the
    server body (a dict) at microversion 2.47; it is called on first use
    (no I/O in the constructor). See :func:`client_from_conf`.
    """

    def __init__(self, client_factory):
        self._factory = client_factory
        self._client = None
        self._cache = {}
        self._lock = threading.Lock()

    def extra_specs(self, uuid):
        """Cached specs of ``uuid``; raises :class:`SpecLookupFailed`."""
        with self._lock:
            if uuid in self._cache:
                return dict(self._cache[uuid])
        try:
            if self._client is None:
                self._client = self._factory()
            body = self._client.get(uuid)
        except SpecLookupFailed:
            raise
        except Exception as e:  # keystoneauth / HTTP / network errors
            raise SpecLookupFailed(uuid=uuid, reason=str(e)) from None
        specs = specs_from_server(body)
        with self._lock:
            self._cache[uuid] = specs
        return dict(specs)

    def forget(self, uuid):
        """Drop the cached specs of ``uuid``."""
        with self._lock:
            self._cache.pop(uuid, None)


class NovaServers:
    """``GET /servers/<uuid>`` at microversion 2.47, nothing else.

    A keystoneauth ``Adapter`` for the compute service: the agent needs one
    call of Nova's API, and python-novaclient would add about 9 MiB to the
    agent's resident memory for it.
    """

    def __init__(self, adapter):
        self.adapter = adapter

    def get(self, uuid):
        """The server body of ``uuid``; keystoneauth raises on HTTP errors."""
        response = self.adapter.get('/servers/%s' % uuid,
                                    microversion=MICROVERSION)
        body = response.json()
        if not isinstance(body, dict) or not isinstance(
                body.get('server'), dict):
            raise SpecLookupFailed(uuid=uuid,
                                   reason='the answer has no "server" object')
        return body['server']


def client_from_conf(conf, group='nova'):
    """A factory for a :class:`NovaServers` from keystoneauth options."""
    def factory():
        from keystoneauth1 import adapter
        from keystoneauth1 import loading as ks_loading
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(conf, group,
                                                            auth=auth)
        opts = conf[group]
        return NovaServers(adapter.Adapter(
            session, service_type='compute', interface=opts.interface,
            region_name=opts.region_name,
            default_microversion=MICROVERSION))
    return factory
