"""The host provider model under multi-create and bursts (real Nova).

Each host that runs the agent has one cache provider ``<root
name>:cacheaware`` (made here with the agent's own sync through the
in-process Placement's REST API); the allocation names the host, not the
domain, and the agent chooses the domain on the host. These tests show that
``CacheDomainFilter`` - from the injected live state plus its own claims -
lets a multi-create fill every domain of a host and spill to the next one
without NoValidHost, predicts a distinct domain per memory-bound instance,
refuses a host whose live state has no room although Placement's host
counts would take it, and leaves everything to Placement without live
state.
"""

import collections
import datetime

from nova.tests.fixtures import libvirt as fakelibvirt

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.cachedomain import assignment as domain_assignment
from nova_cacheaware import conf as ca_conf
from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.scheduler import claim_share
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import host_state
from nova_cacheaware.scheduler import live_state
from tests.functional.nova import base
from tests.functional.nova import test_cache_domain_scheduling as cds
from tests.functional.nova import test_domain_choice


class HostModelTest(cds.AllShareBootMixin, base.CacheAwareTestBase):

    def setUp(self):
        super().setUp()
        # The root's and the cache provider's CPU ratio are one: the
        # scheduler's room (usable CPUs x the host's ratio) is the agent's.
        self.flags(cpu_allocation_ratio=1.0, initial_cpu_allocation_ratio=1.0)
        claims.reset()
        self.addCleanup(claims.reset)

    def _start(self):
        """compute1: 4 domains of 3 CPUs; compute2: 2 domains of 4."""
        self.first = self.start_host('compute1', cores=6, threads=2,
                                     domain_cpus=3, model='host')
        self.second = self.start_host('compute2', cores=4, threads=2,
                                      domain_cpus=4, model='host')

    def _live(self, hostname, used=None, memory=None, capacity=None,
              required=None):
        """Inject a fresh host-model live state of ``hostname``.

        ``capacity``: each domain's ``vcpus_capacity`` (payload 1.4); None
        leaves it out, as a 1.3 agent does. ``required``: each domain's
        ``required_holders`` (payload 1.5).
        """
        used = used or {}
        memory = memory or {}
        required = required or {}
        domains = []
        for domain in self.domain_sets[hostname].domains:
            vms = tuple(memory.get(domain.id, ()))
            domains.append(wire.DomainState(
                id=domain.id, state=wire.domain_state(len(vms)),
                memory_bound_vms=vms, usable_cpus=len(domain.cpus),
                vcpus_used=used.get(domain.id, 0),
                vcpus_capacity=(None if capacity is None
                                else capacity[domain.id]),
                required_holders=required.get(domain.id)))
        (provider,) = self.host_provider(hostname).values()
        live_state.get_cache().update(host_state.HostCacheState(
            host=hostname,
            timestamp=datetime.datetime.now(datetime.timezone.utc),
            agent_healthy=True, domains=tuple(domains),
            host_provider=provider))

    def _hosts(self, servers):
        return dict(collections.Counter(s['OS-EXT-SRV-ATTR:host']
                                        for s in servers))

    def _cache_allocation(self, server, hostname):
        """The server's cache resources: on the host's one provider."""
        allocs = self.allocations(server)
        cache = {uuid: res for uuid, res in allocs.items()
                 if names.RC_DOMAIN_VCPU in res}
        (provider,) = self.host_provider(hostname).values()
        self.assertEqual([provider], list(cache), allocs)
        return cache[provider]

    def _predicted(self, hostname, servers):
        """``{domain id: instances}`` this scheduler predicted on a host.

        The last hand-out counts once the host holds more instances than
        when it was handed out, as at Nova's next visit of the host.
        """
        uuid = self.compute_rp_uuids[hostname]
        opts = ca_conf.CONF.cacheaware_scheduler
        ledger = claims.get_ledger(opts.claim_memory_seconds,
                                   opts.claim_settle_seconds)
        ledger.observe(uuid, sum(1 for s in servers
                                 if s['OS-EXT-SRV-ATTR:host'] == hostname))
        return dict(collections.Counter(c.provider
                                        for c in ledger.claims(uuid)))

    def _predicted_by_instance(self, hostname, servers):
        """``{instance uuid: domain id}`` this scheduler predicted."""
        uuid = self.compute_rp_uuids[hostname]
        opts = ca_conf.CONF.cacheaware_scheduler
        ledger = claims.get_ledger(opts.claim_memory_seconds,
                                   opts.claim_settle_seconds)
        ledger.observe(uuid, sum(1 for s in servers
                                 if s['OS-EXT-SRV-ATTR:host'] == hostname))
        return {c.instance: c.provider for c in ledger.claims(uuid)}

    def _agent_one_pass(self, hostname, vcpus, memory_bound):
        """The agent's choice when it sees the host's instances at once.

        From what the agent reads: the libvirt domains Nova defined there
        (uuid, name - Nova's order), the domains' capacity (usable CPUs
        at ratio 1.0, as in the injected live state).
        """
        conn = self.computes[hostname].driver._host.get_connection()
        held = [domain_assignment.HostHeld(
            uuid=dom.UUIDString(), vcpus=vcpus, memory_bound=memory_bound,
            order=domain_xml.creation_order(dom.name()))
            for dom in conn.listAllDomains(
                fakelibvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)]
        self.assertNotIn(None, [vm.order for vm in held])
        capacity = {d.id: len(d.cpus)
                    for d in self.domain_sets[hostname].domains}
        return domain_assignment.assign_domains(capacity, held)

    def _check_agent_agrees(self, keys, count, memory_bound):
        # The agent places a multi-create's instances in Nova's claim
        # order, not uuid order: its choice in one pass is, instance by
        # instance, what the scheduler predicted claim after claim.
        self._start()
        self._live('compute1')
        self._live('compute2')
        servers = self._multi_create(self._flavor(2, **keys), count)
        for hostname in ('compute1', 'compute2'):
            predicted = self._predicted_by_instance(hostname, servers)
            self.assertEqual(
                sorted(s['id'] for s in servers
                       if s['OS-EXT-SRV-ATTR:host'] == hostname),
                sorted(predicted))
            self.assertEqual(predicted, self._agent_one_pass(
                hostname, 2, memory_bound))

    def test_agent_places_required_multi_create_as_predicted(self):
        self._check_agent_agrees({'clean': 'required'}, 6, True)

    def test_agent_places_preferred_multi_create_as_predicted(self):
        self._check_agent_agrees({'clean': 'preferred'}, 8, True)

    def test_agent_places_cpu_bound_multi_create_as_predicted(self):
        self._check_agent_agrees({'clean': 'off', 'workload': 'cpu'}, 8,
                                 False)

    def _check(self, keys, count, hosts, first, second):
        servers = self._multi_create(self._flavor(2, **keys), count)
        self.assertEqual(hosts, self._hosts(servers))
        slots = collections.Counter()
        for server in servers:
            host = server['OS-EXT-SRV-ATTR:host']
            expected = {names.RC_DOMAIN_VCPU: 2}
            got = self._cache_allocation(server, host)
            if keys.get('clean') == 'required':
                expected[names.RC_DOMAIN_MEMBOUND] = 1
            elif keys.get('clean') == 'preferred':
                # Claimed at claim time where a Clean place was left.
                slots[host] += got.pop(names.RC_DOMAIN_MEMBOUND, 0)
            self.assertEqual(expected, got)
        if keys.get('clean') == 'preferred':
            # compute1 fills up first and is never the last host its
            # servers could try: each took one of its four Clean slots;
            # compute2 gave out at most its two.
            self.assertEqual(hosts['compute1'], slots['compute1'])
            self.assertLessEqual(slots['compute2'], 2)
        self.assertEqual(first, self._predicted('compute1', servers))
        self.assertEqual(second, self._predicted('compute2', servers))

    def test_multi_create_required_fills_every_domain_then_spills(self):
        self._start()
        self._live('compute1')
        self._live('compute2')
        # One Clean domain per instance: 4 + 2, a distinct domain each.
        self._check({'clean': 'required'}, 6,
                    {'compute1': 4, 'compute2': 2},
                    {'L3-0': 1, 'L3-1': 1, 'L3-2': 1, 'L3-3': 1},
                    {'L3-0': 1, 'L3-1': 1})

    def test_multi_create_preferred_fills_every_domain_then_spills(self):
        self._start()
        self._live('compute1')
        self._live('compute2')
        # Placement's counts would take 6 on compute1 (12 vCPUs, max_unit
        # 3); its domains hold one 2-vCPU instance each, compute2's two.
        self._check({'clean': 'preferred'}, 8,
                    {'compute1': 4, 'compute2': 4},
                    {'L3-0': 1, 'L3-1': 1, 'L3-2': 1, 'L3-3': 1},
                    {'L3-0': 2, 'L3-1': 2})

    def test_multi_create_cpu_bound_fills_every_domain_then_spills(self):
        self._start()
        self._live('compute1')
        self._live('compute2')
        self._check({'clean': 'off', 'workload': 'cpu'}, 8,
                    {'compute1': 4, 'compute2': 4},
                    {'L3-0': 1, 'L3-1': 1, 'L3-2': 1, 'L3-3': 1},
                    {'L3-0': 2, 'L3-1': 2})

    def test_without_live_state_placement_counts_decide(self):
        self._start()
        # The memory-bound slots (4 + 2) spill the multi-create; nothing
        # is predicted without live state.
        self._check({'clean': 'required'}, 6,
                    {'compute1': 4, 'compute2': 2}, {}, {})

    def test_host_without_room_in_live_state_is_refused(self):
        self.start_host('compute1', cores=6, threads=2, domain_cpus=3,
                        model='host')
        flavor = self._flavor(2, workload='cpu', clean='off')
        # Every domain holds 2 of its 3 vCPUs: no room for 2 in one, while
        # Placement's host counts (12 vCPUs free, max_unit 3) would say yes.
        self._live('compute1', used={'L3-%d' % i: 2 for i in range(4)})
        refused = self._create_server(flavor_id=flavor, networks='none',
                                      expected_state='ERROR')
        self.assertIn('No valid host was found', refused['fault']['message'])
        self.assert_filter_refused(
            'compute1', "no cache domain has room for 2 vCPUs in its agent's "
            'live state: 4 domains, the most room is 1 vCPUs in L3-3')
        # Placement alone (no live state at all) takes it.
        live_state.get_cache().clear()
        server = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual({names.RC_DOMAIN_VCPU: 2},
                         self._cache_allocation(server, 'compute1'))

    def test_preferred_server_stays_out_of_a_required_servers_domain(self):
        self._start()
        # compute1: L3-0 holds a cache_clean=required VM and has room,
        # the other domains are full. compute2: both domains hold a
        # preferred VM and have room. The weigher alone would pick
        # compute1 (fewer memory-bound VMs per domain), which would make
        # the required VM Dirty.
        first = [d.id for d in self.domain_sets['compute1'].domains]
        self._live('compute1', used={d: 3 if d != first[0] else 1
                                     for d in first},
                   memory={first[0]: ('r',)}, required={first[0]: 1})
        second = [d.id for d in self.domain_sets['compute2'].domains]
        self._live('compute2', used={d: 1 for d in second},
                   memory={d: ('p-%s' % d,) for d in second})
        flavor = self._flavor(1, workload='memory', clean='preferred')
        server = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual('compute2', server['OS-EXT-SRV-ATTR:host'])
        self.assert_filter_refused(
            'compute1', 'every cache domain with room for 1 vCPUs holds a '
            "cache_clean=required instance in its agent's live state: 1 of "
            '4 domains have room')
        # A cpu-bound server may share that domain.
        cpu = self._create_server(
            flavor_id=self._flavor(1, workload='cpu', clean='off'),
            networks='none')
        self.assertEqual('compute1', cpu['OS-EXT-SRV-ATTR:host'])

    def _one_tight_place_and_one_empty_domain(self):
        """The two hosts' domain ids, one tight Clean place, one Empty.

        compute1: one vCPU of room in its first domain, full elsewhere;
        compute2: its first domain full, the other Empty.
        """
        self._start()
        first = [d.id for d in self.domain_sets['compute1'].domains]
        second = [d.id for d in self.domain_sets['compute2'].domains]
        self._live('compute1', used={d: 2 if d == first[0] else 3
                                     for d in first})
        self._live('compute2', used={second[0]: 4})
        return first, second

    def test_a_small_required_server_leaves_the_empty_domain_to_a_big_one(
            self):
        # compute1: one 3-CPU domain has one vCPU of room left (cpu-bound
        # instances hold two), the others are full; compute2: one 4-CPU
        # domain full, one Empty. A 1-vCPU required server fits exactly in
        # compute1's; spread (Nova's weighers, and the contention part's
        # count of Clean places, 1 of 2 against 1 of 4) would give it
        # compute2's Empty domain, and the 4-vCPU required server after
        # it would find no Clean domain anywhere.
        first, second = self._one_tight_place_and_one_empty_domain()
        small = self._create_server(
            flavor_id=self._flavor(1, workload='memory', clean='required'),
            networks='none')
        self.assertEqual('compute1', small['OS-EXT-SRV-ATTR:host'])
        self.assertEqual({first[0]: 1}, self._predicted('compute1', [small]))
        big = self._create_server(
            flavor_id=self._flavor(4, workload='memory', clean='required'),
            networks='none')
        self.assertEqual('compute2', big['OS-EXT-SRV-ATTR:host'])
        self.assertEqual({second[1]: 1}, self._predicted('compute2', [big]))

    def test_a_required_burst_takes_the_tight_places_then_the_empty(self):
        # Six Clean places for six 1-vCPU required servers in one request:
        # compute1's four domains with one vCPU of room each first (exact
        # fits), then compute2's two Empty ones; none is lost.
        self._start()
        first = [d.id for d in self.domain_sets['compute1'].domains]
        self._live('compute1', used={d: 2 for d in first})
        self._live('compute2')
        servers = self._multi_create(
            self._flavor(1, workload='memory', clean='required'), 6)
        self.assertEqual({'compute1': 4, 'compute2': 2},
                         self._hosts(servers))
        self.assertEqual({d: 1 for d in first},
                         self._predicted('compute1', servers))
        self.assertEqual({'L3-0': 1, 'L3-1': 1},
                         self._predicted('compute2', servers))

    def test_a_preferred_server_is_not_packed(self):
        # The same hosts: best fit is for required requests alone. A
        # preferred one holds no Placement slot, and the most Clean places
        # (compute2: 1 of 2) leave the most room for the next ones.
        self._one_tight_place_and_one_empty_domain()
        server = self._create_server(
            flavor_id=self._flavor(1, workload='memory', clean='preferred'),
            networks='none')
        self.assertEqual('compute2', server['OS-EXT-SRV-ATTR:host'])

    def test_the_agents_capacity_sizes_domains_not_novas_ratio(self):
        # Nova's ratio is 4.0 (its default); the agent sizes each 3-CPU
        # domain with its own [agent] domain_cpu_allocation_ratio = 1.0,
        # as does the host provider it writes.
        self.flags(cpu_allocation_ratio=4.0, initial_cpu_allocation_ratio=4.0)
        self.start_host('compute1', cores=6, threads=2, domain_cpus=3,
                        model='host')
        flavor = self._flavor(2, workload='cpu', clean='off')
        used = {'L3-%d' % i: 2 for i in range(4)}
        # A 1.4 agent says each domain holds 3: none has room for 2.
        self._live('compute1', used=used,
                   capacity={'L3-%d' % i: 3 for i in range(4)})
        refused = self._create_server(flavor_id=flavor, networks='none',
                                      expected_state='ERROR')
        self.assertIn('No valid host was found', refused['fault']['message'])
        self.assertIn(
            "no cache domain has room for 2 vCPUs in its agent's live "
            'state: 4 domains, the most room is 1 vCPUs in L3-3',
            self.stdlog.logger.output)
        # A 1.3 agent publishes no capacity: Nova's ratio (3 x 4.0 = 12
        # per domain) is assumed, and Placement's host counts take it.
        self._live('compute1', used=used)
        server = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual({names.RC_DOMAIN_VCPU: 2},
                         self._cache_allocation(server, 'compute1'))
        # With the agent's capacity, its choice is predicted: the one
        # domain with room for 3 more vCPUs.
        claims.reset()
        self._live('compute1', used=dict(used, **{'L3-3': 0}),
                   capacity={'L3-%d' % i: 3 for i in range(4)})
        big = self._create_server(
            flavor_id=self._flavor(3, workload='cpu', clean='off'),
            networks='none')
        self.assertEqual({'L3-3': 1},
                         self._predicted('compute1', [server, big]))

    def _other_worker_claims(self, hostname, made):
        """Deliver ``made`` as another worker's claims on ``hostname``.

        Through the listener's endpoint, as they arrive from the bus.
        """
        uuid = self.compute_rp_uuids[hostname]
        opts = ca_conf.CONF.cacheaware_scheduler
        endpoint = claim_share.HostClaimEndpoint(
            lambda: claims.get_ledger(opts.claim_memory_seconds,
                                      opts.claim_settle_seconds),
            'this-worker')
        for claim in made:
            endpoint.info({}, 'nova-cacheaware-scheduler.other',
                          claim_share.EVENT_TYPE, claim_share.to_payload(
                              uuid, claim, 'other-worker'), {})

    def test_another_workers_claims_count_at_once(self):
        # Another scheduler worker claimed L3-1 and L3-2 of compute1 for
        # memory-bound instances a moment ago: its claims arrive on the
        # bus (the listener's endpoint) before any agent state shows them.
        self._start()
        self._live('compute1')
        self._live('compute2')
        self._other_worker_claims('compute1', [
            claims.Claim('L3-1', 'other-1', 2, True, 0.0),
            claims.Claim('L3-2', 'other-2', 2, True, 0.0)])
        # Four Clean slots on compute1 in Placement, two in the live
        # state plus those claims: two land there, in the free domains,
        # and two spill to compute2.
        servers = self._multi_create(
            self._flavor(2, clean='required'), 4)
        self.assertEqual({'compute1': 2, 'compute2': 2},
                         self._hosts(servers))
        self.assertEqual({'L3-0': 1, 'L3-3': 1, 'L3-1': 1, 'L3-2': 1},
                         self._predicted('compute1', servers))

    def test_weigher_counts_claims_the_state_lacks(self):
        # The agents last saw compute1's four domains Empty and one
        # memory-bound instance on compute2 (one Clean place of two left).
        # Since then another worker claimed all four of compute1's domains
        # for memory-bound instances: by the live state alone compute1
        # would still weigh best (1.0 against 0.0), and a preferred
        # memory-bound server would land in a Dirty domain there.
        self.flags(cache_contention_weight_multiplier=100.0,
                   group='cacheaware_scheduler')
        self._start()
        self._live('compute1')
        self._live('compute2', memory={'L3-0': ('old',)}, used={'L3-0': 2})
        self._other_worker_claims('compute1', [
            claims.Claim(domain, 'other-%d' % i, 1, True, 0.0)
            for i, domain in enumerate(('L3-0', 'L3-1', 'L3-2', 'L3-3'))])
        (server,) = self._multi_create(
            self._flavor(2, clean='preferred'), 1)
        self.assertEqual('compute2', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual({'L3-1': 1}, self._predicted('compute2', [server]))

    def test_every_claim_is_recorded_once_for_its_instance(self):
        # Nova reports each host it consumes (the consume hook): after a
        # multi-create spread over both hosts, the ledger holds one claim
        # per server, on its host, for that server - no guess from
        # instance counts.
        self._start()
        self._live('compute1')
        self._live('compute2')
        servers = self._multi_create(self._flavor(2, clean='required'), 6)
        opts = ca_conf.CONF.cacheaware_scheduler
        ledger = claims.get_ledger(opts.claim_memory_seconds,
                                   opts.claim_settle_seconds)
        self.assertTrue(ledger.exact)
        for hostname in ('compute1', 'compute2'):
            recorded = ledger.claims(self.compute_rp_uuids[hostname])
            self.assertEqual(
                sorted(s['id'] for s in servers
                       if s['OS-EXT-SRV-ATTR:host'] == hostname),
                sorted(c.instance for c in recorded))
            self.assertTrue(all(c.memory_bound and c.vcpus == 2
                                for c in recorded))


class PreferredCleanSlotTest(cds.AllShareBootMixin, base.CacheAwareTestBase):
    """``preferred`` memory-bound requests take a Clean slot at claim time.

    Two requests are filtered and weighed before either claims (Nova's
    claims are held back until both have read their candidate): both
    weigh the same host's last Clean place best. Placement, not luck,
    decides which one gets it; the other moves on to its next host.
    """

    _start = HostModelTest._start
    _live = HostModelTest._live
    _hosts = HostModelTest._hosts
    _cache_allocation = HostModelTest._cache_allocation
    _hold_claims_until = test_domain_choice.ConcurrentBurstTest.\
        _hold_claims_until
    _burst = test_domain_choice.ConcurrentBurstTest._burst
    _settled = test_domain_choice.ConcurrentBurstTest._settled

    def setUp(self):
        super().setUp()
        self.flags(cpu_allocation_ratio=1.0, initial_cpu_allocation_ratio=1.0)
        claims.reset()
        self.addCleanup(claims.reset)

    def _one_clean_place(self, hostname, memory_domains):
        """Memory-bound VMs in ``memory_domains`` of ``hostname``.

        As the agent tells them: live state, and their slots ``reserved``.
        """
        self._live(hostname, memory={d: ('vm-%s' % d,)
                                     for d in memory_domains},
                   used={d: 1 for d in memory_domains})
        self.sync_host_provider(hostname, self.domain_sets[hostname],
                                membound_reserved=len(memory_domains))

    def _slots(self, servers):
        return {s['OS-EXT-SRV-ATTR:host']: self._cache_allocation(
            s, s['OS-EXT-SRV-ATTR:host']).get(names.RC_DOMAIN_MEMBOUND, 0)
            for s in servers}

    def test_two_requests_for_one_clean_place_end_on_two_hosts(self):
        # compute1: L3-3 is its one Clean place; compute2: L3-1.
        self._start()
        self._one_clean_place('compute1', ('L3-0', 'L3-1', 'L3-2'))
        self._one_clean_place('compute2', ('L3-0',))
        reached = self._hold_claims_until(2)
        servers = self._burst(self._flavor(2, clean='preferred'), 2)
        self.assertEqual([True] * 2, reached[:2])
        self.assertEqual(['ACTIVE'] * 2, [s['status'] for s in servers],
                         [s.get('fault') for s in servers])
        # Each holds the Clean slot of its host: both Clean.
        self.assertEqual({'compute1': 1, 'compute2': 1}, self._slots(servers))

    def test_a_refused_slot_never_costs_the_server(self):
        # One Clean place in the region (compute1 L3-3); compute2 has
        # room, Dirty only. Both requests weigh compute1 first.
        self._start()
        self._one_clean_place('compute1', ('L3-0', 'L3-1', 'L3-2'))
        self._one_clean_place('compute2', ('L3-0', 'L3-1'))
        self._hold_claims_until(2)
        servers = self._burst(self._flavor(2, clean='preferred'), 2)
        self.assertEqual(['ACTIVE'] * 2, [s['status'] for s in servers],
                         [s.get('fault') for s in servers])
        # One got the Clean place and its slot; the other, refused the
        # slot, went on to compute2 and claimed what its flavor asks.
        self.assertEqual({'compute1': 1, 'compute2': 0}, self._slots(servers))

    def test_on_the_last_host_no_slot_is_asked(self):
        # One host, no Clean place: the request lands Dirty, as preferred
        # allows, and holds no slot (Placement has none to give).
        self.first = self.start_host('compute1', cores=6, threads=2,
                                     domain_cpus=3, model='host')
        self._one_clean_place('compute1', ('L3-0', 'L3-1', 'L3-2', 'L3-3'))
        (server,) = self._multi_create(self._flavor(2, clean='preferred'), 1)
        self.assertEqual({'compute1': 0}, self._slots([server]))
