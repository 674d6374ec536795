"""The domain inside a host, under multi-create and bursts (real Nova).

Nova's scheduler claims the first allocation candidate of the host it
picks, for every instance of a multi-create; these tests show that
``CacheDomainFilter``'s ordering gives each instance a domain with room,
spills to a second host when the first is full, and spreads sequential
``preferred`` memory-bound servers over distinct domains - with and without
the agents' live state.
"""

import collections
import datetime
import threading
import time

import fixtures
from nova.scheduler import manager

from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import host_state
from nova_cacheaware.scheduler import live_state
from tests.functional.nova import base
from tests.functional.nova import test_cache_domain_scheduling as cds


def live(host, providers, memory_vms=None, vcpus_used=None, required=()):
    """A fresh live state naming the host's domain providers.

    ``required``: the provider names whose domain holds a
    ``cache_clean=required`` instance (payload 1.5).
    """
    memory_vms = memory_vms or {}
    vcpus_used = vcpus_used or {}
    domains = []
    for i, (name, uuid) in enumerate(sorted(providers.items())):
        vms = tuple(memory_vms.get(name, ()))
        domains.append(wire.DomainState(
            id=name.rsplit(':', 1)[1], state=wire.domain_state(len(vms)),
            memory_bound_vms=vms, usable_cpus=3, provider_uuid=uuid,
            vcpus_used=vcpus_used.get(name, 0),
            required_holders=int(name in required)))
    return host_state.HostCacheState(
        host=host, timestamp=datetime.datetime.now(datetime.timezone.utc),
        agent_healthy=True, domains=tuple(domains))


def two_hosts_of_two_domains(test):
    """compute1 and compute2, two 4-CPU domains each: their providers."""
    return tuple(test.start_host(name, cores=4, threads=2, domain_cpus=4)
                 for name in ('compute1', 'compute2'))


class DomainChoiceTest(cds.AllShareBootMixin, base.CacheAwareTestBase):

    def setUp(self):
        super().setUp()
        claims.reset()
        self.addCleanup(claims.reset)

    def _domain(self, server):
        allocs = self.allocations(server)
        domains = [uuid for uuid, res in allocs.items()
                   if names.RC_DOMAIN_VCPU in res]
        self.assertEqual(1, len(domains), allocs)
        return domains[0]

    def test_multi_create_required_fills_every_domain_of_a_host(self):
        providers = self.start_host('compute1', cores=6, threads=2,
                                    domain_cpus=3)
        self.assertEqual(4, len(providers))
        servers = self._multi_create(self._flavor(2, clean='required'), 4)
        self.assertEqual(sorted(providers.values()),
                         sorted(self._domain(s) for s in servers))
        for server in servers:
            self.assertEqual({names.RC_DOMAIN_VCPU: 2,
                              names.RC_DOMAIN_MEMBOUND: 1},
                             self.allocations(server)[self._domain(server)])

    def test_multi_create_spills_to_a_second_host(self):
        first = self.start_host('compute1', cores=6, threads=2,
                                domain_cpus=3)
        second = self.start_host('compute2', cores=4, threads=2,
                                 domain_cpus=4)
        servers = self._multi_create(self._flavor(2, clean='required'), 6)
        used = [self._domain(s) for s in servers]
        self.assertEqual(sorted(list(first.values()) + list(second.values())),
                         sorted(used))
        hosts = collections.Counter(s['OS-EXT-SRV-ATTR:host']
                                    for s in servers)
        self.assertEqual({'compute1': 4, 'compute2': 2}, dict(hosts))

    def test_multi_create_preferred_memory_bound_gets_distinct_domains(self):
        providers = self.start_host('compute1', cores=6, threads=2,
                                    domain_cpus=3)
        servers = self._multi_create(self._flavor(2, clean='preferred'), 4)
        self.assertEqual(sorted(providers.values()),
                         sorted(self._domain(s) for s in servers))

    def test_multi_create_cpu_bound_packs_two_domains(self):
        # Two 4-vCPU domains (ratio 1.0), four 2-vCPU CPU-bound servers:
        # the third claim must not land on the full first domain.
        providers = self.start_host('compute1', cores=4, threads=2,
                                    domain_cpus=4)
        self.assertEqual(2, len(providers))
        servers = self._multi_create(
            self._flavor(2, workload='cpu', clean='off'), 4)
        per_domain = collections.Counter(self._domain(s) for s in servers)
        self.assertEqual([2, 2], sorted(per_domain.values()))

    def test_sequential_preferred_memory_bound_land_in_distinct_domains(self):
        providers = self.start_host('compute1', cores=4, threads=2,
                                    domain_cpus=4)
        flavor = self._flavor(2, clean='preferred')
        first = self._create_server(flavor_id=flavor, networks='none')
        second = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual(sorted(providers.values()),
                         sorted([self._domain(first), self._domain(second)]))

    def test_live_state_memory_bound_domain_is_avoided(self):
        providers = self.start_host('compute1', cores=6, threads=2,
                                    domain_cpus=3)
        names_ = sorted(providers)
        # The agent saw undeclared memory-bound VMs in three domains.
        live_state.get_cache().update(live('compute1', providers, {
            names_[0]: ['x'], names_[1]: ['y'], names_[3]: ['z']}))
        server = self._create_server(
            flavor_id=self._flavor(2, clean='preferred'), networks='none')
        self.assertEqual(providers[names_[2]], self._domain(server))

    def test_live_state_best_fit_for_cpu_bound(self):
        providers = self.start_host('compute1', cores=6, threads=2,
                                    domain_cpus=3)
        names_ = sorted(providers)
        # Domain 1 holds a memory-bound VM and 1 of 3 vCPUs: the best fit
        # for a 2-vCPU CPU-bound server, which keeps the others Empty.
        live_state.get_cache().update(live(
            'compute1', providers, {names_[1]: ['x']},
            {names_[0]: 0, names_[1]: 1, names_[2]: 0, names_[3]: 3}))
        server = self._create_server(
            flavor_id=self._flavor(2, workload='cpu', clean='off'),
            networks='none')
        self.assertEqual(providers[names_[1]], self._domain(server))

    def test_preferred_server_stays_out_of_required_servers_domains(self):
        # compute1: each domain holds one cache_clean=required VM; compute2:
        # each holds two preferred ones. The weigher alone would pick
        # compute1 (fewer memory-bound VMs per domain) and make a required
        # VM Dirty.
        first, second = two_hosts_of_two_domains(self)
        cache = live_state.get_cache()
        cache.update(live('compute1', first,
                          {n: ['r-%s' % n] for n in first},
                          {n: 1 for n in first}, required=set(first)))
        cache.update(live('compute2', second,
                          {n: ['p-%s' % n, 'q-%s' % n] for n in second},
                          {n: 2 for n in second}))
        server = self._create_server(
            flavor_id=self._flavor(1, clean='preferred'), networks='none')
        self.assertEqual('compute2', server['OS-EXT-SRV-ATTR:host'])
        self.assert_filter_refused(
            'compute1', 'every allocation candidate with room for 1 vCPUs is '
            'a cache domain holding a cache_clean=required instance')


