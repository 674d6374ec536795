"""InstanceIds behaves as a frozenset of uuid strings."""

from hypothesis import given
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import instance_ids

uuids = st.uuids().map(str)


class InstanceIdsTest(testtools.TestCase):

    @given(st.lists(uuids, max_size=40), st.lists(uuids, max_size=40))
    def test_same_answers_as_a_frozenset(self, have, other):
        ids = instance_ids.InstanceIds.of(have)
        plain = frozenset(have)
        self.assertEqual(plain, ids)
        self.assertEqual(ids, plain)
        self.assertEqual(len(plain), len(ids))
        self.assertEqual(sorted(plain), list(ids))
        for uuid in have + other:
            self.assertEqual(uuid in plain, uuid in ids)
        older = instance_ids.InstanceIds.of(other)
        self.assertEqual(sorted(plain - frozenset(other)),
                         sorted(ids.new_since(older)))
        self.assertEqual([], ids.new_since(instance_ids.InstanceIds.of(
            have)))
        self.assertEqual(sorted(plain), ids.new_since(None))
        self.assertEqual(sorted(plain), [ids.uuid_at(i)
                                         for i in range(len(ids))])

    def test_odd_values(self):
        ids = instance_ids.InstanceIds.of(
            ['00000000-0000-4000-8000-000000000001'])
        for value in ('vm-a', '', None, 5):
            self.assertNotIn(value, ids)
        self.assertIn('00000000000040008000000000000001', ids)
        self.assertRaises(ValueError, instance_ids.InstanceIds, b'123')
        self.assertRaises(IndexError, ids.uuid_at, 1)
        self.assertEqual('InstanceIds(1)', repr(ids))
        self.assertEqual(hash(ids), hash(instance_ids.InstanceIds(ids.raw)))
        self.assertNotEqual(ids, 5)
