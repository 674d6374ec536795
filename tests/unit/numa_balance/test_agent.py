"""The numa_balance capability's pure helpers: XML in, values out."""

import testtools

from nova_cacheaware import exception
from nova_cacheaware.numa_balance import agent as numa_agent
from nova_cacheaware.numa_balance import model as numa_model
from nova_cacheaware.numa_balance import shapes as nb

LIVE = """<domain type='qemu'><name>x</name>
<memory unit='KiB'>655360</memory><currentMemory unit='KiB'>327680
</currentMemory><vcpu placement='static'>4</vcpu>
<cpu><numa><cell id='0' cpus='0-1' memory='163840' unit='KiB'/>
<cell id='1' cpus='2-3' memory='160' unit='MiB'/></numa></cpu>
<devices><memballoon model='virtio'/>
<memory model='virtio-mem'><target><size unit='KiB'>262144</size>
<node>1</node><block unit='KiB'>2048</block>
<requested unit='KiB'>131072</requested><current unit='KiB'>65536</current>
</target><alias name='virtiomem1'/></memory></devices></domain>"""


class ParseGuestTest(testtools.TestCase):

    def test_cells_devices_and_balloon(self):
        shape = nb.parse_guest(LIVE)
        self.assertEqual({0: (0, 1), 1: (2, 3)}, shape.nodes)
        self.assertEqual({0: 160, 1: 160}, shape.node_memory_mib)
        self.assertEqual([1], list(shape.virtio_mem))
        dev = shape.virtio_mem[1]
        self.assertEqual((1, 256, 128, 64), (dev.node, dev.size_mib,
                                             dev.requested_mib,
                                             dev.current_mib))
        self.assertTrue(shape.balloon)
        self.assertEqual((320, 640), (shape.current_mib, shape.max_mib))

    def test_no_cells_is_one_node_and_no_balloon(self):
        shape = nb.parse_guest(
            "<domain><memory>1048576</memory><vcpu>2</vcpu><devices>"
            "<memballoon model='none'/></devices></domain>")
        self.assertEqual({0: (0, 1)}, shape.nodes)
        self.assertEqual({0: 1024}, shape.node_memory_mib)
        self.assertFalse(shape.balloon)

    def test_bad_xml_is_a_clear_error(self):
        for xml, text in (('<domain', 'bad domain XML'),
                          ('<network/>', 'not a domain'),
                          ("<domain><cpu><numa><cell id='x' cpus='0'/>"
                           "</numa></cpu></domain>", 'malformed')):
            e = self.assertRaises(exception.InvalidInput, nb.parse_guest,
                                  xml)
            self.assertIn(text, str(e))

    def test_requested_xml_sets_requested_and_drops_current(self):
        dev = nb.parse_guest(LIVE).virtio_mem[1]
        out = nb.requested_xml(dev.xml, 200)
        self.assertIn("<requested unit=\"KiB\">204800</requested>", out)
        self.assertNotIn('current', out)
        self.assertIn('virtiomem1', out)      # libvirt matches the alias


class HostNodesTest(testtools.TestCase):

    def test_parse(self):
        self.assertEqual({0: (0, 1, 2, 3), 1: (4, 5)},
                         nb.parse_host_nodes('0:0-3; 1:4,5'))
        self.assertEqual({}, nb.parse_host_nodes(''))

    def test_bad(self):
        for text in ('0-3', 'a:1', '0:x'):
            self.assertRaises(exception.InvalidInput, nb.parse_host_nodes,
                              text)


class RefusedBalanceTest(testtools.TestCase):
    """A balance the floors make impossible is reported, not published."""

    def test_refused_is_said_and_left_out_of_the_live_state(self):
        cap = numa_agent.NumaBalance(hypervisor=None,
                                     host_nodes={0: (0, 1), 1: (2, 3)},
                                     guest_agent=object())
        report = {'vms': {}, 'left': {}, 'cpu_moves': [],
                  'memory_moves': [], 'timings': {},
                  'refused': 'floors need 6 CPUs, the host has 4'}
        self.assertIsNone(cap.host_state(report))
        self.assertEqual(['numa balance refused, pins unchanged: floors '
                          'need 6 CPUs, the host has 4'],
                         cap.format_report(report))
        del report['refused']
        self.assertEqual(numa_model.Division(vms={}), cap.host_state(report))
