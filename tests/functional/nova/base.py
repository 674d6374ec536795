"""A Nova functional test base with nova-cacheaware's plugins enabled."""

import os
import sys
import warnings

from keystoneauth1 import adapter as ka
from keystoneauth1 import session as ks
from sqlalchemy import exc as sqla_exc

from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.libvirt import base

from nova_cacheaware import conf as ca_conf  # noqa: F401 (options)
from nova_cacheaware.placement import client as placement_client
from nova_cacheaware.placement import host_provider
from nova_cacheaware.placement import provider_sync
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.topology import domains as topo_domains

FILTER = 'CacheDomainFilter'
NOVA_DEFAULT_FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                        'ImagePropertiesFilter',
                        'ServerGroupAntiAffinityFilter',
                        'ServerGroupAffinityFilter', 'NUMATopologyFilter']


def enable_plugins(test, enabled_filters=NOVA_DEFAULT_FILTERS + [FILTER]):
    """Make our filter and weigher available and enable them.

    ``enabled_filters`` None leaves Nova's list alone (the caller enables
    ours another way). Must run before ``super().setUp()`` starts the
    scheduler service.
    """
    if enabled_filters is not None:
        test.flags(enabled_filters=enabled_filters, group='filter_scheduler')
    test.flags(
        available_filters=['nova.scheduler.filters.all_filters',
                           'nova_cacheaware.scheduler.filters.all_filters'],
        weight_classes=['nova.scheduler.weights.all_weighers',
                        'nova_cacheaware.scheduler.weights.all_weighers'],
        group='filter_scheduler')
    # The nova wheel installs api-paste.ini under <prefix>/etc/nova, not
    # next to the package as in a git checkout.
    test.flags(api_paste_config=os.path.join(
        sys.prefix, 'etc', 'nova', 'api-paste.ini'), group='wsgi')
    # Nova's tests run on the fake message bus: the tests feed live state
    # into the process's cache directly (the listener has its own tests
    # against RabbitMQ).
    test.flags(listen_for_host_state=False, group='cacheaware_scheduler')
    live_state.reset()
    test.addCleanup(live_state.reset)


def ignore_nova_sqlalchemy_warning():
    """Let Nova 34 run on SQLAlchemy 2.1.

    Nova's WarningsFixture turns SQLAlchemy 2.1's deprecation of the
    ``noload()`` Nova still uses into an error (it breaks, e.g., the
    NoValidHost path and ``Instance.get_by_uuid``). Call after
    ``super().setUp()``, which installs that fixture.
    """
    warnings.filterwarnings(
        'ignore', message=r'The noload\(\) option is deprecated',
        category=sqla_exc.SADeprecationWarning)


def split_domains(cpu_count, per_domain, level=3):
    """A DomainSet cutting CPUs ``0..cpu_count-1`` into equal domains."""
    doms = []
    for index, first in enumerate(range(0, cpu_count, per_domain)):
        doms.append(topo_domains.CacheDomain(
            id='L%d-%d' % (level, index), level=level,
            cpus=tuple(range(first, min(first + per_domain, cpu_count))),
            size_kib=16384, numa_nodes=(0,)))
    return topo_domains.DomainSet(level=level, fallback=False,
                                  domains=tuple(doms))