class ConcurrentBurstTest(cds.AllShareBootMixin, base.CacheAwareTestBase):
    """Separate requests at tight capacity, filtered before any claims.

    Nova's scheduler serves each request in its own thread and claims the
    first candidate of the host it picked; a request whose claim Placement
    refuses never tries a second candidate of that host. The claims are
    held back until every request has read its candidate, so all of them
    are filtered and ordered before any claim is recorded - the burst that
    lost servers in the README's demo.
    """

    _domain = DomainChoiceTest._domain

    def setUp(self):
        super().setUp()
        claims.reset()
        self.addCleanup(claims.reset)

    def _hold_claims_until(self, parties):
        """Make Nova's claims wait until ``parties`` requests reached one.

        Returns a list with one entry per claim Nova made: ``True`` for
        a claim held until all ``parties`` had reached theirs, ``False``
        for one that was not (the barrier timed out), ``None`` for a
        later claim (a request refused on one host trying its next).
        """
        real = manager.utils.claim_resources
        barrier = threading.Barrier(parties)
        reached = []
        lock = threading.Lock()

        def claim_resources(*args, **kwargs):
            with lock:
                reached.append(None)
                index = len(reached) - 1
            if index < parties:
                try:
                    barrier.wait(timeout=30)
                    reached[index] = True
                except threading.BrokenBarrierError:
                    reached[index] = False
            return real(*args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.scheduler.manager.utils.claim_resources', claim_resources))
        return reached

    def _burst(self, flavor, count):
        """``count`` single-server requests at once; the servers settled."""
        posted = []
        # Built here, one at a time: Nova's helper looks the image up at
        # an older microversion by changing the shared client's for a
        # moment, which a concurrent post would pick up.
        requests = [self._build_server(
            name='burst-%d' % n, flavor_id=flavor, networks='none')
            for n in range(count)]

        def post(request):
            posted.append(self.api.post_server({'server': request}))

        threads = [threading.Thread(target=post, args=(request,))
                   for request in requests]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(count, len(posted))
        return [self._settled(s) for s in posted]

    def _settled(self, server, timeout=60):
        """The server once ACTIVE or ERROR."""
        deadline = time.monotonic() + timeout
        while True:
            server = self.api.get_server(server['id'])
            if server['status'] in ('ACTIVE', 'ERROR'):
                return server
            self.assertLess(time.monotonic(), deadline, server['status'])
            time.sleep(0.1)

    def _assert_every_place_taken(self, flavor, providers, count):
        reached = self._hold_claims_until(count)
        servers = self._burst(flavor, count)
        # Every request reached its claim before any claimed (the race
        # was staged, not left to chance). A request whose first claim
        # Placement refused may have claimed again on its next host.
        self.assertEqual([True] * count, reached[:count])
        self.assertEqual(['ACTIVE'] * count,
                         [s['status'] for s in servers],
                         [s.get('fault') for s in servers])
        self.assertEqual(sorted(providers),
                         sorted(self._domain(s) for s in servers))

    def test_exact_fit_burst_of_required_servers(self):
        # Four domains, one Clean slot each: four concurrent requests.
        providers = self.start_host('compute1', cores=6, threads=2,
                                    domain_cpus=3)
        self._assert_every_place_taken(
            self._flavor(2, clean='required'), providers.values(), 4)

    def test_exact_fit_burst_over_two_hosts_with_live_state(self):
        # Two hosts of two domains; the agents' live state is fresh and
        # shows every domain Empty.
        first, second = two_hosts_of_two_domains(self)
        cache = live_state.get_cache()
        cache.update(live('compute1', first))
        cache.update(live('compute2', second))
        self._assert_every_place_taken(
            self._flavor(2, clean='required'),
            list(first.values()) + list(second.values()), 4)
