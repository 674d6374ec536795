"""Cache-domain scheduling through the real Nova API and scheduler."""

import datetime

from nova.tests.functional.api import client

from nova_cacheaware.api import flavor_specs
from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.scheduler import host_state
from nova_cacheaware.scheduler import live_state
from tests.functional.nova import base


def all_share_specs(vcpus, clean='required', workload='memory'):
    """Extra specs exactly as ``nova-cacheaware flavor set`` writes them."""
    change = flavor_specs.compute_specs(
        {'cache_share': 'all', 'workload': workload, 'cache_clean': clean},
        vcpus)
    return change.set


def live(host, domain_vms, healthy=True):
    """A fresh HostCacheState with ``domain_vms`` memory-bound VMs each."""
    return host_state.HostCacheState(
        host=host, timestamp=datetime.datetime.now(datetime.timezone.utc),
        agent_healthy=healthy,
        domains=tuple(wire.DomainState(
            id='L3-%d' % i, state=wire.domain_state(len(vms)),
            memory_bound_vms=tuple(vms), usable_cpus=4)
            for i, vms in enumerate(domain_vms)))


class AllShareBootMixin(object):
    """All-share flavors and multi-creates, for the scheduling tests."""

    def _flavor(self, vcpus, **keys):
        return self._create_flavor(vcpu=vcpus, memory_mb=256,
                                   extra_spec=all_share_specs(vcpus, **keys))

    def _multi_create(self, flavor, count):
        """Boot ``count`` servers in one request; wait for each to settle."""
        request = self._build_server(flavor_id=flavor, networks='none')
        request['min_count'] = count
        request['max_count'] = count
        self.api.post_server({'server': request})
        servers = self.api.get_servers(detail=False)
        self.assertEqual(count, len(servers))
        return [self._wait_for_state_change(s, 'ACTIVE') for s in servers]


