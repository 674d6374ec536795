"""The HTTP client of ``nova-cacheaware-api`` (keystoneauth adapter)."""

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exc
from osc_lib import exceptions

from nova_cacheaware.osc import plugin


class Client:
    """``GET`` the API's resources; errors become one-line CommandErrors."""

    def __init__(self, session, endpoint=None, region_name=None,
                 interface=None):
        self.api = adapter.Adapter(
            session, service_type=plugin.SERVICE_TYPE,
            region_name=region_name, interface=interface,
            endpoint_override=endpoint)

    def get(self, path, **params):
        """The JSON document at ``path`` (``params``: the query)."""
        try:
            resp = self.api.get(path, params=params or None,
                                raise_exc=False)
        except ks_exc.EndpointNotFound:
            raise exceptions.CommandError(
                'no %s endpoint in the catalog (register '
                'nova-cacheaware-api, or give --os-cacheaware-url)'
                % plugin.SERVICE_TYPE) from None
        except ks_exc.ConnectionError as e:
            raise exceptions.CommandError(
                'cannot reach nova-cacheaware-api: %s' % e) from None
        if resp.status_code >= 400:
            raise exceptions.CommandError('%s (HTTP %d)' % (
                _message(resp), resp.status_code))
        return resp.json()

    def hosts(self):
        """Every host of the live state."""
        return self.get('/v1/hosts')['hosts']

    def host(self, host):
        """The host view document of ``host``."""
        return self.get('/v1/hosts/%s' % host)

    def server(self, uuid, host=None):
        """The server's entry (with ``host``)."""
        params = {'host': host} if host else {}
        return self.get('/v1/servers/%s' % uuid, **params)


def _message(resp):
    try:
        return resp.json()['error']['message']
    except (ValueError, KeyError, TypeError):
        return resp.text.strip() or resp.reason
