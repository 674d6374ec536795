"""A thin Placement REST client on a keystoneauth1 Adapter.

Every request names its microversion explicitly (:data:`MICROVERSION`), never
relies on the service default, and turns failures into typed errors from
:mod:`nova_cacheaware.placement.errors`. No I/O happens until a request is
made, so constructing a client is free and safe in tests.
"""

import logging

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from nova_cacheaware.conf import placement as placement_conf
from nova_cacheaware.placement import errors

LOG = logging.getLogger(__name__)

# 1.39 is the newest microversion of Placement 16 and what Nova 34 itself
# needs. What this project relies on, and since when:
#   1.6 PUT /traits/{name}; 1.7 PUT /resource_classes/{name} (idempotent);
#   1.14 nested providers and ?in_tree=; 1.20 POST /resource_providers
#   returns the provider; 1.23 error ``code`` in bodies; 1.26 inventory
#   ``reserved`` may equal ``total`` (a Dirty domain: MEMBOUND reserved=1
#   of 1); 1.39 ``required=in:`` (used by the scheduler side).
MICROVERSION = '1.39'
SERVICE_TYPE = 'placement'


class PlacementClient(object):
    """Placement requests at :data:`MICROVERSION`, JSON in and out.

    ``adapter`` is a :class:`keystoneauth1.adapter.Adapter` (service type
    ``placement``), or anything with its ``request(url, method, ...)``
    signature that resolves relative URLs against the Placement endpoint.
    """

    def __init__(self, adapter, microversion=MICROVERSION):
        self._adapter = adapter
        self.microversion = microversion

    @classmethod
    def from_conf(cls, conf, group='placement'):
        """Build a client from the keystoneauth options of ``[placement]``.

        ``conf`` must have the group registered
        (:func:`nova_cacheaware.conf.placement.register_opts`). Loading the
        auth plugin reads only configuration; no request is made here.
        """
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            placement_conf.adapter_conf_view(conf, group), group,
            session=session, auth=auth)
        return cls(adapter)

    def request(self, method, url, body=None, expected=(200,)):
        """Send one request; return the decoded JSON body (or None).

        A status outside ``expected`` raises :class:`PlacementAPIError` (or
        a subclass chosen by the error ``code``); a transport failure
        raises :class:`PlacementUnavailable`.
        """
        headers = {'OpenStack-API-Version': 'placement %s'
                                            % self.microversion,
                   'Accept': 'application/json'}
        kwargs = {'headers': headers, 'raise_exc': False}
        if body is not None:
            kwargs['json'] = body
        try:
            resp = self._adapter.request(url, method, **kwargs)
        except ks_exc.ClientException as e:
            # keystoneauth raises these (connect failures, missing endpoint,
            # auth errors) even with raise_exc=False.
            raise errors.PlacementUnavailable(
                method=method, url=url, reason=e) from None
        if resp.status_code not in expected:
            raise errors.from_response(method, url, resp)
        if resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            raise errors.PlacementAPIError(
                method=method, url=url, status=resp.status_code,
                code='', detail='response is not JSON') from None

    def get(self, url, expected=(200,)):
        """GET ``url``; see :meth:`request`."""
        return self.request('GET', url, expected=expected)

    def put(self, url, body=None, expected=(200,)):
        """PUT ``url`` with a JSON ``body``; see :meth:`request`."""
        return self.request('PUT', url, body=body, expected=expected)

    def post(self, url, body, expected=(200,)):
        """POST a JSON ``body`` to ``url``; see :meth:`request`."""
        return self.request('POST', url, body=body, expected=expected)

    def delete(self, url, expected=(204,)):
        """DELETE ``url``; see :meth:`request`."""
        return self.request('DELETE', url, expected=expected)

    # --- Placement resources used by the provider sync -------------------

    def get_provider(self, rp_uuid):
        """The provider ``rp_uuid`` (``ResourceProviderNotFound`` if none)."""
        return self.get('/resource_providers/%s' % rp_uuid)

    def providers_in_tree(self, rp_uuid):
        """Every provider in the tree that contains ``rp_uuid``."""
        return self.get('/resource_providers?in_tree=%s'
                        % rp_uuid)['resource_providers']

    def create_provider(self, name, rp_uuid, parent_uuid):
        """Create a provider and return it (with its generation)."""
        return self.post('/resource_providers',
                         {'name': name, 'uuid': rp_uuid,
                          'parent_provider_uuid': parent_uuid})

    def rename_provider(self, rp_uuid, name, parent_uuid):
        """Give a provider a new name (its parent is kept)."""
        return self.put('/resource_providers/%s' % rp_uuid,
                        {'name': name, 'parent_provider_uuid': parent_uuid})

    def delete_provider(self, rp_uuid):
        """Delete a provider (Placement refuses if it has allocations)."""
        self.delete('/resource_providers/%s' % rp_uuid)

    def get_inventories(self, rp_uuid):
        """``{'resource_provider_generation': g, 'inventories': {...}}``."""
        return self.get('/resource_providers/%s/inventories' % rp_uuid)

    def put_inventories(self, rp_uuid, generation, inventories):
        """Replace the inventories; returns the new inventory document."""
        return self.put('/resource_providers/%s/inventories' % rp_uuid,
                        {'resource_provider_generation': generation,
                         'inventories': inventories})

    def get_traits(self, rp_uuid):
        """``{'resource_provider_generation': g, 'traits': [...]}``."""
        return self.get('/resource_providers/%s/traits' % rp_uuid)

    def put_traits(self, rp_uuid, generation, traits):
        """Replace the traits; returns the new trait document."""
        return self.put('/resource_providers/%s/traits' % rp_uuid,
                        {'resource_provider_generation': generation,
                         'traits': sorted(traits)})

    def get_provider_allocations(self, rp_uuid):
        """``{consumer_uuid: {'resources': {...}}}`` held on ``rp_uuid``."""
        return self.get('/resource_providers/%s/allocations'
                        % rp_uuid)['allocations']

    def existing_traits(self, names):
        """The subset of ``names`` that Placement already knows."""
        if not names:
            return set()
        doc = self.get('/traits?name=in:%s' % ','.join(sorted(names)))
        return set(doc['traits'])

    def existing_resource_classes(self):
        """Names of every resource class Placement knows."""
        doc = self.get('/resource_classes')
        return {rc['name'] for rc in doc['resource_classes']}

    def ensure_trait(self, name):
        """Create the custom trait ``name`` (no-op if it exists)."""
        self.put('/traits/%s' % name, expected=(201, 204))

    def ensure_resource_class(self, name):
        """Create the custom resource class ``name`` (no-op if it exists)."""
        self.put('/resource_classes/%s' % name, expected=(201, 204))
