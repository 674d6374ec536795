"""Reading Nova's domain XML: identity, allowed CPUs, dedicated or not."""

import testtools

from nova_cacheaware.agent import domain_xml
from nova_cacheaware import exception
from tests.fixtures import nova_domains

HOST = tuple(range(8))
UUID = '6f1c1a2e-0000-4000-8000-000000000001'


def parse(xml, inactive=None):
    return domain_xml.parse_nova_domain(xml, inactive or xml, HOST)


class ParseNovaDomainTest(testtools.TestCase):

    def test_floating_with_cpu_shared_set(self):
        xml = nova_domains.domain_xml('instance-1', 2, cpuset='2-7',
                                      uuid=UUID, flavor='m1.small')
        d = parse(xml)
        self.assertEqual(UUID, d.uuid)
        self.assertEqual('instance-1', d.name)
        self.assertEqual('instance-1', d.instance_name)
        self.assertEqual('m1.small', d.flavor)
        self.assertEqual(2, d.vcpus)
        self.assertEqual({0: (2, 3, 4, 5, 6, 7), 1: (2, 3, 4, 5, 6, 7)},
                         d.allowed)
        self.assertFalse(d.nova_pinned)
        self.assertFalse(d.dedicated)

    def test_floating_without_cpuset_allows_every_host_cpu(self):
        d = parse(nova_domains.domain_xml('i', 1, uuid=UUID))
        self.assertEqual({0: HOST}, d.allowed)

    def test_numa_pinned_floating(self):
        d = parse(nova_domains.domain_xml(
            'i', 4, pins={0: '0-3', 1: '0-3', 2: '4-7', 3: '4-7'}))
        self.assertEqual({0: (0, 1, 2, 3), 1: (0, 1, 2, 3),
                          2: (4, 5, 6, 7), 3: (4, 5, 6, 7)}, d.allowed)
        self.assertTrue(d.nova_pinned)
        self.assertFalse(d.dedicated)

    def test_dedicated(self):
        d = parse(nova_domains.domain_xml('i', 2, pins={0: '4', 1: '5'}))
        self.assertEqual({0: (4,), 1: (5,)}, d.allowed)
        self.assertTrue(d.dedicated)

    def test_single_cpu_pins_to_the_same_cpu_are_not_dedicated(self):
        d = parse(nova_domains.domain_xml('i', 2, pins={0: '4', 1: '4'}))
        self.assertFalse(d.dedicated)

    def test_allowed_comes_from_the_inactive_xml(self):
        # Our live pins show in the live XML only; Nova's cpuset stays in
        # the persistent definition.
        live = nova_domains.domain_xml('i', 2, cpuset='0-7', uuid=UUID,
                                       pins={0: '3', 1: '3'})
        inactive = nova_domains.domain_xml('i', 2, cpuset='0-7', uuid=UUID)
        d = parse(live, inactive)
        self.assertEqual({0: HOST, 1: HOST}, d.allowed)
        self.assertFalse(d.nova_pinned)

    def test_not_a_nova_domain(self):
        self.assertIsNone(parse(nova_domains.domain_xml('x', 1, nova=False)))

    def test_other_nova_namespace_versions(self):
        xml = nova_domains.domain_xml('i', 1).replace(
            'libvirt/nova/1.1', 'libvirt/nova/1.0')
        self.assertIsNotNone(parse(xml))

    def test_bad_xml_is_invalid_input(self):
        e = self.assertRaises(exception.InvalidInput, parse, '<domain>')
        self.assertIn('live domain XML is not valid XML', str(e))

    def test_current_vcpus(self):
        xml = nova_domains.domain_xml('i', 4).replace(
            "<vcpu placement='static'>", "<vcpu placement='static' "
                                         "current='2'>")
        self.assertEqual([0, 1], sorted(parse(xml).allowed))


class CreationOrderTest(testtools.TestCase):

    def test_table(self):
        for name, order in (('instance-0000000a', 10),
                            ('instance-000f4240', 1000000),
                            ('instance-100000000', 1 << 32),
                            ('instance-0000000A', None),
                            ('instance-1', None),
                            ('instance-2f6b3e1c-0a0b-4c', None),
                            ('server-0000000a', None),
                            ('', None), (None, None)):
            self.assertEqual(order, domain_xml.creation_order(name), name)


class AgentMetadataTest(testtools.TestCase):

    def test_parse_agent_pins(self):
        self.assertEqual(frozenset({0, 3}), domain_xml.parse_agent_pins(
            '<pins>\n  <vcpu id="0" nova_cpuset=""/>\n'
            '  <vcpu id="3" nova_cpuset="0-3"/>\n</pins>'))
        self.assertEqual(frozenset(), domain_xml.parse_agent_pins(
            '<pins/>'))
        self.assertRaises(exception.InvalidInput,
                          domain_xml.parse_agent_pins, '<pins>')

    def test_records_nova_cpuset_only_for_nova_pins(self):
        allowed = {0: (0, 1, 2, 3), 1: (4, 5)}
        self.assertEqual(
            '<pins><vcpu id="0" nova_cpuset=""/>'
            '<vcpu id="1" nova_cpuset=""/></pins>',
            domain_xml.agent_pins_metadata(allowed, False, {1, 0}))
        self.assertEqual(
            '<pins><vcpu id="1" nova_cpuset="4-5"/></pins>',
            domain_xml.agent_pins_metadata(allowed, True, {1}))
        self.assertEqual('<pins></pins>',
                         domain_xml.agent_pins_metadata(allowed, True, ()))
