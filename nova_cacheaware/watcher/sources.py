"""Where an audit reads the cache state and the server groups (I/O).

The edge of the Watcher strategy, kept apart from the pure snapshot
builder (:mod:`.snapshot`) so that tests give the strategy fixed answers
through the same two methods:

* ``host_views(hosts)``: each host's view from its agent, through
  ``nova-cacheaware-api`` (``GET /v1/hosts/{host}``, the agent's
  ``describe_host`` RPC behind it), with Watcher's Keystone session. A
  host whose agent does not answer, or answers a document that does not
  check, is left out of the audit with the reason;
* ``server_groups()``: Nova's server groups of every project (policy and
  members), with Watcher's openstacksdk connection to Nova;
* ``refused_requests(since)``: the ``cache_clean=required`` requests Nova's
  scheduler refused since then (:func:`refused_required`), from the same
  connection;
* ``placement_limits(nodes)``: the most vCPUs Placement gives one server
  on each host and in each of its per-domain providers (``max_unit``),
  with Watcher's openstacksdk connection to Placement.

No Watcher import here.
"""

import dataclasses
import datetime
import typing as ty

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
import os_resource_classes as orc
from oslo_log import log as logging

from nova_cacheaware.contracts import extra_specs
from nova_cacheaware.contracts import host_view
from nova_cacheaware.contracts import limits
from nova_cacheaware.contracts import placement as placement_names
from nova_cacheaware.contracts import rebalance_snapshot
from nova_cacheaware import exception
from nova_cacheaware.osc import plugin
from nova_cacheaware.watcher import snapshot

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Views:
    """The views that came back, and ``{host: why not}`` for the others."""

    views: ty.Tuple[host_view.HostView, ...]
    failed: ty.Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class Limits:
    """Placement's per-server limits on one host.

    ``vcpu``: the compute node's ``VCPU`` ``max_unit`` (None: it has no
    VCPU inventory); ``domains``: ``{domain id: max_unit}`` of the
    ``CUSTOM_CACHE_DOMAIN_VCPU`` of its per-domain providers (empty with
    the per-host provider model).
    """

    vcpu: ty.Optional[int] = None
    domains: ty.Mapping[str, int] = dataclasses.field(default_factory=dict)


class ApiSource:
    """Host views from ``nova-cacheaware-api``, server groups from Nova.

    ``session``: a keystoneauth session (Watcher's); ``nova``: an
    openstacksdk connection to Nova (Watcher's ``NovaHelper().connection``);
    ``placement``: one to Placement (``PlacementHelper().connection``);
    ``endpoint``: overrides the ``cache-aware`` endpoint of the catalog.
    """

    def __init__(self, session, nova, endpoint=None, interface=None,
                 region_name=None, timeout=None, placement=None):
        self._api = adapter.Adapter(
            session, service_type=plugin.SERVICE_TYPE,
            interface=interface, region_name=region_name,
            endpoint_override=endpoint)
        self._nova = nova
        self._placement = placement
        self._timeout = timeout

    def host_views(self, hosts):
        """:class:`Views` of ``hosts`` (names), one request each."""
        views, failed = [], {}
        for host in sorted(hosts):
            try:
                views.append(self._view(host))
            except _NoView as e:
                failed[host] = str(e)
                LOG.warning('Cache rebalance audit leaves host %s out: %s',
                            host, e)
        return Views(tuple(views), failed)

    def _view(self, host):
        try:
            resp = self._api.get('/v1/hosts/%s' % host, raise_exc=False,
                                 timeout=self._timeout)
        except ks_exc.EndpointNotFound:
            raise _NoView('no %s endpoint in the catalog (register '
                          'nova-cacheaware-api, or set api_endpoint in '
                          'the strategy\'s section of watcher.conf)'
                          % plugin.SERVICE_TYPE) from None
        except ks_exc.ClientException as e:
            raise _NoView('cannot reach nova-cacheaware-api: %s'
                          % e) from None
        if resp.status_code != 200:
            raise _NoView('nova-cacheaware-api answered HTTP %d: %s'
                          % (resp.status_code, _message(resp)))
        try:
            return host_view.from_document(resp.json())
        except ValueError:
            raise _NoView('the answer is not JSON') from None
        except exception.InvalidInput as e:
            raise _NoView(str(e)) from None

    def server_groups(self):
        """Every server group of every project, as ``ServerGroup``."""
        return tuple(group_of(g) for g in
                     self._nova.compute.server_groups(all_projects=True))

    def refused_requests(self, since):
        """:func:`refused_required` of Nova's ERROR servers since ``since``.

        ``since``: an aware datetime; servers changed before it are not
        asked for (Nova's ``changes-since``).
        """
        try:
            return refused_required(self._nova.compute.servers(
                details=True, all_projects=True, status='ERROR',
                changes_since=since.astimezone(datetime.timezone.utc)
                .strftime('%Y-%m-%dT%H:%M:%SZ')))
        except (sdk_exc.SDKException, ks_exc.ClientException) as e:
            raise NovaUnreadable('cannot list the ERROR servers from '
                                 'Nova: %s' % e) from None

    def placement_limits(self, nodes):
        """``{host: Limits}``; ``nodes``: ``{host: compute node uuid}``.

        Per host, its provider tree (``GET /resource_providers?in_tree=``)
        and the inventories of the root and of each per-domain provider
        (``<root name>:cacheaware:<domain id>``) that takes claims (not
        fully reserved: one being switched away from is): two requests
        and one per domain provider. A host whose providers cannot be
        read is left out of the answer with a warning: the audit plans it
        without limits, as before they were read.
        """
        out = {}
        for host, node in sorted(nodes.items()):
            try:
                out[host] = self._limits(node)
            except (sdk_exc.SDKException, ks_exc.ClientException) as e:
                LOG.warning('Cache rebalance audit plans host %s without '
                            'Placement\'s max_unit: %s', host, e)
        return out

    def _limits(self, node):
        placement = self._placement.placement
        providers = list(placement.resource_providers(in_tree=node))
        root = next((p for p in providers if p.id == node), None)
        if root is None:
            raise sdk_exc.ResourceNotFound('no resource provider %s' % node)
        vcpu = _inventories(placement, node).get(orc.VCPU)
        prefix = placement_names.domain_provider_name(root.name, '')
        domains = {}
        for provider in providers:
            if not provider.name.startswith(prefix):
                continue
            inventory = _inventories(placement, provider.id).get(
                placement_names.RC_DOMAIN_VCPU)
            if inventory is not None and inventory.reserved < inventory.total:
                domains[provider.name[len(prefix):]] = inventory.max_unit
        return Limits(None if vcpu is None else vcpu.max_unit, domains)


