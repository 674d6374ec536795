"""The rebalance snapshot document: round trip and one-line refusals."""

import testtools

from nova_cacheaware.contracts import rebalance_snapshot as rs
from nova_cacheaware import exception
from tests.unit.rebalance import fixtures as f


def doc(**hosts_and_more):
    """A minimal valid document, with ``hosts_and_more`` replacing keys."""
    out = {'hosts': [{'name': 'a', 'pcpus': 4,
                      'domains': [{'id': 'L2-0', 'vcpus': 2}],
                      'servers': [{'uuid': 'x', 'vcpus': 1,
                                   'domain': 'L2-0'}]}]}
    out.update(hosts_and_more)
    return out


def server(**fields):
    """``doc()`` whose one server has ``fields`` added."""
    one = {'uuid': 'x', 'vcpus': 1}
    one.update(fields)
    return doc(hosts=[{'name': 'a', 'pcpus': 4,
                       'domains': [{'id': 'L2-0', 'vcpus': 2}],
                       'servers': [one]}])


class SnapshotDocumentTest(testtools.TestCase):

    def test_round_trip(self):
        for snap in (f.DIRTY, f.RACE, f.FRAGMENTED, f.STORM, f.ECORE,
                     f.SETTLED):
            self.assertEqual(snap, rs.snapshot_from_dict(
                rs.snapshot_to_dict(snap)))

    def test_max_unit_round_trip(self):
        snap = f.snapshot(rs.Host('a', 4, (rs.Domain('L2-0', 8, 0, 2),
                                           rs.Domain('L2-1', 8)),
                                  max_unit=4))
        out = rs.snapshot_to_dict(snap)
        self.assertEqual((4, [2, None]), (out['hosts'][0]['max_unit'], [
            d.get('max_unit') for d in out['hosts'][0]['domains']]))
        self.assertEqual(snap, rs.snapshot_from_dict(out))
        # Unknown limits are not written.
        self.assertNotIn('max_unit', rs.snapshot_to_dict(f.DIRTY)['hosts'][0])

    def test_priority_round_trip(self):
        # Absent: rooms for refused requests first.
        self.assertEqual('required', rs.snapshot_from_dict(doc()).priority)
        for priority in rs.PRIORITIES:
            snap = f.snapshot(*f.DIRTY.hosts, pending=(2,),
                              priority=priority)
            out = rs.snapshot_to_dict(snap)
            self.assertEqual(priority, out['priority'])
            self.assertEqual(snap, rs.snapshot_from_dict(out))

    def test_declared_round_trip(self):
        snap = f.snapshot(rs.Host('a', 4, (rs.Domain('L2-0', 8),), (
            rs.Server('x', 1, 'cpu', declared='auto', domain='L2-0'),
            rs.Server('y', 1, 'cpu', domain='L2-0'))))
        out = rs.snapshot_to_dict(snap)
        self.assertEqual(['auto', None], [
            s.get('declared') for s in out['hosts'][0]['servers']])
        self.assertEqual(snap, rs.snapshot_from_dict(out))

    FLAVOR_RULES = [
        # (server, flavor clean_wanted, flavor clean_required): the
        # agent's (extra_specs.CacheAwareRequest); the class stands in
        # without "declared".
        (rs.Server('x', 1, 'cpu', declared='auto'), True, False),
        (rs.Server('x', 1, 'cpu'), False, False),
        (rs.Server('x', 1, 'memory', 'required', declared='auto'),
         True, False),
        (rs.Server('x', 1, 'cpu', 'required', declared='memory'),
         True, True),
        (rs.Server('x', 1, 'memory', 'required'), True, True),
        (rs.Server('x', 1, 'memory', 'off', declared='auto'), False, False),
        (rs.Server('x', 1, 'unknown', declared='io'), False, False),
        (rs.Server('x', 1, 'memory', cache_aware=False, declared='auto'),
         False, False),
    ]

    def test_flavor_rules(self):
        for one, wanted, required in self.FLAVOR_RULES:
            self.assertEqual((wanted, required), (
                one.flavor_clean_wanted, one.flavor_clean_required), one)

    def test_defaults(self):
        snap = rs.snapshot_from_dict(doc())
        self.assertEqual(
            rs.Snapshot(hosts=(rs.Host('a', 4, (rs.Domain('L2-0', 2),), (
                rs.Server('x', 1, domain='L2-0'),)),)), snap)

    TABLE = [
        ([], 'the snapshot must be a JSON object'),
        (doc(extra=1), "unknown key(s) 'extra'"),
        (doc(hosts={}), '"hosts" must be a list'),
        (doc(hosts=[{'name': 'a'}]), 'host: missing "pcpus"'),
        (doc(hosts=[{'name': 'a', 'pcpus': 1}, {'name': 'a', 'pcpus': 1}]),
         'host a is listed twice'),
        (doc(hosts=[{'name': 'a', 'pcpus': 1, 'domains': [
            {'id': 'd', 'vcpus': 1}, {'id': 'd', 'vcpus': 2}]}]),
         'host a: a domain id is listed twice'),
        (server(vcpus=0), '"vcpus" must be an integer in 1..4096, not 0'),
        (server(vcpus=True), '"vcpus" must be an integer'),
        (server(domain='L3-9'),
         "server x: domain 'L3-9' is not a domain of its host"),
        (server(**{'class': 'io'}), "unknown \"class\" 'io'"),
        (server(cache_clean='always'), "unknown \"cache_clean\" 'always'"),
        (server(opt_out='yes'), '"opt_out" must be true or false'),
        (server(group='g'), "server x: group 'g' is not in \"groups\""),
        (server(pcpu_estimate=-1), '"pcpu_estimate" must be a number'),
        (server(colour='red'), "server x: unknown key(s) 'colour'"),
        (server(declared='batch'),
         '"declared" must be memory, cpu, io, auto or null'),
        (doc(hosts=[{'name': 'a', 'pcpus': 1, 'max_unit': 0}]),
         'host: "max_unit" must be an integer in 1..4096 or null'),
        (doc(hosts=[{'name': 'a', 'pcpus': 1, 'domains': [
            {'id': 'd', 'vcpus': 1, 'max_unit': '2'}]}]),
         '"max_unit" must be an integer in 1..4096 or null'),
        (doc(groups={'g': 'together'}), "unknown \"policy\" 'together'"),
        (doc(pending=[{'vcpus': 0}]), 'pending: "vcpus" must be an integer'),
        (doc(pending=[3]), 'pending: must be a JSON object'),
        (doc(priority='fast'),
         "snapshot: unknown \"priority\" 'fast' (expected required, "
         "clean)"),
        (doc(priority=None), "unknown \"priority\" None"),
    ]

    def test_refusals(self):
        for bad, fragment in self.TABLE:
            e = self.assertRaises(exception.InvalidInput,
                                  rs.snapshot_from_dict, bad)
            self.assertIn(fragment, str(e), bad)
            self.assertEqual(1, len(str(e).splitlines()))

    def test_bounds(self):
        many = doc(pending=[{'vcpus': 1}] * (rs.MAX_PENDING + 1))
        e = self.assertRaises(exception.InvalidInput,
                              rs.snapshot_from_dict, many)
        self.assertIn('at most 4096 pending', str(e))
        wide = doc(hosts=[{'name': 'a', 'pcpus': 1, 'domains': [
            {'id': 'd%d' % n, 'vcpus': 1}
            for n in range(rs.MAX_DOMAINS_PER_HOST + 1)]}])
        e = self.assertRaises(exception.InvalidInput,
                              rs.snapshot_from_dict, wide)
        self.assertIn('host a: at most 256 domains', str(e))
