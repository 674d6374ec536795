"""Nova's own weight handler with our weighers on requests they ignore.

Our weigher returns :data:`~nova_cacheaware.scheduler.weights.NO_ORDER`
for such a request, so that Nova's handler does no per-host work for
it. This holds the installed Nova's handler (CI runs the unit tests
against each Nova release we support) to what that relies on: the hosts
come out in the order Nova's own weighers give, and our weigher is
asked for no multiplier.
"""

from unittest import mock

from nova.scheduler import weights as nova_weights
from nova.scheduler.weights import ram
import testtools

from nova_cacheaware.scheduler import weights
from tests.unit.scheduler import test_plugins as tp


def hosts():
    out = []
    for i, free in enumerate((512, 4096, 2048, 1024)):
        state = tp.host('h%d' % i, [])
        state.free_ram_mb = free
        state.total_usable_ram_mb = 8192
        out.append(state)
    return out


class WeigherSkipTest(testtools.TestCase):

    def weighed(self, weighers, spec_obj):
        handler = nova_weights.HostWeightHandler()
        return [w.obj.host for w in handler.get_weighed_objects(
            weighers, hosts(), spec_obj)]

    def test_plain_request_order_is_novas_and_no_multiplier_is_read(self):
        spec_obj = tp.spec({})
        ours = [w() for w in weights.all_weighers()]
        with mock.patch.object(weights.CacheAwareWeigher,
                               'weight_multiplier',
                               autospec=True) as multiplier:
            got = self.weighed([ram.RAMWeigher()] + ours, spec_obj)
        multiplier.assert_not_called()
        self.assertEqual(['h1', 'h2', 'h3', 'h0'], got)
        self.assertEqual(got, self.weighed([ram.RAMWeigher()], spec_obj))

    def test_our_weighers_alone_keep_the_hosts_as_given(self):
        got = self.weighed([w() for w in weights.all_weighers()],
                           tp.spec({}))
        self.assertEqual(['h0', 'h1', 'h2', 'h3'], got)
