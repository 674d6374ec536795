"""The libvirt capabilities parser, on documents in libvirt's own format."""

import testtools

from nova_cacheaware import exception
from nova_cacheaware.topology import domains
from nova_cacheaware.topology import libvirt_caps

# Two sockets x 2 cores x 2 threads, one L3 per socket, CPU 7 offline
# (libvirt lists offline CPUs without topology attributes).
CAPS = """<capabilities>
  <host>
    <cpu><arch>x86_64</arch>
      <topology sockets='2' dies='1' cores='2' threads='2'/></cpu>
    <topology>
      <cells num='2'>
        <cell id='0'>
          <memory unit='KiB'>4194304</memory>
          <cpus num='4'>
            <cpu id='0' socket_id='0' die_id='0' core_id='0' siblings='0,4'/>
            <cpu id='1' socket_id='0' die_id='0' core_id='1' siblings='1,5'/>
            <cpu id='4' socket_id='0' die_id='0' core_id='0' siblings='0,4'/>
            <cpu id='5' socket_id='0' die_id='0' core_id='1' siblings='1,5'/>
          </cpus>
        </cell>
        <cell id='1'>
          <memory unit='GiB'>2</memory>
          <cpus num='4'>
            <cpu id='2' socket_id='1' die_id='0' core_id='0' siblings='2,6'/>
            <cpu id='3' socket_id='1' die_id='0' core_id='1' siblings='3,7'/>
            <cpu id='6' socket_id='1' die_id='0' core_id='0' siblings='2,6'/>
            <cpu id='7'/>
          </cpus>
        </cell>
      </cells>
    </topology>
    <cache>
      <bank id='0' level='3' type='both' size='15' unit='MiB' cpus='0-1,4-5'>
        <control granularity='768' unit='KiB' type='code' maxAllocs='8'/>
      </bank>
      <bank id='1' level='3' type='both' size='15' unit='MiB' cpus='2-3,6-7'/>
    </cache>
  </host>
</capabilities>"""


class ParseCapabilitiesTest(testtools.TestCase):

    def test_parse(self):
        topo = libvirt_caps.parse_capabilities(CAPS)
        self.assertEqual((0, 1, 2, 3, 4, 5, 6), topo.online_cpus())
        self.assertEqual([(0, (0, 1, 4, 5), 4096), (1, (2, 3, 6), 2048)],
                         [(n.id, n.cpus, n.memory_mib)
                          for n in topo.numa_nodes])
        self.assertEqual(((0, 4), (1, 5), (2, 6), (3,)),
                         topo.smt_siblings())
        result = domains.cache_domains(topo)
        self.assertEqual(3, result.level)
        self.assertEqual([('L3-0', (0, 1, 4, 5), 15360, (0,)),
                          ('L3-1', (2, 3, 6), 15360, (1,))],
                         [(d.id, d.cpus, d.size_kib, d.numa_nodes)
                          for d in result.domains])

    def test_no_cache_element_falls_back(self):
        xml = CAPS.split('<cache>')[0] + '</host></capabilities>'
        result = domains.cache_domains(libvirt_caps.parse_capabilities(xml))
        self.assertTrue(result.fallback)
        self.assertEqual(['pkg-0', 'pkg-1'], [d.id for d in result.domains])

    def test_errors(self):
        for xml, text in [('<capabilities', 'bad capabilities XML'),
                          ('<capabilities/>', 'have no <host>'),
                          (CAPS.replace("core_id='1' siblings='1,5'",
                                        "core_id='x' siblings='1,5'"),
                           'malformed capabilities'),
                          (CAPS.replace("unit='GiB'", "unit='parsecs'"),
                           'malformed capabilities')]:
            e = self.assertRaises(exception.TopologyError,
                                  libvirt_caps.parse_capabilities, xml,
                                  source='test')
            self.assertIn(text, str(e))
            self.assertTrue(str(e).startswith('test: '))
