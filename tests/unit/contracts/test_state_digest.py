"""The relay's digest on the wire: written, read, refused."""

from hypothesis import given
from hypothesis import strategies as st
import testtools

from nova_cacheaware.contracts import state_digest as sd
from nova_cacheaware import exception

ENTRY = sd.Entry('cmp1', 1764374400000, 250, True)


class DigestWireTest(testtools.TestCase):

    def test_round_trip(self):
        digest = sd.Digest('relay-a', (ENTRY, sd.Entry('cmp2', 0, 0, False)))
        doc = sd.digest_payload(digest)
        self.assertEqual({'version': '1.0', 'relay': 'relay-a',
                          'entries': [['cmp1', 1764374400000, 250, True],
                                      ['cmp2', 0, 0, False]]}, doc)
        self.assertEqual(digest, sd.parse_digest(doc))

    def test_states_ride_along_and_are_left_to_the_reader(self):
        state = {'version': '2.0', 'host': 'cmp1'}
        digest = sd.Digest('relay-a', (ENTRY,), states=(state,))
        doc = sd.digest_payload(digest)
        self.assertEqual([state], doc['states'])
        self.assertEqual(digest, sd.parse_digest(doc))
        # None: the key is left out.
        self.assertNotIn('states', sd.digest_payload(sd.Digest('r', ())))

    def test_newer_minor_and_unknown_keys_are_read(self):
        doc = dict(sd.digest_payload(sd.Digest('r', (ENTRY,))),
                   version='1.7', extra={'x': 1})
        self.assertEqual((ENTRY,), sd.parse_digest(doc).entries)

    def test_refused(self):
        good = sd.digest_payload(sd.Digest('r', (ENTRY,)))
        bad_entries = [
            ['cmp1', 1, 0],                      # short
            ['', 1, 0, True],                    # empty host
            ['x' * 256, 1, 0, True],             # host too long
            ['cmp1', -1, 0, True],
            ['cmp1', True, 0, True],             # bool is no int
            ['cmp1', 2 ** 63, 0, True],
            ['cmp1', 1, sd.MAX_AGE_MS + 1, True],
            ['cmp1', 1, 1.5, True],
            ['cmp1', 1, 0, 1],                   # health must be a bool
            {'host': 'cmp1'},
        ]
        docs = [dict(good, entries=[e]) for e in bad_entries] + [
            dict(good, version='2.0'), dict(good, version=None),
            dict(good, relay=''), dict(good, relay=5),
            dict(good, entries={}), [], None,
            dict(good, entries=[['h', 1, 0, True]] * (sd.MAX_ENTRIES + 1)),
            dict(good, states={}), dict(good, states=['text']),
            dict(good, states=[{}] * (sd.MAX_STATES + 1)),
        ]
        for doc in docs:
            self.assertRaises(exception.InvalidInput, sd.parse_digest, doc)

    @given(st.lists(st.tuples(
        st.text(min_size=1, max_size=sd.MAX_HOST),
        st.integers(0, sd.MAX_GENERATION), st.integers(0, sd.MAX_AGE_MS),
        st.booleans()), max_size=50))
    def test_any_valid_digest_round_trips(self, raw):
        digest = sd.Digest('relay', tuple(sd.Entry(*e) for e in raw))
        self.assertEqual(digest,
                         sd.parse_digest(sd.digest_payload(digest)))


class WantWireTest(testtools.TestCase):

    def test_round_trip_and_topic(self):
        doc = sd.want_payload('sched-1', ['cmp1', 'cmp2'])
        self.assertEqual(('sched-1', ('cmp1', 'cmp2')), sd.parse_want(doc))
        self.assertEqual('cacheaware_host_state_want',
                         sd.want_topic('cacheaware_host_state'))

    def test_refused(self):
        good = sd.want_payload('s', ['cmp1'])
        for doc in (dict(good, version='2.0'), dict(good, scheduler=''),
                    dict(good, hosts='cmp1'), dict(good, hosts=['']),
                    dict(good, hosts=[1]),
                    dict(good, hosts=['h'] * (sd.MAX_ENTRIES + 1)), []):
            self.assertRaises(exception.InvalidInput, sd.parse_want, doc)
