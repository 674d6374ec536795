"""The per-request parse shared by the plugins, and their fast paths."""

import gc
from unittest import mock
import weakref

from nova import objects
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights

from nova_cacheaware.contracts import extra_specs as specs
from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import headroom as pcpu_headroom
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import request
from nova_cacheaware.scheduler import weights
from tests.unit.scheduler import test_plugins as tp

SIZING = {'cacheaware:vcpu_sizing': 'recommend'}


class RequestTest(tp.PluginTestCase):

    def test_table(self):
        table = [
            # (extra specs, present, invalid, cap, dedicated, full NUMA)
            ({}, False, False, None, False, False),
            (SIZING, True, False, None, False, False),
            ({'quota:cpu_quota': '25000'}, False, False, 0.25, False, False),
            (dict(SIZING, **{'hw:cpu_policy': 'dedicated'}), True, False,
             None, True, False),
            ({'cacheaware:numa': 'full'}, True, False, None, False, True),
            ({'cacheaware:bad': 'x'}, False, True, None, False, False),
        ]
        for extra, present, invalid, cap, dedicated, full in table:
            req = request.of(tp.spec(extra, vcpus=3))
            self.assertEqual(
                (present, invalid, cap, dedicated, full, 3),
                (req.cacheaware.present, req.invalid is not None, req.cap,
                 req.dedicated, req.full_numa, req.vcpus), extra)

    def test_parsed_once_per_flavor_across_hosts_and_plugins(self):
        # Multi-create filters one RequestSpec once per instance: still
        # one parse. A new flavor object (resize, next request) re-parses.
        spec_obj = tp.spec(dict(tp.ALL_CLEAN, **SIZING))
        hosts = [tp.host('h%d' % i, []) for i in range(5)]
        plugins = [filters.CacheDomainFilter(), filters.FullNUMAFilter()]
        weighers = [w() for w in weights.all_weighers()]
        with mock.patch.object(specs, 'parse_extra_specs',
                               wraps=specs.parse_extra_specs) as parse:
            for _instance in range(3):
                for plugin in plugins:
                    list(plugin.filter_all(hosts, spec_obj))
                nova_weights.HostWeightHandler().get_weighed_objects(
                    weighers, hosts, spec_obj)
            self.assertEqual(1, parse.call_count)
            other = tp.spec(dict(tp.ALL_CLEAN, **SIZING))
            list(plugins[0].filter_all(hosts, other))
            self.assertEqual(2, parse.call_count)

    def test_invalid_specs_raise_on_every_call(self):
        spec_obj = tp.spec({'cacheaware:workload': 'bogus'})
        for _ in range(2):
            self.assertRaises(exception.InvalidInput,
                              request.cacheaware_request, spec_obj)

    def test_plain_requests_make_no_per_host_call(self):
        spec_obj = tp.spec({'hw:numa_nodes': '1'})
        hosts = [tp.host('h%d' % i, []) for i in range(4)]
        numa = filters.FullNUMAFilter()
        with mock.patch.object(numa, 'host_passes', autospec=True) as passes:
            self.assertEqual(hosts, list(numa.filter_all(hosts, spec_obj)))
        passes.assert_not_called()
        for weigher in [w() for w in weights.all_weighers()]:
            objs = [host_manager.weights.WeighedHost(h, 0.0) for h in hosts]
            with mock.patch.object(weights._Contention, 'score',
                                   autospec=True) as one, \
                    mock.patch.object(weights._Availability, 'score',
                                      autospec=True) as other:
                self.assertEqual(weights.NO_ORDER,
                                 weigher.weigh_objects(objs, spec_obj))
            one.assert_not_called()
            other.assert_not_called()

    def test_nova_object_left_untouched(self):
        spec_obj = tp.spec(SIZING)
        flavor = spec_obj.flavor
        before = (dict(flavor.__dict__), flavor.obj_to_primitive())
        parsed = request.of(spec_obj)
        self.assertEqual(before, (dict(flavor.__dict__),
                                  flavor.obj_to_primitive()))
        self.assertIs(parsed, request.of(spec_obj))

    def test_memo_goes_with_its_flavor(self):
        spec_obj = tp.spec(SIZING)
        request.of(spec_obj)
        self.assertIn(spec_obj.flavor, request._PARSED)
        gone = weakref.ref(spec_obj.flavor)
        spec_obj.flavor = objects.Flavor.obj_from_primitive(
            spec_obj.flavor.obj_to_primitive())
        gc.collect()
        # The memo kept nothing alive; the new flavor is parsed anew.
        self.assertIsNone(gone())
        self.assertNotIn(spec_obj.flavor, request._PARSED)


class PerStateWorkTest(tp.PluginTestCase):
    """The pCPU headroom: once per state arrival; bounded score memo."""

    def test_headroom_computed_on_arrival_once(self):
        weigher = weights.CacheAwareWeigher()
        hosts = [tp.host('h1', [])]
        with mock.patch.object(pcpu_headroom.Headroom, 'of',
                               wraps=pcpu_headroom.Headroom.of) as of:
            state = tp.with_vms('h1', {'a': tp.floating(6, range(4))})
            self.cache.update(state)
            self.assertEqual(1, of.call_count)       # on arrival
            for vcpus in (1, 2, 3, 2, 1):
                weigher._weigh_object(hosts[0], tp.spec(SIZING, vcpus))
            self.assertEqual(1, of.call_count)
            # A refresh with the same VMs keeps the headroom and scores.
            same = tp.with_vms('h1', {'a': tp.floating(6, range(4))})
            self.cache.update(same)
            self.assertEqual(1, of.call_count)
            self.assertIs(state.pcpu_headroom, same.pcpu_headroom)
            self.assertIs(state.pcpu_scores, same.pcpu_scores)
            self.cache.update(tp.with_vms('h1', {}))  # the VMs changed
            self.assertEqual(2, of.call_count)

    def test_score_memo_is_bounded_and_replaced_with_the_state(self):
        state = tp.with_vms('h1', {'a': tp.floating(6, range(4))})
        self.cache.update(state)
        for vcpus in range(1, 2 * hs.SCORES_PER_STATE):
            self.assertAlmostEqual(
                2 * min(1.0, 4 / (6 + vcpus)) - 1,
                weights.availability_score(state, vcpus))
        self.assertEqual(hs.SCORES_PER_STATE, len(state.pcpu_scores))
        # The newest shapes are kept.
        self.assertIn((2 * hs.SCORES_PER_STATE - 1, None),
                      state.pcpu_scores)
        # The next state, other VMs: its own memo, holding the newest
        # shapes asked of the state it replaces, scored on its VMs (none
        # here: 4 pCPUs for the new instance alone).
        fresh = tp.with_vms('h1', {})
        self.cache.update(fresh)
        self.assertIsNot(state.pcpu_scores, fresh.pcpu_scores)
        newest = range(2 * hs.SCORES_PER_STATE - hs.SCORE_SHAPES,
                       2 * hs.SCORES_PER_STATE)
        self.assertEqual({(v, None): 2 * min(1.0, 4 / v) - 1
                          for v in newest}, fresh.pcpu_scores)