def _inventories(placement, provider):
    """``{resource class: inventory}`` of one provider."""
    return {inventory.resource_class: inventory for inventory in
            placement.resource_provider_inventories(provider)}


class _NoView(Exception):
    """One host's view could not be had."""


class NovaUnreadable(exception.CacheAwareError):
    """What the audit asked of Nova could not be read."""


#: What Nova's conductor writes in the fault of a server no host took.
NO_VALID_HOST = 'No valid host was found'


def refused_required(servers):
    """The vCPUs of each ``cache_clean=required`` request Nova refused.

    ``servers``: openstacksdk ``Server`` resources (or what quacks like
    one), as ``GET /servers/detail`` gives them from microversion 2.47
    (the flavor embedded with its extra specs; Watcher asks with 2.56).
    A server counts when it is in ERROR with Nova's NoValidHost fault and
    never got a host, and its flavor requires a Clean domain: the request
    the scheduler could not give a Clean place, which the audit may make
    room for. Anything else is left out; at most
    :data:`~nova_cacheaware.contracts.rebalance_snapshot.MAX_PENDING`,
    the newest first. Sorted ascending, as the snapshot keeps them.
    """
    refused = []
    for server in servers:
        fault = getattr(server, 'fault', None) or {}
        if (getattr(server, 'status', None) != 'ERROR'
                or NO_VALID_HOST not in str(fault.get('message', ''))
                or getattr(server, 'compute_host', None)):
            continue
        vcpus, specs = _flavor(server)
        if vcpus is None:
            continue
        try:
            request = extra_specs.parse_extra_specs(specs)
        except exception.InvalidInput:
            continue
        if request.clean_required:
            refused.append((str(getattr(server, 'updated_at', '') or ''),
                            vcpus))
    refused.sort(reverse=True)
    kept = refused[:rebalance_snapshot.MAX_PENDING]
    return tuple(sorted(vcpus for _when, vcpus in kept))


def _flavor(server):
    """``(vCPUs, extra specs)`` of the server's embedded flavor."""
    flavor = getattr(server, 'flavor', None)
    if flavor is None:
        return None, {}
    get = (flavor.get if isinstance(flavor, dict)
           else lambda key: getattr(flavor, key, None))
    vcpus = get('vcpus')
    if (not isinstance(vcpus, int) or isinstance(vcpus, bool)
            or not 1 <= vcpus <= limits.MAX_VCPUS):
        return None, {}
    return vcpus, dict(get('extra_specs') or {})


def group_of(sdk_group):
    """The :class:`~.snapshot.ServerGroup` of an openstacksdk group.

    Nova 2.64+ names one ``policy``; older microversions a list
    ``policies`` of one.
    """
    policy = getattr(sdk_group, 'policy', None)
    if not policy:
        policies = getattr(sdk_group, 'policies', None) or ()
        policy = policies[0] if policies else ''
    return snapshot.ServerGroup(
        id=sdk_group.id, policy=policy,
        members=tuple(getattr(sdk_group, 'member_ids', None) or ()))


def _message(resp):
    try:
        return resp.json()['error']['message']
    except (ValueError, KeyError, TypeError):
        return (resp.text or '').strip()[:200] or resp.reason
