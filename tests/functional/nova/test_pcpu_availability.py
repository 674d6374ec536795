"""CacheAwareWeigher's pCPU part through the real Nova API and scheduler."""

import datetime

from nova import objects
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights

from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.scheduler import host_state
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import weights
from tests.functional.nova import base


def live(host, vms, pcpus):
    """A fresh 1.1 state carrying the host's VMs (pcpu-est input)."""
    return host_state.HostCacheState(
        host=host, timestamp=datetime.datetime.now(datetime.timezone.utc),
        agent_healthy=True,
        vcpu_affinity=pcpu_est.EstimateRequest.from_dict(
            {'pcpus': list(pcpus), 'vms': vms}))


def floating(n, cpus):
    return {'vcpus': {str(i): list(cpus) for i in range(n)}}


class PCPUAvailabilityTest(base.CacheAwareTestBase):

    def _boot(self, specs, vcpu=2):
        flavor = self._create_flavor(vcpu=vcpu, memory_mb=512,
                                     extra_spec=specs)
        return self._create_server(flavor_id=flavor, networks='none')

    def test_prefers_the_host_where_the_instance_gets_more_pcpus(self):
        self.start_host('compute1', cores=4, threads=2, domain_cpus=4)
        self.start_host('compute2', cores=4, threads=2, domain_cpus=4)
        self.flags(pcpu_availability_weight_multiplier=100.0,
                   group='cacheaware_scheduler')
        sizing = {'cacheaware:vcpu_sizing': 'recommend'}
        probe = self._boot(sizing)
        nova_pick = probe['OS-EXT-SRV-ATTR:host']
        other = ({'compute1', 'compute2'} - {nova_pick}).pop()
        self._delete_server(probe)
        # The agent reports Nova's pick crowded: 16 busy vCPUs on its 8
        # pCPUs (a new 2-vCPU instance would get 2 x 8/18), the other idle.
        cache = live_state.get_cache()
        cache.update(live(nova_pick, {'busy': floating(16, range(8))},
                          range(8)))
        cache.update(live(other, {'idle': floating(2, range(8))}, range(8)))
        server = self._boot(sizing)
        self.assertEqual(other, server['OS-EXT-SRV-ATTR:host'])
        self._delete_server(server)
        # A flavor without cacheaware: keys keeps Nova's order.
        plain = self._boot({})
        self.assertEqual(nova_pick, plain['OS-EXT-SRV-ATTR:host'])
        self._delete_server(plain)
        # Dedicated requests are Placement's business: the pCPU part does
        # not weigh them (and, with the contention part off, nothing does).
        self.flags(cache_contention_weight_multiplier=0.0,
                   group='cacheaware_scheduler')
        self.assertEqual(weights.NO_ORDER, self._weigh(nova_pick, dict(
            sizing, **{'hw:cpu_policy': 'dedicated'})))
        # Without live state the weigher is neutral: Nova's pick again.
        cache.clear()
        again = self._boot(sizing)
        self.assertEqual(nova_pick, again['OS-EXT-SRV-ATTR:host'])

    def _weigh(self, host, extra):
        flavor = objects.Flavor(flavorid='f', vcpus=2, memory_mb=512,
                                root_gb=1, ephemeral_gb=0, swap=0,
                                extra_specs=extra)
        return weights.CacheAwareWeigher().weigh_objects(
            [nova_weights.WeighedHost(
                host_manager.HostState(host, host, 'cell1'), 0.0)],
            objects.RequestSpec(flavor=flavor, num_instances=1))
