"""The audit's snapshot builder (pure): one table row per rule."""

import testtools

from nova_cacheaware.contracts import rebalance_snapshot as rs
from nova_cacheaware.watcher import snapshot
from tests.unit.watcher import views as v

U = v.UUIDS


def nova(name, host, **kw):
    """The :class:`~.snapshot.NovaServer` of test server ``name``."""
    kw.setdefault('extra_specs', v.specs(name))
    return snapshot.NovaServer(uuid=U[name], host=host, vcpus=v.vcpus(name),
                               **kw)


HOSTS = (snapshot.NovaHost('a', 4), snapshot.NovaHost('b', 4))
VIEWS = (v.q6600('a', {'m1': 'L2-0', 'm2': 'L2-0', 'c1': 'L2-1'}),
         v.q6600('b', {'c2': 'L2-0'}))
SERVERS = (nova('m1', 'a'), nova('m2', 'a'), nova('c1', 'a'),
           nova('c2', 'b'))


def server(audited, name):
    """The snapshot's server of test server ``name``."""
    return next(s for h in audited.snapshot.hosts for s in h.servers
                if s.uuid == U[name])


class BuildTest(testtools.TestCase):

    def test_joins_views_and_nova(self):
        audited = snapshot.build(VIEWS, HOSTS, SERVERS)
        a, b = audited.snapshot.hosts
        self.assertEqual(('a', 4, (rs.Domain('L2-0', 2, 0),
                                   rs.Domain('L2-1', 2, 0))),
                         (a.name, a.pcpus, a.domains))
        self.assertEqual(rs.Server(U['m1'], 1, 'memory', 'preferred',
                                   domain='L2-0', declared='auto'),
                         server(audited, 'm1'))
        self.assertEqual(rs.Server(U['c2'], 2, 'cpu', domain='L2-0',
                                   declared='cpu'),
                         server(audited, 'c2'))
        self.assertEqual([U['c2']], [s.uuid for s in b.servers])
        self.assertEqual((), audited.left_out)
        self.assertEqual(4, audited.servers)

    def test_domain_capacity_is_cpus_times_the_ratio(self):
        hosts = (snapshot.NovaHost('a', 4, cpu_ratio=2.5),)
        audited = snapshot.build(VIEWS[:1], hosts, SERVERS[:3])
        self.assertEqual([5, 5], [d.capacity for d in
                                  audited.snapshot.hosts[0].domains])

    def test_placement_limits_are_carried(self):
        hosts = (snapshot.NovaHost('a', 4, cpu_ratio=4.0, vcpu_max_unit=4,
                                   domain_max_units={'L2-1': 2}),)
        host = snapshot.build(VIEWS[:1], hosts,
                              SERVERS[:3]).snapshot.hosts[0]
        self.assertEqual((4, (rs.Domain('L2-0', 8, 0),
                              rs.Domain('L2-1', 8, 0, max_unit=2))),
                         (host.max_unit, host.domains))
        # Not read: no limit.
        host = snapshot.build(VIEWS[:1], HOSTS[:1],
                              SERVERS[:3]).snapshot.hosts[0]
        self.assertEqual((None, [None, None]), (
            host.max_unit, [d.max_unit for d in host.domains]))

    TABLE = [
        # (rule, server changes, expected fields of m1)
        ('flavor opt-out', {'extra_specs': dict(
            v.AUTO, **{'cacheaware:rebalance': 'no'})},
         {'opt_out': True, 'cache_aware': True}),
        ('flavor says yes', {'extra_specs': dict(
            v.AUTO, **{'cacheaware:rebalance': 'yes'})},
         {'opt_out': False}),
        ('metadata opt-out', {'metadata': {'cacheaware:rebalance': 'no'}},
         {'opt_out': True}),
        ('other metadata', {'metadata': {'cacheaware:rebalance': 'maybe'}},
         {'opt_out': False}),
        ('no cacheaware: keys', {'extra_specs': {'hw:cpu_policy': 'shared'}},
         {'opt_out': False, 'cache_aware': False}),
        ('invalid cacheaware: keys', {'extra_specs': {
            'cacheaware:cache_share': 'most'}},
         {'opt_out': True, 'cache_aware': False, 'declared': None}),
        ('the declared workload from the flavor', {'extra_specs': dict(
            v.AUTO, **{'cacheaware:workload': 'memory',
                       'cacheaware:cache_clean': 'required'})},
         {'declared': 'memory', 'flavor_clean_required': True,
          'flavor_clean_wanted': True}),
        ('an auto flavor wants Clean whatever its class', {},
         {'declared': 'auto', 'workload': 'memory',
          'flavor_clean_wanted': True, 'flavor_clean_required': False}),
        ('cache_clean from the flavor', {'extra_specs': dict(
            v.AUTO, **{'cacheaware:cache_clean': 'required'})},
         {'cache_clean': 'required'}),
        ('not ACTIVE', {'state': 'paused'}, {'opt_out': True}),
        ('locked', {'locked': True}, {'opt_out': True}),
        ('excluded by the audit scope', {'excluded': True},
         {'opt_out': True}),
    ]

    def test_opt_out_and_flavor_table(self):
        for rule, change, expected in self.TABLE:
            servers = (nova('m1', 'a', **change),) + SERVERS[1:]
            got = server(snapshot.build(VIEWS, HOSTS, servers), 'm1')
            self.assertEqual(expected, {k: getattr(got, k) for k in expected},
                             rule)

    HOST_TABLE = [
        # (rule, hosts, views, hosts in the snapshot, left out)
        ('a disabled host is left out', (
            snapshot.NovaHost('a', 4), snapshot.NovaHost('b', 4,
                                                         usable=False)),
         VIEWS, ['a'], [('b', 'its compute service is disabled or down')]),
        ('an unhealthy agent: left out', HOSTS,
         (VIEWS[0], v.q6600('b', {'c2': 'L2-0'}, healthy=False)), ['a'],
         [('b', 'its agent reports itself unhealthy')]),
        ('no view: left out', HOSTS, VIEWS[:1], ['a'],
         [('b', 'no view from its agent')]),
        ('a view of a host not audited', HOSTS[:1], VIEWS, ['a'],
         [('b', 'not a compute host of the audit')]),
    ]

    def test_hosts_table(self):
        for rule, hosts, views, kept, left_out in self.HOST_TABLE:
            audited = snapshot.build(views, hosts, SERVERS)
            self.assertEqual(kept, [h.name for h in audited.snapshot.hosts],
                             rule)
            self.assertEqual(left_out, list(audited.left_out), rule)

    def test_server_the_agent_does_not_list_yet_stays(self):
        servers = SERVERS + (nova('m3', 'b'),)
        got = server(snapshot.build(VIEWS, HOSTS, servers), 'm3')
        self.assertEqual(('unknown', None, True),
                         (got.workload, got.domain, got.opt_out))

    def test_agent_entry_nova_places_elsewhere_is_dropped(self):
        servers = (nova('m1', 'b'),) + SERVERS[1:]
        audited = snapshot.build(VIEWS, HOSTS, servers)
        self.assertEqual([U['c2'], U['m1']], [
            s.uuid for s in audited.snapshot.hosts[1].servers])
        self.assertIn((U['m1'], 'listed by the agent of a, not there in '
                                'Nova'), audited.left_out)

    def test_server_groups(self):
        groups = (snapshot.ServerGroup('g1', 'anti-affinity',
                                       (U['m1'], U['c2'])),
                  snapshot.ServerGroup('g2', 'affinity',
                                       ('a-server-of-no-audited-host',)),
                  snapshot.ServerGroup('g3', 'some-future-policy',
                                       (U['m2'],)))
        audited = snapshot.build(VIEWS, HOSTS, SERVERS, groups)
        # Only groups with members in the snapshot, of known policies.
        self.assertEqual((('g1', 'anti-affinity'),), audited.snapshot.groups)
        self.assertEqual('g1', server(audited, 'm1').group)
        m2 = server(audited, 'm2')
        self.assertEqual((None, True), (m2.group, m2.opt_out))

    def test_round_trips_to_the_cli_json(self):
        # The audit's snapshot is one nova-cacheaware rebalance replays.
        groups = (snapshot.ServerGroup('g1', 'anti-affinity', (U['m1'],)),)
        snap = snapshot.build(VIEWS, HOSTS, SERVERS, groups).snapshot
        self.assertEqual(snap, rs.snapshot_from_dict(
            rs.snapshot_to_dict(snap)))
