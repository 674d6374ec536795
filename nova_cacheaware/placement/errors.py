"""Typed Placement errors, chosen from the HTTP status and error ``code``.

Placement (microversion >= 1.23) puts a stable ``code`` in every error body
(``placement.concurrent_update``, ``placement.duplicate_name``, ...); the
class of the exception follows that code so callers never parse messages.
"""

from nova_cacheaware import exception

CODE_CONCURRENT_UPDATE = 'placement.concurrent_update'
CODE_DUPLICATE_NAME = 'placement.duplicate_name'
CODE_PROVIDER_IN_USE = 'placement.resource_provider.inuse'
CODE_CANNOT_DELETE_PARENT = 'placement.resource_provider.cannot_delete_parent'
CODE_PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'


class PlacementError(exception.CacheAwareError):
    """Base class of every Placement failure."""

    msg_fmt = 'Placement error: %(reason)s'


class PlacementUnavailable(PlacementError):
    """No HTTP answer: endpoint unknown, connection refused, auth failed."""

    msg_fmt = ('Placement unreachable for %(method)s %(url)s: %(reason)s '
               '(check the [placement] options and the service)')


class PlacementAPIError(PlacementError):
    """Placement answered with an unexpected status."""

    msg_fmt = ('Placement %(method)s %(url)s returned %(status)s '
               '%(code)s: %(detail)s')

    @property
    def status(self):
        """The HTTP status code."""
        return self.kwargs['status']

    @property
    def code(self):
        """Placement's error code (empty when the body had none)."""
        return self.kwargs['code']


class ConcurrentUpdate(PlacementAPIError):
    """409 ``placement.concurrent_update``: the generation was stale."""


class DuplicateName(PlacementAPIError):
    """409 ``placement.duplicate_name``: another provider has the name."""


class ProviderInUse(PlacementAPIError):
    """409 on delete: the provider has allocations or children."""


class ResourceProviderNotFound(PlacementAPIError):
    """404 for a resource provider."""


class GenerationConflict(PlacementError):
    """Retries on generation conflicts were exhausted."""

    msg_fmt = ('gave up %(what)s on provider %(rp_uuid)s after %(attempts)d '
               'generation conflicts (something else keeps updating it)')


class ProviderNameTaken(PlacementError):
    """A domain provider's name belongs to a provider outside this tree."""

    msg_fmt = ('cannot create provider %(name)s under %(parent)s: the name is '
               'taken by a provider outside this compute node\'s tree '
               '(left over from a deleted compute node record? delete it '
               'with "openstack resource provider delete" once it holds no '
               'allocations)')


_BY_CODE = {
    CODE_CONCURRENT_UPDATE: ConcurrentUpdate,
    CODE_DUPLICATE_NAME: DuplicateName,
    CODE_PROVIDER_IN_USE: ProviderInUse,
    CODE_CANNOT_DELETE_PARENT: ProviderInUse,
    CODE_PROVIDER_NOT_FOUND: ResourceProviderNotFound,
}


def _first_error(resp):
    try:
        errs = resp.json().get('errors') or [{}]
        first = errs[0]
        return first.get('code', ''), first.get('detail', resp.text)
    except (ValueError, AttributeError, IndexError, TypeError):
        return '', (resp.text or '')[:500]


def from_response(method, url, resp):
    """The typed error for an unexpected Placement response ``resp``."""
    code, detail = _first_error(resp)
    cls = _BY_CODE.get(code, PlacementAPIError)
    if (cls is PlacementAPIError and resp.status_code == 404
            and url.startswith('/resource_providers/')):
        cls = ResourceProviderNotFound
    return cls(method=method, url=url, status=resp.status_code, code=code,
               detail=' '.join(str(detail).split())[:500])