class CacheDomainSchedulingTest(base.CacheAwareTestBase):

    def _boot(self, specs, vcpu, state='ACTIVE'):
        flavor = self._create_flavor(vcpu=vcpu, memory_mb=512,
                                     extra_spec=specs)
        return self._create_server(flavor_id=flavor, networks='none',
                                   expected_state=state)

    def _domain_of(self, server, providers):
        """The single domain provider named by the server's allocation."""
        allocs = self.allocations(server)
        domains = [uuid for uuid, res in allocs.items()
                   if names.RC_DOMAIN_VCPU in res]
        self.assertEqual(1, len(domains), allocs)
        self.assertIn(domains[0], providers.values())
        return domains[0]

    def test_memory_bound_all_share_fills_domains_clean_then_novalidhost(self):
        big = self.start_host('compute1', cores=4, threads=2, domain_cpus=4)
        small = self.start_host('compute2', cores=2, threads=2,
                                domain_cpus=4)
        self.assertEqual(2, len(big))
        self.assertEqual(1, len(small))
        providers = dict(big, **small)

        required = all_share_specs(2, clean='required')
        servers = [self._boot(required, vcpu=2) for _ in range(3)]
        used = [self._domain_of(s, providers) for s in servers]
        # Clean: each memory-bound server in a domain of its own.
        self.assertEqual(sorted(providers.values()), sorted(used))
        for server, domain in zip(servers, used):
            self.assertEqual(
                {names.RC_DOMAIN_VCPU: 2, names.RC_DOMAIN_MEMBOUND: 1},
                self.allocations(server)[domain])

        # No Empty domain left: Clean cannot be kept.
        refused = self._boot(required, vcpu=2, state='ERROR')
        self.assertIn('No valid host was found', refused['fault']['message'])

        # preferred: still All-share (one domain), Dirty allowed.
        preferred = self._boot(all_share_specs(2, clean='preferred'),
                               vcpu=2)
        preferred_domain = self._domain_of(preferred, providers)
        self.assertEqual({names.RC_DOMAIN_VCPU: 2},
                         self.allocations(preferred)[preferred_domain])

        # Deleting a server frees its domain for the next Clean request
        # (the preferred server may share that domain: Dirty is allowed).
        self._delete_server(servers[0])
        self.assertEqual(
            {names.RC_DOMAIN_VCPU: 2 if preferred_domain == used[0] else 0,
             names.RC_DOMAIN_MEMBOUND: 0},
            self.placement.get('/resource_providers/%s/usages' % used[0],
                               version='1.14').body['usages'])
        again = self._boot(required, vcpu=2)
        self.assertEqual(used[0], self._domain_of(again, providers))

    def test_lean_model_without_child_traits_schedules_the_same(self):
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4)
        # The agent switched to [placement] domain_traits = False.
        providers = self.sync_domains('compute1', base.split_domains(8, 4),
                                      child_traits=False)
        self.assertEqual(2, len(providers))
        for rp_uuid in providers.values():
            # Only the agent's liveness trait, which the flavor requires.
            self.assertEqual([names.TRAIT_AGENT], self.placement.get(
                '/resource_providers/%s/traits' % rp_uuid,
                version='1.6').body['traits'])
        required = all_share_specs(2, clean='required')
        servers = [self._boot(required, vcpu=2) for _ in range(2)]
        used = [self._domain_of(s, providers) for s in servers]
        self.assertEqual(sorted(providers.values()), sorted(used))
        self.assertEqual(
            {names.RC_DOMAIN_VCPU: 2, names.RC_DOMAIN_MEMBOUND: 1},
            self.allocations(servers[0])[used[0]])
        refused = self._boot(required, vcpu=2, state='ERROR')
        self.assertIn('No valid host was found', refused['fault']['message'])

    def test_more_vcpus_than_any_domain_gets_novalidhost(self):
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4)
        server = self._boot(all_share_specs(6), vcpu=6, state='ERROR')
        self.assertIn('No valid host was found', server['fault']['message'])
        # The same size without All-share fits the host (8 CPUs, ratio 4).
        self._boot({'cacheaware:workload': 'memory'}, vcpu=6)

    def test_all_share_without_cache_group_is_refused_with_reason(self):
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4)
        server = self._boot({'cacheaware:cache_share': 'all'}, vcpu=2,
                            state='ERROR')
        self.assertIn('No valid host was found', server['fault']['message'])
        log = self.stdlog.logger.output
        self.assertIn('CacheDomainFilter rejects host compute1', log)
        self.assertIn('no %s allocation' % names.RC_DOMAIN_VCPU, log)

    def test_unhealthy_agent_host_is_refused(self):
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4)
        self.start_host('compute2', cores=4, threads=2, domain_cpus=4)
        cache = live_state.get_cache()
        cache.update(live('compute1', [[], []], healthy=False))
        for _ in range(2):
            server = self._boot(all_share_specs(2), vcpu=2)
            self.assertEqual('compute2', server['OS-EXT-SRV-ATTR:host'])
        self.assertIn('rejects host compute1 (node compute1): the '
                      'nova-cacheaware agent reports itself unhealthy',
                      self.stdlog.logger.output)
        # The agent on compute2 goes unhealthy too: its sync takes
        # CUSTOM_CACHEAWARE_AGENT off its domain providers and Placement
        # finds nothing.
        self.sync_domains('compute2', base.split_domains(8, 4),
                          agent_healthy=False)
        server = self._boot(all_share_specs(2), vcpu=2, state='ERROR')
        self.assertIn('No valid host was found', server['fault']['message'])

    def test_weigher_prefers_empty_domains_for_memory_bound(self):
        self.start_host('compute1', cores=6, threads=2, domain_cpus=4)
        self.start_host('compute2', cores=4, threads=2, domain_cpus=4)
        self.flags(cache_contention_weight_multiplier=100.0,
                   group='cacheaware_scheduler')
        # The host Nova's own weighers pick for this cloud.
        probe = self._boot({}, vcpu=2)
        nova_pick = probe['OS-EXT-SRV-ATTR:host']
        other = ({'compute1', 'compute2'} - {nova_pick}).pop()
        self._delete_server(probe)
        # The agent reports Nova's pick busy with memory-bound VMs.
        cache = live_state.get_cache()
        cache.update(live(nova_pick, [['a'], ['b', 'c']]))
        cache.update(live(other, [[], []]))
        # Requests without keys, or declared CPU-bound: Nova's choice.
        plain = self._boot({}, vcpu=2)
        self.assertEqual(nova_pick, plain['OS-EXT-SRV-ATTR:host'])
        self._delete_server(plain)
        cpu_bound = self._boot({'cacheaware:workload': 'cpu'}, vcpu=2)
        self.assertEqual(nova_pick, cpu_bound['OS-EXT-SRV-ATTR:host'])
        self._delete_server(cpu_bound)
        # Memory-bound and auto: the host with Empty domains.
        for workload in ('memory', 'auto'):
            server = self._boot({'cacheaware:workload': workload}, vcpu=2)
            self.assertEqual(other, server['OS-EXT-SRV-ATTR:host'])
            self._delete_server(server)
        # Missing state is neutral: Nova's choice again.
        cache.clear()
        stale = self._boot({'cacheaware:workload': 'memory'}, vcpu=2)
        self.assertEqual(nova_pick, stale['OS-EXT-SRV-ATTR:host'])

    def test_servers_without_cacheaware_keys_untouched(self):
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4)
        server = self._boot({'hw:cpu_policy': 'shared'}, vcpu=2)
        allocs = self.allocations(server)
        # Nova's own allocation only: VCPU/MEMORY_MB/DISK_GB on the root.
        self.assertEqual([self.compute_rp_uuids['compute1']], list(allocs))
        self.assertEqual(2, allocs[self.compute_rp_uuids['compute1']]['VCPU'])
        self.assertNotIn('CacheDomainFilter rejects',
                         self.stdlog.logger.output)


class ExtraSpecValidationTest(base.CacheAwareTestBase):

    def _post(self, flavor_id, specs):
        return self.admin_api.post_extra_spec(flavor_id,
                                              {'extra_specs': specs})

    def test_bad_cacheaware_specs_get_400(self):
        flavor = self.admin_api.post_flavor(
            {'flavor': {'name': 'ca', 'ram': 512, 'vcpus': 2, 'disk': 1}})
        good = {'cacheaware:cache_share': 'all',
                'cacheaware:workload': 'memory',
                'cacheaware:cache_clean': 'required',
                'cacheaware:vcpu_sizing': 'recommend',
                'cacheaware:memory_policy': 'hit_ratio',
                'cacheaware:memory_min_mb': '128',
                'cacheaware:numa': 'full'}
        self.assertEqual(
            good, self._post(flavor['id'], good).body['extra_specs'])
        bad = [{'cacheaware:bogus': 'x'},
               {'cacheaware:cache_share': 'some'},
               {'cacheaware:workload': 'Memory'},
               {'cacheaware:cache_clean': ''},
               {'cacheaware:vcpu_sizing': 'on'},
               {'cacheaware:memory_policy': 'dynamic'},
               {'cacheaware:memory_min_mb': '127'},
               {'cacheaware:memory_min_mb': 'lots'},
               {'cacheaware:numa': 'half'}]
        for specs in bad:
            ex = self.assertRaises(client.OpenStackApiException, self._post,
                                   flavor['id'], specs)
            self.assertEqual(400, ex.response.status_code, specs)
        # Nothing of the refused requests was stored.
        stored = self.admin_api.get_extra_specs(flavor['id'])
        self.assertEqual(good, stored)
