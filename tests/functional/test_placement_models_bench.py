"""The provider models of benchmarks/placement_models.py, on real Placement.

Each model is seeded as the benchmark seeds it (host 0 through the API,
the rest copied in SQL) on Placement 16 on MariaDB, and the three requests
must give exactly the candidates the model is meant to give: the figures
of doc/source/evaluation/placement.rst are only worth something if the
copied hosts are real providers Placement answers for.
"""

import uuid

from benchmarks import placement_models as pm
from nova_cacheaware.contracts import placement as names
from tests.functional import base
from tests import placement_fixtures

HOSTS = 20
SHAPE = (4, 4)  # 4 domains of 4 CPUs: room for the 4-vCPU requests


class TestProviderModels(base.FunctionalTestCase):
    """Seed one model per database; check candidates and hosts exactly."""

    def seeded(self, model):
        """A service with ``model`` seeded; (service, providers, agg)."""
        self.require(placement_fixtures.mariadb_available(), 'MariaDB')
        svc = self.useFixture(pm.BenchPlacement())
        count, agg = pm.seed(svc, model, HOSTS, SHAPE)
        return svc, count, agg

    def answer(self, svc, model, agg, request):
        """(candidates, distinct hosts) of ``request`` on ``model``."""
        doc = svc.client.get('/allocation_candidates?'
                             + pm.queries(model, agg)[request])
        return len(doc['allocation_requests']), pm.hosts_in(doc)

    def check(self, model, providers, plain, all_share, clean=None):
        """Seed ``model``; assert its size and (candidates, hosts)."""
        svc, count, agg = self.seeded(model)
        self.assertEqual(providers, count)
        self.assertEqual(plain, self.answer(svc, model, agg, 'plain'))
        self.assertEqual(all_share,
                         self.answer(svc, model, agg, 'all_share'))
        self.assertEqual(clean or all_share,
                         self.answer(svc, model, agg, 'clean'))
        return svc

    def test_nested_one_candidate_per_domain(self):
        self.check('nested', HOSTS * 5, (HOSTS, HOSTS), (HOSTS * 4, HOSTS))

    def test_optin10_only_opted_in_hosts(self):
        # Hosts 0 and 10 opt in.
        self.check('optin10', HOSTS + 2 * 4, (HOSTS, HOSTS), (8, 2))

    def test_isolated_pool_is_not_offered_to_plain_requests(self):
        self.check('host_child_optin10_isolated', HOSTS + 2,
                   (HOSTS - 2, HOSTS - 2), (2, 2))

    def test_sharing_domains_are_outside_the_trees(self):
        svc = self.check('sharing', HOSTS * 5, (HOSTS, HOSTS),
                         (HOSTS * 4, HOSTS))
        roots = svc.client.get('/resource_providers?required='
                               'MISC_SHARES_VIA_AGGREGATE')
        shares = roots['resource_providers']
        self.assertEqual(HOSTS * 4, len(shares))
        self.assertTrue(all(p['parent_provider_uuid'] is None
                            for p in shares))

    def test_per_host_counts_one_candidate_per_host(self):
        self.check('host_child', HOSTS * 2, (HOSTS, HOSTS), (HOSTS, HOSTS))
        self.check('root_count', HOSTS, (HOSTS, HOSTS), (HOSTS, HOSTS))

    def test_numa_one_candidate_per_node(self):
        self.check('numa', HOSTS * 3, (HOSTS, HOSTS), (HOSTS * 2, HOSTS))

    def test_clean_needs_a_free_slot(self):
        svc, _count, agg = self.seeded('host_child')
        # Take every memory-bound slot of host 3 (4 domains: 4 slots).
        rp = svc.client.get('/resource_providers?name=bench-cn-0003:'
                            'cacheaware')['resource_providers'][0]
        for _slot in range(4):  # one memory-bound instance per slot
            svc.client.put('/allocations/%s' % uuid.uuid4(), {
                'allocations': {rp['uuid']: {'resources': {
                    names.RC_DOMAIN_MEMBOUND: 1}}},
                'consumer_generation': None, 'consumer_type': 'INSTANCE',
                'project_id': 'p',
                'user_id': 'u'}, expected=(204,))
        self.assertEqual((HOSTS - 1, HOSTS - 1),
                         self.answer(svc, 'host_child', agg, 'clean'))
        self.assertEqual((HOSTS, HOSTS),
                         self.answer(svc, 'host_child', agg, 'all_share'))
