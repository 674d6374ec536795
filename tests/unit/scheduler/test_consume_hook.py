"""The hook that tells the claim ledger which host Nova consumed."""

import datetime

from nova import objects
from nova.scheduler import host_manager
import testtools

from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import consume_hook
from nova_cacheaware.scheduler import host_state as hs
from tests.unit.scheduler import test_plugins


def spec(vcpus=2):
    return objects.RequestSpec(
        flavor=objects.Flavor(vcpus=vcpus, memory_mb=512, root_gb=1,
                              ephemeral_gb=0, swap=0, extra_specs={}),
        pci_requests=None, numa_topology=None,
        instance_uuid='inst-1')


class ConsumeHookTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        consume_hook.uninstall()
        self.addCleanup(consume_hook.uninstall)
        self.seen = []

    def _host(self):
        state = host_manager.HostState('h1', 'h1', 'cell1')
        state.free_ram_mb = state.free_disk_mb = 4096
        state.vcpus_used = 0
        return state

    def test_nova_consumes_then_we_hear_of_it_once(self):
        self.assertTrue(consume_hook.install(
            lambda h, s: self.seen.append((h.host, s.instance_uuid,
                                           h.num_instances))))
        # A second install (another filter object) keeps one wrapper.
        self.assertFalse(consume_hook.install(lambda h, s: 1 / 0))
        state = self._host()
        state.consume_from_request(spec())
        # Nova's own bookkeeping ran first.
        self.assertEqual([('h1', 'inst-1', 1)], self.seen)
        self.assertEqual(2, state.vcpus_used)
        self.assertEqual(3584, state.free_ram_mb)

    def test_a_failing_listener_never_fails_the_request(self):
        consume_hook.install(lambda h, s: 1 / 0)
        state = self._host()
        state.consume_from_request(spec())
        self.assertEqual(1, state.num_instances)

    def test_uninstall_restores_novas_method(self):
        original = host_manager.HostState.consume_from_request
        consume_hook.install(lambda h, s: None)
        self.assertIsNot(original,
                         host_manager.HostState.consume_from_request)
        consume_hook.uninstall()
        self.assertIs(original, host_manager.HostState.consume_from_request)


class ExactLedgerTest(testtools.TestCase):

    def test_recorded_claims_turn_the_guess_off(self):
        ledger = claims.ClaimLedger(600, 60, clock=lambda: 10.0)
        shared = []
        ledger.on_claim = lambda host, claim: shared.append(claim.instance)
        # Guessing: a host handed out and seen grown counts as claimed.
        ledger.hand_out('h1', 0, claims.Claim('d0', 'a', 1, True, 10.0))
        ledger.observe('h1', 1)
        self.assertEqual(['a'], [c.instance for c in ledger.claims('h1')])
        # Exact: Nova's report is recorded and shared; a later growth of
        # the host's count is no longer taken for a claim.
        ledger.record('h2', claims.Claim('d1', 'b', 2, True, 10.0))
        self.assertTrue(ledger.exact)
        ledger.hand_out('h1', 1, claims.Claim('d0', 'c', 1, True, 10.0))
        ledger.observe('h1', 2)
        self.assertEqual(['a'], [c.instance for c in ledger.claims('h1')])
        self.assertEqual(['b'], [c.instance for c in ledger.claims('h2')])
        self.assertEqual(['a', 'b'], shared)
        self.assertTrue(ledger.has_claims('h2', 0))
        self.assertFalse(ledger.has_claims('h3', 5))


class SettleTest(test_plugins.PluginTestCase):
    """A claim ends once a stored live state lists its instance."""

    def setUp(self):
        super().setUp()
        claims.reset()
        self.addCleanup(claims.reset)

    def _state(self, instances, seconds):
        return hs.HostCacheState(
            host='cmp1', agent_healthy=True,
            timestamp=datetime.datetime(2026, 11, 24, 12, 0, seconds,
                                        tzinfo=datetime.timezone.utc),
            domains=(wire.DomainState('L3-0', 'empty', (), 4),),
            vms=tuple(wire.VmState(uuid) for uuid in instances))

    def test_listed_then_deleted_between_two_requests(self):
        cache = self.cache
        ledger = claims.get_ledger(600, 60)
        ledger.record('rp-1', claims.Claim('L3-0', 'a', 1, True,
                                           ledger.now()))
        ledger.record('rp-1', claims.Claim('L3-0', 'b', 1, True,
                                           ledger.now()))
        # The agent lists 'a' (built), then 'a' is deleted; no request
        # asked about the host in between.
        cache.update(self._state(['a'], 1))
        cache.update(self._state([], 2))
        self.assertEqual(['b'], [c.instance for c in ledger.claims(
            'rp-1', cache.received('cmp1'), frozenset())])
