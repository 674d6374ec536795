"""The pure parts of the vcpu_sizing capability's reads on domains."""

import testtools

from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.vcpu_sizing import view as view_mod


class CapsTest(testtools.TestCase):

    def test_from_xml(self):
        xml = ("<domain><cputune><period>50000</period><quota>25000</quota>"
               "</cputune></domain>")
        self.assertEqual({0: 0.5, 1: 0.5}, view_mod.caps_from_xml(xml, 2))
        xml = ("<domain><cputune><global_quota>100000</global_quota>"
               "<quota>80000</quota></cputune></domain>")
        self.assertEqual({v: 0.25 for v in range(4)},
                         view_mod.caps_from_xml(xml, 4))
        self.assertEqual({}, view_mod.caps_from_xml('<domain/>', 2))
        self.assertEqual({}, view_mod.caps_from_xml(
            '<domain><cputune><quota>-1</quota></cputune></domain>', 2))
        self.assertRaises(exception.InvalidInput, view_mod.caps_from_xml,
                          '<', 1)

    def test_from_params(self):
        self.assertIsNone(view_mod.caps_from_params({'weight': 50}, 2))
        self.assertEqual({0: 0.5, 1: 0.5}, view_mod.caps_from_params(
            {'vcpu_quota': 50000, 'vcpu_period': 100000,
             'global_quota': -1, 'global_period': 100000}, 2))
        self.assertEqual({}, view_mod.caps_from_params(
            {'vcpu_quota': -1, 'vcpu_period': 100000}, 2))

    def test_metadata_round_trip(self):
        est = pcpu_est.VMEstimate(1.5, 2, {0: 0.75, 1: 0.75})
        xml = view_mod.metadata_xml('apply', est, {3, 2})
        self.assertEqual(
            '<sizing mode="apply" available_pcpus="1.500000" '
            'recommended_vcpus="2" offlined="2-3" />', xml)
        self.assertEqual(('apply', frozenset({2, 3})),
                         view_mod.parse_metadata(xml))
        self.assertRaises(exception.InvalidInput, view_mod.parse_metadata,
                          '<x')
