"""The claim payload's declared schema does what the old walker did.

As ``tests/unit/contracts/test_declared_schema``: random mutations of a
valid payload must give the same claim or the same one-line message from
the declared schema and the old walker (kept in ``legacy/``).
"""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.scheduler import claim_share
from tests.unit.policy.test_declared_schemas import mutate
from tests.unit.policy.test_declared_schemas import ODD
from tests.unit.policy.test_declared_schemas import outcome
from tests.unit.scheduler.legacy import claim_share as old_claim_share

PAYLOAD = {'version': '1.0', 'origin': 'sched-a-11', 'host': 'cn-1',
           'domain': 'L3-1', 'instance': 'vm-1', 'vcpus': 2,
           'memory_bound': True}
VALUES = ODD + ['1.0', '1.7', '2.0', 1 << 16, (1 << 16) + 1]
KEYS = ['version', 'origin', 'host', 'domain', 'instance', 'vcpus',
        'memory_bound', 'extra']


class SameAsOldWalkerTest(testtools.TestCase):

    @settings(max_examples=600, deadline=None)
    @given(st.data(), st.sampled_from([7.5, float('nan'), 3]))
    def test_mutated_payloads(self, data, now):
        doc = mutate(data, PAYLOAD, data.draw(st.integers(0, 4)),
                     VALUES, KEYS)
        self.assertEqual(
            outcome(lambda d: old_claim_share.from_payload(d, now), doc),
            outcome(lambda d: claim_share.from_payload(d, now), doc), doc)

    def test_messages(self):
        cases = [
            ('x', 'payload must be an object'),
            ({}, "claim payload version None not supported (major 1 "
                 "expected)"),
            ({'version': '1.0'}, 'origin must be a non-empty string'),
            (dict(PAYLOAD, host=''), 'host must be a non-empty string'),
            (dict(PAYLOAD, domain=2), 'domain must be a non-empty string'),
            (dict(PAYLOAD, instance=[]), 'instance must be a string'),
            (dict(PAYLOAD, vcpus=(1 << 16) + 1), 'vcpus must be an int >= 1'),
            (dict(PAYLOAD, memory_bound=None),
             'memory_bound must be a bool'),
        ]
        for doc, line in cases:
            self.assertEqual(('bad', 'invalid input: ' + line),
                             outcome(lambda d: claim_share.from_payload(
                                 d, 1.0), doc), doc)
        # Absent instance: None, as before.
        doc = dict(PAYLOAD)
        del doc['instance']
        self.assertIsNone(claim_share.from_payload(doc, 1.0)[2].instance)
