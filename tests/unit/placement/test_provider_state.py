"""Pure parts of the Placement adapter: desired state and error mapping."""

import json
import uuid

import hypothesis
from hypothesis import strategies as st
from oslo_config import cfg
import testtools

from nova_cacheaware.conf import placement as placement_conf
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.placement import errors
from nova_cacheaware.placement import provider_state as pstate
from nova_cacheaware.placement import provider_sync as ps


class _Response(object):
    """The two attributes of a requests.Response that errors.py reads."""

    def __init__(self, status_code, body):
        self.status_code = status_code
        self.text = body if isinstance(body, str) else json.dumps(body)

    def json(self):
        return json.loads(self.text)


class TestDesiredState(testtools.TestCase):

    def test_inventories(self):
        self.assertEqual({
            'CUSTOM_CACHE_DOMAIN_VCPU': {
                'total': 6, 'reserved': 0, 'min_unit': 1, 'max_unit': 6,
                'step_size': 1, 'allocation_ratio': 16.0},
            'CUSTOM_CACHE_DOMAIN_MEMBOUND': {
                'total': 2, 'reserved': 1, 'min_unit': 1, 'max_unit': 2,
                'step_size': 1, 'allocation_ratio': 1.0}},
            pstate.desired_inventories(6, 16, 2, 1))

    def test_retired_inventories_reserve_everything(self):
        inv = pstate.desired_inventories(8, 1.0, 1, 0)
        retired = pstate.retired_inventories(inv)
        self.assertEqual(8, retired['CUSTOM_CACHE_DOMAIN_VCPU']['reserved'])
        self.assertEqual(1,
                         retired['CUSTOM_CACHE_DOMAIN_MEMBOUND']['reserved'])
        self.assertEqual(0, inv['CUSTOM_CACHE_DOMAIN_VCPU']['reserved'])

    def test_traits(self):
        self.assertEqual({'CUSTOM_CACHEAWARE_DOMAIN', 'CUSTOM_CACHE_L3'},
                         pstate.domain_traits(3))
        self.assertEqual({'CUSTOM_CACHEAWARE_DOMAIN'},
                         pstate.domain_traits(None))
        self.assertEqual(set(), pstate.domain_traits(3, child_traits=False))
        self.assertEqual(set(), pstate.domain_traits(None, child_traits=False))

    def test_managed_child_traits(self):
        self.assertTrue(pstate.is_managed_child_trait('CUSTOM_CACHE_L2'))
        self.assertTrue(
            pstate.is_managed_child_trait('CUSTOM_CACHEAWARE_DOMAIN'))
        self.assertFalse(pstate.is_managed_child_trait('CUSTOM_CACHE_LARGE'))
        self.assertFalse(pstate.is_managed_child_trait('HW_CPU_X86_AVX2'))

    def test_provider_uuid_is_stable_and_distinct(self):
        root = str(uuid.uuid4())
        self.assertEqual(ps.domain_provider_uuid(root, 'L3-0'),
                         ps.domain_provider_uuid(root, 'L3-0'))
        self.assertNotEqual(ps.domain_provider_uuid(root, 'L3-0'),
                            ps.domain_provider_uuid(root, 'L3-1'))
        self.assertNotEqual(ps.domain_provider_uuid(root, 'L3-0'),
                            ps.domain_provider_uuid(str(uuid.uuid4()),
                                                    'L3-0'))

    def test_same_inventories_tolerates_float_noise(self):
        inv = pstate.desired_inventories(4, 1.1, 1, 0)
        echoed = json.loads(json.dumps(inv))
        echoed['CUSTOM_CACHE_DOMAIN_VCPU']['allocation_ratio'] = 1.1001
        self.assertFalse(pstate.same_inventories(echoed, inv))
        # What MariaDB's single-precision FLOAT gives back for 1.1.
        echoed['CUSTOM_CACHE_DOMAIN_VCPU']['allocation_ratio'] = (
            1.100000023841858)
        self.assertTrue(pstate.same_inventories(echoed, inv))
        del echoed['CUSTOM_CACHE_DOMAIN_MEMBOUND']
        self.assertFalse(pstate.same_inventories(echoed, inv))