class CacheAwareTestBase(base.ServersTestBase):
    """ServersTestBase with our plugins; helpers for domain providers."""

    microversion = '2.86'   # extra-spec validation needs 2.86+
    ADMIN_API = True
    #: ``[filter_scheduler] enabled_filters`` for the test's scheduler.
    enabled_filters = NOVA_DEFAULT_FILTERS + [FILTER]

    def setUp(self):
        enable_plugins(self, self.enabled_filters)
        # One build at a time per compute: concurrent builds on one
        # in-process compute sometimes fail in Nova's resource tracker
        # ("Can't upgrade a READER transaction to a WRITER") on a loaded
        # machine, and the reschedule then lands on another host. Seen
        # with and without our plugins; the scheduling under test is the
        # same either way (the claims are made before the builds).
        self.flags(max_concurrent_builds=1)
        super().setUp()
        ignore_nova_sqlalchemy_warning()
        #: ``{hostname: DomainSet}`` of the hosts :meth:`start_host` made.
        self.domain_sets = {}

    def placement_adapter(self):
        """A keystoneauth1 Adapter on the in-process Placement."""
        return ka.Adapter(
            ks.Session(auth=None),
            # self.placement (Nova's PlacementApiClient) exists in every
            # supported Nova; self.placement_fixture only from Nova 32 on.
            endpoint_override=self.placement.fixture.endpoint,
            additional_headers={'x-auth-token': 'admin'},
            raise_exc=False)

    def start_host(self, hostname, cores, threads, domain_cpus,
                   model='domain', **kwargs):
        """Start a libvirt compute and give it its cache providers.

        ``model='domain'``: one provider per cache domain (returns ``{name:
        uuid}`` of them); ``model='host'``: the host's one
        ``<root name>:cacheaware`` provider (returns ``{name: uuid}`` of
        it), made by the agent's code as for :meth:`sync_domains`. The
        host's domains (``L3-0``, ``L3-1``, ...) are kept in
        ``self.domain_sets[hostname]``; ``kwargs`` go to the sync.
        """
        info = fakelibvirt.HostInfo(cpu_nodes=1, cpu_sockets=1,
                                    cpu_cores=cores, cpu_threads=threads)
        self.start_compute(hostname=hostname, host_info=info)
        domain_set = split_domains(cores * threads, domain_cpus)
        self.domain_sets[hostname] = domain_set
        if model == 'host':
            return self.sync_host_provider(hostname, domain_set, **kwargs)
        if model != 'domain':
            raise ValueError('model must be domain or host, not %r' % model)
        return self.sync_domains(hostname, domain_set, **kwargs)

    def domain_providers(self, hostname):
        """``{provider name: uuid}`` of the host's cache-domain children."""
        root = self.compute_rp_uuids[hostname]
        rps = self.placement.get(
            '/resource_providers?in_tree=%s' % root,
            version='1.14').body['resource_providers']
        return {rp['name']: rp['uuid'] for rp in rps
                if ':cacheaware:' in rp['name']}

    def assert_filter_refused(self, host, reason):
        """Assert CacheDomainFilter logged refusing ``host`` for ``reason``."""
        self.assertIn('CacheDomainFilter rejects host %s (node %s): %s'
                      % (host, host, reason), self.stdlog.logger.output)

    def allocations(self, server):
        """``{provider uuid: resources}`` of a server's allocation."""
        allocs = self.placement.get('/allocations/%s' % server['id'],
                                    version='1.28').body['allocations']
        return {uuid: a['resources'] for uuid, a in allocs.items()}

    def sync_domains(self, hostname, domain_set, **kwargs):
        """Create the host's cache-domain providers with the agent's code.

        Returns ``{provider name: uuid}`` of the host's domain providers.
        """
        client = placement_client.PlacementClient(self.placement_adapter())
        kwargs.setdefault('cpu_allocation_ratio', 1.0)
        provider_sync.sync_domain_providers(
            client, self.compute_rp_uuids[hostname], domain_set, **kwargs)
        return self.domain_providers(hostname)

    def host_provider(self, hostname):
        """``{provider name: uuid}`` of the host's one cache provider."""
        root = self.compute_rp_uuids[hostname]
        rps = self.placement.get(
            '/resource_providers?in_tree=%s' % root,
            version='1.14').body['resource_providers']
        return {rp['name']: rp['uuid'] for rp in rps
                if rp['name'].endswith(':cacheaware')}

    def sync_host_provider(self, hostname, domain_set, **kwargs):
        """Create the host's one cache provider with the agent's code.

        Through the in-process Placement's REST API: the child
        ``<root name>:cacheaware`` (``POST /resource_providers``), its two
        inventories, ``CUSTOM_CACHEAWARE_AGENT`` on it. Returns
        ``{provider name: uuid}`` of it.
        """
        client = placement_client.PlacementClient(self.placement_adapter())
        kwargs.setdefault('cpu_allocation_ratio', 1.0)
        host_provider.sync_host_provider(
            client, self.compute_rp_uuids[hostname], domain_set, **kwargs)
        return self.host_provider(hostname)
