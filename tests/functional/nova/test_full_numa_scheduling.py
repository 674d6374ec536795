"""Full-NUMA flavors land only on hosts whose NUMA shape they mirror."""

from nova.tests.fixtures import libvirt as fakelibvirt

from nova_cacheaware.numa_balance import flavor as numa_flavor
from tests.functional.nova import base

HN = numa_flavor.HostNode


def full_numa_specs(nodes_cpus, ram_mb):
    """Specs exactly as ``flavor numa-full`` derives them for a host."""
    cpu = 0
    host = []
    for i, count in enumerate(nodes_cpus):
        host.append(HN(i, tuple(range(cpu, cpu + count)), 8192))
        cpu += count
    return numa_flavor.derive(host, ram_mb).extra_specs()


class FullNUMASchedulingTest(base.CacheAwareTestBase):

    enabled_filters = base.NOVA_DEFAULT_FILTERS + [base.FILTER,
                                                   'FullNUMAFilter']

    def setUp(self):
        # Full-NUMA guests are big: lift the default 20-core quota.
        self.flags(cores=-1, instances=-1, group='quota')
        super().setUp()
        # Two nodes x 4 CPUs (SMT), two nodes x 6 CPUs, one node x 8 CPUs
        # (Nova's base allows fewer than 16 online CPUs per host).
        for name, nodes, cores, threads in (('mirror', 2, 2, 2),
                                            ('bigger', 2, 6, 1),
                                            ('flat', 1, 8, 1)):
            self.start_compute(hostname=name, host_info=fakelibvirt.HostInfo(
                cpu_nodes=nodes, cpu_sockets=1, cpu_cores=cores,
                cpu_threads=threads))

    def _boot(self, specs, vcpu, state='ACTIVE'):
        flavor = self._create_flavor(vcpu=vcpu, memory_mb=1024,
                                     extra_spec=specs)
        return self._create_server(flavor_id=flavor, networks='none',
                                   expected_state=state)

    def test_lands_only_on_the_mirrored_shape(self):
        specs = full_numa_specs([4, 4], 1024)
        self.assertEqual({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-3',
                          'hw:numa_cpus.1': '4-7', 'hw:numa_mem.0': '512',
                          'hw:numa_mem.1': '512', 'cacheaware:numa': 'full'},
                         specs)
        hosts = {self._boot(specs, vcpu=8)['OS-EXT-SRV-ATTR:host']
                 for _ in range(3)}
        self.assertEqual({'mirror'}, hosts)
        bigger = self._boot(full_numa_specs([6, 6], 1024), vcpu=12)
        self.assertEqual('bigger', bigger['OS-EXT-SRV-ATTR:host'])

    def test_a_shape_no_host_has_is_refused_with_reason(self):
        specs = full_numa_specs([2, 2], 1024)
        server = self._boot(specs, vcpu=4, state='ERROR')
        self.assertIn('No valid host was found', server['fault']['message'])
        log = self.stdlog.logger.output
        self.assertIn('FullNUMAFilter rejects host mirror', log)
        self.assertIn('host nodes give [4, 4] vCPUs per guest node, the '
                      'request has [2, 2]', log)
        # The same guest shape without cacheaware:numa=full fits anywhere:
        # Nova's NUMATopologyFilter alone checks fit, not mirroring.
        del specs['cacheaware:numa']
        self._boot(specs, vcpu=4)

    def test_requests_without_full_numa_are_unaffected(self):
        server = self._boot({}, vcpu=2)
        self.assertIn(server['OS-EXT-SRV-ATTR:host'],
                      ('mirror', 'bigger', 'flat'))
