"""The claim payload's declared schema: refusals, values, fuzzing.

As ``tests/unit/contracts/test_declared_schema``: a randomly mutated
payload gives a claim (the same one again from the payload
``to_payload`` writes of it) or a one-line refusal, never another
exception: the listener logs the line and drops the payload. The tables
pin the exact messages and the values.
"""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_cacheaware.scheduler import claim_share
from nova_cacheaware.scheduler import claims
from tests.unit.policy.test_declared_schemas import mutate
from tests.unit.policy.test_declared_schemas import ODD
from tests.unit.policy.test_declared_schemas import outcome

PAYLOAD = {'version': '1.0', 'origin': 'sched-a-11', 'host': 'cn-1',
           'domain': 'L3-1', 'instance': 'vm-1', 'vcpus': 2,
           'memory_bound': True}
VALUES = ODD + ['1.0', '1.7', '2.0', 1 << 16, (1 << 16) + 1]
KEYS = ['version', 'origin', 'host', 'domain', 'instance', 'vcpus',
        'memory_bound', 'extra']


class ClaimPayloadTest(testtools.TestCase):

    @settings(max_examples=600, deadline=None)
    @given(st.data(), st.sampled_from([7.5, float('nan'), 3]))
    def test_mutated_payloads(self, data, now):
        doc = mutate(data, PAYLOAD, data.draw(st.integers(0, 4)),
                     VALUES, KEYS)
        got = outcome(lambda d: claim_share.from_payload(d, now), doc)
        self.assertIn(got[0], ('ok', 'bad'), (doc, got))
        if got[0] == 'bad':
            self.assertNotIn('\n', got[1], doc)
        else:
            origin, host, claim = got[1]
            self.assertEqual(got[1], claim_share.from_payload(
                claim_share.to_payload(host, claim, origin), now), doc)

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

    def test_more_messages(self):
        # The version first, alone; then the fields in order; ``now`` last.
        for doc, now, line in (
                (dict(PAYLOAD, version='2.0'), 1.0,
                 "claim payload version '2.0' not supported (major 1 "
                 "expected)"),
                (dict(PAYLOAD, version=1), 1.0,
                 'claim payload version 1 not supported (major 1 '
                 'expected)'),
                (dict(PAYLOAD, version='2.0', origin=None), 1.0,
                 "claim payload version '2.0' not supported (major 1 "
                 "expected)"),
                (dict(PAYLOAD, origin=None, vcpus=0), 1.0,
                 'origin must be a non-empty string'),
                (dict(PAYLOAD, vcpus=0), 1.0, 'vcpus must be an int >= 1'),
                (dict(PAYLOAD, vcpus=True), 1.0,
                 'vcpus must be an int >= 1'),
                (dict(PAYLOAD, vcpus=2.0), 1.0, 'vcpus must be an int >= 1'),
                (dict(PAYLOAD, memory_bound=1), 1.0,
                 'memory_bound must be a bool'),
                (dict(PAYLOAD, memory_bound=None), float('nan'),
                 'memory_bound must be a bool'),
                (PAYLOAD, float('nan'), 'now must be a finite float'),
                (PAYLOAD, float('inf'), 'now must be a finite float'),
                (PAYLOAD, 3, 'now must be a finite float')):
            self.assertEqual(('bad', 'invalid input: ' + line),
                             outcome(lambda d: claim_share.from_payload(
                                 d, now), doc), doc)

    def test_values(self):
        claim = claims.Claim(provider='L3-1', instance='vm-1', vcpus=2,
                             memory_bound=True, at=7.5)
        self.assertEqual(('sched-a-11', 'cn-1', claim),
                         claim_share.from_payload(PAYLOAD, 7.5))
        # A 1.0 payload: clean_required and pending false, request None.
        self.assertEqual(
            (None, False, False),
            (claim.request, claim.clean_required, claim.pending))
        for edit, value in (
                ({'version': '1.7'}, claim),
                ({'version': '1'}, claim),
                ({'extra': 1, 'request': 3}, claim),
                ({'instance': None}, claims.Claim(
                    provider='L3-1', instance=None, vcpus=2,
                    memory_bound=True, at=7.5)),
                ({'instance': ''}, claims.Claim(
                    provider='L3-1', instance='', vcpus=2,
                    memory_bound=True, at=7.5)),
                ({'vcpus': 1, 'memory_bound': False}, claims.Claim(
                    provider='L3-1', instance='vm-1', vcpus=1,
                    memory_bound=False, at=7.5)),
                ({'vcpus': 1 << 16}, claims.Claim(
                    provider='L3-1', instance='vm-1', vcpus=1 << 16,
                    memory_bound=True, at=7.5)),
                ({'clean_required': True, 'pending': True}, claims.Claim(
                    provider='L3-1', instance='vm-1', vcpus=2,
                    memory_bound=True, at=7.5, clean_required=True,
                    pending=True))):
            self.assertEqual(value, claim_share.from_payload(
                dict(PAYLOAD, **edit), 7.5)[2], edit)
        # Absent instance: None.
        doc = dict(PAYLOAD)
        del doc['instance']
        self.assertIsNone(claim_share.from_payload(doc, 1.0)[2].instance)