class TestErrorMapping(testtools.TestCase):

    def _error(self, status, code, url='/resource_providers/x/traits'):
        body = {'errors': [{'status': status, 'code': code,
                            'detail': 'some  detail\n here',
                            'title': 'T'}]}
        return errors.from_response('PUT', url, _Response(status, body))

    def test_by_code(self):
        for code, cls in [
                ('placement.concurrent_update', errors.ConcurrentUpdate),
                ('placement.duplicate_name', errors.DuplicateName),
                ('placement.resource_provider.inuse', errors.ProviderInUse),
                ('placement.resource_provider.cannot_delete_parent',
                 errors.ProviderInUse),
                ('placement.resource_provider.not_found',
                 errors.ResourceProviderNotFound),
                ('placement.undefined_code', errors.PlacementAPIError)]:
            e = self._error(409, code)
            self.assertIs(cls, type(e))
            self.assertEqual(code, e.code)
            self.assertIn('some detail here', str(e))

    def test_404_on_a_provider_without_code(self):
        e = errors.from_response('GET', '/resource_providers/abc',
                                 _Response(404, 'not found'))
        self.assertIsInstance(e, errors.ResourceProviderNotFound)
        self.assertEqual(404, e.status)
        self.assertEqual('', e.code)

    def test_non_json_body(self):
        e = errors.from_response('GET', '/traits',
                                 _Response(500, '<html>oops</html>'))
        self.assertIs(errors.PlacementAPIError, type(e))
        self.assertIn('oops', str(e))


class TestDomainTraitsOption(testtools.TestCase):

    def test_default_keeps_the_contract_traits(self):
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        conf([], project='nova-cacheaware-test')
        self.assertTrue(conf.placement.domain_traits)
        conf.set_override('domain_traits', False, group='placement')
        self.assertFalse(conf.placement.domain_traits)
        listed = [opt.dest for opt in
                  placement_conf.list_opts()[placement_conf.placement_group]]
        self.assertIn('domain_traits', listed)


class TestFlooredInventories(testtools.TestCase):

    def test_table(self):
        inv = pstate.desired_inventories(2, 4.0, 1, 0)
        table = [
            # (usages, expected VCPU total, raised)
            ({}, 2, {}),
            ({names.RC_DOMAIN_VCPU: 8}, 2, {}),
            ({names.RC_DOMAIN_VCPU: 9}, 3,
             {names.RC_DOMAIN_VCPU: (2, 3)}),
            ({names.RC_DOMAIN_VCPU: 16}, 4,
             {names.RC_DOMAIN_VCPU: (2, 4)}),
        ]
        for usages, total, raised in table:
            out, got = pstate.floored_inventories(inv, usages)
            self.assertEqual(total, out[names.RC_DOMAIN_VCPU]['total'])
            self.assertEqual(2, out[names.RC_DOMAIN_VCPU]['max_unit'])
            self.assertEqual(raised, got)
        # A retired-style MEMBOUND (reserved = total) with a slot in use:
        # the total holds it, the reserved gives way (nothing new fits).
        dirty = pstate.desired_inventories(2, 1.0, 1, 1)
        out, got = pstate.floored_inventories(
            dirty, {names.RC_DOMAIN_MEMBOUND: 1})
        self.assertEqual({}, got)
        self.assertEqual({'total': 1, 'reserved': 0},
                         {k: out[names.RC_DOMAIN_MEMBOUND][k]
                          for k in ('total', 'reserved')})

    def test_reserved_lowered_not_total_raised_when_the_total_holds(self):
        # The host model's MEMBOUND: 4 slots, 2 reserved by the agent from
        # a count of 1 slot used; 3 are used by now (two claims since).
        host = {names.RC_DOMAIN_MEMBOUND: {
            'total': 4, 'reserved': 2, 'min_unit': 1, 'max_unit': 1,
            'step_size': 1, 'allocation_ratio': 1.0}}
        table = [
            # (used, (total, reserved) written, raised)
            (2, (4, 2), {}),
            (3, (4, 1), {}),
            (4, (4, 0), {}),
            (5, (7, 2), {names.RC_DOMAIN_MEMBOUND: (4, 7)}),
        ]
        for used, written, raised in table:
            out, got = pstate.floored_inventories(
                host, {names.RC_DOMAIN_MEMBOUND: used})
            inv = out[names.RC_DOMAIN_MEMBOUND]
            self.assertEqual(written, (inv['total'], inv['reserved']), used)
            self.assertEqual(raised, got, used)

    @hypothesis.settings(
        deadline=None,
        suppress_health_check=[hypothesis.HealthCheck.too_slow])
    @hypothesis.given(vcpus=st.integers(1, 64),
                      ratio=st.sampled_from([1.0, 1.1, 2.0, 4.0, 16.0]),
                      used=st.integers(0, 2000))
    def test_capacity_never_below_usage_never_raised_needlessly(
            self, vcpus, ratio, used):
        inv = pstate.desired_inventories(vcpus, ratio, 1, 0)
        out, raised = pstate.floored_inventories(
            inv, {names.RC_DOMAIN_VCPU: used})
        new = out[names.RC_DOMAIN_VCPU]
        self.assertGreaterEqual((new['total'] - new['reserved']) * ratio
                                + 1e-6, used)
        self.assertGreaterEqual(new['total'], vcpus)
        if used <= vcpus * ratio:
            self.assertEqual(inv, out)
            self.assertEqual({}, raised)
        else:
            # The smallest total that holds the usage.
            self.assertLess((new['total'] - 1) * ratio, used)
